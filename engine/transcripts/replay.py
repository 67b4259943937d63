"""Replay a transcript into an engine as FORMAT.md "Replay" says: each turn ingested in order, each session closed
as the next starts, each probe's recall checked before its turn is ingested."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from engine.domain.models import WINDOW_MAX_TURNS, RecallQuery, RecallResult, Turn, WindowTurn
from engine.transcripts.checks import check_probe
from engine.transcripts.model import Transcript


class TranscriptEngine(Protocol):
    """What the runner needs of ``engine.service.Engine``; tests pass a fake."""

    def ingest(self, turns: Sequence[Turn]) -> object: ...

    def close_session(self, session_id: str, *, closed_at: datetime | None = None) -> object: ...

    def recall(self, query: RecallQuery) -> RecallResult: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class ProbeResult:
    transcript: str
    file: str
    line: int
    session: int
    turn: int
    query: RecallQuery
    failures: tuple[str, ...]
    recall: RecallResult

    @property
    def passed(self) -> bool:
        return not self.failures

    def to_json(self) -> dict[str, Any]:
        return {
            "transcript": self.transcript,
            "session": self.session,
            "turn": self.turn,
            "passed": self.passed,
            "failures": list(self.failures),
            "recall": recall_summary(self.query, self.recall),
        }


def recall_summary(query: RecallQuery, recall: RecallResult) -> dict[str, Any]:
    """Everything recall answered, JSON-able: memories with text, score components and trace; tone; mode."""
    summary: dict[str, Any] = {
        "mode": recall.trace.mode,
        "query": query.model_dump(mode="json"),
    }
    summary.update(recall.model_dump(mode="json"))
    return summary


def replay(
    transcript: Transcript,
    engine: TranscriptEngine,
    *,
    on_result: Callable[[ProbeResult], None] | None = None,
) -> list[ProbeResult]:
    """Replay ``transcript`` into ``engine`` as FORMAT.md "Replay" says, checking each probe as it comes."""
    results: list[ProbeResult] = []
    for session in transcript.sessions:
        session_id = transcript.session_id(session.index)
        if session.index > 0:
            # The previous session closes as this one starts: its write-time pass sees nothing that follows.
            engine.close_session(transcript.session_id(session.index - 1), closed_at=session.start)
        said: list[WindowTurn] = []  # the session so far: a runtime passes it with each recall
        for turn in session.turns:
            if turn.probe is not None:
                query = RecallQuery(
                    character_id=transcript.character,
                    user_id=transcript.user,
                    message=turn.text,
                    window=tuple(said[-WINDOW_MAX_TURNS:]),
                    session_id=session_id,
                    at=turn.at,
                )
                recall = engine.recall(query)
                result = ProbeResult(
                    transcript=transcript.id,
                    file=transcript.file,
                    line=turn.line,
                    session=session.index,
                    turn=turn.index,
                    query=query,
                    failures=check_probe(turn.probe, recall),
                    recall=recall,
                )
                results.append(result)
                if on_result is not None:
                    on_result(result)
            said.append(WindowTurn(role=turn.role, text=turn.text))
            engine.ingest(
                [
                    Turn(
                        turn_id=transcript.turn_id(session.index, turn.index),
                        session_id=session_id,
                        character_id=transcript.character,
                        user_id=transcript.user,
                        role=turn.role,
                        text=turn.text,
                        timestamp=turn.at,
                    )
                ]
            )
    last = transcript.sessions[-1]
    engine.close_session(transcript.session_id(last.index), closed_at=last.turns[-1].at)
    return results


