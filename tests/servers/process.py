"""What the test servers (Weaviate, Redis) share: free loopback ports, a child that dies with the test run, and
a handle to a server process that can be stopped, crashed (``kill -9``) and restarted on the same ports and
directory. Each server module adds how it is started and how it is known to be ready."""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, TypeVar


def free_ports(count: int) -> list[int]:
    """Distinct free loopback ports: every socket stays bound until all are chosen."""
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind(("127.0.0.1", 0))
            ports.append(int(sock.getsockname()[1]))
        return ports


def die_with_parent() -> Callable[[], None] | None:
    """For the child between fork and exec: ask Linux to terminate it when this process dies, so a test run
    that is killed outright leaves no server behind. Resolved before the fork (nothing is imported in the
    child); None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    prctl = ctypes.CDLL(None).prctl
    pr_set_pdeathsig = 1
    return lambda: prctl(pr_set_pdeathsig, signal.SIGTERM)


def spawn(command: list[str], workdir: Path, log_name: str, env: dict[str, str] | None = None
          ) -> subprocess.Popen[bytes]:
    """The server process, its output appended to ``log_name`` in ``workdir`` (a restart adds to the log)."""
    log = (workdir / log_name).open("ab")
    try:
        return subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=workdir, preexec_fn=die_with_parent())
    finally:
        log.close()  # the child holds its own descriptor


@dataclass(kw_only=True)
class ServerProcess:
    """A running server process with its working directory. Subclasses name the binary and log, and say how to
    wait until the server answers (``wait_ready``)."""

    workdir: Path
    process: subprocess.Popen[bytes]
    # What it was started with, for ``restart``.
    command: list[str] = field(default_factory=list)
    env: dict[str, str] | None = None

    host: ClassVar[str] = "127.0.0.1"
    name: ClassVar[str] = "server"
    log_name: ClassVar[str] = "server.log"
    stop_timeout_s: ClassVar[float] = 10.0

    @property
    def log_path(self) -> Path:
        return self.workdir / self.log_name

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def wait_ready(self, timeout_s: float) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        """Terminate (then kill, if it lingers) and remove the directory."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=self.stop_timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def kill(self) -> None:
        """``kill -9``: no shutdown and no flush, as a crash would leave it. The directory stays."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()

    def restart(self, *, ready_timeout_s: float) -> None:
        """Start it again with the same command on the same ports and directory (after ``kill``), and wait
        until it is ready: what a supervisor does after a crash."""
        if self.process.poll() is None:
            raise RuntimeError(f"{self.name} is still running; kill() it first")
        if not self.command:
            raise RuntimeError("this server was not started by start(); there is no command to restart it with")
        self.process = spawn(self.command, self.workdir, self.log_name, self.env)
        self.wait_ready(ready_timeout_s)

    def start_or_stop(self, ready_timeout_s: float) -> None:
        """Wait until the freshly started server is ready; stop it (and remove its directory) if it is not."""
        try:
            self.wait_ready(ready_timeout_s)
        except BaseException:
            self.stop()
            raise


Log = Callable[[str], None]
S = TypeVar("S", bound=ServerProcess)


def stderr_log(line: str) -> None:
    """The default ``Log``: progress lines on stderr, flushed at once."""
    print(line, file=sys.stderr, flush=True)


def poll_until_ready(server: ServerProcess, timeout_s: float, *, probe: Callable[[], bool],
                     ignored: type[Exception], interval_s: float, error: type[Exception], not_ready: str) -> None:
    """Call ``probe`` until it is true (``ignored`` raised counts as not yet), raising ``error`` (with the log's
    tail) if the process exits first or ``timeout_s`` passes; ``not_ready`` ends the timeout message, after the
    server's name."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = server.process.poll()
        if status is not None:
            raise error(f"{server.name} exited with status {status} while starting:\n{server.log_tail()}")
        with contextlib.suppress(ignored):
            if probe():
                return
        time.sleep(interval_s)
    raise error(f"{server.name} {not_ready} within {timeout_s:.0f} s:\n{server.log_tail()}")


@contextlib.contextmanager
def stopping(server: S) -> Iterator[S]:
    """Yield the started server and stop it afterwards."""
    try:
        yield server
    finally:
        server.stop()


def serve_main(argv: list[str], *, prepare: tuple[str, Callable[[], object], type[Exception]],
               running: Callable[[], contextlib.AbstractContextManager[S]], ready: Callable[[S], str],
               usage: str) -> int:
    """The ``python -m tests.servers.<name>`` command line: ``prepare`` (its name, the call that prints the
    binary's path, the error it may raise) or ``serve`` (run until Ctrl-C, after printing ``ready``)."""
    command = argv[0] if argv else ""
    prepare_name, prepare_binary, prepare_error = prepare
    if command == prepare_name:
        try:
            print(prepare_binary())
        except prepare_error as exc:
            print(exc, file=sys.stderr)
            return 1
        return 0
    if command == "serve":
        with running() as server:
            print(ready(server), flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                server.process.wait()
        return 0
    print(usage, file=sys.stderr)
    return 2
