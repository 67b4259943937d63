"""A real PostgreSQL for the tests marked ``postgres``: Debian's package, a throwaway cluster on a free loopback port.

``initdb`` and ``postgres`` are looked up on PATH, then in /usr/lib/postgresql/<version>/bin (where Debian puts
them; the newest version wins). When they are missing and this process runs as root on a machine with apt-get
(CI), ``ensure`` installs Debian's package, printing apt's progress::

    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql

running ``apt-get update`` first when the package lists do not know the package yet. Without root it fails with
the command to run instead: there is no fake PostgreSQL to fall back on.

Each run makes a fresh cluster with ``initdb`` in a temporary directory (superuser ``feltsense``, trust
authentication, UTF8 with the C locale, so nothing depends on the machine's locales), and starts ``postgres`` on a
free 127.0.0.1 port with its socket in that directory and durability off (``fsync``, ``synchronous_commit`` and
``full_page_writes``: a crash may lose what a throwaway cluster holds). It waits until a connection succeeds,
creates the database ``feltsense``, and at the end stops the server (terminate, then kill) and removes the
directory. ``fresh_database()`` creates another database per test, so tests share the server but no tables.
For fault tests, ``kill`` crashes it (SIGKILL; the cluster's files stay) and ``restart`` brings it back on the
same port, with crash recovery.

PostgreSQL refuses to run as root. As root, ``initdb`` and ``postgres`` run as the ``postgres`` system user
(Debian's package creates it; ``nobody`` otherwise) through ``setpriv``, which execs the server in place (so
``kill`` reaches the postmaster itself) and keeps the signal that ends it with the test run; the temporary
directory is chowned to that user. ``runuser`` is the fallback where there is no ``setpriv``.

    python -m tests.servers.postgres ensure    # find or install PostgreSQL, print its bin directory (`make test`)
    python -m tests.servers.postgres serve     # run a throwaway server until Ctrl-C (for manual runs)
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg

from tests.servers.debian import ensure_package
from tests.servers.process import Log, ServerProcess, free_ports, poll_until_ready, serve_main, spawn, stopping
from tests.servers.process import stderr_log as _stderr

PACKAGE = "postgresql"
SUPERUSER = "feltsense"
DATABASE = "feltsense"
READY_TIMEOUT_S = 60.0
INITDB_TIMEOUT_S = 120.0
SETTINGS = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "200",
}
_database_numbers = itertools.count(1)


class PostgresInstallError(RuntimeError):
    """PostgreSQL is missing and could not be installed; the message says what to run."""


class PostgresStartError(RuntimeError):
    """initdb failed or the server did not come up; the message carries the tail of its output."""


def _has_both(directory: Path) -> bool:
    return all(os.access(directory / name, os.X_OK) for name in ("initdb", "postgres"))


def _version_key(directory: Path) -> tuple[int, ...]:
    # /usr/lib/postgresql/15/bin -> (15,): the newest installed version first.
    return tuple(int(part) for part in re.findall(r"\d+", directory.parent.name)) or (0,)


def find() -> Path | None:
    """The directory holding both ``initdb`` and ``postgres``, or None."""
    candidates: list[Path] = []
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_version_key, reverse=True)
    for candidate in candidates:
        if _has_both(candidate):
            return candidate
    return None


def ensure(*, log: Log = _stderr) -> Path:
    """The directory of ``initdb`` and ``postgres``, installed from Debian's package first if missing (as root)."""
    return ensure_package(PACKAGE, find, what="PostgreSQL (initdb and postgres)",
                          manual="put initdb and postgres on PATH", error=PostgresInstallError, log=log)


def _run_as() -> tuple[list[str], pwd.struct_passwd | None]:
    """The command prefix that drops root, and the user it drops to; nothing when not root."""
    if os.geteuid() != 0:
        return [], None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            user = pwd.getpwnam(name)
            break
    else:
        raise PostgresStartError("running as root, and there is neither a postgres nor a nobody user to run as")
    setpriv = shutil.which("setpriv")
    if setpriv:
        # --pdeathsig: the credential change would clear the parent-death signal spawn() sets.
        return [setpriv, f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups",
                "--pdeathsig=TERM", "--"], user
    runuser = shutil.which("runuser")
    if runuser:
        return [runuser, "-u", user.pw_name, "--"], user
    raise PostgresStartError(f"running as root, and there is neither setpriv nor runuser to run as {user.pw_name}")


def _chown_tree(path: Path, user: pwd.struct_passwd) -> None:
    os.chown(path, user.pw_uid, user.pw_gid)
    for root, dirs, files in os.walk(path):
        for name in (*dirs, *files):
            os.chown(os.path.join(root, name), user.pw_uid, user.pw_gid)


@dataclass(kw_only=True)
class PostgresServer(ServerProcess):
    port: int

    name = "postgres"
    log_name = "postgres.log"

    def url_for(self, database: str) -> str:
        return f"postgresql://{SUPERUSER}@{self.host}:{self.port}/{database}"

    @property
    def url(self) -> str:
        """The ``feltsense`` database, made at start."""
        return self.url_for(DATABASE)

    def connect(self, database: str = "postgres") -> psycopg.Connection:
        """An autocommit connection as the superuser (for CREATE DATABASE and checks)."""
        return psycopg.connect(self.url_for(database), autocommit=True, connect_timeout=5)

    def fresh_database(self) -> str:
        """Create a new, uniquely named, empty database and return its URL: one per test keeps tests apart."""
        database = f"feltsense_test_{next(_database_numbers)}_{uuid.uuid4().hex[:8]}"
        with self.connect() as connection:
            connection.execute(f'CREATE DATABASE "{database}"')
        return self.url_for(database)

    def answers(self) -> bool:
        with self.connect() as connection:
            return connection.execute("SELECT 1").fetchone() == (1,)

    def wait_ready(self, timeout_s: float) -> None:
        poll_until_ready(self, timeout_s, probe=self.answers, ignored=psycopg.OperationalError, interval_s=0.1,
                         error=PostgresStartError, not_ready="did not accept a connection")

    def restart(self, *, ready_timeout_s: float = READY_TIMEOUT_S) -> None:
        """After ``kill``: start it again on the same port and directory; it recovers from its write-ahead log.
        The postmaster's orphaned backends hold its shared memory for a moment after the crash, and the new
        postmaster refuses to start until they are gone, so an early exit is retried for a few seconds."""
        deadline = time.monotonic() + 10.0
        while True:
            try:
                super().restart(ready_timeout_s=ready_timeout_s)
                return
            except PostgresStartError:
                if self.process.poll() is None or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


def _initdb(bindir: Path, datadir: Path, prefix: list[str], workdir: Path) -> None:
    command = [*prefix, str(bindir / "initdb"), "-D", str(datadir), "-U", SUPERUSER, "--auth=trust",
               "-E", "UTF8", "--no-locale", "--no-sync", "--no-instructions"]
    result = subprocess.run(command, cwd=workdir, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, timeout=INITDB_TIMEOUT_S, check=False)
    if result.returncode != 0:
        output = result.stdout.decode(errors="replace").strip()
        raise PostgresStartError(f"initdb exited with status {result.returncode}:\n{output}")


def start(bindir: Path, *, ready_timeout_s: float = READY_TIMEOUT_S) -> PostgresServer:
    """initdb a fresh cluster and start it on a free loopback port; return once the ``feltsense`` database
    exists."""
    prefix, user = _run_as()
    # World-traversable /tmp, so the dropped user reaches its directory (mkdtemp makes it 0700; it is chowned).
    workdir = Path(tempfile.mkdtemp(prefix="feltsense-postgres-", dir="/tmp" if user is not None else None))
    datadir = workdir / "data"
    try:
        if user is not None:
            _chown_tree(workdir, user)
        _initdb(bindir, datadir, prefix, workdir)
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    (port,) = free_ports(1)
    settings = [arg for key, value in SETTINGS.items() for arg in ("-c", f"{key}={value}")]
    command = [*prefix, str(bindir / "postgres"), "-D", str(datadir), "-h", "127.0.0.1", "-p", str(port),
               "-k", str(workdir), *settings]
    env = {key: value for key, value in os.environ.items() if not key.startswith("PG")}
    server = PostgresServer(port=port, workdir=workdir, process=spawn(command, workdir, PostgresServer.log_name, env),
                            command=command, env=env)
    server.start_or_stop(ready_timeout_s)
    try:
        with server.connect() as connection:
            connection.execute(f'CREATE DATABASE "{DATABASE}"')
    except BaseException:
        server.stop()
        raise
    return server


@contextlib.contextmanager
def running(*, log: Log = _stderr) -> Iterator[PostgresServer]:
    """Find (or install) PostgreSQL, start a throwaway cluster, and stop it afterwards."""
    with stopping(start(ensure(log=log))) as server:
        yield server


def main(argv: list[str]) -> int:
    return serve_main(
        argv, prepare=("ensure", ensure, PostgresInstallError), running=running,
        ready=lambda server: f"postgres ready (Ctrl-C stops it):\n  FELTSENSE_POSTGRES__URL={server.url}",
        usage="usage: python -m tests.servers.postgres ensure|serve",
    )


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
