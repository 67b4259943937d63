"""A real redis-server for the tests marked ``redis``: Debian's package, run on a free loopback port.

``redis-server`` is looked up on PATH (then in /usr/bin and /usr/sbin). When it is missing and this process runs
as root on a machine with apt-get (CI), ``ensure`` installs Debian's package, printing apt's progress::

    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server

running ``apt-get update`` first when the package lists do not know the package yet. Without root it fails with
the command to run instead: there is no fake Redis to fall back on.

Each run starts the server on a free 127.0.0.1 port with a temporary directory, no persistence (``--save ''``,
``--appendonly no``), waits until it answers PING, and stops it (terminate, then kill) and removes the directory.
For fault tests, ``kill`` crashes it (SIGKILL: every key is lost) and ``restart`` brings it back on the same port.

    python -m tests.servers.redis ensure    # find or install redis-server, print its path (`make test` runs it)
    python -m tests.servers.redis serve     # run a throwaway server until Ctrl-C (for manual runs)
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import redis

from tests.servers.debian import ensure_package
from tests.servers.process import Log, ServerProcess, free_ports, poll_until_ready, serve_main, spawn, stopping
from tests.servers.process import stderr_log as _stderr

PACKAGE = "redis-server"
READY_TIMEOUT_S = 30.0


class RedisInstallError(RuntimeError):
    """redis-server is missing and could not be installed; the message says what to run."""


class RedisStartError(RuntimeError):
    """The server did not come up; the message carries the tail of its log."""


def find() -> Path | None:
    """The redis-server binary, or None."""
    for candidate in (shutil.which("redis-server"), "/usr/bin/redis-server", "/usr/sbin/redis-server"):
        if candidate and os.access(candidate, os.X_OK):
            return Path(candidate)
    return None


def ensure(*, log: Log = _stderr) -> Path:
    """The redis-server binary, installed from Debian's package first if it is missing (as root)."""
    return ensure_package(PACKAGE, find, what="redis-server", manual="put redis-server on PATH",
                          error=RedisInstallError, log=log)


@dataclass(kw_only=True)
class RedisServer(ServerProcess):
    port: int

    name = "redis-server"
    log_name = "redis.log"

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(host=self.host, port=self.port, socket_timeout=5)

    def flush(self) -> None:
        """Delete every key: one test's queue and results."""
        with self.client() as client:
            client.flushall()

    def restart(self, *, ready_timeout_s: float = READY_TIMEOUT_S) -> None:
        """Without persistence (the default here) the restarted server holds no keys."""
        super().restart(ready_timeout_s=ready_timeout_s)

    def answers_ping(self) -> bool:
        with self.client() as client:
            return bool(client.ping())

    def wait_ready(self, timeout_s: float) -> None:
        poll_until_ready(self, timeout_s, probe=self.answers_ping, ignored=redis.RedisError, interval_s=0.05,
                         error=RedisStartError, not_ready="did not answer PING")


def start(binary: Path, *, ready_timeout_s: float = READY_TIMEOUT_S) -> RedisServer:
    """Start the binary on a free loopback port with a fresh directory; return once it answers PING."""
    (port,) = free_ports(1)
    workdir = Path(tempfile.mkdtemp(prefix="feltsense-redis-"))
    command = [str(binary), "--bind", "127.0.0.1", "--port", str(port), "--dir", str(workdir), "--save", "",
               "--appendonly", "no", "--daemonize", "no", "--protected-mode", "yes"]
    server = RedisServer(port=port, workdir=workdir, process=spawn(command, workdir, RedisServer.log_name),
                         command=command)
    server.start_or_stop(ready_timeout_s)
    return server


@contextlib.contextmanager
def running(*, log: Log = _stderr) -> Iterator[RedisServer]:
    """Find (or install) redis-server, start it, and stop it afterwards."""
    with stopping(start(ensure(log=log))) as server:
        yield server


def main(argv: list[str]) -> int:
    return serve_main(
        argv, prepare=("ensure", ensure, RedisInstallError), running=running,
        ready=lambda server: f"redis-server ready (Ctrl-C stops it):\n  FELTSENSE_REDIS_URL={server.url}",
        usage="usage: python -m tests.servers.redis ensure|serve",
    )


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
