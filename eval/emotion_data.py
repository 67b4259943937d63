"""What the emotion-labelled sets are read into (``eval.emotion_sets``): gold labels, one speaker's session, a set,
and the helpers every reader shares (cleaning, grouping turns into sessions, reading CSV and JSON lines)."""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.domain.models import REGISTERS

OTHER = "other"
"""A gold label meaning "none of the registers this set scores" (EmoContext's *others*)."""

SAMPLE_SEED = 20241201
"""The seed of every sample drawn from a set (``--limit`` and ``DEFAULT_CAPS``), so runs are comparable."""


@dataclass(frozen=True)
class Gold:
    """Human labels for one turn or one session; None where the set has no such label."""

    register: str | None = None  # a REGISTERS name or OTHER
    valence: float | None = None
    intensity: float | None = None


@dataclass(frozen=True)
class Session:
    """One speaker's turns in order: the unit ``classify`` is called on."""

    texts: tuple[str, ...]
    turn_gold: tuple[Gold | None, ...]  # one per text
    session_gold: Gold | None = None  # scored on the session's most intense turn

    def __post_init__(self) -> None:
        if len(self.turn_gold) != len(self.texts):
            raise ValueError(f"{len(self.texts)} texts but {len(self.turn_gold)} turn labels")
        if not self.texts:
            raise ValueError("a session needs at least one turn")


@dataclass(frozen=True)
class EmotionSet:
    name: str
    title: str
    use: str  # "train" or "evaluation only", as the data README marks it
    license: str
    unit: str  # what one scored item is
    sessions: list[Session]
    mapping: Mapping[str, str | None]  # label -> register, OTHER or None (not scored)
    valence: str | None = None  # what the valence gold is, when the set has one
    intensity: str | None = None  # likewise for intensity
    notes: tuple[str, ...] = ()
    sample: str | None = None  # how the sessions were sampled, when they were

    @property
    def n_texts(self) -> int:
        return sum(len(s.texts) for s in self.sessions)

    @property
    def mappable_registers(self) -> tuple[str, ...]:
        """The registers the mapping can produce, in REGISTERS order."""
        produced = set(self.mapping.values())
        return tuple(r for r in REGISTERS if r in produced)

    @property
    def excluded_labels(self) -> tuple[str, ...]:
        return tuple(label for label, register in self.mapping.items() if register is None)


class EmotionDataError(ValueError):
    """A set's files are absent or not in the layout its reader expects."""


def clean(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def sentence_sessions(items: Iterable[tuple[str, Gold]]) -> list[Session]:
    return [Session((text,), (gold,)) for text, gold in ((clean(t), g) for t, g in items) if text]


def speaker_sessions(
    dialogues: Iterable[Sequence[tuple[str, str, Gold | None]]],
) -> list[Session]:
    """Each speaker's own turns of each dialogue, in order, as a session; dialogue order, then first appearance."""
    out = []
    for dialogue in dialogues:
        by_speaker: dict[str, list[tuple[str, Gold | None]]] = {}
        for speaker, text, gold in dialogue:
            text = clean(text)
            if text:
                by_speaker.setdefault(speaker, []).append((text, gold))
        for turns in by_speaker.values():
            out.append(Session(tuple(t for t, _ in turns), tuple(g for _, g in turns)))
    return out


def register_of(mapping: Mapping[str, str | None], label: str, set_name: str) -> str | None:
    if label not in mapping:
        raise EmotionDataError(f"{set_name}: label {label!r} is not in the mapping table")
    return mapping[label]


def read_csv(path: Path, *, delimiter: str = ",", quoted: bool = True) -> list[dict[str, str]]:
    if not path.is_file():
        raise EmotionDataError(f"{path} not found")
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter=delimiter,
                                   quoting=csv.QUOTE_MINIMAL if quoted else csv.QUOTE_NONE))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise EmotionDataError(f"{path} not found")
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]
