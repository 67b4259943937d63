"""``feltsense bench serve``: the service as character runtimes use it, over loopback HTTP, under concurrent recalls.

Four phases, each timed on its own:

1. **Service.** Start ``feltsense serve`` on a free 127.0.0.1 port with a temporary data directory (or use the one
   at ``--url``). A self-started service is started with ``--dev``; the bench reads its development key from the
   data directory (it is not printed to the log).
2. **Load.** ``users`` × ``memories_per_user`` user turns through the typed client (``POST /v1/turns`` in batches
   of 500, sessions of 20 a day apart), then every session closed, so each memory has its trace. A service that
   queues the write-time pass (202) is given until its traces are written; the wait counts as load time.
3. **Saturation (closed loop).** ``concurrency`` asyncio workers send a fixed, seeded plan of ``requests`` recalls
   (random users, messages never seen before), each sending its next as soon as its last is answered. This finds
   the throughput the service sustains with ``concurrency`` recalls always in flight. A warm-up recall per user
   comes first and is reported apart: it loads each partition's index, which a running service keeps loaded.
4. **Paced (open loop).** Another ``requests`` recalls, sent on a fixed schedule of ``rate`` per second, with at
   most ``concurrency`` in flight: how character runtimes load a service (turns arrive when people type, not
   when the last answer came back). Latency is measured from each request's scheduled time, so a request held
   back by the in-flight cap or a slow service counts its wait (no coordinated omission).

Why two drives: in a closed loop with ``c`` requests always in flight, Little's law fixes the median latency near
``c / throughput``; at 16 in flight a 20 ms median would need about 800 recalls/s. The query embedding alone
costs about 4.5 ms of CPU per recall on this model (batching does not amortise it), so two cores cap near 440/s
before any other work. The headline keys therefore report the saturation throughput and the latency at the paced
rate; both phases are reported whole beside them.

Any non-200 answer or transport failure is an error. The bench runs on the same machine as the service, so its own
CPU use is part of what is measured; the figures are a floor, not the service alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import groupby
from pathlib import Path
from typing import Any

import httpx
from feltsense_client import (
    AsyncFeltsenseClient,
    CloseReport,
    FeltsenseAPIError,
    FeltsenseClient,
    RecallQuery,
    Turn,
)

from api.auth import DEV_KEY_FILE
from eval.bench import QUERIES, synthetic_turns

CHARACTER = "bench-ava"
BATCH_TURNS = 500
"""Turns per ``POST /v1/turns``: the API's maximum."""
SESSION_TURNS = 20
STARTUP_TIMEOUT_S = 180.0
"""The service loads the embedding model and classifier before it answers /healthz."""
TRACES_TIMEOUT_S = 1800.0
"""The longest wait for queued write-time jobs after the last close."""

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ServeBenchConfig:
    users: int = 100
    memories_per_user: int = 1000
    concurrency: int = 16
    requests: int = 2000
    """Per drive: the saturation drive and the paced drive each send this many."""
    rate: float = 100.0
    """Recalls per second offered by the paced drive (the load target's: p50 at most 25 ms, p99 at most 80)."""
    seed: int = 13
    url: str | None = None
    """Drive the service already running here instead of starting one."""
    key: str | None = None
    """The API key for ``url`` (a self-started service's development key is found on its own)."""
    duration_s: float | None = None
    """Soak instead of the two drives: the paced drive at ``rate`` for this long, reported per window."""
    window_s: float = 60.0
    """The soak's reporting window (a minute; shorter in tests)."""
    max_growth_mb: float = 64.0
    """The soak's stated bound on the service's memory growth from the first window to the last."""
    pid: int | None = None
    """The process of the service at ``url``, so its CPU per recall can be reported (a self-started one's is
    known)."""
    loaded: bool = False
    """The service at ``url`` already holds this run's users (same users, memories and seed): skip the load."""
    timeout_s: float = 60.0
    """Per request. Generous: under overload a slow answer is a latency to report, not an error."""

    def __post_init__(self) -> None:
        for name in ("users", "memories_per_user", "concurrency", "requests"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.duration_s is not None and not (self.duration_s >= self.window_s > 0):
            raise ValueError(f"duration must be at least one window ({self.window_s:g} s), got {self.duration_s}")
        if not self.rate > 0:
            raise ValueError(f"rate must be above 0 recalls per second, got {self.rate}")
        if self.loaded and self.url is None:
            raise ValueError("loaded needs a url: a self-started service starts empty")


@dataclass
class DriveStats:
    latencies_ms: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    first_errors: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    service_cpu_s: float | None = None
    """CPU the service's process used during the drive (all its threads), when its pid is known."""
    bench_cpu_s: float = 0.0
    """CPU this process (the load generator, on the same machine) used during the drive."""

    def record_error(self, exc: Exception) -> None:
        kind = f"{exc.status} {type(exc).__name__}" if isinstance(exc, FeltsenseAPIError) else type(exc).__name__
        self.errors[kind] += 1
        if len(self.first_errors) < 5:
            self.first_errors.append(f"{kind}: {exc}")


# -- the service -------------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class RunningService:
    url: str
    key: str | None
    pid: int | None = None
    """The service's process (self-started, or given with ``--pid``): the soak watches its memory, the drives its
    CPU."""


@contextlib.contextmanager
def self_started_service(progress: Progress) -> Iterator[RunningService]:
    """``feltsense serve`` on a free loopback port over a temporary data directory, stopped and removed on exit
    (also on Ctrl-C or an error, when the end of its log is shown first)."""
    root = Path(tempfile.mkdtemp(prefix="feltsense-bench-serve-"))
    log_path = root / "server.log"
    port = _free_port()
    process: subprocess.Popen[bytes] | None = None
    ok = False
    try:
        with log_path.open("wb") as log:
            # A session of its own: Ctrl-C reaches the bench only, which then stops the service in order.
            process = subprocess.Popen(
                [sys.executable, "-m", "eval.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
                 "--data-dir", str(root / "data"), "--dev"],
                stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
                start_new_session=True,
            )
        url = f"http://127.0.0.1:{port}"
        progress(f"service: starting on {url} (pid {process.pid}, data and log in {root})")
        started = time.perf_counter()
        _wait_for_health(url, process, log_path)
        key_file = root / "data" / DEV_KEY_FILE
        key = key_file.read_text().strip() if key_file.exists() else None
        progress(f"service: up in {time.perf_counter() - started:.1f} s"
                 f"{', using its development key' if key else ', no development key made: sending none'}")
        yield RunningService(url=url, key=key, pid=process.pid)
        ok = True
    finally:
        if process is not None:
            stop_service(process)
        if not ok and log_path.exists():
            tail = log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-30:]
            progress("service log (last lines):\n  " + "\n  ".join(tail))
        shutil.rmtree(root, ignore_errors=True)


def _wait_for_health(url: str, process: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the service exited with status {process.returncode} before it answered /healthz")
        try:
            if httpx.get(f"{url}/healthz", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the service did not answer /healthz within {STARTUP_TIMEOUT_S:.0f} s (log: {log_path})")


def stop_service(process: subprocess.Popen[bytes], *, grace_s: float = 30.0) -> None:
    """SIGTERM, as a supervisor stops the service; SIGKILL if it has not exited within ``grace_s``."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


# -- load --------------------------------------------------------------------------------------------------------


def user_ids(config: ServeBenchConfig) -> list[str]:
    return [f"bench-{config.seed}-u{n:04d}" for n in range(config.users)]


def user_turns(user: str, config: ServeBenchConfig, index: int) -> list[Turn]:
    """A user's ``memories_per_user`` turns (user turns only: one memory each), sessions of 20 a day apart."""
    turns = synthetic_turns(config.memories_per_user, character=CHARACTER, user=user,
                            seed=config.seed * 100_003 + index, per_session=SESSION_TURNS)
    # the bench's turns are the engine's; the client sends its own model of a turn
    return [Turn.model_validate(turn.model_dump()) for turn in turns if turn.role == "user"]


def load(client: FeltsenseClient, config: ServeBenchConfig, progress: Progress) -> dict[str, Any]:
    """Every user's turns in, every session closed; returns counts and the time it took."""
    started = time.perf_counter()
    stored = duplicates = sessions = traces_pending = queued = 0
    users = user_ids(config)
    for index, user in enumerate(users):
        turns = user_turns(user, config, index)
        for start in range(0, len(turns), BATCH_TURNS):
            report = client.ingest(turns[start : start + BATCH_TURNS])
            stored += report.memories
            duplicates += report.duplicates
        for session_id, session in groupby(turns, key=lambda turn: turn.session_id):
            closed = client.close_session(session_id, closed_at=list(session)[-1].timestamp + timedelta(minutes=10))
            if isinstance(closed, CloseReport):
                traces_pending += closed.traces_pending
            else:  # queued (202): the traces are written in the background; wait_for_traces waits for them
                queued += 1
            sessions += 1
        done = index + 1
        if done % max(1, len(users) // 10) == 0 or done == len(users):
            elapsed = time.perf_counter() - started
            memories = done * config.memories_per_user
            progress(f"load: {done}/{len(users)} users, {memories} memories, {elapsed:.0f} s "
                     f"({memories / elapsed:.0f} memories/s)")
    load_s = time.perf_counter() - started
    return {"load_s": round(load_s, 1), "memories_stored": stored, "duplicates": duplicates, "sessions": sessions,
            "traces_pending": traces_pending, "closes_queued": queued}


def wait_for_traces(service: RunningService, config: ServeBenchConfig, progress: Progress) -> float:
    """Wait until every user's last memory has its trace; returns the seconds waited.

    A service with a job queue answers a close with 202 and writes the traces afterwards. Driving it while that
    backlog drains would measure recall beside the write-time pass, so the drive waits. Jobs run in the order
    the sessions were closed (one in-process thread; arq workers nearly so), so each user's last memory, from
    its last session, is the one to watch. Its trace may be pending (the classifier failed): written is enough.
    """
    started = time.perf_counter()
    headers = {} if service.key is None else {"authorization": f"Bearer {service.key}"}
    with httpx.Client(base_url=service.url, headers=headers, timeout=config.timeout_s) as http:
        for user in user_ids(config):
            while True:
                response = http.get("/v1/memories", params={
                    "character_id": CHARACTER, "user_id": user, "offset": config.memories_per_user - 1, "limit": 1})
                response.raise_for_status()
                items = response.json()["items"]
                if items and items[0]["trace"] is not None:
                    break
                if time.perf_counter() - started > TRACES_TIMEOUT_S:
                    raise RuntimeError(f"the write-time jobs did not finish within {TRACES_TIMEOUT_S:.0f} s")
                time.sleep(0.5)
    waited = time.perf_counter() - started
    progress(f"load: the queued write-time jobs finished {waited:.1f} s after the last close")
    return waited


# -- drive -------------------------------------------------------------------------------------------------------


def process_cpu_s(pid: int | None) -> float | None:
    """User plus system CPU seconds a process has used, every thread, from /proc (Linux); None when unknown."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def with_cpu(pid: int | None, running: Awaitable[DriveStats]) -> DriveStats:
    """A drive's stats, with the CPU the service (``pid``) and this process used while it ran."""
    service_before, bench_before = process_cpu_s(pid), time.process_time()
    stats = await running
    service_after = process_cpu_s(pid)
    stats.bench_cpu_s = time.process_time() - bench_before
    if service_before is not None and service_after is not None:
        stats.service_cpu_s = service_after - service_before
    return stats


def recall_plan(config: ServeBenchConfig, phase: str) -> list[RecallQuery]:
    """The seeded plan: a random user and a message never seen before (phase and counter suffix) per request."""
    rng = random.Random(f"{config.seed}-{phase}")
    users = user_ids(config)
    at = _after_last_turn(config)
    return [
        RecallQuery(character_id=CHARACTER, user_id=rng.choice(users), session_id="bench-live", at=at,
                    message=f"{rng.choice(QUERIES)} ({config.seed}-{phase}-{i})")
        for i in range(config.requests)
    ]


def _after_last_turn(config: ServeBenchConfig) -> datetime:
    """A day after every user's last session (``synthetic_turns`` starts each user on the same day)."""
    first = synthetic_turns(1, character=CHARACTER, user="x", seed=0)[0].timestamp
    return first + timedelta(days=config.memories_per_user // SESSION_TURNS + 1)


async def _timed_recall(client: AsyncFeltsenseClient, query: RecallQuery, stats: DriveStats, since_ns: int) -> None:
    """One recall: its latency from ``since_ns`` into ``stats``, or its error."""
    try:
        await client.recall(query)
    except Exception as exc:  # any failure is an error of the run; the run goes on
        stats.record_error(exc)
    else:
        stats.latencies_ms.append((time.perf_counter_ns() - since_ns) / 1e6)


async def drive(
    client: AsyncFeltsenseClient, plan: Sequence[RecallQuery], concurrency: int
) -> DriveStats:
    """``concurrency`` workers work through ``plan`` once; each request's latency or error is recorded."""
    stats = DriveStats()
    queue = iter(plan)  # shared by the workers; asyncio runs one at a time between awaits, so no lock is needed

    async def worker() -> None:
        for query in queue:
            await _timed_recall(client, query, stats, time.perf_counter_ns())

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    stats.elapsed_s = time.perf_counter() - started
    return stats


async def drive_paced(
    client: AsyncFeltsenseClient, plan: Sequence[RecallQuery], concurrency: int, rate: float
) -> DriveStats:
    """Send ``plan`` on a fixed schedule, request ``i`` due at ``i / rate`` seconds, at most ``concurrency`` in
    flight. Latency runs from the scheduled time, so waiting for a free slot is part of it."""
    stats = DriveStats()
    slots = asyncio.Semaphore(concurrency)

    async def one(query: RecallQuery, due_ns: int) -> None:
        try:
            await _timed_recall(client, query, stats, due_ns)
        finally:
            slots.release()

    loop = asyncio.get_running_loop()
    tasks: list[asyncio.Task[None]] = []
    started_ns = time.perf_counter_ns()
    for i, query in enumerate(plan):
        due_ns = started_ns + round(i * 1e9 / rate)
        delay = (due_ns - time.perf_counter_ns()) / 1e9
        if delay > 0:
            await asyncio.sleep(delay)
        await slots.acquire()
        tasks.append(loop.create_task(one(query, due_ns)))
    await asyncio.gather(*tasks)
    stats.elapsed_s = (time.perf_counter_ns() - started_ns) / 1e9
    return stats


def percentile(ordered: Sequence[float], fraction: float) -> float:
    """Nearest rank on sorted samples (as ``eval.bench`` computes its p99s); 0 when there are none."""
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def summarize(stats: DriveStats) -> dict[str, Any]:
    ordered = sorted(stats.latencies_ms)
    answered = max(1, len(ordered) + sum(stats.errors.values()))
    return {
        "throughput_rps": round(len(ordered) / stats.elapsed_s, 1) if stats.elapsed_s else 0.0,
        "p50_ms": round(percentile(ordered, 0.50), 2),
        "p99_ms": round(percentile(ordered, 0.99), 2),
        "errors": sum(stats.errors.values()),
        "p90_ms": round(percentile(ordered, 0.90), 2),
        "max_ms": round(ordered[-1], 2) if ordered else 0.0,
        "ok": len(ordered),
        "elapsed_s": round(stats.elapsed_s, 2),
        # CPU per recall: the service's (every thread; None when its process is unknown) and the load generator's
        "service_cpu_ms_per_recall": (None if stats.service_cpu_s is None
                                      else round(1000 * stats.service_cpu_s / answered, 2)),
        "bench_cpu_ms_per_recall": round(1000 * stats.bench_cpu_s / answered, 2),
    }


@dataclass
class Drives:
    warm: DriveStats
    saturation: DriveStats
    paced: DriveStats


async def _warm_and_drive(service: RunningService, config: ServeBenchConfig, progress: Progress) -> Drives:
    at = _after_last_turn(config)
    warm_plan = [RecallQuery(character_id=CHARACTER, user_id=user, message=f"{QUERIES[0]} (warm-up)",
                             session_id="bench-live", at=at) for user in user_ids(config)]
    async with AsyncFeltsenseClient(service.url, api_key=service.key, timeout_s=config.timeout_s,
                                    max_connections=config.concurrency) as client:
        warm = await drive(client, warm_plan, config.concurrency)
        progress(f"warm-up: {len(warm_plan)} recalls, one per user, in {warm.elapsed_s:.1f} s")
        progress(f"saturation: {config.requests} recalls over {config.users} users, "
                 f"{config.concurrency} always in flight")
        saturation = await with_cpu(service.pid, drive(client, recall_plan(config, "saturation"), config.concurrency))
        progress(f"saturation: {len(saturation.latencies_ms) / saturation.elapsed_s:.1f} recalls/s")
        progress(f"paced: {config.requests} recalls at {config.rate:g}/s, at most {config.concurrency} in flight")
        paced = await with_cpu(service.pid, drive_paced(client, recall_plan(config, "paced"), config.concurrency,
                                                       config.rate))
    return Drives(warm=warm, saturation=saturation, paced=paced)


# -- the whole run -----------------------------------------------------------------------------------------------


def rss_mb(pid: int | None) -> float | None:
    """Resident memory of a process, from /proc (Linux); None when unknown."""
    if pid is None:
        return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


async def soak(service: RunningService, config: ServeBenchConfig, progress: Progress) -> dict[str, Any]:
    """The paced drive for ``duration_s``, a window at a time: per-window percentiles, errors and memory."""
    assert config.duration_s is not None
    windows = max(1, int(config.duration_s // config.window_s))
    per_window = max(1, round(config.rate * config.window_s))
    rows: list[dict[str, Any]] = []
    every: list[float] = []
    errors = 0
    async with AsyncFeltsenseClient(service.url, api_key=service.key, timeout_s=config.timeout_s,
                                    max_connections=config.concurrency) as client:
        warm_plan = [RecallQuery(character_id=CHARACTER, user_id=user, message=f"{QUERIES[0]} (warm-up)",
                                 session_id="bench-live", at=_after_last_turn(config)) for user in user_ids(config)]
        await drive(client, warm_plan, config.concurrency)
        for window in range(1, windows + 1):
            plan = recall_plan(ServeBenchConfig(**{**config.__dict__, "requests": per_window}), f"soak{window}")
            stats = await drive_paced(client, plan, config.concurrency, config.rate)
            row = {"window": window, **{k: v for k, v in summarize(stats).items() if k != "max_ms"},
                   "rss_mb": rss_mb(service.pid)}
            rows.append(row)
            every.extend(stats.latencies_ms)
            errors += row["errors"]
            progress(f"soak window {window}/{windows}: {row['throughput_rps']} recalls/s, p50 {row['p50_ms']} ms, "
                     f"p99 {row['p99_ms']} ms, errors {row['errors']}, rss {row['rss_mb']} MB")
    first, last = rows[0]["rss_mb"], rows[-1]["rss_mb"]
    growth = None if first is None or last is None else round(last - first, 1)
    ordered = sorted(every)
    return {
        "throughput_rps": round(len(ordered) / (windows * config.window_s), 1),
        "p50_ms": round(percentile(ordered, 0.5), 2),
        "p99_ms": round(percentile(ordered, 0.99), 2),
        "errors": errors,
        "windows": rows,
        "rss_growth_mb": growth,
        "max_growth_mb": config.max_growth_mb,
        "within_bound": growth is None or growth <= config.max_growth_mb,
    }


def bench_serve(config: ServeBenchConfig, *, progress: Progress | None = None) -> dict[str, Any]:
    """Start (or use) the service, load it, warm it, drive it; the figures, the four headline keys first."""
    say = progress or (lambda _msg: None)
    with contextlib.ExitStack() as stack:
        if config.url is None:
            service = stack.enter_context(self_started_service(say))
        else:
            service = RunningService(url=config.url.rstrip("/"), key=config.key, pid=config.pid)
        if config.loaded:
            say("load: skipped (the service already holds this run's users)")
            loaded: dict[str, Any] = {"load_s": 0.0, "closes_queued": 0, "loaded_before": True}
        else:
            with FeltsenseClient(service.url, api_key=service.key, timeout_s=max(config.timeout_s, 300.0)) as client:
                say(f"load: {config.users} users x {config.memories_per_user} memories "
                    f"(batches of {BATCH_TURNS} turns, sessions of {SESSION_TURNS})")
                loaded = load(client, config, say)
        if loaded["closes_queued"]:
            loaded["write_backlog_s"] = round(wait_for_traces(service, config, say), 1)
            loaded["load_s"] = round(loaded["load_s"] + loaded["write_backlog_s"], 1)
        if not config.loaded:
            loaded["load_memories_per_s"] = round(
                config.users * config.memories_per_user / max(loaded["load_s"], 0.1), 1)
        if config.duration_s is not None:
            soaked = asyncio.run(soak(service, config, say))
            return {**soaked, "rate": config.rate, "concurrency": config.concurrency, "users": config.users,
                    "memories_per_user": config.memories_per_user, **loaded,
                    "service": "self-started" if config.url is None else config.url}
        drives = asyncio.run(_warm_and_drive(service, config, say))
    for line in drives.saturation.first_errors + drives.paced.first_errors + drives.warm.first_errors:
        say(f"error: {line}")
    warm_ordered = sorted(drives.warm.latencies_ms)
    saturation, paced = summarize(drives.saturation), summarize(drives.paced)
    return {
        # The headline: what the service sustains with `concurrency` always in flight, and the latency runtimes
        # see at the paced rate. Errors count both drives.
        "throughput_rps": saturation["throughput_rps"],
        "p50_ms": paced["p50_ms"],
        "p99_ms": paced["p99_ms"],
        "errors": saturation["errors"] + paced["errors"],
        "saturation": saturation,
        "paced": {**paced, "offered_rps": config.rate},
        "error_kinds": dict(drives.saturation.errors + drives.paced.errors),
        "requests": config.requests,
        "concurrency": config.concurrency,
        "rate": config.rate,
        "users": config.users,
        "memories_per_user": config.memories_per_user,
        **loaded,
        "warmup_p50_ms": round(percentile(warm_ordered, 0.5), 2),
        "warmup_errors": sum(drives.warm.errors.values()),
        "service": "self-started" if config.url is None else config.url,
    }
