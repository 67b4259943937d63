"""Window recall (``feltsense eval window``): does recall read the conversation window, and do its tiers mean much?

A probe is a moment of a conversation: the window (the lines before, oldest first, both roles), the user's
message, and the memories a good companion would bring up (any one counts). Each user's memories are ingested
into one embedded engine (each memory its own past session, closed, so the write-time pass writes its trace);
then every probe is asked under four methods in one run:

- ``message``: ``Engine.recall`` with ``window=()`` (the message alone);
- ``window``: ``Engine.recall`` with the probe's window, under the profile's window constants;
- ``cosine``: plain cosine over the user's memory vectors (the store's, same embedder), the message as query;
- ``cosine-tail3``: the same, with the last three lines (the window's last two and the message) joined as query.

Scores: hit@1/3/6 (the share of probes with an expected memory among the first k), MRR over the first 6 (a probe
whose expected memories are all below 6 counts 0), over the probes that expect something. Probes that expect
nothing (``expect: []``) report the tier of their top result instead, and the tier table gives, for every result
recall returned, the share that were expected memories, per tier.

Sources: the hand-written development set ``eval/data/recall_dev.yaml`` (the window and floor constants are chosen
on it, ``--sweep``; never reported) and ESConv (evaluation only: scored, nothing chosen). An ESConv probe is a cut
of one dialogue D: the query is one of the seeker's turns (its 2nd to 6th, skipping turns of under 4 words), the
window every line before it (seeker: role user, supporter: role character); the pseudo-user's memories are D's
``situation`` (the expected memory) and the situations of 75 other dialogues of the split with another
problem_type, drawn with a seeded RNG per dialogue (so ``--limit`` runs the same cases as the full run).

Choices where the brief is silent:

- One engine holds every user (a partition each), so the models load once and one data directory serves the
  run. Memories are ingested one user at a time in one batch, then each session is closed (the write-time pass).
  ESConv repeats each situation in about 76 users, so the embedder and classifier are wrapped in exact memo
  caches (``Memo*``): the same text gets the same vector and the same session the same classification, as the
  models would give, without recomputing them ~76 times.
- Recall is asked with no session id (nothing excluded) at the probe's time; memories dated after it are not
  visible to recall, and the cosine baselines leave them out likewise. Recall's usage signals are buffered
  and never flushed here, so asking one probe does not change the ranking of the next.
- An atomic fact recall returns (kind ``fact``) credits the memories it was distilled from (its provenance); a
  result that credits nothing (canon) is a miss.
- ESConv memories are dated 14 to 180 days before the probe (uniform, seeded), the expected one drawn from the
  same distribution as its distractors, so age says nothing about which is right.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import timedelta
from itertools import product
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from engine.domain.models import RecallResult
    from engine.domain.ports import Classifier, Embedder
    from engine.domain.tuning import TuningProfile
    from engine.service import Engine
    from engine.settings import Settings
    from eval.locomo import Progress

from eval.window_cases import (
    DEV_SET,
    ESCONV_DIR,
    REPO_ROOT,
    Case,
    CaseMemory,
    Probe,
    WindowDataError,
    esconv_cases,
    load_dev,
    load_esconv,
    parse_dev,
)
from eval.window_scores import (
    KS,
    LIMIT,
    METHODS,
    TIERS,
    ProbeScore,
    Ranked,
    format_report,
    means,
    method_report,
    pct,
    score_probe,
)

__all__ = [  # the cases (eval.window_cases) and the scores (eval.window_scores) are read from here too
    "DEV_SET", "ESCONV_DIR", "KS", "LIMIT", "METHODS", "SWEEP_GRID", "TIERS", "Case", "CaseMemory", "Probe",
    "ProbeScore", "Ranked", "WindowDataError", "esconv_cases", "format_report", "format_sweep", "load_dev",
    "load_esconv", "make_sweep", "measure", "method_report", "parse_dev", "run", "score_probe", "sweep_profiles",
    "tail_query",
]

CHARACTER_ID = "window-eval"
ENGINE_METHODS = ("message", "window")
TAIL_LINES = 3
"""Lines the ``cosine-tail3`` baseline joins: the window's last two and the message."""
SWEEP_GRID: dict[str, tuple[float | int, ...]] = {
    "window_vector_weight": (0.0, 0.5, 1.0, 1.5, 2.0),
    "window_lexical_weight": (0.0, 0.3, 0.5),
    "window_recency": (0.7, 0.85, 1.0),
    "window_turns": (4, 6),
}


# ------------------------------------------------------------------------------------------------------------
# The run


def _query_window(probe: Probe) -> tuple[Any, ...]:
    from engine.domain.models import WINDOW_MAX_TURNS, WindowTurn

    return tuple(WindowTurn(role=role, text=text) for role, text in probe.window[-WINDOW_MAX_TURNS:])


def _turn_id(user: str, key: str) -> str:
    return f"{user}.{key}"


def ingest(engine: Engine, cases: Sequence[Case], progress: Progress | None = None) -> None:
    """Each case's memories as user turns of its user, each its own session (in one ingest batch per user), then
    every session closed at the memory's time plus a minute, oldest first, so the write-time pass runs."""
    from engine.domain.models import Turn

    for case in cases:
        ordered = sorted(case.memories, key=lambda m: m.at)
        engine.ingest([
            Turn(turn_id=_turn_id(case.user, m.key), session_id=_turn_id(case.user, m.key), character_id=CHARACTER_ID,
                 user_id=case.user, role="user", text=m.text, timestamp=m.at)
            for m in ordered
        ])
        for memory in ordered:
            engine.close_session(_turn_id(case.user, memory.key), closed_at=memory.at + timedelta(minutes=1))
        if progress is not None:
            progress.advance(f"ingest {case.user}", len(case.memories))


class _Credits:
    """What a recalled memory id credits: a case memory itself, a fact the memories it was distilled from."""

    def __init__(self, engine: Engine, cases: Sequence[Case]) -> None:
        from engine.ingest import memory_id_for

        self._engine = engine
        self._of: dict[str, frozenset[str]] = {}
        self._by_session: dict[str, frozenset[str]] = {}
        for case in cases:
            for memory in case.memories:
                turn_id = _turn_id(case.user, memory.key)
                self._of[memory_id_for(turn_id)] = frozenset({memory.key})
                self._by_session[turn_id] = frozenset({memory.key})

    def __call__(self, memory_ids: Iterable[str]) -> list[frozenset[str]]:
        ids = list(memory_ids)
        unknown = [m for m in ids if m not in self._of]
        for memory in self._engine.store.get_memories(unknown) if unknown else ():
            sources = memory.fact.provenance if memory.fact is not None else ()
            credited: set[str] = set()
            for source in sources:
                credited |= self._of.get(source, frozenset()) | self._by_session.get(source, frozenset())
            self._of[memory.memory_id] = frozenset(credited)
        return [self._of.get(m, frozenset()) for m in ids]


def _recall(engine: Engine, case: Case, probe: Probe, window: tuple[Any, ...]) -> RecallResult:
    from engine.domain.models import RecallQuery

    return engine.recall(RecallQuery(character_id=CHARACTER_ID, user_id=case.user, message=probe.message,
                                     window=window, at=probe.at, limit=LIMIT))


def _ranked(result: RecallResult, credits: _Credits) -> Ranked:
    memories = result.memories
    return Ranked(credits=tuple(credits(m.memory_id for m in memories)), tiers=tuple(m.tier for m in memories))


def _cosine(vectors: NDArray[np.float64], keys: Sequence[str], query: NDArray[np.float32]) -> Ranked:
    if not keys:
        return Ranked(credits=())
    scores = np.nan_to_num(vectors @ query.astype(np.float64), nan=-1.0)
    order = np.argsort(-scores, kind="stable")[:LIMIT]
    return Ranked(credits=tuple(frozenset({keys[int(i)]}) for i in order))


def tail_query(probe: Probe, lines: int = TAIL_LINES) -> str:
    """The ``cosine-tail3`` query: the window's last ``lines - 1`` lines and the message, joined by newlines."""
    return "\n".join([*(text for _, text in probe.window[-(lines - 1):] if lines > 1), probe.message])


def evaluate(
    engine: Engine, cases: Sequence[Case], *, methods: Sequence[str] = METHODS, progress: Progress | None = None,
) -> dict[str, list[ProbeScore]]:
    """Every probe of ``cases`` (already ingested into ``engine``) under each of ``methods``."""
    from engine.ingest import memory_id_for

    credits = _Credits(engine, cases)
    out: dict[str, list[ProbeScore]] = {m: [] for m in methods}
    cosine_methods = [m for m in methods if m not in ENGINE_METHODS]
    for case in cases:
        ids = [memory_id_for(_turn_id(case.user, m.key)) for m in case.memories]
        vectors = engine.store.get_vectors(ids).astype(np.float64) if cosine_methods else np.zeros((0, 0))
        queries: dict[str, NDArray[np.float32]] = {}
        if cosine_methods:
            texts = {"cosine": [p.message for p in case.probes], "cosine-tail3": [tail_query(p) for p in case.probes]}
            for method in cosine_methods:
                queries[method] = engine.embedder.embed(texts[method])
        for n, probe in enumerate(case.probes):
            for method in methods:
                if method == "message":
                    ranked = _ranked(_recall(engine, case, probe, ()), credits)
                elif method == "window":
                    ranked = _ranked(_recall(engine, case, probe, _query_window(probe)), credits)
                else:
                    visible = [i for i, m in enumerate(case.memories) if m.at < probe.at]
                    ranked = _cosine(vectors[visible], [case.memories[i].key for i in visible], queries[method][n])
                out[method].append(score_probe(probe, ranked))
            if progress is not None:
                progress.advance(f"probes {case.user}")
    return out


def report(scores: Mapping[str, Sequence[ProbeScore]]) -> dict[str, Any]:
    """``{"methods": {method: method_report}, "per_probe": [...]}``: the figures, and each probe's rank per method."""
    methods = {m: method_report(rows, tiered=m in ENGINE_METHODS) for m, rows in scores.items()}
    first = next(iter(scores.values()), [])
    probes = []
    for i, s in enumerate(first):
        probes.append({
            "id": s.probe_id, "group": s.group, "expect": list(s.expect),
            "rank": {m: rows[i].rank for m, rows in scores.items()},
            "top": {m: rows[i].top for m, rows in scores.items()},
            "top_tier": {m: rows[i].top_tier for m, rows in scores.items() if m in ENGINE_METHODS},
        })
    return {"methods": methods, "per_probe": probes}


def window_constants(profile: TuningProfile) -> dict[str, Any]:
    """The constants this eval is about, as the run used them: retrieval's window, floor and tier constants, and
    the window's share of the anchor boost."""
    retrieval = profile.retrieval.model_dump()
    named = ("window_", "tier_", "vector_relative_margin", "fused_relative_floor", "vector_zero_margin")
    out = {k: v for k, v in retrieval.items() if k.startswith(named)}
    out["window_anchor_weight"] = getattr(profile.scoring, "window_anchor_weight", None)
    return out


def work_units(cases: Sequence[Case]) -> int:
    return sum(len(c.memories) + len(c.probes) for c in cases)


def run(
    cases: Sequence[Case],
    *,
    embedder: Embedder,
    classifier: Classifier,
    methods: Sequence[str] = METHODS,
    profile: TuningProfile | None = None,
    progress: Progress | None = None,
    sweep: Callable[[Engine], list[dict[str, Any]]] | None = None,
    calibrate: Callable[[Engine], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Ingest ``cases`` into one fresh embedded engine (a temporary data directory, the given models wrapped in
    memo caches), score every probe under ``methods`` with ``profile`` (the defaults when None), and, with
    ``sweep``, run it on the same engine afterwards (its rows go under ``"sweep"``)."""
    from engine.domain.tuning import ProfileSource, TuningProfile
    from engine.factory import build_embedded_engine
    from eval.bench import MemoClassifier, MemoEmbedder

    profiles = ProfileSource()
    if profile is not None:
        profiles.set(profile.model_copy(update={"character_id": CHARACTER_ID}))
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="feltsense-window-") as tmp:
        engine = build_embedded_engine(Path(tmp), embedder=MemoEmbedder(embedder),
                                       classifier=MemoClassifier(classifier), profiles=profiles)
        try:
            ingest(engine, cases, progress)
            ingested = time.monotonic() - started
            result = report(evaluate(engine, cases, methods=methods, progress=progress))
            if sweep is not None:
                result["sweep"] = sweep(engine)
            if calibrate is not None:
                result["calibration"] = calibrate(engine)
        finally:
            engine.close()
    used = profiles.profile_for(CHARACTER_ID) if profile is not None else TuningProfile()
    result.update({
        "users": len(cases),
        "memories": sum(len(c.memories) for c in cases),
        "probes": sum(len(c.probes) for c in cases),
        "probes_expecting_nothing": sum(1 for c in cases for p in c.probes if not p.expect),
        "constants": window_constants(used),
        "ingest_seconds": round(ingested, 1),
        "seconds": round(time.monotonic() - started, 1),
    })
    return result


# ------------------------------------------------------------------------------------------------------------
# The sweep (dev set only)


def sweep_profiles(base: TuningProfile | None = None) -> list[tuple[dict[str, float | int], TuningProfile]]:
    """The grid of ``SWEEP_GRID`` over ``base`` (the defaults): (setting, profile) pairs, in grid order."""
    from engine.domain.tuning import RetrievalParams, TuningProfile

    base = base or TuningProfile()
    out = []
    names = list(SWEEP_GRID)
    for values in product(*(SWEEP_GRID[n] for n in names)):
        setting = dict(zip(names, values, strict=True))
        retrieval = RetrievalParams.model_validate({**base.retrieval.model_dump(), **setting})
        out.append((setting, base.model_copy(update={"character_id": CHARACTER_ID, "retrieval": retrieval})))
    return out


def make_sweep(cases: Sequence[Case], progress: Callable[[str], None] | None = None
               ) -> Callable[[Engine], list[dict[str, Any]]]:
    """A sweep over the ingested ``cases``: the ``window`` method under each grid setting (the profile set on the
    engine between settings; the write-time pass already ran under the defaults), hit@k and MRR per setting."""

    def sweep(engine: Engine) -> list[dict[str, Any]]:
        rows = []
        grid = sweep_profiles(engine.profiles.profile_for(CHARACTER_ID))
        for n, (setting, profile) in enumerate(grid, 1):
            engine.profiles.set(profile)
            scores = evaluate(engine, cases, methods=("window",))["window"]
            rows.append({**setting, **means([s for s in scores if s.expect])})
            if progress is not None:
                progress(f"sweep {n}/{len(grid)}: {setting}")
        return rows

    return sweep


# ------------------------------------------------------------------------------------------------------------
# The tiers' calibration (dev set only)


def fit_logistic(features: NDArray[np.float64], labels: NDArray[np.float64], *, steps: int = 50) -> NDArray[np.float64]:
    """Logistic regression by Newton's method (a tiny ridge keeps it finite): intercept first, then one weight per
    feature column."""
    x = np.column_stack([np.ones(len(features)), features])
    weights = np.zeros(x.shape[1])
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(x @ weights)))
        hessian = x.T @ (x * (p * (1.0 - p))[:, None]) + 1e-6 * np.eye(x.shape[1])
        weights = weights + np.linalg.solve(hessian, x.T @ (labels - p))
    return weights


def make_calibration(cases: Sequence[Case]) -> Callable[[Engine], dict[str, Any]]:
    """Fit ``retrieval.tier_intercept``, ``tier_fused_weight`` and ``tier_lead_weight`` on what the window method
    returns for the dev probes: each returned memory's fused relevance and lead, labelled by whether it was an
    expected memory. Prints nothing; the report has the weights and each band's observed share."""

    def calibrate(engine: Engine) -> dict[str, Any]:
        credits = _Credits(engine, cases)
        rows: list[tuple[float, float, bool]] = []
        for case in cases:
            for probe in case.probes:
                result = _recall(engine, case, probe, _query_window(probe))
                expected = set(probe.expect)
                for memory, credited in zip(result.memories, credits(m.memory_id for m in result.memories),
                                            strict=True):
                    rows.append((memory.components.relevance, memory.relevance_lead or 0.0,
                                 bool(credited & expected)))
        features = np.array([(f, lead) for f, lead, _ in rows], dtype=np.float64)
        labels = np.array([float(y) for *_, y in rows])
        weights = fit_logistic(features, labels)
        p = 1.0 / (1.0 + np.exp(-(weights[0] + features @ weights[1:])))
        bands = []
        for low, high in ((0.0, 0.3), (0.3, 0.6), (0.6, 1.0001)):
            chosen = (p >= low) & (p < high)
            bands.append({"from": low, "to": min(high, 1.0), "results": int(chosen.sum()),
                          "predicted": round(float(p[chosen].mean()), 3) if chosen.any() else None,
                          "observed": round(float(labels[chosen].mean()), 3) if chosen.any() else None})
        return {"results": len(rows), "expected": int(labels.sum()),
                "tier_intercept": round(float(weights[0]), 2), "tier_fused_weight": round(float(weights[1]), 2),
                "tier_lead_weight": round(float(weights[2]), 2), "bands": bands}

    return calibrate


def format_calibration(found: Mapping[str, Any]) -> str:
    lines = [f"tier calibration on {found['results']} returned results ({found['expected']} expected): "
             f"tier_intercept {found['tier_intercept']}, tier_fused_weight {found['tier_fused_weight']}, "
             f"tier_lead_weight {found['tier_lead_weight']}",
             "  calibrated relevance   results   predicted   observed"]
    for band in found["bands"]:
        predicted = "-" if band["predicted"] is None else f"{band['predicted']:.2f}"
        observed = "-" if band["observed"] is None else f"{band['observed']:.2f}"
        lines.append(f"  {band['from']:.1f} to {band['to']:.1f}          {band['results']:>7}   {predicted:>9}   "
                     f"{observed:>8}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------------------
# Text


def format_sweep(rows: Sequence[Mapping[str, Any]], *, baseline: Mapping[str, Any] | None = None,
                 default: Mapping[str, Any] | None = None) -> str:
    names = list(SWEEP_GRID)
    head = "".join(f"{n.removeprefix('window_'):>16}" for n in names)
    lines = ["sweep of the window constants on the dev set (window method), best first by hit@6 then MRR",
             f"  {head}{'hit@1':>8}{'hit@6':>8}{'MRR':>8}"]
    ordered = sorted(rows, key=lambda r: (-r["hit@6"], -r["mrr"], -r["hit@1"]))
    for row in ordered:
        mark = "  (defaults)" if default is not None and all(row[n] == default.get(n) for n in names) else ""
        lines.append("  " + "".join(f"{row[n]:>16}" for n in names)
                     + f"{pct(row['hit@1']):>8}{pct(row['hit@6']):>8}{pct(row['mrr']):>8}{mark}")
    if baseline is not None:
        lines.append(f"  message alone (window=()): hit@1 {pct(baseline['hit@1']).strip()}, hit@6 "
                     f"{pct(baseline['hit@6']).strip()}, MRR {pct(baseline['mrr']).strip()}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------------------
# The command


def measure(
    source: str, *, settings: Settings, data: Path | None, split: str, limit: int | None, sweep: bool, out: TextIO,
    err: TextIO, calibrate: bool = False,
) -> dict[str, Any]:
    """What ``feltsense eval window`` runs: load the cases (``WindowDataError`` when they are missing or
    malformed), load the models ``settings`` name, run with a progress bar on ``err``, print the report on ``out``."""
    from engine.factory import build_classifier, build_embedder
    from eval.locomo import Progress

    if source == "dev":
        cases = load_dev(data or DEV_SET, limit=limit)
        title = f"window recall, development set {data or DEV_SET.relative_to(REPO_ROOT)}"
    else:
        cases = load_esconv(data or ESCONV_DIR, split, limit=limit)
        title = f"window recall, ESConv {split}" + (f" (first {limit} dialogues)" if limit else "")
    print("loading the embedder and classifier...", file=err)
    embedder, classifier = build_embedder(settings), build_classifier(settings)
    progress = Progress(work_units(cases), err)

    def note(message: str) -> None:
        err.write(f"\r{message:<78.78}")
        err.flush()

    try:
        result = run(cases, embedder=embedder, classifier=classifier, progress=progress,
                     sweep=make_sweep(cases, note) if sweep else None,
                     calibrate=make_calibration(cases) if calibrate else None)
    finally:
        progress.close()
    result["set"] = "dev" if source == "dev" else f"esconv/{split}"
    print(format_report(result, title=title), file=out)
    if sweep:
        names = list(SWEEP_GRID)
        print("\n" + format_sweep(result["sweep"], baseline=result["methods"]["message"]["overall"],
                                  default={n: result["constants"][n] for n in names}), file=out)
    if calibrate:
        print("\n" + format_calibration(result["calibration"]), file=out)
    print(f"\n{result['seconds']:.0f}s ({result['ingest_seconds']:.0f}s ingest); embedder {embedder.model_id}, "
          f"classifier {classifier.name}", file=out)
    return result
