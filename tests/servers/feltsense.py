"""The real service for end-to-end tests: ``python -m api.cli serve --dev`` on a free loopback port over a data
directory, started, stopped (SIGTERM), crashed (SIGKILL) and started again on the same port and data."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from eval.serve_bench import stop_service
from tests.servers.process import die_with_parent, free_ports

REPO = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT_S = 90.0
"""It loads the embedding model and the classifier before it answers /healthz."""


def _terminate(process: subprocess.Popen[bytes] | None) -> None:
    """SIGTERM, as a supervisor stops it; SIGKILL if it has not exited within 20 s."""
    if process is not None:
        stop_service(process, grace_s=20.0)


class FeltsenseService:
    def __init__(self, data_dir: Path, *, env: dict[str, str] | None = None, cli: str = "api.cli",
                 flags: tuple[str, ...] = ("--dev",)) -> None:
        """``python -m <cli> serve`` on a free port over ``data_dir``, with ``flags`` (by default ``--dev``)."""
        self.data_dir = data_dir
        self.cli, self.flags = cli, flags
        (self.port,) = free_ports(1)
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = env or {}
        self.log = data_dir.parent / "service.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, *, timeout_s: float = STARTUP_TIMEOUT_S) -> None:
        """Start it (again: the same port and data directory) and wait until /healthz answers."""
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as log:  # a file, not a pipe nobody reads: the service logs every recall
            self.process = subprocess.Popen(
                [sys.executable, "-m", self.cli, "serve", "--port", str(self.port), "--data-dir",
                 str(self.data_dir), *self.flags],
                env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env}, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, cwd=REPO,
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"the service exited early:\n{self.log.read_text(errors='replace')}")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            time.sleep(0.1)
        self.stop()
        raise AssertionError(f"the service did not come up within {timeout_s:.0f} s")

    def kill(self) -> None:
        """SIGKILL: no shutdown, no draining of queued work, as a crash would leave it."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()

    def stop(self) -> None:
        _terminate(self.process)
        self.process = None

    def headers(self) -> dict[str, str]:
        """The development key ``serve --dev`` keeps in the data directory."""
        return {"Authorization": f"Bearer {(self.data_dir / 'dev-key').read_text().strip()}"}


def module_service(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[FeltsenseService]:
    """The body of a module-scoped fixture: the service on a fresh data directory named after ``name``, started
    before the module's first test and stopped after its last."""
    running = FeltsenseService(tmp_path_factory.mktemp(name) / "data")
    running.start()
    yield running
    running.stop()


class FeltsenseWorker:
    """``python -m <cli> worker``: the real arq worker as its own process, with ``env`` over this one's, logging to
    ``log``. It dies with the test run (``die_with_parent``) if the run is killed outright."""

    def __init__(self, log: Path, *, env: dict[str, str] | None = None, cli: str = "api.cli") -> None:
        self.log, self.cli, self.env = log, cli, env or {}
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start it; it takes jobs once it has loaded the models (queued ones wait in Redis meanwhile)."""
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", self.cli, "worker"],
                env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env}, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, cwd=REPO, preexec_fn=die_with_parent(),
            )

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        _terminate(self.process)
        self.process = None
