"""The window evaluation's cases (``feltsense eval window``, ``eval.window_eval``): users, their memories, probes.

Two sources: the hand-written development set ``eval/data/recall_dev.yaml`` (``parse_dev``, ``load_dev``) and
ESConv (``esconv_cases``, ``load_esconv``); see ``eval.window_eval`` for how each is built and scored.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from datetime import time as day_time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
DEV_SET = REPO_ROOT / "eval" / "data" / "recall_dev.yaml"
ESCONV_DIR = Path("../shared/data/esconv")
MEMORY_HOUR = day_time(19, 0, tzinfo=UTC)
PROBE_HOUR = day_time(20, 0, tzinfo=UTC)
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

ESCONV_DISTRACTORS = 75
ESCONV_SEED = 20250601
ESCONV_POSITIONS = (2, 3, 4, 5, 6)
"""The seeker's turns (1-based, among the seeker's own) used as query messages."""
ESCONV_MIN_WORDS = 4
ESCONV_AT = datetime(2025, 6, 1, 20, 0, tzinfo=UTC)
ESCONV_AGE_DAYS = (14.0, 180.0)
SEEKER = frozenset({"usr", "seeker"})
SUPPORTER = frozenset({"sys", "supporter"})

class WindowDataError(ValueError):
    """The cases are missing or malformed; the message names the file and the place."""


# ------------------------------------------------------------------------------------------------------------
# Cases


@dataclass(frozen=True)
class CaseMemory:
    key: str
    """The memory's id in the case (``maya-interview``); unique within its user."""
    text: str
    at: datetime


@dataclass(frozen=True)
class Probe:
    probe_id: str
    message: str
    window: tuple[tuple[str, str], ...]
    """(role, text) lines before the message, oldest first; role is "user" or "character"."""
    expect: tuple[str, ...]
    at: datetime
    group: str
    """What the per-group means are over: the dev set's ``kind``, ESConv's ``cut N``."""


@dataclass(frozen=True)
class Case:
    user: str
    memories: tuple[CaseMemory, ...]
    probes: tuple[Probe, ...]


def _day(value: object, where: str) -> datetime:
    """A YAML date (``2025-02-20``) or ISO timestamp as an aware UTC datetime; a bare date is at ``MEMORY_HOUR``."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime.combine(value, MEMORY_HOUR)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            raise WindowDataError(f"{where}: {value!r} is not a date (YYYY-MM-DD)") from None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    raise WindowDataError(f"{where}: expected a date, got {value!r}")


def _probe_time(value: object, where: str) -> datetime:
    """A probe's time: a bare date is at ``PROBE_HOUR``, after that day's memories."""
    if isinstance(value, date) and not isinstance(value, datetime):
        return datetime.combine(value, PROBE_HOUR)
    return _day(value, where)


def _text(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise WindowDataError(f"{where}: expected a non-empty string, got {value!r}")
    return value.strip()


def _identifier(value: object, where: str) -> str:
    text = _text(value, where)
    if not _ID.fullmatch(text):
        raise WindowDataError(f"{where}: {text!r} is not an id (letters, digits, '.', '_', '-')")
    return text


def _entry(item: object, at: str, expected: str, seen: Container[str], what: str) -> tuple[Mapping[str, Any], str]:
    """A list entry that is a mapping with an ``id`` not ``seen`` before: the mapping and its id."""
    if not isinstance(item, Mapping):
        raise WindowDataError(f"{at}: expected {expected}")
    key = _identifier(item.get("id"), f"{at}.id")
    if key in seen:
        raise WindowDataError(f"{at}: {what} id {key!r} appears twice")
    return item, key


def parse_dev(document: object, *, source: str = "the dev set") -> list[Case]:
    """The dev set's cases from its parsed YAML; ``WindowDataError`` naming the place of the first problem."""
    if not isinstance(document, Mapping) or document.get("format") != 1 or not isinstance(document.get("users"), list):
        raise WindowDataError(f"{source}: expected a mapping with format: 1 and a list of users")
    cases: list[Case] = []
    users: set[str] = set()
    probe_ids: set[str] = set()
    for u, raw in enumerate(document["users"]):
        where = f"{source}: users[{u}]"
        if not isinstance(raw, Mapping):
            raise WindowDataError(f"{where}: expected a mapping")
        user = _identifier(raw.get("user"), f"{where}.user")
        if user in users:
            raise WindowDataError(f"{where}: user {user!r} appears twice")
        users.add(user)
        memories: dict[str, CaseMemory] = {}
        for m, item in enumerate(raw.get("memories") or ()):
            at = f"{where}.memories[{m}]"
            item, key = _entry(item, at, "a mapping with id, date and text", memories, "memory")
            memories[key] = CaseMemory(key=key, text=_text(item.get("text"), f"{at}.text"),
                                       at=_day(item.get("date"), f"{at}.date"))
        if not memories:
            raise WindowDataError(f"{where}: no memories")
        now = raw.get("now")
        probes: list[Probe] = []
        for p, item in enumerate(raw.get("probes") or ()):
            at = f"{where}.probes[{p}]"
            item, probe_id = _entry(item, at, "a mapping", probe_ids, "probe")
            probe_ids.add(probe_id)
            when = item.get("at", now)
            if when is None:
                raise WindowDataError(f"{at}: no time (give the user a `now` or the probe an `at`)")
            moment = _probe_time(when, f"{at}.at")
            window: list[tuple[str, str]] = []
            for w, line in enumerate(item.get("window") or ()):
                if not isinstance(line, Mapping) or len(line) != 1:
                    raise WindowDataError(f"{at}.window[{w}]: expected one `user: ...` or `character: ...`")
                ((role, said),) = line.items()
                if role not in ("user", "character"):
                    raise WindowDataError(f"{at}.window[{w}]: role {role!r} is neither user nor character")
                window.append((role, _text(said, f"{at}.window[{w}]")))
            expect = item.get("expect")
            if not isinstance(expect, list):
                raise WindowDataError(f"{at}.expect: expected a list of memory ids ([] for none)")
            for key in expect:
                if key not in memories:
                    raise WindowDataError(f"{at}.expect: {key!r} is not one of {user}'s memories")
                if memories[key].at >= moment:
                    raise WindowDataError(f"{at}.expect: {key!r} is dated after the probe, so it cannot be recalled")
            probes.append(Probe(probe_id=probe_id, message=_text(item.get("message"), f"{at}.message"),
                                window=tuple(window), expect=tuple(expect), at=moment,
                                group=_identifier(item.get("kind", "other"), f"{at}.kind")))
        cases.append(Case(user=user, memories=tuple(memories.values()), probes=tuple(probes)))
    return cases


def load_dev(path: Path = DEV_SET, *, limit: int | None = None) -> list[Case]:
    """The dev set's cases (the first ``limit`` users)."""
    import yaml

    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise WindowDataError(f"cannot read {path}: {exc}") from exc
    return parse_dev(document, source=str(path))[:limit]


def _words(text: str) -> int:
    return len(text.split())


def _line(turn: Mapping[str, Any]) -> tuple[str, str] | None:
    """One ESConv dialogue line as (role, text), or None for an empty line or an unknown speaker."""
    speaker = str(turn.get("speaker", ""))
    text = str(turn.get("text", turn.get("content", "")) or "").strip()
    if not text:
        return None
    if speaker in SEEKER:
        return ("user", text)
    if speaker in SUPPORTER:
        return ("character", text)
    return None


def esconv_cases(
    rows: Sequence[Mapping[str, Any]],
    *,
    distractors: int = ESCONV_DISTRACTORS,
    seed: int = ESCONV_SEED,
    positions: Sequence[int] = ESCONV_POSITIONS,
    min_words: int = ESCONV_MIN_WORDS,
    at: datetime = ESCONV_AT,
    limit: int | None = None,
) -> list[Case]:
    """One case per dialogue of the split (the first ``limit`` dialogues; distractors come from the whole split).

    Dialogue i's user holds its situation (memory ``d<i>``, the expected one) and the situations of ``distractors``
    other dialogues with another problem_type (``d<j>``), drawn by ``random.Random(f"{seed}:{i}")``, each dated
    14-180 days before ``at``. Its probes are the seeker turns at ``positions`` (1-based among the seeker's turns)
    with at least ``min_words`` words, each with every line before it as the window. A dialogue without a
    situation or without a usable cut has no case.
    """
    from engine.domain.models import WINDOW_MAX_TURNS

    situations = [str(row.get("situation") or "").strip() for row in rows]
    problems = [str(row.get("problem_type") or "") for row in rows]
    cases: list[Case] = []
    for i, row in enumerate(rows[:limit]):
        if not situations[i]:
            continue
        rng = random.Random(f"{seed}:{i}")
        pool = [j for j in range(len(rows)) if j != i and situations[j] and problems[j] != problems[i]]
        chosen = sorted(rng.sample(pool, min(distractors, len(pool))))
        members = sorted([i, *chosen])
        ages = {j: rng.uniform(*ESCONV_AGE_DAYS) for j in members}
        memories = tuple(CaseMemory(key=f"d{j}", text=situations[j], at=at - timedelta(days=ages[j]))
                         for j in members)
        lines: list[tuple[str, str]] = []
        seeker_turns = 0
        probes: list[Probe] = []
        for turn in row.get("dialog") or ():
            line = _line(turn)
            if line is None:
                continue
            if line[0] == "user":
                seeker_turns += 1
                if seeker_turns in positions and _words(line[1]) >= min_words:
                    probes.append(Probe(
                        probe_id=f"esconv-{i}-cut{seeker_turns}", message=line[1],
                        window=tuple(lines[-WINDOW_MAX_TURNS:]), expect=(f"d{i}",), at=at,
                        group=f"cut {seeker_turns}",
                    ))
            lines.append(line)
        if probes:
            cases.append(Case(user=f"esconv-{i}", memories=memories, probes=tuple(probes)))
    return cases


def load_esconv(folder: Path, split: str, *, limit: int | None = None) -> list[Case]:
    path = folder / f"{split}.jsonl" if folder.is_dir() else folder
    try:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, ValueError) as exc:
        raise WindowDataError(f"cannot read ESConv from {path}: {exc}") from exc
    if not rows or not all(isinstance(r, dict) and "dialog" in r for r in rows):
        raise WindowDataError(f"{path} does not look like ESConv (JSON lines with situation and dialog)")
    return esconv_cases(rows, limit=limit)
