"""Benchmarks: medians and p99s measured in one run, beside a baseline measured in the same run.

Never timed tests: a shared 2-core machine makes those flaky. These print figures; the README quotes them.
"""

from __future__ import annotations

import itertools
import json
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from engine.adapters.sqlite_ledger import SqliteLedger
from engine.domain.models import RecallQuery, Turn, WindowTurn
from engine.domain.ports import Classifier, Embedder, TraceClassification
from engine.factory import build_classifier, build_embedded_engine, build_embedder
from engine.replay_runner import ClassifierWrapper, EmbedderWrapper
from engine.service import Engine
from engine.settings import Settings
from scoring.reference import stage_two_reference
from scoring.rerank import StageTwoParams, stage_two

CANDIDATES = 40


def _percentiles(samples_us: list[float]) -> tuple[float, float]:
    ordered = sorted(samples_us)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return statistics.median(ordered), p99


def _time_us(fn: Callable[[], object], iterations: int) -> list[float]:
    samples = []
    for _ in range(iterations):
        start = time.perf_counter_ns()
        fn()
        samples.append((time.perf_counter_ns() - start) / 1000.0)
    return samples


F64 = NDArray[np.float64]
Bools = NDArray[np.bool_]
ScorerCase = tuple[F64, F64, F64, F64, Bools, Bools, F64, F64]


def scorer_inputs(rng: np.random.Generator, n: int = CANDIDATES) -> ScorerCase:
    """relevance, intensity, valence, age_days, is_emotional, anchor_matches (candidates x 3 of the message's
    anchors), strength, scope_weight."""
    return (
        rng.random(n),
        rng.random(n),
        rng.random(n) * 2.0 - 1.0,
        rng.random(n) * 120.0,
        rng.random(n) < 0.5,
        rng.random((n, 3)) < 0.1,
        0.5 + rng.random(n),
        np.ones(n),
    )


ListCase = tuple[
    list[float], list[float], list[float], list[float], list[bool], list[list[bool]], list[float], list[float]
]


def _as_lists(case: ScorerCase) -> ListCase:
    r, i, v, a, e, h, s, w = case
    return (r.tolist(), i.tolist(), v.tolist(), a.tolist(), e.tolist(), h.tolist(), s.tolist(), w.tolist())


def bench_scorer(*, iterations: int = 5000, seed: int = 7) -> dict[str, Any]:
    """Stage two, 40 -> 6, against the plain-Python reference (which must rank identically)."""
    from engine.domain.tuning import TuningProfile
    from engine.strength import stage_two_params

    params: StageTwoParams = stage_two_params(TuningProfile())
    rng = np.random.default_rng(seed)
    cases = [scorer_inputs(rng) for _ in range(200)]
    for case in cases:  # agreement first: a fast scorer that ranks differently is not a result
        fast = stage_two(*case, params).order.tolist()
        slow, _ = stage_two_reference(*_as_lists(case), params)
        if fast != slow:
            raise AssertionError(f"numpy and reference rankings differ: {fast} != {slow}")
    case = cases[0]
    listed = _as_lists(case)
    for _ in range(200):  # warm-up
        stage_two(*case, params)
    fast_samples = _time_us(lambda: stage_two(*case, params), iterations)
    slow_samples = _time_us(lambda: stage_two_reference(*listed, params), iterations)
    median, p99 = _percentiles(fast_samples)
    reference_median, reference_p99 = _percentiles(slow_samples)
    engine_median, engine_p99 = _percentiles(_engine_stage_two_samples(iterations, seed))
    return {
        "candidates": CANDIDATES,
        "limit": params.limit,
        "iterations": iterations,
        "median_us": round(median, 2),
        "p99_us": round(p99, 2),
        "reference_median_us": round(reference_median, 2),
        "reference_p99_us": round(reference_p99, 2),
        "rankings_identical_cases": len(cases),
        "engine_median_us": round(engine_median, 2),
        "engine_p99_us": round(engine_p99, 2),
    }


def _engine_stage_two_samples(iterations: int, seed: int) -> list[float]:
    """Stage two as recall runs it, 40 -> 6: arrays from 40 traces, anchor matching, the kernel, the diversity pass
    (which reads the contenders' vectors from an embedded store), 6 results."""
    from engine.adapters.embedded_store import EmbeddedStore
    from engine.adapters.hashing_embedder import HashingEmbedder
    from engine.domain.models import Candidate, Leg, Memory, MemoryKind, Trace, TraceStatus
    from engine.domain.tuning import ProfileSource
    from engine.recall.stage_two import stage_two

    rng = random.Random(seed)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    memories, traces, candidates = {}, {}, []
    for i in range(CANDIDATES):
        memory_id = f"m{i}"
        memories[memory_id] = Memory(memory_id=memory_id, turn_id=f"t{i}", session_id=f"s{i % 7}",
                                     character_id="ava", user_id="u", text=f"memory {i} about the park and Luna",
                                     created_at=start + timedelta(days=rng.random() * 120))
        emotional = rng.random() < 0.5
        traces[memory_id] = Trace(
            memory_id=memory_id, status=TraceStatus.COMPLETE, register="grief" if emotional else "neutral",
            valence=rng.uniform(-1, 1), intensity=rng.random(), anchors=(rng.choice(_OBJECTS), "Luna", "dog"),
            kind=MemoryKind.EMOTIONAL if emotional else MemoryKind.FACTUAL, written_at=start,
        )
        candidates.append(Candidate(memory_id=memory_id, relevance=rng.random(), legs=(Leg.VECTOR,)))
    embedder = HashingEmbedder()
    folder = tempfile.TemporaryDirectory(prefix="feltsense-bench-")
    store = EmbeddedStore(Path(folder.name), embedding_model=embedder.model_id, dimension=embedder.dimension)
    store.add_memories(list(memories.values()), embedder.embed([m.text for m in memories.values()]))
    query = RecallQuery(character_id="ava", user_id="u", message="I walked Luna past the garden today")
    profile = ProfileSource().profile_for("ava")
    now = start + timedelta(days=130)

    def run() -> object:
        return stage_two(store, query, candidates, memories, traces, now, profile, limit=6)

    try:
        for _ in range(200):
            run()
        return _time_us(run, iterations)
    finally:
        store.close()
        folder.cleanup()


_SUBJECTS = ["my sister", "my boss", "the dog", "my mom", "my friend Sam", "our neighbour", "my partner",
             "the cat", "my brother", "my coworker Priya", "my dad", "my roommate"]
_VERBS = ["talked about", "complained about", "loved", "worried about", "laughed at", "forgot", "planned",
          "argued over", "cooked", "fixed", "painted", "found"]
_OBJECTS = ["the garden", "a trip to Porto", "the new job", "dinner plans", "the old car", "a birthday party",
            "the exam", "a hiking route", "the piano lessons", "the flat upstairs", "a concert", "the wedding",
            "the budget", "a board game night", "the vet visit", "the kitchen tiles"]
_FEELINGS = ["and it was lovely", "and I was so stressed", "which made me furious", "and I felt embarrassed",
             "and honestly I'm proud", "and it was fine", "and I can't stop thinking about it", "", "",
             "and I miss how it used to be"]
_WHEN = ["yesterday", "this morning", "last weekend", "on Tuesday", "tonight", "after work", "", ""]


def synthetic_turns(count: int, *, character: str, user: str, seed: int, per_session: int = 20) -> list[Turn]:
    """``count`` user turns (with a character reply after each), in sessions a day apart."""
    rng = random.Random(seed)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    turns = []
    for i in range(count):
        session = i // per_session
        at = start + timedelta(days=session, minutes=2 * (i % per_session))
        text = " ".join(
            part for part in (rng.choice(_WHEN).capitalize(), rng.choice(_SUBJECTS), rng.choice(_VERBS),
                              rng.choice(_OBJECTS), rng.choice(_FEELINGS)) if part
        ).strip()
        text = text[0].upper() + text[1:] + "."
        sid = f"{user}-s{session}"
        turns.append(Turn(turn_id=f"{user}-u{i}", session_id=sid, character_id=character, user_id=user,
                          role="user", text=text, timestamp=at))
        turns.append(Turn(turn_id=f"{user}-c{i}", session_id=sid, character_id=character, user_id=user,
                          role="character", text="Tell me more about that.", timestamp=at + timedelta(seconds=40)))
    return turns


QUERIES = [
    "How did the wedding go in the end?", "I keep thinking about my mom.", "Any ideas for dinner tonight?",
    "Sam called me again today.", "The garden looks amazing this week.", "I'm nervous about the exam.",
    "We finally fixed the old car!", "Priya was annoying at work again.", "Should I take piano lessons?",
    "The cat knocked over the tiles.", "I went to a concert last night.", "My brother is visiting Porto.",
]


REPLIES = (
    "That sounds like a lot to carry.", "Oh, I love that!", "How did that make you feel?", "Tell me more about it.",
    "I remember you mentioning that.", "That's wonderful news.", "Do you want to talk it through?",
)


class MemoEmbedder(EmbedderWrapper):
    """Wraps an embedder with a text -> vector memo, so a side-by-side run embeds each synthetic text once."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self._memo: dict[str, NDArray[np.float32]] = {}

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if missing:
            for text, vector in zip(missing, self._inner.embed(missing), strict=True):
                self._memo[text] = vector
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self._memo[t] for t in texts])


class MemoClassifier(ClassifierWrapper):
    """A classifier that classifies each distinct session (its texts, in order) once."""

    def __init__(self, inner: Classifier) -> None:
        super().__init__(inner)
        self._seen: dict[tuple[str, ...], Sequence[TraceClassification]] = {}

    def classify(self, texts: Sequence[str], embeddings: NDArray[np.float32]) -> Sequence[TraceClassification]:
        key = tuple(texts)
        found = self._seen.get(key)
        if found is None:
            found = self._seen[key] = self._inner.classify(texts, embeddings)
        return found


EngineFactory = Callable[[Embedder, Classifier], Engine]
_RUNS = itertools.count()


def bench_recall(
    *,
    memories: int,
    queries: int = 200,
    seed: int = 11,
    engine_factory: EngineFactory,
    embedder: Embedder,
    classifier: Classifier,
    progress: Callable[[str], None] | None = None,
    window: int = 0,
) -> dict[str, Any]:
    """Recall latency at ``memories`` memories in one partition, the query embedding included.

    ``window``: each recall passes that many lines of conversation before its message, as a runtime does: the
    previous turns' messages and a character reply after each, every reply a text never seen before. After each
    recall the exchange is stored (untimed), as a runtime stores it, so the reply's embedding is made at ingest.

    ``embedder`` may be a memo: each benchmark query is a text never seen before, so the query embedding is
    always computed for real inside the timed recall.
    """
    say = progress or (lambda _msg: None)
    engine = engine_factory(embedder, classifier)
    try:
        turns = synthetic_turns(memories, character="ava", user="bench-user", seed=seed)
        started = time.perf_counter()
        for start in range(0, len(turns), 1000):
            engine.ingest(turns[start : start + 1000])
            say(f"ingested {min(start + 1000, len(turns)) // 2}/{memories} memories")
        sessions = sorted({t.session_id for t in turns})
        for done, session_id in enumerate(sessions, start=1):
            engine.close_session(session_id, closed_at=turns[-1].timestamp)
            if done % 500 == 0:
                say(f"closed {done}/{len(sessions)} sessions")
        load_s = time.perf_counter() - started
        at = turns[-1].timestamp + timedelta(days=1)
        # Each query is a new text (a counter suffix), so the memo never answers for the query embedding.
        query_texts = [f"{QUERIES[i % len(QUERIES)]} ({seed}-q{next(_RUNS)}-{i})" for i in range(queries + 10)]
        lines: list[WindowTurn] = []

        def ask(text: str) -> None:
            engine.recall(RecallQuery(character_id="ava", user_id="bench-user", message=text, at=at,
                                      window=tuple(lines[-window:]) if window else ()))
            if window:
                lines.extend([WindowTurn(role="user", text=text),
                              WindowTurn(role="character", text=f"{REPLIES[len(lines) % len(REPLIES)]} "
                                                                f"({seed}-w{next(_RUNS)})")])

        def store_exchange() -> None:
            # As a runtime does after each exchange (untimed): the message and the character's reply are stored.
            n = len(lines)
            engine.ingest([
                Turn(turn_id=f"bench-live-{seed}-{run_id}-{n - 2 + i}", session_id=f"bench-live-{seed}-{run_id}",
                     character_id="ava", user_id="bench-user", role=line.role, text=line.text,
                     timestamp=at - timedelta(hours=1) + timedelta(seconds=n - 2 + i))
                for i, line in enumerate(lines[-2:])
            ])

        run_id = next(_RUNS)

        for text in query_texts[:10]:  # warm-up: loads the partition index and the model's kernels
            ask(text)
            if window:
                store_exchange()
        samples = []
        for text in query_texts[10:]:
            begin = time.perf_counter_ns()
            ask(text)
            samples.append((time.perf_counter_ns() - begin) / 1e6)
            if window:
                store_exchange()
        # The baseline: embedding alone, on texts of the same shape, also never seen before.
        run = next(_RUNS)  # the memo is shared by the stores of one run: every probe must be a new text
        probes = iter([f"{QUERIES[i % len(QUERIES)]} ({seed}-r{run}-e{i})" for i in range(50)])
        embed_samples = _time_us(lambda: engine.embedder.embed([next(probes)]), 50)
        median, p99 = _percentiles(samples)
        return {
            "memories": memories,
            "queries": queries,
            "window": window,
            "median_ms": round(median, 3),
            "p99_ms": round(p99, 3),
            "embed_only_median_ms": round(statistics.median(embed_samples) / 1000.0, 3),
            "load_s": round(load_s, 1),
        }
    finally:
        engine.close()


def embedded_engine_factory(root: Path) -> EngineFactory:
    def factory(embedder: Embedder, classifier: Classifier) -> Engine:
        data_dir = Path(tempfile.mkdtemp(prefix="feltsense-bench-", dir=root))
        return build_embedded_engine(data_dir, embedder=embedder, classifier=classifier)

    return factory


def run_recall_benchmarks(
    sizes: Sequence[int],
    stores: Sequence[str],
    *,
    queries: int,
    settings: Settings,
    weaviate: tuple[str, int] | None = None,
    progress: Callable[[str], None] | None = None,
    on_result: Callable[[dict[str, Any]], None] | None = None,
    windows: Sequence[int] = (0,),
) -> list[dict[str, Any]]:
    """Each size on each store, in one run, with one embedder and classifier (those ``settings`` name) shared by
    all of them."""
    memo = MemoEmbedder(build_embedder(settings))
    classifier = build_classifier(settings)
    results = []
    root = Path(tempfile.mkdtemp(prefix="feltsense-bench-"))
    try:
        for size in sizes:
            for store in stores:
                factory = embedded_engine_factory(root) if store == "embedded" else _weaviate_factory(weaviate)
                for window in windows:
                    result = bench_recall(memories=size, queries=queries, engine_factory=factory, embedder=memo,
                                          classifier=classifier, progress=progress, window=window)
                    results.append({"store": store, **result})
                    if on_result is not None:  # a long run shows each figure as soon as it is measured
                        on_result(results[-1])
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return results


def _weaviate_factory(server: tuple[str, int] | None) -> EngineFactory:
    if server is None:
        raise ValueError("the weaviate store needs a server: pass its URL and gRPC port")
    url, grpc_port = server

    def factory(embedder: Embedder, classifier: Classifier) -> Engine:
        from engine.adapters.weaviate import WeaviateStore

        prefix = f"Bench{time.time_ns()}"
        store = WeaviateStore(url, grpc_port=grpc_port, api_key=None, embedding_model=embedder.model_id,
                              dimension=embedder.dimension, collection_prefix=prefix, timeout_s=60.0)
        return Engine(store=store, embedder=embedder, classifier=classifier, ledger=SqliteLedger.in_memory())

    return factory


def print_result(name: str, result: dict[str, Any], *, as_json: bool) -> None:
    flat: dict[str, Any] = {}
    for key, value in result.items():  # one level of nesting is shown as "phase.key"
        if isinstance(value, dict) and value and not any(isinstance(v, dict) for v in value.values()):
            flat.update({f"{key}.{sub}": v for sub, v in value.items()})
        else:
            flat[key] = value
    width = max(len(k) for k in flat)
    print(name)
    for key, value in flat.items():
        print(f"  {key:<{width}}  {value}")
    if as_json:
        print(json.dumps(result))


CLASSIFIER_SESSION = (
    "Hey, long week.",
    "Marco took his things this morning. It's over.",
    "I don't really know what to do with the flat now.",
    "My sister Ana came over with pizza, which helped.",
    "She showed me a video of her cat falling off the sofa, I'm dead 😂",
    "Work is fine I guess, the new project at Kestrel Media starts Monday.",
    "my phone finally died too, RIP",
    "I keep thinking about the trip we'd planned to Lisbon.",
    "Sorry, I'm rambling.",
    "Thanks for listening, honestly.",
)


def bench_classifier(*, iterations: int = 50) -> dict[str, Any]:
    """The write-time classification of one 20-turn session (sentence readings included, as the write pass does
    them, embeddings precomputed), for the shipped session classifier (v2) beside v1 in the same run."""
    from engine.adapters.onnx_embedder import OnnxEmbedder
    from traces.classifier import LocalClassifier
    from traces.session_classifier import SessionClassifier
    from traces.write_pass import sentences

    turns = [f"{text}" for text in (CLASSIFIER_SESSION * 2)]
    embedder = OnnxEmbedder()
    vectors = embedder.embed(turns)
    parts = [s for t in turns for s in sentences(t)]
    part_vectors = embedder.embed(parts)
    classifiers: dict[str, Classifier] = {"v2": SessionClassifier.load(), "v1": LocalClassifier.load()}
    result: dict[str, Any] = {"turns": len(turns), "sentences": len(parts), "iterations": iterations}
    for name, classifier in classifiers.items():
        def run(c: Classifier = classifier) -> None:
            c.classify(turns, vectors)
            c.classify(parts, part_vectors)

        run()
        median, p99 = _percentiles(_time_us(run, iterations))
        result[name] = {"median_ms": round(median / 1000, 2), "p99_ms": round(p99 / 1000, 2),
                        "name": classifier.name}
    result["ratio_v2_over_v1"] = round(result["v2"]["median_ms"] / max(result["v1"]["median_ms"], 1e-9), 2)
    return result
