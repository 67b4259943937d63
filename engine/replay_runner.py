"""Tuning replays (``engine.transcripts.compare.compare_profiles``) run off the request threads, within limits.

A replay is seconds of CPU, almost all of it model calls (an embedding per turn and per probe, under each of the
two profiles). Measured on the 2-core development machine (December 2026, local MiniLM and classifier): 5 to 7 s
for 400 short turns; 55 s for 400 turns of 100 words (200 probes); 104 s for 400 one-turn sessions of 100 words
(each a probe). On issue 13's machine 400 turns took about 18 s, and eight replays on the request threads held
the GIL and made a 15 ms recall take 91 s. So the service runs replays in a worker process at a lower CPU priority
(``ProcessWorkers``, about 365 MB resident once its models are loaded): the serving process keeps the GIL and,
when the cores are contended, the processor. Apps built directly over a test engine run them on a thread
(``ThreadWorkers``), under the same limits:

- one replay at a time per organisation: another is ``Busy`` (429, Retry-After);
- at most the workers plus ``MAX_WAITING_REPLAYS`` admitted in all: beyond, ``BackendUnavailable`` (503);
- a transcript whose turns x probes exceed ``MAX_REPLAY_TURN_PROBES`` is refused before it runs (422);
- a replay unfinished ``REPLAY_TIMEOUT_S`` after it was admitted is stopped (503): the worker raises
  ``ReplayDeadline`` at its next model call, and a worker process that has not answered ``ABANDON_AFTER_S`` later
  is killed and replaced.

What crosses to a worker process is plain and picklable: the job (transcript, two profiles, deadline) and, once,
how to build the embedder and classifier (``ComponentsFromSettings``); the outcome comes back as a value, since
the engine's errors do not unpickle (their keyword-only arguments are not in ``args``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import multiprocessing
import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import numpy as np
from numpy.typing import NDArray

from engine.domain.errors import BackendUnavailable, Busy, FeltsenseError, InvalidInput
from engine.domain.ports import Classifier, Embedder, TraceClassification
from engine.domain.tuning import TuningProfile
from engine.factory import build_classifier, build_embedder
from engine.settings import Settings
from engine.transcripts.compare import MAX_REPLAY_TURNS, ReplayComparison, compare_profiles
from engine.transcripts.model import Transcript

log = logging.getLogger("feltsense.replays")
_Model = TypeVar("_Model", Embedder, Classifier)

REPLAY_TIMEOUT_S = 60.0
"""From admission to answer: three times the 18 s that 400 turns cost on issue 13's machine."""
ABANDON_AFTER_S = 10.0
"""How long past the deadline a worker process may take to notice it before it is killed."""
MAX_WAITING_REPLAYS = 3
"""Admitted replays waiting for a worker, across all organisations."""
MAX_REPLAY_TURN_PROBES = 20_000
"""Each probe recalls over the turns before it, so that part of the cost grows with their product: 400 turns with
50 probes, or 200 with 100 (the shared example transcripts are below 20). Measured, it is the smaller part (about
3 us per turn and probe under each profile on the embedded store); the model calls, which grow with the length of
the turns, are bounded by the deadline."""
REPLAY_NICE = 10
"""Added to a worker process's niceness: under contention the serving process gets about nine tenths of a core."""
ORPHAN_CHECK_S = 1.0
"""How often a worker process checks that the service that started it is still there."""
RETRY_AFTER_TIMEOUT_S = 5
"""Retry-After for a replay stopped at its deadline: its worker is free again at once, the caller needs a moment
to shorten the transcript."""

Components = Callable[[], tuple[Embedder, Classifier]]
"""Builds the embedder and classifier a replay uses; a worker process calls it once, so it must pickle."""


class ReplayDeadline(BaseException):
    """Raised inside a replay at its deadline. Not an ``Exception``: the engine degrades on an embedder or
    classifier failure (``except Exception``), and a deadline must stop the replay, not make it lexical."""


@dataclass(frozen=True)
class ComponentsFromSettings:
    """The service's own embedder and classifier, built from its settings in the worker process."""

    settings: Settings

    def __call__(self) -> tuple[Embedder, Classifier]:
        return build_embedder(self.settings), build_classifier(self.settings)


def check_cost(transcript: Transcript) -> None:
    """Refuse (422) a transcript above the replay bounds, before it waits for a worker."""
    turns = sum(len(session.turns) for session in transcript.sessions)
    if turns > MAX_REPLAY_TURNS:
        raise InvalidInput(f"the transcript has {turns} turns; a replay takes at most {MAX_REPLAY_TURNS}",
                           field="transcript")
    probes = transcript.probe_count
    if turns * probes > MAX_REPLAY_TURN_PROBES:
        raise InvalidInput(
            f"the transcript has {turns} turns and {probes} probes ({turns * probes} turns x probes); a replay takes "
            f"at most {MAX_REPLAY_TURN_PROBES} turns x probes (each probe recalls over the turns before it)",
            field="transcript",
        )


# -- what runs in a worker ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReplayJob:
    transcript: Transcript
    current: TuningProfile
    proposed: TuningProfile
    deadline: float
    """Wall-clock time (``time.time()``): the one clock a worker process and the service share."""


@dataclass(frozen=True)
class _Raised:
    """An exception as data, rebuilt on the other side as it was (``pickle`` would call ``cls(*args)``)."""

    kind: type[BaseException]
    args: tuple[Any, ...]
    state: dict[str, Any]

    def rebuild(self) -> BaseException:
        exc = self.kind.__new__(self.kind)
        exc.args = self.args
        exc.__dict__.update(self.state)
        return exc


@dataclass(frozen=True)
class ReplayOutcome:
    comparison: ReplayComparison | None = None
    timed_out: bool = False
    raised: _Raised | None = None


def _check(deadline: float) -> None:
    if time.time() >= deadline:
        raise ReplayDeadline


class _Wrapper(Generic[_Model]):
    """What both wrappers hold: the wrapped model, and ``before`` (when given), called ahead of each of its calls."""

    def __init__(self, inner: _Model, before: Callable[[], None] | None = None) -> None:
        self._inner: _Model = inner
        self._before = before

    def _ahead(self) -> None:
        if self._before is not None:
            self._before()


class EmbedderWrapper(_Wrapper[Embedder]):
    """An embedder that passes everything to ``inner``, calling ``before`` (when given) ahead of each ``embed``; a
    subclass may override ``embed`` to add to it (a memo, in the evaluations)."""

    def __init__(self, inner: Embedder, before: Callable[[], None] | None = None) -> None:
        super().__init__(inner, before)
        self.model_id, self.dimension = inner.model_id, inner.dimension

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self._ahead()
        return self._inner.embed(texts)


class ClassifierWrapper(_Wrapper[Classifier]):
    """A classifier that passes everything to ``inner``, calling ``before`` (when given) ahead of each
    ``classify``; a subclass may override ``classify`` to add to it."""

    def __init__(self, inner: Classifier, before: Callable[[], None] | None = None) -> None:
        super().__init__(inner, before)
        self.name, self.per_sentence = inner.name, inner.per_sentence

    def classify(self, texts: Sequence[str], embeddings: NDArray[np.float32]) -> Sequence[TraceClassification]:
        self._ahead()
        return self._inner.classify(texts, embeddings)


def run_job(job: ReplayJob, embedder: Embedder, classifier: Classifier) -> ReplayOutcome:
    """Run one replay until its deadline; every model call is a point where it stops once the deadline passed."""
    deadline = functools.partial(_check, job.deadline)
    try:
        deadline()
        comparison = compare_profiles(
            job.transcript, job.current, job.proposed, embedder=EmbedderWrapper(embedder, deadline),
            classifier=ClassifierWrapper(classifier, deadline),
        )
    except ReplayDeadline:
        return ReplayOutcome(timed_out=True)
    except Exception as exc:
        if not isinstance(exc, FeltsenseError):
            log.exception("replay of %r failed", job.transcript.id)  # the traceback stays in this process
        return ReplayOutcome(raised=_Raised(type(exc), exc.args, dict(vars(exc))))
    return ReplayOutcome(comparison=comparison)


_worker_components: tuple[Embedder, Classifier] | None = None
"""In a worker process: what ``_start_worker`` built, for every job it runs."""


def _start_worker(components: Components, nice: int, scratch: str, service_pid: int) -> None:
    global _worker_components
    # Ctrl-C reaches the whole process group; the service stops its workers itself (ProcessWorkers.close).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_exit_when_orphaned, args=(service_pid, scratch), name="feltsense-orphan-check",
                     daemon=True).start()
    if nice and hasattr(os, "nice"):
        os.nice(nice)
    # Replay memories go under the pool's own directory, which the service removes with the pool: a killed
    # worker cannot clean up after itself.
    tempfile.tempdir = scratch
    _worker_components = components()
    from prompts.tokens import default_counter

    default_counter()  # loaded once per process (about 1.7 s), before the first replay rather than in it


def _exit_when_orphaned(service_pid: int, scratch: str) -> None:
    # A worker outlives a service that dies without closing it: killed, or stopped with SIGTERM (uvicorn raises
    # the signal again once it has shut down, so no `finally` of the service runs). It holds both ends of its own
    # job queue, so it never reads an end of file, and would wait for a job forever.
    while os.getppid() == service_pid:
        time.sleep(ORPHAN_CHECK_S)
    shutil.rmtree(scratch, ignore_errors=True)
    os._exit(1)


def _run_in_worker(job: ReplayJob) -> ReplayOutcome:
    if _worker_components is None:  # pragma: no cover - _start_worker runs before any job
        raise RuntimeError("the replay worker was not started")
    return run_job(job, *_worker_components)


def _ready() -> None:
    """A no-op job: submitting one starts a worker process."""


# -- where replays run -----------------------------------------------------------------------------------------


class Workers(Protocol):
    """Where admitted replays run. ``count`` run at once; more wait in ``submit``'s queue."""

    @property
    def count(self) -> int: ...

    def submit(self, job: ReplayJob) -> Future[ReplayOutcome]: ...

    def abandon(self) -> None:
        """A replay did not answer long past its deadline: stop what runs, if that can be done."""
        ...

    def close(self) -> None: ...


class ThreadWorkers:
    """Replays on a thread of this process, one at a time: for apps built directly over a test engine.

    A thread cannot be killed; past its deadline a replay stops at its next model call."""

    def __init__(self, components: Components) -> None:
        self._components = components
        self._one_at_a_time = threading.Lock()

    @property
    def count(self) -> int:
        return 1

    def submit(self, job: ReplayJob) -> Future[ReplayOutcome]:
        future: Future[ReplayOutcome] = Future()

        def run() -> None:
            with self._one_at_a_time:
                if not future.set_running_or_notify_cancel():
                    return
                try:
                    future.set_result(run_job(job, *self._components()))
                except BaseException as exc:
                    future.set_exception(exc)

        # A thread per admitted replay (at most workers + MAX_WAITING_REPLAYS): nothing outlives its job.
        threading.Thread(target=run, name="feltsense-replay").start()
        return future

    def abandon(self) -> None:
        pass

    def close(self) -> None:
        pass


@dataclass(frozen=True)
class _Pool:
    executor: ProcessPoolExecutor
    scratch: Path
    """Where its workers make their replay memories."""


class ProcessWorkers:
    """Replays in ``workers`` spawned processes, each at ``nice`` lower CPU priority, built once with
    ``components``. ``close`` (or ``abandon``) kills them; a pool left broken by a dead worker is replaced."""

    def __init__(self, components: Components, *, workers: int = 1, nice: int = REPLAY_NICE) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self._components = components
        self._workers = workers
        self._nice = nice
        self._lock = threading.Lock()
        self._pool = self._new_pool()

    @property
    def count(self) -> int:
        return self._workers

    def _new_pool(self) -> _Pool:
        scratch = Path(tempfile.mkdtemp(prefix="feltsense-replays-"))
        executor = ProcessPoolExecutor(max_workers=self._workers, mp_context=multiprocessing.get_context("spawn"),
                                       initializer=_start_worker,
                                       initargs=(self._components, self._nice, str(scratch), os.getpid()))
        return _Pool(executor, scratch)

    def warm_up(self) -> list[Future[None]]:
        """Start the worker processes now, so the first replay does not wait while they load the models; each
        future is done once a worker is ready."""
        with self._lock:
            return [self._pool.executor.submit(_ready) for _ in range(self._workers)]

    def submit(self, job: ReplayJob) -> Future[ReplayOutcome]:
        with self._lock:
            try:
                return self._pool.executor.submit(_run_in_worker, job)
            except BrokenProcessPool:
                log.warning("the replay worker pool broke (a worker died); starting a new one")
                broken, self._pool = self._pool, self._new_pool()
                _kill(broken)
                return self._pool.executor.submit(_run_in_worker, job)

    @property
    def pids(self) -> list[int]:
        """The worker processes running now."""
        with self._lock:
            return sorted(_processes(self._pool.executor))

    @property
    def scratch(self) -> Path:
        with self._lock:
            return self._pool.scratch

    def abandon(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, self._new_pool()
        _kill(pool)
        self.warm_up()

    def close(self) -> None:
        with self._lock:
            _kill(self._pool)


def _processes(executor: ProcessPoolExecutor) -> dict[int, Any]:
    # ProcessPoolExecutor names its processes only privately; Python 3.14 adds kill_workers() for this.
    return dict(getattr(executor, "_processes", None) or {})


def _kill(pool: _Pool) -> None:
    """Kill the pool's processes (what they run is disposable), wait until they are gone, remove their scratch."""
    processes = _processes(pool.executor).values()
    for process in processes:
        process.kill()
    pool.executor.shutdown(wait=True, cancel_futures=True)
    for process in processes:
        process.join()
    shutil.rmtree(pool.scratch, ignore_errors=True)


# -- admission -----------------------------------------------------------------------------------------------------


def _seconds(delay: float) -> int:
    return max(1, math.ceil(delay))


class ReplayRunner:
    """Admits replays (one per organisation, ``workers.count + max_waiting`` in all) and runs each on
    ``workers`` within ``timeout_s`` of its admission."""

    # Not a dataclass: Litestar would read one given as a dependency as a structure to convert, field by field.
    def __init__(self, workers: Workers, *, timeout_s: float = REPLAY_TIMEOUT_S,
                 max_waiting: int = MAX_WAITING_REPLAYS, abandon_after_s: float = ABANDON_AFTER_S) -> None:
        self.workers = workers
        self.timeout_s = timeout_s
        self.max_waiting = max_waiting
        self.abandon_after_s = abandon_after_s
        self._deadlines: dict[str, float] = {}
        """Organisation -> its admitted replay's deadline."""
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def admit(self, org: str) -> Iterator[Admitted]:
        """Hold ``org``'s replay slot for the block; Busy (429) or BackendUnavailable (503) when none is free."""
        now = time.time()
        with self._lock:
            if org in self._deadlines:
                raise Busy("this organisation's previous replay is still running; one runs at a time",
                           retry_after_s=_seconds(self._deadlines[org] - now))
            if len(self._deadlines) >= self.workers.count + self.max_waiting:
                raise BackendUnavailable(
                    f"{len(self._deadlines)} replays are running or waiting, as many as this service takes",
                    backend="replays", retry_after_s=_seconds(min(self._deadlines.values()) - now),
                )
            deadline = self._deadlines[org] = now + self.timeout_s
        try:
            yield Admitted(self, deadline)
        finally:
            with self._lock:
                del self._deadlines[org]

    def close(self) -> None:
        self.workers.close()


@dataclass(frozen=True)
class Admitted:
    """An admitted replay: ``compare`` runs it."""

    runner: ReplayRunner
    deadline: float

    async def compare(self, transcript: Transcript, current: TuningProfile,
                      proposed: TuningProfile) -> ReplayComparison:
        check_cost(transcript)
        runner = self.runner
        future = runner.workers.submit(ReplayJob(transcript, current, proposed, self.deadline))
        try:
            outcome = await asyncio.wait_for(asyncio.wrap_future(future),
                                             max(0.0, self.deadline - time.time()) + runner.abandon_after_s)
        except TimeoutError:
            log.error("a replay of %r did not stop %.0f s past its deadline; abandoning its worker",
                      transcript.id, runner.abandon_after_s)
            await asyncio.to_thread(runner.workers.abandon)
            raise self._timed_out() from None
        except BrokenProcessPool as exc:
            raise self._lost() from exc
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if future.cancelled() and task is not None and not task.cancelling():
                raise self._lost() from None  # it waited in a pool that was abandoned, not on a cancelled request
            raise
        if outcome.timed_out:
            raise self._timed_out()
        if outcome.raised is not None:
            raise outcome.raised.rebuild()
        if outcome.comparison is None:  # pragma: no cover - run_job sets one of the three
            raise RuntimeError("the replay worker answered nothing")
        return outcome.comparison

    def _lost(self) -> BackendUnavailable:
        return BackendUnavailable("the replay worker stopped before it answered; try again", backend="replays",
                                  retry_after_s=1)

    def _timed_out(self) -> BackendUnavailable:
        return BackendUnavailable(
            f"the replay did not finish within {self.runner.timeout_s:g} s and was stopped; a transcript with "
            "fewer turns or probes fits", backend="replays", retry_after_s=RETRY_AFTER_TIMEOUT_S)
