"""The parsed transcript: what ``engine.transcripts.format`` builds from a valid document, and every other module
of the package reads. Times are aware datetimes, already worked out from the document's offsets."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from engine.domain.models import Role


@dataclass(frozen=True)
class ToneCheck:
    """One ``tone`` item; ``None`` means the key was left out (any register / no anchor needed)."""

    register_any: tuple[str, ...] | None = None
    anchors_any: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Probe:
    """The checks of one probe. An empty tuple (or ``None`` for ``no_tone``) means the check is not listed."""

    tone: tuple[ToneCheck, ...] = ()
    no_tone: tuple[str, ...] | Literal["any"] | None = None
    recall_any: tuple[str, ...] = ()
    recall_all: tuple[str, ...] = ()
    recall_none: tuple[str, ...] = ()
    context_any: tuple[str, ...] = ()
    context_none: tuple[str, ...] = ()


@dataclass(frozen=True)
class TranscriptTurn:
    index: int
    role: Role
    text: str
    at: datetime
    line: int
    probe: Probe | None = None


@dataclass(frozen=True)
class Session:
    index: int
    start: datetime
    turns: tuple[TranscriptTurn, ...]
    line: int


@dataclass(frozen=True)
class Transcript:
    file: str
    id: str
    id_line: int
    character: str
    user: str
    description: str
    sessions: tuple[Session, ...]

    def session_id(self, session_index: int) -> str:
        return f"{self.id}:s{session_index}"

    def turn_id(self, session_index: int, turn_index: int) -> str:
        return f"{self.id}:s{session_index}:t{turn_index}"

    @property
    def probe_count(self) -> int:
        return sum(turn.probe is not None for session in self.sessions for turn in session.turns)


