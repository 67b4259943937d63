"""Ingest: append turns idempotently and make a memory of every new user turn."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from engine.domain.errors import Conflict, Gone, InvalidInput
from engine.domain.models import IngestReport, Memory, Trace, TraceStatus, Turn
from engine.domain.ports import Embedder, MemoryStore

log = logging.getLogger("feltsense.ingest")


def memory_id_for(turn_id: str) -> str:
    """Deterministic, so a re-ingested turn maps to the same memory in every backend."""
    return "m_" + hashlib.blake2b(turn_id.encode(), digest_size=10).hexdigest()


def _differs(sent: Turn, stored: Turn) -> str | None:
    """What makes ``sent`` another turn than the ``stored`` one with its id (its owner, its session, or what was
    said), or None when it is the same. The time is left out on purpose: a client that stamps a retry anew is
    still sending the same turn, and the first time stored stays."""
    for name in ("character_id", "user_id", "session_id", "role", "text"):
        if getattr(sent, name) != getattr(stored, name):
            return name
    return None


class Ingestor:
    def __init__(
        self, *, store: MemoryStore, embedder: Embedder,
        erased: Callable[[Sequence[str]], set[str]] = lambda ids: set(),
        erased_turns: Callable[[Sequence[str]], set[str]] = lambda ids: set(),
        embedded: Callable[[Sequence[str], NDArray[np.float32]], None] | None = None,
    ) -> None:
        self._embedded = embedded  # told every line embedded here: recall's window reads them without embedding
        self._store = store
        self._embedder = embedder
        self._erased = erased  # which of these memory ids were erased (their turns are refused: 410)
        self._erased_turns = erased_turns  # which of these turn ids were erased (refused: 410)

    def ingest(self, sent: Sequence[Turn]) -> IngestReport:
        if not sent:
            return IngestReport(stored=0, duplicates=0, memories=0, awaiting_embedding=0)
        turns = self._distinct(sent)
        gone = self._erased_turns([t.turn_id for t in turns])
        # A user turn whose memory was erased before tombstones existed is known by the audit skeleton instead.
        by_memory = {memory_id_for(t.turn_id): t.turn_id for t in turns if t.role == "user" and t.turn_id not in gone}
        gone |= {by_memory[m] for m in self._erased(list(by_memory))}
        if gone:
            ids = tuple(t.turn_id for t in turns if t.turn_id in gone)
            raise Gone(f"turn {', '.join(repr(i) for i in ids)} was erased at the user's request and is never "
                       "stored again; nothing of this batch was stored: send it again without "
                       f"{'it' if len(ids) == 1 else 'them'}", ids=ids)
        self._check_sessions(turns)
        self._check_known(sent)
        user_turns = [t for t in turns if t.role == "user"]
        # The character's lines are embedded too when recall wants them for its window: a runtime stores each
        # exchange before the next message, so the next recall embeds only that message.
        character_lines = [t.text for t in turns if t.role == "character"] if self._embedded is not None else []
        vectors = None
        if user_turns or character_lines:
            try:
                embedded = self._embedder.embed([t.text for t in user_turns] + character_lines)
                vectors = embedded[: len(user_turns)]
                if self._embedded is not None:
                    self._embedded([t.text for t in user_turns] + character_lines, embedded)
            except Exception as exc:
                # A provider outage must not lose a turn: store it now, searchable lexically, and let the
                # background backfill embed it when the embedder is back.
                log.warning("embedder failed at ingest; storing %d memories without vectors: %s",
                            len(user_turns), exc)
        fresh = self._store.add_turns(turns)
        new_ids = {t.turn_id for t, is_new in zip(turns, fresh, strict=True) if is_new}
        remembered = new_ids | self._unremembered([t for t in user_turns if t.turn_id not in new_ids])
        memories: list[Memory] = []
        rows: list[int] = []
        contexts, preceding = self._contexts({t.session_id for t in user_turns if t.turn_id in remembered})
        for row, turn in enumerate(user_turns):
            if turn.turn_id not in remembered:
                continue
            memories.append(
                Memory(
                    memory_id=memory_id_for(turn.turn_id),
                    turn_id=turn.turn_id,
                    session_id=turn.session_id,
                    character_id=turn.character_id,
                    user_id=turn.user_id,
                    text=turn.text,
                    context=contexts.get(turn.turn_id, ""),
                    preceding=preceding.get(turn.turn_id, ""),
                    created_at=turn.timestamp,
                )
            )
            rows.append(row)
        if memories:
            self._store.add_memories(memories, None if vectors is None else vectors[rows])
            self._mark_late_turns(memories)
        return IngestReport(
            stored=len(new_ids),
            duplicates=len(sent) - len(new_ids),
            memories=len(memories),
            awaiting_embedding=len(memories) if vectors is None else 0,
        )

    @staticmethod
    def _distinct(turns: Sequence[Turn]) -> list[Turn]:
        """The batch with each turn once: an id sent twice with the same content is one turn (the second is a
        duplicate), with other content a conflict (409), never a silent choice between the two."""
        first: dict[str, tuple[int, Turn]] = {}
        for position, turn in enumerate(turns):
            seen = first.setdefault(turn.turn_id, (position, turn))
            if seen[1] is not turn and (field := _differs(turn, seen[1])) is not None:
                raise Conflict(f"turn {turn.turn_id!r} is sent twice in this batch (turns[{seen[0]}] and "
                               f"turns[{position}]) with a different {field}; nothing was stored",
                               ids=(turn.turn_id,), field=f"turns[{position}].turn_id")
        return [turn for _, turn in first.values()]

    def _check_known(self, turns: Sequence[Turn]) -> None:
        """A turn id already stored names that turn for good: sent again with other content, or for another
        character or user, it is a conflict (409) rather than a duplicate whose second version is lost."""
        known = self._store.find_turns([t.turn_id for t in turns])
        for position, turn in enumerate(turns):
            stored = known.get(turn.turn_id)
            if stored is not None and (field := _differs(turn, stored)) is not None:
                raise Conflict(f"turn {turn.turn_id!r} is already stored with a different {field}; a turn id names "
                               "one turn for good: send new content under a new id. Nothing of this batch was "
                               "stored", ids=(turn.turn_id,), field=f"turns[{position}].turn_id")

    def _unremembered(self, turns: Sequence[Turn]) -> set[str]:
        """The ids of already stored user turns that have no memory: a call that failed between storing the turns
        and their memories (the store went down, the process was killed) leaves them, and the client's re-send
        is the only chance to make the memories. (A turn whose memory was erased never gets here: ``ingest``
        refuses it with a 410 first.)"""
        if not turns:
            return set()
        ids = {memory_id_for(t.turn_id): t.turn_id for t in turns}
        missing = set(ids) - {m.memory_id for m in self._store.get_memories(list(ids))}
        return {ids[m] for m in missing}

    def backfill(self, limit: int = 256) -> int:
        """Embed memories stored while the embedder was down; returns how many got their vectors."""
        memories = self._store.unembedded(limit)
        if not memories:
            return 0
        self._store.set_vectors([m.memory_id for m in memories], self._embedder.embed([m.text for m in memories]))
        return len(memories)

    def _check_sessions(self, turns: Sequence[Turn]) -> None:
        owners: dict[str, tuple[str, str]] = {}
        for position, turn in enumerate(turns):
            owner = (turn.character_id, turn.user_id)
            if owners.setdefault(turn.session_id, owner) != owner:
                raise InvalidInput(
                    f"turn {turn.turn_id!r}: session {turn.session_id!r} belongs to another character or user",
                    field=f"turns[{position}].session_id",
                )
        for session_id, owner in owners.items():
            existing = self._store.get_turns(session_id)
            if existing and (existing[0].character_id, existing[0].user_id) != owner:
                raise InvalidInput(
                    f"session {session_id!r} already belongs to another character or user", field="session_id"
                )

    def _contexts(self, session_ids: set[str]) -> tuple[dict[str, str], dict[str, str]]:
        """For each user turn, the character turn it answered (the one right before it), if any; and the turn
        right before it whoever said it (two messages in a row: the first is the second's)."""
        contexts: dict[str, str] = {}
        preceding: dict[str, str] = {}
        for session_id in session_ids:
            previous: Turn | None = None
            for turn in self._store.get_turns(session_id):
                if turn.role == "user" and previous is not None:
                    preceding[turn.turn_id] = previous.text
                    if previous.role == "character":
                        contexts[turn.turn_id] = previous.text
                previous = turn
        return contexts, preceding

    def _mark_late_turns(self, memories: Sequence[Memory]) -> None:
        """A turn that arrives after its session closed gets a pending trace, so the retry pass writes it."""
        closed = self._store.closed_sessions(sorted({m.session_id for m in memories}))
        late = [m for m in memories if m.session_id in closed]
        if late:
            self._store.put_traces([
                Trace(memory_id=m.memory_id, status=TraceStatus.PENDING, written_at=m.created_at,
                      last_error="turn arrived after its session closed")
                for m in late
            ])
