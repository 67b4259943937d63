"""Evidence recall@k on LoCoMo (``feltsense eval locomo``): does recall surface the turns a question is about?

LoCoMo (snap-research/LoCoMo, ``locomo10.json``) holds 10 long multi-session conversations with QA items whose
``evidence`` names the turns (``D<session>:<turn>``) that answer them; an independent audit
(dial481/locomo-audit, ``audit/errors.json``) corrects the evidence of 57 ``WRONG_CITATION`` items. Four methods
are measured in one run over the same turn embeddings:

- ``dense``: cosine over the turn embeddings alone;
- ``bm25``: BM25 alone, with the engine's tokeniser and BM25 kernel;
- ``stage1``: the store's hybrid search, as recall's stage one runs it;
- ``stage2``: the engine's full recall (stage one, then the stage-two rerank), limit 10.

Choices where the brief is silent:

- A turn is stored as ``"<speaker>: <text>"``, plus ``" [shares a photo: <caption>]"`` when it shared an image:
  both speakers are one "user" to the engine, so the speaker's name is the only place who said it survives, and
  an image-only turn ("take a look at this") says nothing without its caption. Every method sees the same text.
- An atomic fact recall returns (kind ``fact``) credits the turns it was distilled from
  (``memory.fact.provenance``): it takes a slot, and it carries what those turns said. Canon credits nothing.
- A question with no valid evidence id left (after splitting malformed ids and dropping unknown ones) is left
  out of the averages: there is nothing to find. Likewise, categories with no question are left out.
- ``overall`` is categories 1-4; category 5 (adversarial) is reported on its own, as LoCoMo's paper does.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np
from numpy.typing import NDArray

from engine.domain.ports import SearchRequest
from engine.domain.text import terms
from engine.retrieval import Query, lexical_query, rank
from engine.retrieval import query_vector as to_query_vector
from scoring.fusion import bm25, bm25_idf

if TYPE_CHECKING:
    from engine.domain.ports import Classifier, Embedder
    from engine.service import Engine
    from engine.settings import Settings

KS = (1, 5, 6, 10)
METHODS = ("dense", "bm25", "stage1", "stage2")
OVERALL_CATEGORIES = (1, 2, 3, 4)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
CHARACTER_ID = "locomo"
TURN_GAP = timedelta(seconds=30)
"""LoCoMo dates sessions, not turns: turn i of a session is said i x 30 s after the session's start."""
RECALL_DELAY = timedelta(days=1)
"""Questions are asked this long after the conversation's last turn."""
LOCOMO_FILE = "locomo10.json"
AUDIT_FILE = Path("audit") / "errors.json"
_SESSION_KEY = re.compile(r"session_(\d+)")
_QUESTION_ID = re.compile(r"locomo_(\d+)_qa(\d+)")

Slot = tuple[str, ...]
"""One retrieved item, as the evidence ids it credits: a turn credits itself, a fact its source turns."""


class LocomoDataError(ValueError):
    """The data is missing or not shaped like LoCoMo; the message names the path."""


# ------------------------------------------------------------------------------------------------------------
# Data


@dataclass(frozen=True)
class LocomoTurn:
    dia_id: str
    text: str


@dataclass(frozen=True)
class LocomoSession:
    number: int
    start: datetime
    turns: tuple[LocomoTurn, ...]


@dataclass(frozen=True)
class Question:
    index: int
    text: str
    category: int
    evidence: tuple[str, ...]
    corrected: tuple[str, ...]
    """The audit's evidence for a ``WRONG_CITATION`` item, else the original evidence."""


@dataclass(frozen=True)
class Conversation:
    index: int
    sample_id: str
    sessions: tuple[LocomoSession, ...]
    questions: tuple[Question, ...]

    @property
    def ask_at(self) -> datetime:
        last = self.sessions[-1]
        return last.start + TURN_GAP * len(last.turns) + RECALL_DELAY


def split_evidence(raw: Iterable[str], existing: Collection[str]) -> tuple[str, ...]:
    """Evidence ids as a clean tuple: malformed entries ("D8:6; D9:17", "D9:1 D4:4") are split on ``;`` and
    whitespace, ids no turn has ("D", "D:11:26", "D30:05") are dropped, duplicates kept once, order kept."""
    found: dict[str, None] = {}
    for entry in raw:
        for part in re.split(r"[;\s]+", entry):
            if part and part in existing:
                found[part] = None
    return tuple(found)



def parse_session_date(value: str) -> datetime:
    """LoCoMo's session dates ("1:56 pm on 8 May, 2023"), read as UTC."""
    return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turn_text(turn: Mapping[str, Any]) -> str:
    """What is stored for one LoCoMo turn: the speaker's name, the text, and a shared image's caption."""
    text = f"{turn['speaker']}: {str(turn.get('text', '')).strip()}"
    caption = str(turn.get("blip_caption") or "").strip()
    return f"{text} [shares a photo: {caption}]" if caption else text


def corrections(errors: Sequence[Mapping[str, Any]]) -> dict[tuple[int, int], tuple[str, ...]]:
    """The audit's corrected evidence by (conversation index, QA index), ``WRONG_CITATION`` items only."""
    out: dict[tuple[int, int], tuple[str, ...]] = {}
    for item in errors:
        if item.get("error_type") != "WRONG_CITATION":
            continue
        match = _QUESTION_ID.fullmatch(str(item.get("question_id", "")))
        if match is None:
            raise LocomoDataError(f"audit item with an unexpected question_id {item.get('question_id')!r}")
        out[(int(match[1]), int(match[2]))] = tuple(str(e) for e in item.get("correct_evidence") or ())
    return out


def parse_conversation(
    index: int, raw: Mapping[str, Any], corrected: Mapping[tuple[int, int], Sequence[str]]
) -> Conversation:
    """One LoCoMo sample: its sessions in order, and its questions with clean (and audit-corrected) evidence."""
    body = raw["conversation"]
    numbers = sorted(int(m[1]) for key in body if (m := _SESSION_KEY.fullmatch(key)))
    sessions = tuple(
        LocomoSession(
            number=n,
            start=parse_session_date(body[f"session_{n}_date_time"]),
            turns=tuple(LocomoTurn(dia_id=str(t["dia_id"]), text=turn_text(t)) for t in body[f"session_{n}"]),
        )
        for n in numbers
        if body[f"session_{n}"]
    )
    existing = {turn.dia_id for session in sessions for turn in session.turns}
    questions = []
    for q_index, qa in enumerate(raw["qa"]):
        evidence = split_evidence(qa.get("evidence") or (), existing)
        fixed = corrected.get((index, q_index))
        questions.append(Question(
            index=q_index, text=str(qa["question"]), category=int(qa["category"]), evidence=evidence,
            corrected=evidence if fixed is None else split_evidence(fixed, existing),
        ))
    return Conversation(index=index, sample_id=str(raw["sample_id"]), sessions=sessions, questions=tuple(questions))


def data_files(path: Path) -> tuple[Path, Path]:
    """``locomo10.json`` and the audit's ``errors.json`` from ``--data``: the LoCoMo folder or its JSON file."""
    locomo = path / LOCOMO_FILE if path.is_dir() else path
    audit = locomo.parent / AUDIT_FILE
    for needed in (locomo, audit):
        if not needed.is_file():
            raise LocomoDataError(f"{needed} not found (expected LoCoMo's {LOCOMO_FILE} with {AUDIT_FILE} beside it)")
    return locomo, audit


def load(path: Path, *, limit: int | None = None) -> list[Conversation]:
    """The conversations under ``path`` (the first ``limit`` of them), evidence cleaned and corrected."""
    locomo, audit = data_files(path)
    try:
        samples = json.loads(locomo.read_text(encoding="utf-8"))
        fixed = corrections(json.loads(audit.read_text(encoding="utf-8")))
        return [parse_conversation(i, sample, fixed) for i, sample in enumerate(samples[:limit])]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise LocomoDataError(f"cannot read LoCoMo from {locomo}: {type(exc).__name__}: {exc}") from exc


# ------------------------------------------------------------------------------------------------------------
# Metrics


def recall_at_k(ranked: Sequence[Slot], evidence: Collection[str], k: int) -> float:
    """The fraction of ``evidence`` credited by the first ``k`` slots (0 when there is no evidence)."""
    if not evidence:
        return 0.0
    found = {dia_id for slot in ranked[:k] for dia_id in slot}
    return sum(1 for e in evidence if e in found) / len(evidence)


def recall_row(ranked: Sequence[Slot], evidence: Collection[str]) -> dict[str, float] | None:
    """Recall at every k in ``KS``, or None when the question has no evidence to find."""
    if not evidence:
        return None
    return {f"R@{k}": recall_at_k(ranked, evidence, k) for k in KS}


@dataclass(frozen=True)
class Scored:
    """One question under one method: recall on the original and on the corrected evidence."""

    category: int
    original: dict[str, float] | None
    corrected: dict[str, float] | None


def score(question: Question, ranked: Sequence[Slot]) -> Scored:
    return Scored(question.category, recall_row(ranked, question.evidence), recall_row(ranked, question.corrected))


def _mean_percent(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    return {f"R@{k}": round(100.0 * sum(r[f"R@{k}"] for r in rows) / len(rows), 1) for k in KS}


def summarise(rows: Iterable[tuple[int, dict[str, float] | None]]) -> dict[str, Any]:
    """``{"overall": {...}, "by_category": {"1": {...}, ...}}`` in percent with one decimal; overall is
    categories 1-4; questions without evidence and categories without questions are left out."""
    by_category: dict[int, list[dict[str, float]]] = {}
    for category, row in rows:
        if row is not None:
            by_category.setdefault(category, []).append(row)
    overall = [row for c in OVERALL_CATEGORIES for row in by_category.get(c, [])]
    return {
        "overall": _mean_percent(overall) if overall else {},
        "by_category": {str(c): _mean_percent(by_category[c]) for c in sorted(by_category)},
    }


def method_report(scored: Sequence[Scored]) -> dict[str, Any]:
    """One method's block of the JSON: original evidence, then ``corrected``."""
    original = summarise((s.category, s.original) for s in scored)
    return {**original, "corrected": summarise((s.category, s.corrected) for s in scored)}


def report(scored: Mapping[str, Sequence[Scored]]) -> dict[str, Any]:
    """``{"methods": {method: method_report}}``, methods in the order given."""
    return {"methods": {method: method_report(rows) for method, rows in scored.items()}}


def format_table(result: Mapping[str, Any], *, questions: int | None = None) -> str:
    """The report as text: methods x R@k overall, then per category, then the same on corrected evidence."""
    methods: Mapping[str, Any] = result["methods"]
    header = f"  {'':<8}" + "".join(f"{f'R@{k}':>8}" for k in KS)
    lines = ["LoCoMo evidence recall@k (%)" + (f", {questions} questions with evidence" if questions else "")]
    for prefix, key in (("", None), ("corrected evidence (audit), ", "corrected")):
        views = {m: v if key is None else v[key] for m, v in methods.items()}
        sections = [("overall (categories 1-4)", {m: v["overall"] for m, v in views.items()})]
        sections += [(f"category {c} {name}", {m: v["by_category"].get(str(c)) for m, v in views.items()})
                     for c, name in CATEGORIES.items()]
        for title, rows in sections:
            if not any(rows.values()):
                continue
            lines.extend(["", prefix + title, header])
            for method, values in rows.items():
                cells = "".join(f"{values[f'R@{k}']:>8.1f}" if values else f"{'-':>8}" for k in KS)
                lines.append(f"  {method:<8}{cells}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------------------
# Baselines


def top_k(scores: NDArray[np.float64], k: int, *, positive_only: bool = False) -> list[int]:
    """Indices of the ``k`` best scores, best first; ties by index, so runs are reproducible."""
    rows = np.flatnonzero(scores > 0.0) if positive_only else np.arange(len(scores))
    order = rows[np.argsort(-scores[rows], kind="stable")]
    return [int(i) for i in order[:k]]


class Bm25Index:
    """Plain BM25 over a fixed list of texts, tokenised as the engine's lexical leg tokenises
    (``engine.domain.text``)."""

    def __init__(self, texts: Sequence[str], *, k1: float, b: float) -> None:
        self._k1, self._b = k1, b
        postings: dict[str, tuple[list[int], list[float]]] = {}
        lengths: list[float] = []
        for row, text in enumerate(texts):
            counts: dict[str, int] = {}
            for term in terms(text):
                counts[term] = counts.get(term, 0) + 1
            lengths.append(float(sum(counts.values())))
            for term, tf in counts.items():
                rows, tfs = postings.setdefault(term, ([], []))
                rows.append(row)
                tfs.append(float(tf))
        self._postings = {t: (np.array(r, dtype=np.intp), np.array(f)) for t, (r, f) in postings.items()}
        self._lengths = np.array(lengths, dtype=np.float64)
        self._average = float(self._lengths.mean()) if len(lengths) else 0.0

    def scores(self, query: str) -> NDArray[np.float64]:
        n = len(self._lengths)
        out = np.zeros(n)
        for term in dict.fromkeys(terms(query)):
            posting = self._postings.get(term)
            if posting is None:
                continue
            rows, tf = posting
            idf = float(bm25_idf(np.array(float(len(rows))), n))
            out[rows] += bm25(tf, self._lengths[rows], idf=idf, average_doc_length=self._average, k1=self._k1,
                              b=self._b)
        return out

    def rank(self, query: str, k: int) -> list[int]:
        """The best ``k`` texts that share a term with the query."""
        return top_k(self.scores(query), k, positive_only=True)


# ------------------------------------------------------------------------------------------------------------
# The run


class Progress:
    """A plain-text ``\\r`` progress bar (no dependency): done/total, a bar, the step, elapsed time."""

    def __init__(self, total: int, out: TextIO, *, width: int = 30) -> None:
        self._total, self._out, self._width = max(total, 1), out, width
        self._done = 0
        self._started = time.monotonic()

    def advance(self, label: str, steps: int = 1) -> None:
        self._done = min(self._done + steps, self._total)
        filled = self._width * self._done // self._total
        elapsed = time.monotonic() - self._started
        self._out.write(f"\r[{'#' * filled}{'.' * (self._width - filled)}] {self._done}/{self._total} "
                        f"{elapsed:6.0f}s  {label:<40.40}")
        self._out.flush()

    def close(self) -> None:
        self._out.write("\n")
        self._out.flush()


def work_units(conversations: Sequence[Conversation]) -> int:
    """Steps the progress bar counts: one per session ingested and closed, one per question asked."""
    return sum(len(c.sessions) + len(c.questions) for c in conversations)


def _ingest(engine: Engine, conversation: Conversation, progress: Progress | None) -> None:
    """Both speakers as user turns of one user; each LoCoMo session an engine session, closed when it ends so
    the write-time pass writes traces and facts."""
    from engine.domain.models import Turn

    for session in conversation.sessions:
        session_id = f"{conversation.sample_id}.s{session.number}"
        turns = [
            Turn(turn_id=turn.dia_id, session_id=session_id, character_id=CHARACTER_ID,
                 user_id=conversation.sample_id, role="user", text=turn.text, timestamp=session.start + TURN_GAP * i)
            for i, turn in enumerate(session.turns)
        ]
        engine.ingest(turns)
        engine.close_session(session_id, closed_at=session.start + TURN_GAP * len(turns))
        if progress is not None:
            progress.advance(f"{conversation.sample_id} session {session.number}")


def evaluate_conversation(
    engine: Engine, conversation: Conversation, progress: Progress | None = None
) -> dict[str, list[Scored]]:
    """Ingest one conversation into an empty ``engine`` and score every question under every method."""
    from engine.domain.models import Partition, RecallQuery
    from engine.ingest import memory_id_for

    _ingest(engine, conversation, progress)
    dia_ids = [turn.dia_id for session in conversation.sessions for turn in session.turns]
    texts = [turn.text for session in conversation.sessions for turn in session.turns]
    memory_ids = [memory_id_for(d) for d in dia_ids]
    slot_of: dict[str, Slot] = {m: (d,) for m, d in zip(memory_ids, dia_ids, strict=True)}

    def slots(found: Iterable[str]) -> list[Slot]:
        found = list(found)
        unknown = [m for m in found if m not in slot_of]
        for memory in engine.store.get_memories(unknown):  # facts credit their source turns; canon nothing
            sources = memory.fact.provenance if memory.fact is not None else ()
            slot_of[memory.memory_id] = tuple(d for s in sources for d in slot_of.get(s, ()))
        return [slot_of.get(m, ()) for m in found]

    profile = engine.profiles.profile_for(CHARACTER_ID)
    params = profile.retrieval.model_copy(update={"candidates": max(profile.retrieval.candidates, max(KS))})
    partition = Partition(character_id=CHARACTER_ID, user_id=conversation.sample_id)
    vectors = engine.store.get_vectors(memory_ids).astype(np.float64)
    lexical = Bm25Index(texts, k1=params.bm25_k1, b=params.bm25_b)
    asked = list(conversation.questions)
    query_vectors = engine.embedder.embed([q.text for q in asked]) if asked else np.zeros((0, vectors.shape[1]))
    at = conversation.ask_at
    out: dict[str, list[Scored]] = {m: [] for m in METHODS}
    for question, query_vector in zip(asked, query_vectors, strict=True):
        dense = top_k(np.nan_to_num(vectors @ query_vector.astype(np.float64), nan=-1.0), max(KS))
        out["dense"].append(score(question, [slot_of[memory_ids[i]] for i in dense]))
        out["bm25"].append(score(question, [slot_of[memory_ids[i]] for i in lexical.rank(question.text, max(KS))]))
        query_terms, weights = lexical_query(question.text, (), params)
        unit, scale = to_query_vector(query_vector, None, params)
        legs = engine.store.search(SearchRequest(partition=partition, query_vector=unit, query_terms=query_terms,
                                                 params=params, exclude_session=None, created_before=at))
        ranked = rank(legs, Query(vector=unit, cosine_scale=scale, terms=query_terms, term_weights=weights), params)
        out["stage1"].append(score(question, slots(c.memory_id for c in ranked.candidates)))
        recalled = engine.recall(RecallQuery(character_id=CHARACTER_ID, user_id=conversation.sample_id,
                                             message=question.text, at=at, limit=max(KS),
                                             include_current_session=True))
        out["stage2"].append(score(question, slots(m.memory_id for m in recalled.memories)))
        if progress is not None:
            progress.advance(f"{conversation.sample_id} questions")
    return out


def run(
    conversations: Sequence[Conversation],
    *,
    embedder: Embedder,
    classifier: Classifier,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Every conversation in a fresh engine (its own temporary data directory, the shared models), then the
    report over all questions."""
    from engine.factory import build_embedded_engine

    scored: dict[str, list[Scored]] = {m: [] for m in METHODS}
    with tempfile.TemporaryDirectory(prefix="feltsense-locomo-") as tmp:
        for conversation in conversations:
            engine = build_embedded_engine(Path(tmp) / conversation.sample_id, embedder=embedder,
                                           classifier=classifier)
            try:
                for method, rows in evaluate_conversation(engine, conversation, progress).items():
                    scored[method].extend(rows)
            finally:
                engine.close()
    return report(scored)


def measure(path: Path, *, settings: Settings, limit: int | None, out: TextIO, err: TextIO) -> dict[str, Any]:
    """What ``feltsense eval locomo`` runs: load (``LocomoDataError`` when the data is not there or not LoCoMo),
    load the models ``settings`` name, measure with a progress bar on ``err``, print the table on ``out``."""
    from engine.factory import build_classifier, build_embedder

    conversations = load(path, limit=limit)
    print("loading the embedder and classifier...", file=err)
    embedder, classifier = build_embedder(settings), build_classifier(settings)
    progress = Progress(work_units(conversations), err)
    started = time.monotonic()
    try:
        result = run(conversations, embedder=embedder, classifier=classifier, progress=progress)
    finally:
        progress.close()
    asked = sum(1 for c in conversations for q in c.questions if q.evidence)
    print(format_table(result, questions=asked), file=out)
    print(f"\n{len(conversations)} conversations in {time.monotonic() - started:.0f}s; embedder {embedder.model_id}",
          file=out)
    return result
