"""A real Weaviate server for the tests marked ``weaviate``: built from its Go module, cached, run on loopback.

The server is built once per machine with the ordinary Go command, at a pinned release tag::

    GOBIN=<staging> go install github.com/weaviate/weaviate/cmd/weaviate-server@v1.32.0

and cached at ``$FELTSENSE_CACHE_DIR/weaviate/<tag>/weaviate-server`` (``~/.cache/feltsense`` by default). A
cold build downloads the modules and compiles for many minutes, so it prints Go's download lines and a line
every 30 s; ``make test`` runs it as a step of its own before pytest so that the wait is visible. A failed
build raises with Go's own output: there is no fake server to fall back on.

Each run starts the binary on free 127.0.0.1 ports with a temporary data directory, anonymous access and no
vectorizer modules, waits until it answers ready, and stops it (terminate, then kill) and removes the data. For
fault tests, ``kill`` crashes it (SIGKILL, data kept) and ``restart`` brings it back on the same ports and data.

    python -m tests.servers.weaviate build    # build or reuse the cached binary, print its path
    python -m tests.servers.weaviate serve    # run a throwaway server until Ctrl-C (for manual runs)
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.servers.process import Log, ServerProcess, free_ports, poll_until_ready, serve_main, spawn, stopping
from tests.servers.process import stderr_log as _stderr

WEAVIATE_VERSION = "v1.32.0"
PACKAGE = "github.com/weaviate/weaviate/cmd/weaviate-server"
BUILD_TIMEOUT_S = 45 * 60  # a cold build takes 4 to 10 minutes; CI as a whole must stay well inside 90
READY_TIMEOUT_S = 120.0
HEARTBEAT_S = 30.0


class WeaviateBuildError(RuntimeError):
    """The Go build failed; the message carries Go's own output."""


class WeaviateStartError(RuntimeError):
    """The server did not come up; the message carries the tail of its log."""


def cache_root() -> Path:
    configured = os.environ.get("FELTSENSE_CACHE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "feltsense"


def binary_path(version: str = WEAVIATE_VERSION) -> Path:
    return cache_root() / "weaviate" / version / "weaviate-server"


def find_go() -> str:
    """The Go command: ``$GO``, then ``go`` on PATH, then the official installer's location."""
    for candidate in (os.environ.get("GO"), shutil.which("go"), "/usr/local/go/bin/go"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise WeaviateBuildError(
        "no Go toolchain found (looked at $GO, `go` on PATH and /usr/local/go/bin/go); install Go from "
        f"https://go.dev/dl/ to build {PACKAGE}@{WEAVIATE_VERSION}"
    )


def _usable(binary: Path) -> bool:
    return binary.is_file() and os.access(binary, os.X_OK)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock across processes, so two test runs never build into the same cache at once."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _is_package_line(line: str) -> bool:
    # `go install -v` names each package as it compiles it: an import path alone on its line.
    return bool(line) and " " not in line and ":" not in line


def build(version: str = WEAVIATE_VERSION, *, log: Log = _stderr, timeout_s: float = BUILD_TIMEOUT_S) -> Path:
    """The cached server binary, built first if it is absent. Raises WeaviateBuildError with Go's output."""
    target = binary_path(version)
    if _usable(target):
        log(f"weaviate-server {version}: using the cached build at {target}")
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _locked(target.parent / ".build.lock"):
        if _usable(target):  # another process built it while this one waited for the lock
            log(f"weaviate-server {version}: using the cached build at {target}")
            return target
        go = find_go()
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=target.parent))
        try:
            _go_install(go, version, staging, log=log, timeout_s=timeout_s)
            built = staging / "weaviate-server"
            if not _usable(built):
                raise WeaviateBuildError(f"go install succeeded but left no binary at {built}")
            os.replace(built, target)  # atomic: a half-written binary is never seen as cached
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _go_install(go: str, version: str, staging: Path, *, log: Log, timeout_s: float) -> None:
    command = [go, "install", "-v", f"{PACKAGE}@{version}"]
    log(f"building weaviate-server {version}: GOBIN={staging} {' '.join(command)}")
    log("  (a cold build downloads the modules and compiles for several minutes; later runs reuse the binary)")
    started = time.monotonic()
    output: list[str] = []
    compiled = 0

    process = subprocess.Popen(
        command, env={**os.environ, "GOBIN": str(staging)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, bufsize=1,
    )

    def pump() -> None:
        nonlocal compiled
        assert process.stdout is not None
        for raw in process.stdout:
            line = raw.rstrip("\n")
            output.append(line)
            if _is_package_line(line):
                compiled += 1
            else:
                log(f"  {line}")

    reader = threading.Thread(target=pump, name="go-install-output", daemon=True)
    reader.start()
    try:
        while True:
            try:
                status = process.wait(timeout=HEARTBEAT_S)
                break
            except subprocess.TimeoutExpired:
                elapsed = time.monotonic() - started
                if elapsed > timeout_s:
                    process.kill()
                    process.wait()
                    raise WeaviateBuildError(
                        f"`{' '.join(command)}` did not finish within {timeout_s / 60:.0f} minutes"
                    ) from None
                log(f"  ... still building: {elapsed / 60:.1f} min elapsed, {compiled} packages compiled")
    except BaseException:
        if process.poll() is None:
            process.kill()
            process.wait()
        raise
    finally:
        reader.join(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
    elapsed = time.monotonic() - started
    if status != 0:
        errors = [line for line in output if not _is_package_line(line) and not line.startswith("go: downloading")]
        raise WeaviateBuildError(
            f"`GOBIN={staging} {' '.join(command)}` failed with exit status {status} after {elapsed:.0f} s:\n"
            + "\n".join(errors or output[-50:])
        )
    log(f"built weaviate-server {version} in {elapsed / 60:.1f} min ({compiled} packages compiled)")


@dataclass(kw_only=True)
class WeaviateServer(ServerProcess):
    """A running server. ``url`` is its HTTP address; the gRPC port is on the same host (127.0.0.1)."""

    http_port: int
    grpc_port: int

    name = "weaviate-server"
    log_name = "weaviate.log"
    stop_timeout_s = 30.0

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.http_port}"

    def drop_collections(self, prefix: str) -> None:
        """Delete the collections whose names start with ``prefix`` (one test's data)."""
        schema = httpx.get(f"{self.url}/v1/schema", timeout=30).raise_for_status().json()
        for collection in schema.get("classes") or []:
            if collection["class"].startswith(prefix):
                httpx.delete(f"{self.url}/v1/schema/{collection['class']}", timeout=30).raise_for_status()

    def restart(self, *, ready_timeout_s: float = READY_TIMEOUT_S) -> None:
        """Every port is kept, Raft's among them, so the node finds itself where its log says it was."""
        super().restart(ready_timeout_s=ready_timeout_s)

    def wait_ready(self, timeout_s: float) -> None:
        ready = f"{self.url}/v1/.well-known/ready"
        poll_until_ready(self, timeout_s, probe=lambda: httpx.get(ready, timeout=2).status_code == 200,
                         ignored=httpx.TransportError, interval_s=0.2, error=WeaviateStartError,
                         not_ready="was not ready")


def start(binary: Path, *, ready_timeout_s: float = READY_TIMEOUT_S) -> WeaviateServer:
    """Start the binary on free loopback ports with a fresh data directory; return once it is ready."""
    http_port, grpc_port, gossip_port, data_port, raft_port, raft_rpc_port = free_ports(6)
    workdir = Path(tempfile.mkdtemp(prefix="feltsense-weaviate-"))
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workdir),
        "PERSISTENCE_DATA_PATH": str(workdir / "data"),
        "AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED": "true",
        "DEFAULT_VECTORIZER_MODULE": "none",
        "ENABLE_MODULES": "",
        "CLUSTER_HOSTNAME": "node1",
        "CLUSTER_ADVERTISE_ADDR": "127.0.0.1",
        "CLUSTER_BIND_ADDR": "127.0.0.1",
        "CLUSTER_GOSSIP_BIND_PORT": str(gossip_port),
        "CLUSTER_DATA_BIND_PORT": str(data_port),
        "RAFT_PORT": str(raft_port),
        "RAFT_INTERNAL_RPC_PORT": str(raft_rpc_port),
        "RAFT_JOIN": "node1",
        "RAFT_BOOTSTRAP_EXPECT": "1",
        "GRPC_PORT": str(grpc_port),
        "DISABLE_TELEMETRY": "true",
    }
    command = [str(binary), "--host", "127.0.0.1", "--port", str(http_port), "--scheme", "http"]
    server = WeaviateServer(http_port=http_port, grpc_port=grpc_port, workdir=workdir,
                            process=spawn(command, workdir, WeaviateServer.log_name, env), command=command, env=env)
    server.start_or_stop(ready_timeout_s)
    return server


@contextlib.contextmanager
def running(version: str = WEAVIATE_VERSION, *, log: Log = _stderr) -> Iterator[WeaviateServer]:
    """Build (or reuse) the binary, start a server, and stop it afterwards."""
    with stopping(start(build(version, log=log))) as server:
        yield server


def _ready_message(server: WeaviateServer) -> str:
    return (f"weaviate-server {WEAVIATE_VERSION} ready (Ctrl-C stops it and deletes its data):\n"
            f"  FELTSENSE_STORE=weaviate FELTSENSE_WEAVIATE__URL={server.url} "
            f"FELTSENSE_WEAVIATE__GRPC_PORT={server.grpc_port}")


def main(argv: list[str]) -> int:
    return serve_main(argv, prepare=("build", build, WeaviateBuildError), running=running, ready=_ready_message,
                      usage="usage: python -m tests.servers.weaviate build|serve")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
