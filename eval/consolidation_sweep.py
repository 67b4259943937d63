"""The consolidation gate's sweep (``feltsense eval consolidation``): the defaults of ``scoring.consolidation``.

The gate decides which atomic facts the nightly sweep proposes to make lasting. Its constants (the mode, the
blended threshold and weights, k and the k-of-n bars) are chosen here, offline, on conversations replayed through
the real embedded engine.

**Data.** Every constant is chosen on our own hand-written development conversations, LoCoMo's format: the
retrieval set (``eval/data/dev_conversations``) and the fact-dense set written for this sweep
(``eval/data/consolidation_dev``). LoCoMo itself (``../shared/data/locomo``, CC BY-NC) is
evaluation only: the configurations chosen on the dev set are scored on it unchanged and reported beside the dev
figures. Nothing is chosen on LoCoMo.

**Candidates.** Each conversation is replayed into a fresh embedded engine (a temporary directory), session by
session, as ``eval.locomo`` ingests it (``_ingest``: both speakers are the one "user", every session closed so
the write-time pass distils atomic facts). Before a session is stored, the character recalls on each of its turns
(every session after the first: before that there is nothing to recall), as a runtime does on a live turn: the
turn's message at the turn's time, the session's earlier lines as the window, the default limit. Recall notes
what it returned; after the last session the usage is folded into the stored states (``Lifecycle.flush_usage``)
and every fact of the user's partition that is not revoked is a candidate, with the signal vector the nightly
sweep computes (``engine.strength.signal_vectors``, ``scoring.consolidation.SIGNALS``): retrievals and distinct
query kinds (its own, plus those of the turns it was distilled from: a provisional fact is out of recall, so what
comes up is its turns), confidence, source trust, times stated, and its age in days a day after the last session.

**Labels** are not ours: a candidate is "keep" when a turn it was distilled from (``fact.provenance``, memory ids
mapped back to LoCoMo's ``dia_id``) is cited as evidence by a question of categories 1-4, with the audit's
corrected evidence where it gives one (``Question.corrected``). A fact a question needs is one worth keeping.

**Metric and grids.** F1 of "the gate passes" against "keep" (with precision, recall and the share promoted):

- blended: every weight in {0, 0.5, 1, 2} (not all 0) x thresholds 0.05 to 0.95 by 0.025, the scales at
  ``GateParams``' defaults. Ties: fewer promoted, then simpler weights (fewer non-zero, then a smaller sum); between
  thresholds that promote the same candidates, the middle one, so the bar sits away from the nearest candidate.
- k_of_n, for each k from 1 to 6: bars from ``BAR_GRID``. Ties: fewer promoted, then the strictest bars (the
  largest sum of grid positions), which at equal dev figures promote the least elsewhere.
- each signal alone: k = 1 with every other bar unreachable (``inf``), its bar the best of the grid's and every
  whole number seen (confidence and trust: every value seen). Ties: the higher bar.

The default mode is the better of the blended best and the k-of-n best (over k; ties: fewer promoted, then the
smaller k) on dev F1, a tie going to blended, whose score is a promoted fact's starting strength in either mode.
The defaults combine the blended best's threshold and weights with the k-of-n best's k and bars. Every figure, dev
or LoCoMo, is computed by ``scoring.consolidation.gate`` itself, so the report measures the gate the engine runs.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np
from numpy.typing import NDArray

from eval.locomo import CHARACTER_ID, OVERALL_CATEGORIES, TURN_GAP, Conversation, LocomoSession, Progress, _ingest, load
from scoring.consolidation import SIGNALS, GateParams, Mode, gate

if TYPE_CHECKING:
    from engine.domain.models import Memory, MemoryState
    from engine.domain.ports import Classifier, Embedder
    from engine.service import Engine
    from engine.settings import Settings

F64 = NDArray[np.float64]
Mask = NDArray[np.bool_]

REPO = Path(__file__).resolve().parent.parent
DEV_SETS = (REPO / "eval" / "data" / "dev_conversations", REPO / "eval" / "data" / "consolidation_dev")
"""Both hand-written development sets: the retrieval one, and the fact-dense one written for this sweep."""
REPORT = REPO / "eval" / "data" / "consolidation_sweep.md"
LOCOMO_DIR = Path("../shared/data/locomo")
COMMAND = "feltsense eval consolidation"

WEIGHT_VALUES = (0.0, 0.5, 1.0, 2.0)
THRESHOLDS: F64 = np.round(0.05 + 0.025 * np.arange(37), 3)
"""0.05, 0.075, ..., 0.95."""
BAR_GRID: tuple[tuple[float, ...], ...] = (
    (1.0, 2.0, 3.0, 5.0),  # retrievals
    (1.0, 2.0, 3.0),  # query_kinds
    (0.5, 0.8, 1.0),  # confidence
    (0.7, 1.0),  # source_trust
    (2.0, 3.0),  # stated
    (1.0, 7.0, 30.0),  # age_days
)
"""The k-of-n bars tried for each signal, in ``SIGNALS`` order."""
WHOLE_SIGNALS = frozenset({"retrievals", "query_kinds", "stated", "age_days"})
"""Signals whose single-signal bars are whole numbers (counts, days); the others' are the values seen."""
UNREACHABLE = math.inf
FEW_CANDIDATES = 50
"""Below this many dev candidates the report says plainly that the grid is underdetermined."""
DAY_SECONDS = 86_400.0


# ------------------------------------------------------------------------------------------------------------
# Candidates


@dataclass(frozen=True)
class Candidate:
    """One fact at the end of a replayed conversation: its signal vector and its label."""

    sample_id: str
    memory_id: str
    status: str
    signals: tuple[float, ...]
    sources: tuple[str, ...]
    """The ``dia_id``s of the turns it was distilled from."""
    keep: bool


@dataclass(frozen=True)
class CandidateSet:
    """A data set's candidates as the gate takes them: an (n, 6) signal matrix and the keep mask."""

    signals: F64
    keep: Mask
    conversations: int
    statuses: tuple[str, ...] = ()

    @classmethod
    def of(cls, candidates: Sequence[Candidate], conversations: int) -> CandidateSet:
        rows = np.array([c.signals for c in candidates], dtype=np.float64).reshape(-1, len(SIGNALS))
        return cls(signals=rows, keep=np.array([c.keep for c in candidates], dtype=np.bool_),
                   conversations=conversations, statuses=tuple(c.status for c in candidates))


def cited_turns(conversation: Conversation) -> frozenset[str]:
    """The turns some question of categories 1-4 cites as its evidence (the audit's correction where it has one)."""
    return frozenset(e for q in conversation.questions if q.category in OVERALL_CATEGORIES for e in q.corrected)


def is_keep(sources: Iterable[str], cited: frozenset[str]) -> bool:
    """A fact is worth keeping when a turn it was distilled from is one a question needs."""
    return any(s in cited for s in sources)


def signal_vector(memory: Memory, state: MemoryState, at: datetime,
                  sources: Mapping[str, MemoryState] | None = None) -> tuple[float, ...]:
    """The gate's six signals (``SIGNALS`` order) for one fact at ``at``, exactly as the nightly sweep computes
    them (``engine.strength.signal_vectors``): its retrievals and query kinds include those of the turns it was
    distilled from (``sources``), since a provisional fact is out of recall and only its turns come up."""
    from engine.strength import signal_vectors

    row = signal_vectors([memory], {memory.memory_id: state}, at, dict(sources or {}))[0]
    return tuple(float(x) for x in row)


def recall_turns(engine: Engine, conversation: Conversation, session: LocomoSession,
                 progress: Progress | None) -> None:
    """The character recalling on every turn of ``session`` before it is stored, as a runtime does live: the
    turn's words at its time, with the session's earlier lines as the window."""
    from engine.domain.models import RecallQuery, WindowTurn
    from engine.domain.models.recall import WINDOW_MAX_TURNS

    said: list[WindowTurn] = []
    for i, turn in enumerate(session.turns):
        engine.recall(RecallQuery(character_id=CHARACTER_ID, user_id=conversation.sample_id, message=turn.text,
                                  window=tuple(said[-WINDOW_MAX_TURNS:]),
                                  session_id=f"{conversation.sample_id}.s{session.number}",
                                  at=session.start + TURN_GAP * i))
        said.append(WindowTurn(role="user", text=turn.text))
    if progress is not None:
        progress.advance(f"{conversation.sample_id} recalls s{session.number}", len(session.turns))


def replay(engine: Engine, conversation: Conversation, progress: Progress | None = None) -> None:
    """Each session recalled on (after the first), then stored and closed (``eval.locomo._ingest``), in order;
    the usage folded into the stored states at the end."""
    for n, session in enumerate(conversation.sessions):
        if n > 0:
            recall_turns(engine, conversation, session, progress)
        _ingest(engine, dataclasses.replace(conversation, sessions=(session,)), progress)
    engine.lifecycle.flush_usage()


def candidates(engine: Engine, conversation: Conversation) -> list[Candidate]:
    """The replayed conversation's facts that are not revoked, with their signals and labels."""
    from engine.domain.models import Partition
    from engine.ingest import memory_id_for

    dia_of = {memory_id_for(t.dia_id): t.dia_id for s in conversation.sessions for t in s.turns}
    cited = cited_turns(conversation)
    facts = engine.store.list_facts(Partition(character_id=CHARACTER_ID, user_id=conversation.sample_id))
    states = engine.states([f.memory_id for f in facts])
    provenance = engine.store.get_states([m for f in facts if f.fact is not None for m in f.fact.provenance])
    out = []
    for fact in facts:
        state = states[fact.memory_id]
        if state.status == "revoked" or fact.fact is None:
            continue
        sources = tuple(dia_of[m] for m in fact.fact.provenance if m in dia_of)
        out.append(Candidate(sample_id=conversation.sample_id, memory_id=fact.memory_id, status=state.status,
                             signals=signal_vector(fact, state, conversation.ask_at, provenance),
                             sources=sources,
                             keep=is_keep(sources, cited)))
    return out


def collect(conversations: Sequence[Conversation], *, embedder: Embedder, classifier: Classifier,
            progress: Progress | None = None) -> list[Candidate]:
    """Every conversation replayed in a fresh embedded engine (its own temporary directory, the shared models)."""
    from engine.factory import build_embedded_engine

    found: list[Candidate] = []
    with tempfile.TemporaryDirectory(prefix="feltsense-consolidation-") as tmp:
        for conversation in conversations:
            engine = build_embedded_engine(Path(tmp) / conversation.sample_id, embedder=embedder,
                                           classifier=classifier)
            try:
                replay(engine, conversation, progress)
                found.extend(candidates(engine, conversation))
            finally:
                engine.close()
    return found


def work_units(conversations: Sequence[Conversation]) -> int:
    """Progress steps: one per session stored and closed, one per turn recalled on."""
    return sum(len(c.sessions) + sum(len(s.turns) for s in c.sessions[1:]) for c in conversations)


# ------------------------------------------------------------------------------------------------------------
# The metric


@dataclass(frozen=True)
class Metrics:
    precision: float
    recall: float
    f1: float
    promoted: float
    """The share of candidates the gate passes."""
    passed: int
    kept: int
    """Passed candidates labelled keep (true positives)."""


def metrics(passed: Mask, keep: Mask) -> Metrics:
    """Precision, recall and F1 of ``passed`` against ``keep``; 0 where a ratio has nothing to divide by."""
    passed, keep = np.asarray(passed, dtype=np.bool_), np.asarray(keep, dtype=np.bool_)
    tp, n_passed, positives = int(np.sum(passed & keep)), int(passed.sum()), int(keep.sum())
    return Metrics(precision=tp / n_passed if n_passed else 0.0, recall=tp / positives if positives else 0.0,
                   f1=2 * tp / (n_passed + positives) if n_passed + positives else 0.0,
                   promoted=n_passed / len(passed) if len(passed) else 0.0, passed=n_passed, kept=tp)


def grid_f1(passed: Mask, keep: Mask) -> tuple[F64, NDArray[np.int64]]:
    """F1 and the number passed for each column of an (n, m) ``passed`` matrix, at once."""
    positives = int(np.sum(keep))
    n_passed = passed.sum(axis=0).astype(np.int64)
    tp = (passed & keep[:, None]).sum(axis=0)
    denominator = n_passed + positives
    f1 = np.divide(2.0 * tp, denominator, out=np.zeros(len(n_passed)), where=denominator > 0)
    return f1, n_passed


# ------------------------------------------------------------------------------------------------------------
# The grids


@dataclass(frozen=True)
class Choice:
    """A configuration and its dev figures."""

    name: str
    params: GateParams
    dev: Metrics
    tied: int = 1
    """Grid points that reach the same dev F1: how much the tie rules, not the data, decided."""


def weight_grid(values: Sequence[float] = WEIGHT_VALUES) -> list[tuple[float, ...]]:
    """Every weight vector over ``values``, except all zeros."""
    return [w for w in itertools.product(values, repeat=len(SIGNALS)) if any(w)]


def best_row(f1: F64, n_passed: NDArray[np.int64], *tie_keys: Sequence[float] | F64) -> int:
    """The index of the best F1; ties to fewer passed, then to the smallest ``tie_keys`` in order, then the
    first."""
    order = np.lexsort((np.arange(len(f1)), *reversed([np.asarray(k, dtype=np.float64) for k in tie_keys]),
                        n_passed, -f1))
    return int(order[0])


def blended_sweep(cset: CandidateSet, weights: Sequence[tuple[float, ...]] | None = None,
                  thresholds: F64 = THRESHOLDS) -> Choice:
    """The best blended gate over ``weights`` x ``thresholds`` (the module's tie rules)."""
    grid = weight_grid() if weights is None else list(weights)
    f1 = np.zeros((len(grid), len(thresholds)))
    n_passed = np.zeros((len(grid), len(thresholds)), dtype=np.int64)
    for i, w in enumerate(grid):
        score = gate(cset.signals, GateParams(weights=w)).score
        f1[i], n_passed[i] = grid_f1(score[:, None] >= thresholds[None, :], cset.keep)
    nonzero = np.repeat(np.array([sum(1 for x in w if x) for w in grid], dtype=np.float64), len(thresholds))
    total = np.repeat(np.array([sum(w) for w in grid], dtype=np.float64), len(thresholds))
    row = best_row(f1.ravel(), n_passed.ravel(), nonzero, total)
    i, t = divmod(row, len(thresholds))
    same = [j for j in range(len(thresholds)) if f1[i, j] == f1[i, t] and n_passed[i, j] == n_passed[i, t]]
    params = GateParams(mode="blended", threshold=float(thresholds[same[len(same) // 2]]), weights=grid[i])
    return Choice("blended", params, metrics(gate(cset.signals, params).passed, cset.keep),
                  tied=int(np.sum(f1 == f1[i, t])))


def bar_grid(grid: Sequence[Sequence[float]] = BAR_GRID) -> list[tuple[float, ...]]:
    return [tuple(b) for b in itertools.product(*grid)]


def k_of_n_sweep(cset: CandidateSet, grid: Sequence[Sequence[float]] = BAR_GRID) -> dict[int, Choice]:
    """For each k from 1 to 6, the best k-of-n gate over the bars' grid (the module's tie rules)."""
    combos = bar_grid(grid)
    strictness = [-float(sum(g.index(b) for g, b in zip(grid, bars, strict=True))) for bars in combos]
    out: dict[int, Choice] = {}
    for k in range(1, len(SIGNALS) + 1):
        tried = [GateParams(mode="k_of_n", k=k, bars=bars) for bars in combos]
        passed = np.stack([gate(cset.signals, p).passed for p in tried], axis=1)
        f1, n_passed = grid_f1(passed, cset.keep)
        row = best_row(f1, n_passed, strictness)
        params = tried[row]
        out[k] = Choice(f"k_of_n k={k}", params, metrics(gate(cset.signals, params).passed, cset.keep),
                        tied=int(np.sum(f1 == f1[row])))
    return out


def only(signal: int, bar: float) -> GateParams:
    """Signal ``signal`` alone: k = 1 with every other bar unreachable."""
    return GateParams(mode="k_of_n", k=1,
                      bars=tuple(bar if j == signal else UNREACHABLE for j in range(len(SIGNALS))))


def single_bars(column: F64, grid: Sequence[float], *, whole: bool) -> list[float]:
    """The bars tried for one signal alone: the grid's, and every whole number seen (every value seen when not
    ``whole``)."""
    seen = np.floor(column) if whole else column
    return sorted({float(b) for b in grid} | {float(v) for v in np.unique(seen)})


def single_sweep(cset: CandidateSet, grid: Sequence[Sequence[float]] = BAR_GRID) -> dict[str, Choice]:
    """Each signal alone with its best bar (ties: the higher bar)."""
    out: dict[str, Choice] = {}
    for j, name in enumerate(SIGNALS):
        bars = single_bars(cset.signals[:, j], grid[j], whole=name in WHOLE_SIGNALS)
        passed = np.stack([gate(cset.signals, only(j, b)).passed for b in bars], axis=1)
        f1, n_passed = grid_f1(passed, cset.keep)
        row = best_row(f1, n_passed, [-b for b in bars])
        params = only(j, bars[row])
        out[name] = Choice(f"{name} alone", params, metrics(gate(cset.signals, params).passed, cset.keep),
                           tied=int(np.sum(f1 == f1[row])))
    return out


@dataclass(frozen=True)
class Sweep:
    blended: Choice
    k_of_n: dict[int, Choice]
    single: dict[str, Choice]

    @property
    def best_k_of_n(self) -> Choice:
        """The best k (ties: fewer promoted, then the smaller k)."""
        return min(self.k_of_n.values(), key=lambda c: (-c.dev.f1, c.dev.passed, c.params.k))

    @property
    def best_single(self) -> Choice:
        return min(self.single.values(), key=lambda c: (-c.dev.f1, c.dev.passed))

    @property
    def mode(self) -> Mode:
        """The default mode: the better dev F1 (ties to blended, whose score is the promoted strength anyway)."""
        return "k_of_n" if self.best_k_of_n.dev.f1 > self.blended.dev.f1 else "blended"

    @property
    def defaults(self) -> GateParams:
        """The chosen defaults: the mode, the blended best's threshold and weights, the k-of-n best's k and bars."""
        blended, k_of_n = self.blended.params, self.best_k_of_n.params
        return dataclasses.replace(blended, mode=self.mode, k=k_of_n.k, bars=k_of_n.bars)

    def choices(self) -> list[Choice]:
        return [self.blended, *self.k_of_n.values(), *self.single.values()]


def sweep(dev: CandidateSet) -> Sweep:
    """Every grid on the development set."""
    return Sweep(blended=blended_sweep(dev), k_of_n=k_of_n_sweep(dev), single=single_sweep(dev))


# ------------------------------------------------------------------------------------------------------------
# The report


def params_json(params: GateParams) -> dict[str, Any]:
    """A configuration as JSON (an unreachable bar as null)."""
    return {"mode": params.mode, "threshold": params.threshold, "weights": list(params.weights), "k": params.k,
            "bars": [None if math.isinf(b) else b for b in params.bars]}


def set_summary(cset: CandidateSet) -> dict[str, Any]:
    """Size, keep share and each signal's spread (min, median, max, distinct values)."""
    columns = {
        name: {"min": float(np.min(col)), "median": float(np.median(col)), "max": float(np.max(col)),
               "distinct": len(np.unique(col))} if len(col) else {}
        for name, col in zip(SIGNALS, cset.signals.T, strict=True)
    }
    n = len(cset.keep)
    statuses = {status: cset.statuses.count(status) for status in sorted(set(cset.statuses))}
    retrieved = {status: int(sum(1 for st, r in zip(cset.statuses, cset.signals[:, 0], strict=True)
                                 if st == status and r > 0)) for status in statuses}
    return {"conversations": cset.conversations, "candidates": n, "keep": int(cset.keep.sum()),
            "keep_share": float(cset.keep.mean()) if n else 0.0, "statuses": statuses,
            "retrieved_by_status": retrieved, "signals": columns}


def constant_signals(*sets: CandidateSet) -> dict[str, float]:
    """Signals that take a single value over every candidate of every set: their value."""
    rows = np.concatenate([s.signals for s in sets])
    columns = zip(SIGNALS, rows.T, strict=True)
    return {name: float(col[0]) for name, col in columns if len(col) and np.all(col == col[0])}


def evaluate(sweep_result: Sweep, dev: CandidateSet, locomo: CandidateSet) -> dict[str, Any]:
    """The document: both sets' summaries, each configuration's dev and LoCoMo figures, the chosen defaults."""
    rows = []
    everything = GateParams(mode="k_of_n", k=1, bars=(0.0,) * len(SIGNALS))
    reference = Choice("promote all (reference)", everything, metrics(np.ones(len(dev.keep), bool), dev.keep), tied=0)
    for choice in [reference,
                   *sweep_result.choices()]:
        rows.append({"name": choice.name, "params": params_json(choice.params), "tied": choice.tied,
                     "dev": dataclasses.asdict(choice.dev),
                     "locomo": dataclasses.asdict(metrics(gate(locomo.signals, choice.params).passed, locomo.keep))})
    defaults = sweep_result.defaults
    return {
        "dev": set_summary(dev), "locomo": set_summary(locomo), "configurations": rows,
        "constant_signals": constant_signals(dev, locomo),
        "chosen": {**params_json(defaults), "retrieval_scale": defaults.retrieval_scale,
                   "query_kind_scale": defaults.query_kind_scale, "stated_scale": defaults.stated_scale,
                   "age_scale_days": defaults.age_scale_days, "blended": sweep_result.blended.name,
                   "k_of_n": sweep_result.best_k_of_n.name, "best_single": sweep_result.best_single.name},
    }


def _pct(x: float) -> str:
    return f"{100.0 * x:.1f}"


def _number(x: float | None) -> str:
    return "unreachable" if x is None else f"{x:g}"


def config_cell(params: Mapping[str, Any]) -> str:
    if params["mode"] == "blended":
        return f"threshold {params['threshold']:g}, weights ({', '.join(f'{w:g}' for w in params['weights'])})"
    bars = [f"{name} >= {_number(b)}" for name, b in zip(SIGNALS, params["bars"], strict=True) if b is not None]
    return f"k={params['k']}; bars: {', '.join(bars)}"


def figures_table(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = ["| configuration | gate | tied on dev | dev P | dev R | dev F1 | dev promoted | LoCoMo P | LoCoMo R "
             "| LoCoMo F1 | LoCoMo promoted |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        cells = [_pct(row[s][m]) for s in ("dev", "locomo") for m in ("precision", "recall", "f1", "promoted")]
        tied = row["tied"] or "-"
        lines.append(f"| {row['name']} | {config_cell(row['params'])} | {tied} | " + " | ".join(cells) + " |")
    return lines


def signals_table(document: Mapping[str, Any]) -> list[str]:
    lines = ["| signal | dev min / median / max (distinct) | LoCoMo min / median / max (distinct) |",
             "|---|---|---|"]
    for name in SIGNALS:
        cells = []
        for key in ("dev", "locomo"):
            s = document[key]["signals"][name]
            cells.append(f"{s['min']:.3g} / {s['median']:.3g} / {s['max']:.3g} ({s['distinct']})" if s else "-")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def _by_status(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{status} {n}" for status, n in counts.items()) or "-"


def candidates_row(label: str, summary: Mapping[str, Any]) -> str:
    return (f"| {label} | {summary['conversations']} | {summary['candidates']} | {summary['keep']} | "
            f"{_pct(summary['keep_share'])}% | {_by_status(summary['statuses'])} | "
            f"{_by_status(summary['retrieved_by_status'])} |")


def caveats(document: Mapping[str, Any]) -> list[str]:
    """What the figures can and cannot carry: usage signals that never move, and a dev set too small to choose on."""
    out: list[str] = []
    provisional = sum(document[k]["statuses"].get("provisional", 0) for k in ("dev", "locomo"))
    retrieved = sum(document[k]["retrieved_by_status"].get("provisional", 0) for k in ("dev", "locomo"))
    if provisional and not retrieved:
        out += ["**Usage signals.** No provisional candidate was ever retrieved. The embedded index lets recall see "
                "active memories only (archived ones when asked; `engine/adapters/embedded_store/index.py`), so a "
                "provisional fact, the gate's real input, is never returned by recall: its `retrievals` and "
                "`query_kinds` are 0 by construction, however often its subject comes up. Only facts written "
                "active (auto-active relations) can gather usage, and then only when stage two ranks them into "
                "the returned memories (Path A's prefix does not count as a retrieval).", ""]
    dev = document["dev"]
    if dev["candidates"] < FEW_CANDIDATES:
        most = max(row["tied"] for row in document["configurations"])
        out += [f"**The dev set is too small to choose on.** It yields {dev['candidates']} candidates "
                f"({dev['keep']} keep) from {dev['conversations']} conversations: the rule-based extractor finds "
                "few facts in these chats. With so few, much of each grid reaches the same dev F1 (up to "
                f"{most} grid points tie, column *tied on dev*), so the tie rules, not the data, picked most of the "
                "constants below. They are what the brief's procedure gives, not evidence; a fact-dense dev set "
                "(or usage that reaches provisional facts) is needed before they mean much.", ""]
    return out


def chosen_lines(chosen: Mapping[str, Any]) -> list[str]:
    names = ("retrievals", "query_kinds", "confidence", "source_trust", "stated", "age")
    bars = ("retrievals", "query_kinds", "confidence", "source_trust", "stated", "age_days")
    profile = ([f"mode = \"{chosen['mode']}\"", f"threshold = {chosen['threshold']:g}", f"k = {chosen['k']}"]
               + [f"weight_{n} = {w:g}" for n, w in zip(names, chosen["weights"], strict=True)]
               + [f"bar_{n} = {b:g}" for n, b in zip(bars, chosen["bars"], strict=True)])
    return [
        "```python",
        f"GateParams(mode={chosen['mode']!r}, threshold={chosen['threshold']!r}, "
        f"weights={tuple(chosen['weights'])!r}, k={chosen['k']!r}, bars={tuple(chosen['bars'])!r})",
        "```", "",
        "As `ConsolidationParams` fields (the scales stay at their defaults: "
        f"retrieval_scale {chosen['retrieval_scale']:g}, query_kind_scale {chosen['query_kind_scale']:g}, "
        f"stated_scale {chosen['stated_scale']:g}, age_scale_days {chosen['age_scale_days']:g}):", "",
        "```toml", *profile, "```",
    ]


def constants_sentence(constant: Mapping[str, float], document: Mapping[str, Any]) -> str:
    if not constant:
        return "No signal is constant over the candidates."
    named = ", ".join(f"{name} (always {value:g})" for name, value in constant.items())
    text = (f"Constant over every candidate of both sets: {named}. A constant signal carries no information here: "
            "in blended mode its weight moves every score alike (a shift of the threshold), and in k-of-n mode a bar "
            "at or below its value is always cleared (a free signal towards k), one above it never.")
    if {"confidence", "source_trust"} & set(constant):
        text += (" The embedded pipeline writes every extracted fact with the default confidence (1.0) and the "
                 "source `user_stated` (trust 1.0) (`engine/writer.py`, `_write_facts`); confidence and trust will "
                 "only vary once something writes confidences or inferred facts.")
    stated = {k: document[k]["signals"]["stated"] for k in ("dev", "locomo")}
    return text + (f" `stated` (times the same fact was written) is at most {stated['dev'].get('max', 0):g} on dev "
                   f"and {stated['locomo'].get('max', 0):g} on LoCoMo.")


def recommendation(document: Mapping[str, Any]) -> str:
    rows = {r["name"]: r for r in document["configurations"]}
    chosen = document["chosen"]
    blended, k_of_n = rows[chosen["blended"]], rows[chosen["k_of_n"]]
    win, lose = (blended, k_of_n) if chosen["mode"] == "blended" else (k_of_n, blended)
    gap = 100.0 * (win["dev"]["f1"] - lose["dev"]["f1"])
    behind = (f"{gap:.1f} points behind" if gap > 0 else
              "a tie, which goes to blended (its score is the strength a promoted fact starts with either way)")
    text = (f"Recommended default mode: **{chosen['mode']}** ({win['name']}: dev F1 {_pct(win['dev']['f1'])}); the "
            f"best of the other mode ({lose['name']}) reaches dev F1 {_pct(lose['dev']['f1'])}, {behind}. On LoCoMo "
            f"(scored, not chosen on) they reach {_pct(win['locomo']['f1'])} and {_pct(lose['locomo']['f1'])}. The "
            f"best single signal ({rows[chosen['best_single']]['name']}) reaches dev F1 "
            f"{_pct(rows[chosen['best_single']]['dev']['f1'])}.")
    everything = document["configurations"][0]
    if max(r["dev"]["f1"] for r in document["configurations"][1:]) <= everything["dev"]["f1"]:
        text += (f" No configuration beats promoting every candidate on dev (F1 {_pct(everything['dev']['f1'])}), "
                 f"and the chosen {win['name']} gate promotes {_pct(win['dev']['promoted'])}% of them there.")
    if win["locomo"]["f1"] < everything["locomo"]["f1"]:
        text += (f" On LoCoMo it scores below promoting everything (F1 {_pct(win['locomo']['f1'])} against "
                 f"{_pct(everything['locomo']['f1'])}).")
    return text


def render(document: Mapping[str, Any]) -> str:
    """The markdown report."""
    run = document["run"]
    dev, locomo = document["dev"], document["locomo"]
    lines = [
        "# Consolidation gate sweep", "",
        f"Made by `{run['command']}` at commit `{run['commit']}` on {run['date']} ({run['seconds']:.0f} s: "
        f"dev {run['dev_seconds']:.0f} s, LoCoMo {run['locomo_seconds']:.0f} s; embedder {run['embedder']}, "
        f"classifier {run['classifier']}). The harness is `eval/consolidation_sweep.py`; its docstring gives every "
        "choice.", "",
        "**Every constant below was chosen on the development sets only** (`eval/data/dev_conversations` and "
        "`eval/data/consolidation_dev`, our own "
        "hand-written conversations in LoCoMo's format). LoCoMo (CC BY-NC) is evaluation only: the configurations "
        "chosen on dev are scored on it unchanged, and its columns are reported beside dev's, never used to "
        "choose.", "",
        "Candidates are the facts (not revoked) in the user's partition after each conversation was replayed "
        "through the embedded engine with a recall on every turn of every session after the first. A candidate is "
        "*keep* when a turn it was distilled from is cited as evidence (audit-corrected) by a question of "
        "categories 1-4. Metric: F1 of \"the gate passes\" against *keep*; figures in percent; *promoted* is the "
        "share of candidates the gate passes.", "",
        "## Candidates", "",
        "| set | conversations | candidates | keep | keep share | by status | retrieved at least once |",
        "|---|---:|---:|---:|---:|---|---|",
        candidates_row("dev (chosen on)", dev), candidates_row("LoCoMo (evaluation only)", locomo), "",
        *signals_table(document), "",
        constants_sentence(document["constant_signals"], document), "",
        *caveats(document),
        "## Figures", "",
        "Each configuration was chosen on dev; the LoCoMo columns score that same configuration. A signal alone is "
        "k-of-n with k = 1 and every other bar unreachable.", "",
        *figures_table(document["configurations"]), "",
        "## Chosen defaults", "",
        recommendation(document), "",
        *chosen_lines(document["chosen"]), "",
    ]
    if run.get("limited"):
        lines += [f"**Partial run:** {run['limited']}", ""]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------------------
# The run


def commit() -> str:
    """``git rev-parse --short HEAD``, marked when the working tree has changes."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True,
                               check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head} (with uncommitted changes)" if dirty else head


def measure(dev_paths: Sequence[Path], locomo_path: Path, *, settings: Settings, limit: int | None, report: Path,
            command: str, out: TextIO, err: TextIO) -> dict[str, Any]:
    """What ``feltsense eval consolidation`` runs: replay both sets, sweep on dev, score on LoCoMo, write the
    markdown to ``report`` and return the JSON document."""
    from engine.factory import build_classifier, build_embedder

    dev_conversations = [c for path in dev_paths for c in load(path, limit=limit)]
    locomo_conversations = load(locomo_path, limit=limit)
    print("loading the embedder and classifier...", file=err)
    embedder, classifier = build_embedder(settings), build_classifier(settings)
    started = time.monotonic()
    found: dict[str, tuple[list[Candidate], float]] = {}
    for key, conversations in (("dev", dev_conversations), ("locomo", locomo_conversations)):
        print(f"replaying the {key} conversations...", file=err)
        progress = Progress(work_units(conversations), err)
        began = time.monotonic()
        try:
            rows = collect(conversations, embedder=embedder, classifier=classifier, progress=progress)
        finally:
            progress.close()
        found[key] = (rows, time.monotonic() - began)
    dev = CandidateSet.of(found["dev"][0], len(dev_conversations))
    locomo = CandidateSet.of(found["locomo"][0], len(locomo_conversations))
    document = evaluate(sweep(dev), dev, locomo)
    document["run"] = {
        "command": command, "commit": commit(), "date": datetime.now(UTC).date().isoformat(),
        "seconds": time.monotonic() - started, "dev_seconds": found["dev"][1], "locomo_seconds": found["locomo"][1],
        "embedder": embedder.model_id, "classifier": classifier.name,
        "limited": (f"only the first {limit} conversations of each set (--limit {limit})" if limit else None),
    }
    document["candidates"] = {key: [[c.sample_id, c.status, *c.signals, int(c.keep)] for c in rows]
                              for key, (rows, _) in found.items()}
    document["candidate_columns"] = ["sample_id", "status", *SIGNALS, "keep"]
    text = render(document)
    report.write_text(text, encoding="utf-8")
    print(text, file=out)
    print(f"wrote {report}", file=err)
    return document
