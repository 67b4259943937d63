"""Stage one as recall runs it: the conversation window, the query both legs search with, and one candidate list
merged over the levels the user may see (their own, the organisation's, the character's canon), up to
``retrieval.candidates``.

Each level is ranked by ``engine.retrieval.rank`` (the one stage-one ranking, floors included, the same for every
store). Degradation is recorded, never silent: if the embedder fails, stage one runs lexical only; if that finds
nothing, plain substring matching answers.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

import numpy as np

from engine.domain.models import Candidate, Partition, RecallMode, RecallQuery, WindowTurn
from engine.domain.ports import Embedder, SearchIndex, SearchRequest, TurnLog
from engine.domain.scopes import visible
from engine.domain.text import terms
from engine.domain.tuning import RetrievalParams, TuningProfile
from engine.retrieval import Query, Ranked, query_vector, rank, weighted_terms

log = logging.getLogger("feltsense.recall")
LINE_CACHE_SIZE = 4096
WindowSource = Literal["none", "passed", "stored"]


@dataclass
class Searched:
    """What stage one found over every level, and what the recall trace reports about it."""

    candidates: list[Candidate]
    mode: RecallMode
    counts: dict[str, int] = field(default_factory=dict)
    own: Ranked | None = None  # the user's own level, searched first: its floors go in the trace
    frequency: dict[str, float] = field(default_factory=dict)  # per query term, over the levels searched
    documents: int = 0  # the memories the legs counted, over the levels searched


class StageOne:
    """Stage one for one engine; remembers the window lines' vectors, oldest entry dropped first."""

    def __init__(self, *, index: SearchIndex, turns: TurnLog, embedder: Embedder) -> None:
        self._index = index
        self._turns = turns
        self._embedder = embedder
        self._line_vectors: dict[str, np.ndarray] = {}

    def window(
        self, query: RecallQuery, partition: Partition, profile: TuningProfile, now: datetime
    ) -> tuple[list[WindowTurn], WindowSource]:
        """The conversation's last ``window_turns`` lines before the message: the request's when it passed them,
        else the current session's stored turns up to the turn's time (only this user's, with this character; the
        message itself left out when the runtime stored it first)."""
        size = profile.retrieval.window_turns
        if size == 0 or query.window == ():
            return [], "none"
        if query.window is not None:
            return list(query.window[-size:]), "passed"
        if query.session_id is None:
            return [], "none"
        turns = [t for t in self._turns.get_turns(query.session_id)
                 if t.character_id == partition.character_id and t.user_id == partition.user_id
                 and t.timestamp <= now]
        if turns and turns[-1].role == "user" and turns[-1].text.strip() == query.message.strip():
            turns = turns[:-1]
        lines = [WindowTurn(role=t.role, text=t.text) for t in turns[-size:]]
        return lines, "stored" if lines else "none"

    def query(
        self, query: RecallQuery, window: Sequence[WindowTurn], line_terms: Sequence[Sequence[str]],
        profile: TuningProfile, notes: list[str],
    ) -> tuple[Query, RecallMode]:
        """The query both legs search with: the message first, the window as weighted context. Any embedder
        failure degrades to lexical ("lexical" mode); the note and the log say so."""
        query_terms, term_weights = weighted_terms(terms(query.message), line_terms, profile.retrieval)
        mode: RecallMode = "hybrid"
        message_vector, window_vectors = None, None
        try:
            message_vector, window_vectors = self._vectors(query.message, window, profile)
        except Exception as exc:  # any embedder failure degrades to lexical; the trace and the log say so
            mode = "lexical"
            notes.append(f"embedder failed ({type(exc).__name__}: {exc}); answered without the vector leg")
            log.warning("recall degraded to lexical for %s/%s: %s", query.character_id, query.user_id, exc)
        vector, scale = query_vector(message_vector, window_vectors, profile.retrieval)
        return Query(vector=vector, cosine_scale=scale, terms=query_terms, term_weights=term_weights), mode

    def search(
        self, query: RecallQuery, search: Query, mode: RecallMode, profile: TuningProfile, now: datetime,
        exclude: str | None, notes: list[str],
    ) -> Searched:
        """Each level the user may see, searched and ranked, merged best first (stable: ties keep level order,
        narrowest first) and cut to ``retrieval.candidates``; substring matching when lexical found nothing."""
        found = search_levels(
            self._index, [level for _, level in visible(query.character_id, query.user_id)], search, mode,
            profile.retrieval, text=query.message, created_before=now, exclude_session=exclude,
            substring_limit=profile.retrieval.candidates,
        )
        if found.mode == "substring":
            notes.append("lexical leg found nothing; answered by substring matching")
        return found

    def _vectors(
        self, message: str, window: Sequence[WindowTurn], profile: TuningProfile
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """The message's vector and the window lines'. Lines come from a small cache of what was embedded before
        (earlier messages, and the lines ingest embedded); any other line is embedded in the message's call."""
        lines = [t.text for t in window] if profile.retrieval.window_vector_weight > 0.0 else []
        cache = self._line_vectors
        missing = list(dict.fromkeys(line for line in lines if line not in cache and line != message))
        rows = self._embedder.embed([message, *missing])
        # The message is the next turn's window line: remembered with the lines.
        self.remember_lines([message, *missing], rows)
        if not lines:
            return rows[0], None
        return rows[0], np.stack([cache.get(line, rows[0]) for line in lines])

    def remember_lines(self, lines: Sequence[str], vectors: np.ndarray) -> None:
        """Keep lines' vectors for the windows of the next turns (ingest tells recall what it embedded); the oldest
        entry goes first once the cache is full."""
        cache = self._line_vectors
        for line, row in zip(lines, vectors, strict=True):
            if line not in cache and len(cache) >= LINE_CACHE_SIZE:
                cache.pop(next(iter(cache)), None)
            cache[line] = row


def search_levels(
    index: SearchIndex, levels: Sequence[Partition], search: Query, mode: RecallMode, params: RetrievalParams, *,
    text: str, created_before: datetime, exclude_session: str | None, substring_limit: int,
    include_archived: bool = False,
) -> Searched:
    """Stage one over ``levels``: each searched and ranked (``engine.retrieval.rank``), merged best first (stable:
    ties keep level order) and cut to ``params.candidates``. When the answer is lexical (the embedder is down)
    and finds nothing, substring matching answers instead and ``mode`` says "substring". Recall searches the
    levels a user may see; the memory search of ``Engine.search`` the user's own partition alone."""
    found = Searched(candidates=[], mode=mode)
    counts = found.counts
    for level in levels:  # filters before ranking: each level is searched for what this user may see
        legs = index.search(SearchRequest(
            partition=level, query_vector=search.vector, query_terms=search.terms, params=params,
            exclude_session=exclude_session, created_before=created_before, include_archived=include_archived,
            term_weights=search.term_weights.tolist(),
        ))
        ranked = rank(legs, search, params)
        if found.own is None:
            found.own = ranked
        found.documents += legs.documents
        for term, df in zip(search.terms, legs.document_frequency.tolist(), strict=True):
            found.frequency[term] = found.frequency.get(term, 0.0) + df
        found.candidates.extend(ranked.candidates)
        for key, value in (("vector", ranked.vector), ("lexical", ranked.lexical),
                           ("dropped_below_floor", ranked.dropped_below_floor),
                           ("excluded_current_session", ranked.excluded_current_session)):
            counts[key] = counts.get(key, 0) + value
    if found.mode == "lexical" and not found.candidates:
        found.mode = "substring"
        for level in levels:
            found.candidates.extend(index.substring_search(
                level, query_text=text, limit=substring_limit, exclude_session=exclude_session,
                created_before=created_before, include_archived=include_archived,
            ))
    found.candidates.sort(key=lambda c: -c.relevance)  # stable: ties keep level order, narrowest first
    found.candidates = found.candidates[: params.candidates]
    return found
