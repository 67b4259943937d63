"""Tester transcripts, format version 1: parse and validate them, replay them into an engine, check the probes;
and compare two tuning profiles by replaying one transcript under each.

The contract is ../shared/transcripts/FORMAT.md. The parser accepts exactly that and rejects anything else
with a message naming the file, the line and the field (``luna.yaml:12: sessions[1].turns[0].probe.recall_any:
expected a list of strings, got the string 'Luna'``). Validation walks the composed YAML node tree rather than
the constructed Python objects, because only the nodes remember their lines.

This lives in the engine, not in ``eval``, because the tuning page's replay (``api.tuning``) needs it and nothing
outside ``eval`` may import ``eval``; ``eval.transcripts`` builds the runner and its reports on top of it.

Choices where FORMAT.md is silent:

- Sessions and turns are numbered from 0 everywhere (errors, report lines, JSON), like the field paths.
- A session's first turn happens at the session's start; an ``at`` on it is an offset from that start. Every
  later turn is ``at`` (default ``+30s``) after the turn before it.
- Offsets are positive: ``+`` then at least one of ``<n>d``, ``<n>h``, ``<n>m``, ``<n>s`` in that order.
- A session must start after the previous session's last turn, so time only moves forward.
- A tone item with neither key holds when any tone constraint is in force (the opposite of ``no_tone: any``).
- Check lists and their strings must be non-empty: an empty string would match everything.
"""

from __future__ import annotations

import difflib
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal, Protocol

import yaml
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from engine.domain.errors import InvalidInput
from engine.domain.models import (
    REGISTERS,
    WINDOW_MAX_TURNS,
    Identifier,
    RecallQuery,
    RecallResult,
    Role,
    ToneConstraint,
    Turn,
    WindowTurn,
)
from engine.domain.ports import Classifier, Embedder
from engine.domain.tuning import ProfileSource, TuningProfile
from engine.ledger import Ledger
from engine.service import Engine

FORMAT_VERSION = 1
DEFAULT_TURN_GAP = timedelta(seconds=30)
MAX_TEXT_CHARS = 20_000
"""The engine's limit on a turn's text (``engine.domain.models.Turn.text``)."""
MAX_ID_CHARS = 150
"""Leaves room under the engine's 200-character identifiers for the derived ``:s<n>:t<n>`` suffixes."""

TOP_LEVEL_REQUIRED = ("format", "id", "character", "user", "sessions")
TOP_LEVEL_OPTIONAL = ("description",)
SESSION_KEYS = ("at", "turns")
TURN_KEYS = ("user", "character", "at", "probe")
TONE_ITEM_KEYS = ("register_any", "anchors_any")
STRING_CHECKS = ("recall_any", "recall_all", "recall_none", "context_any", "context_none")
PROBE_KEYS = ("tone", "no_tone", *STRING_CHECKS)

_OFFSET = re.compile(r"\+(?:(?P<days>\d+)d)?(?:(?P<hours>\d+)h)?(?:(?P<minutes>\d+)m)?(?:(?P<seconds>\d+)s)?")
_STR = "tag:yaml.org,2002:str"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_INT = "tag:yaml.org,2002:int"
_IDENTIFIER: TypeAdapter[str] = TypeAdapter(Identifier)


# ------------------------------------------------------------------------------------------------------------
# The parsed transcript


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


# ------------------------------------------------------------------------------------------------------------
# Validation errors


@dataclass(frozen=True)
class Issue:
    """One reason a transcript is invalid: ``file:line: field: message`` (line and field when known)."""

    file: str
    line: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


class TranscriptInvalid(Exception):
    """One or more transcripts break the format; nothing should run."""

    def __init__(self, issues: Sequence[Issue]) -> None:
        super().__init__("\n".join(str(issue) for issue in issues))
        self.issues = tuple(issues)


# ------------------------------------------------------------------------------------------------------------
# Parsing


def parse_offset(text: str) -> timedelta:
    """``+9d``, ``+1d12h``, ``+2h30m``, ``+45s`` -> a positive timedelta; ValueError for anything else."""
    match = _OFFSET.fullmatch(text)
    if match is None or not any(match.groupdict().values()):
        raise ValueError(f"expected an offset like +9d, +1d12h, +2h30m or +45s, got {text!r}")
    parts = {unit: int(value) for unit, value in match.groupdict().items() if value is not None}
    try:
        offset = timedelta(**parts)
    except OverflowError:
        raise ValueError(f"offset {text!r} is too large") from None
    if offset <= timedelta(0):
        raise ValueError(f"offset {text!r} must be positive")
    return offset


def parse_timestamp(text: str) -> datetime:
    """An ISO-8601 timestamp with a zone -> an aware datetime; ValueError for anything else."""
    if text.startswith("+"):
        raise ValueError(
            f"the first session needs an ISO-8601 timestamp with a zone (e.g. 2025-03-01T18:00:00Z), "
            f"not an offset ({text!r})"
        )
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"expected an ISO-8601 timestamp with a zone (e.g. 2025-03-01T18:00:00Z), got {text!r}"
        ) from None
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"timestamp {text!r} has no zone; add one, e.g. 2025-03-01T18:00:00Z")
    return value


def _describe(node: Node) -> str:
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    kind = node.tag.rsplit(":", 1)[-1]
    if kind == "null":
        return "nothing (null)"
    if kind == "str":
        return f"the string {node.value!r}"
    if kind in ("int", "float"):
        return f"the number {node.value}"
    if kind == "bool":
        return f"the boolean {node.value} (quote it to make it a string)"
    if kind == "timestamp":
        return f"the timestamp {node.value}"
    return f"a value tagged {node.tag}"


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class _Validator:
    """Walks one document's nodes, collecting every issue rather than stopping at the first."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.issues: list[Issue] = []

    def fail(self, node: Node, path: str | None, message: str) -> None:
        self.issues.append(Issue(self.file, node.start_mark.line + 1, path or None, message))

    # -- shapes ---------------------------------------------------------------------------------------------

    def mapping(
        self, node: Node, path: str, *, required: Sequence[str] = (), optional: Sequence[str] = ()
    ) -> dict[str, tuple[Node, Node]] | None:
        """The fields as key -> (key node, value node); reports unknown, duplicate and missing keys."""
        allowed = (*required, *optional)
        if not isinstance(node, MappingNode):
            self.fail(node, path, f"expected a mapping with {', '.join(allowed)}; got {_describe(node)}")
            return None
        fields: dict[str, tuple[Node, Node]] = {}
        for key_node, value_node in node.value:
            if not (isinstance(key_node, ScalarNode) and key_node.tag == _STR):
                self.fail(key_node, path, f"expected a field name, got {_describe(key_node)}")
                continue
            key = key_node.value
            if key in fields:
                self.fail(key_node, _join(path, key), "duplicate field")
            elif key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f"did you mean {close[0]}?" if close else f"expected one of {', '.join(allowed)}"
                self.fail(key_node, _join(path, key), f"unknown field ({hint})")
            else:
                fields[key] = (key_node, value_node)
        for key in required:
            if key not in fields:
                self.fail(node, _join(path, key), "missing required field")
        return fields

    def sequence(self, node: Node, path: str, what: str) -> list[Node] | None:
        if not isinstance(node, SequenceNode):
            self.fail(node, path, f"expected a list of {what}, got {_describe(node)}")
            return None
        if not node.value:
            self.fail(node, path, f"expected a non-empty list of {what}")
            return None
        return list(node.value)

    def string(self, node: Node, path: str) -> str | None:
        if not (isinstance(node, ScalarNode) and node.tag == _STR):
            self.fail(node, path, f"expected a string, got {_describe(node)}")
            return None
        return str(node.value)

    def text(self, node: Node, path: str) -> str | None:
        value = self.string(node, path)
        if value is None:
            return None
        if not value.strip():
            self.fail(node, path, "expected a non-empty string")
            return None
        if len(value) > MAX_TEXT_CHARS:
            self.fail(
                node, path, f"is {len(value)} characters long; the engine takes at most {MAX_TEXT_CHARS}"
            )
            return None
        return value

    def identifier(self, node: Node, path: str) -> str | None:
        value = self.string(node, path)
        if value is None:
            return None
        try:
            _IDENTIFIER.validate_python(value)
        except ValidationError:
            self.fail(
                node,
                path,
                f"expected an identifier (letters, digits and . _ : @ -, starting with a letter or digit), "
                f"got {value!r}",
            )
            return None
        if len(value) > MAX_ID_CHARS:
            self.fail(node, path, f"is {len(value)} characters long; at most {MAX_ID_CHARS}")
            return None
        return value

    def strings(self, node: Node, path: str, what: str = "strings") -> tuple[str, ...] | None:
        items = self.sequence(node, path, what)
        if items is None:
            return None
        values = [self.string(item, f"{path}[{index}]") for index, item in enumerate(items)]
        ok = True
        for index, (item, value) in enumerate(zip(items, values, strict=True)):
            if value is None:
                ok = False
            elif not value.strip():
                self.fail(
                    item, f"{path}[{index}]", "expected a non-empty string (an empty one matches everything)"
                )
                ok = False
        return tuple(value for value in values if value is not None) if ok else None

    def registers(self, node: Node, path: str) -> tuple[str, ...] | None:
        if not isinstance(node, SequenceNode):
            self.fail(
                node, path, f"expected a list of registers ({', '.join(REGISTERS)}), got {_describe(node)}"
            )
            return None
        values = self.strings(node, path, "registers")
        if values is None:
            return None
        ok = True
        for index, (item, value) in enumerate(zip(node.value, values, strict=True)):
            if value not in REGISTERS:
                self.fail(
                    item,
                    f"{path}[{index}]",
                    f"unknown register {value!r}; expected one of {', '.join(REGISTERS)}",
                )
                ok = False
        return values if ok else None

    def timestamp(self, node: Node, path: str) -> datetime | None:
        # An unquoted ISO timestamp is tagged timestamp by YAML; its raw text is what we parse either way.
        if not (isinstance(node, ScalarNode) and node.tag in (_STR, _TIMESTAMP)):
            self.fail(node, path, f"expected an ISO-8601 timestamp with a zone, got {_describe(node)}")
            return None
        try:
            return parse_timestamp(node.value)
        except ValueError as exc:
            self.fail(node, path, str(exc))
            return None

    def offset(self, node: Node, path: str, reference: str) -> timedelta | None:
        if not (isinstance(node, ScalarNode) and node.tag in (_STR, _TIMESTAMP)):
            self.fail(
                node, path, f"expected an offset from {reference} like +9d or +45s, got {_describe(node)}"
            )
            return None
        try:
            return parse_offset(node.value)
        except ValueError as exc:
            try:
                datetime.fromisoformat(node.value)
            except ValueError:
                self.fail(node, path, f"{exc} (an offset from {reference})")
            else:
                self.fail(
                    node,
                    path,
                    f"expected an offset from {reference} like +9d, not a timestamp ({node.value!r})",
                )
            return None

    def advance(self, clock: datetime, offset: timedelta, node: Node, path: str) -> datetime | None:
        try:
            return clock + offset
        except OverflowError:
            self.fail(node, path, "the offset takes the time past the year 9999")
            return None

    # -- the document -------------------------------------------------------------------------------------

    def format_is_supported(self, root: Node) -> bool:
        """False (and one issue) when ``format`` names another version: its fields mean other things, so
        checking them against version 1 would only mislead."""
        if not isinstance(root, MappingNode):
            return True
        for key_node, node in root.value:
            if not (isinstance(key_node, ScalarNode) and key_node.tag == _STR and key_node.value == "format"):
                continue
            if not (isinstance(node, ScalarNode) and node.tag == _INT and node.value == str(FORMAT_VERSION)):
                self.fail(
                    node,
                    "format",
                    f"expected {FORMAT_VERSION} (the only version this runner reads), got {_describe(node)}",
                )
                return False
        return True

    def transcript(self, root: Node) -> Transcript | None:
        if not self.format_is_supported(root):
            return None
        fields = self.mapping(root, "", required=TOP_LEVEL_REQUIRED, optional=TOP_LEVEL_OPTIONAL)
        if fields is None:
            return None
        transcript_id = self.identifier(fields["id"][1], "id") if "id" in fields else None
        character = self.identifier(fields["character"][1], "character") if "character" in fields else None
        user = self.identifier(fields["user"][1], "user") if "user" in fields else None
        description = ""
        if "description" in fields:
            description = self.string(fields["description"][1], "description") or ""
        sessions = self.sessions(fields["sessions"][1]) if "sessions" in fields else None
        if self.issues or transcript_id is None or character is None or user is None or sessions is None:
            return None
        return Transcript(
            file=self.file,
            id=transcript_id,
            id_line=fields["id"][1].start_mark.line + 1,
            character=character,
            user=user,
            description=description,
            sessions=sessions,
        )

    def sessions(self, node: Node) -> tuple[Session, ...] | None:
        items = self.sequence(node, "sessions", "sessions")
        if items is None:
            return None
        sessions: list[Session] = []
        previous: Session | None = None
        # Once a time is unknown (an earlier error), later times cannot be computed; shapes are still checked.
        times_known = True
        for index, item in enumerate(items):
            path = f"sessions[{index}]"
            fields = self.mapping(item, path, required=SESSION_KEYS)
            if fields is None:
                times_known = False
                continue
            start: datetime | None = None
            if "at" in fields:
                at_node, at_path = fields["at"][1], f"{path}.at"
                if index == 0:
                    start = self.timestamp(at_node, at_path)
                else:
                    offset = self.offset(at_node, at_path, "the previous session's start")
                    if offset is not None and previous is not None and times_known:
                        start = self.advance(previous.start, offset, at_node, at_path)
                        last = previous.turns[-1].at
                        if start is not None and start <= last:
                            self.fail(
                                at_node,
                                at_path,
                                f"this session would start at {start.isoformat()}, not after the previous "
                                f"session's last turn at {last.isoformat()}; sessions must not overlap",
                            )
            if start is None:
                times_known = False
            turns = self.turns(fields["turns"][1], path, start) if "turns" in fields else None
            if turns is None or start is None:
                times_known = False
                continue
            session = Session(index=index, start=start, turns=turns, line=item.start_mark.line + 1)
            sessions.append(session)
            previous = session
        return tuple(sessions) if times_known and len(sessions) == len(items) else None

    def turns(
        self, node: Node, session_path: str, start: datetime | None
    ) -> tuple[TranscriptTurn, ...] | None:
        path = f"{session_path}.turns"
        if isinstance(node, SequenceNode) and not node.value:
            self.fail(node, path, "a session needs at least one turn")
            return None
        items = self.sequence(node, path, "turns")
        if items is None:
            return None
        turns: list[TranscriptTurn] = []
        clock = start
        for index, item in enumerate(items):
            turn_path = f"{path}[{index}]"
            fields = self.mapping(item, turn_path, optional=TURN_KEYS)
            if fields is None:
                clock = None
                continue
            roles: list[Role] = [role for role in ("user", "character") if role in fields]
            if not roles:
                self.fail(item, turn_path, "a turn needs one of user or character")
            elif len(roles) == 2:
                self.fail(
                    fields["character"][0], turn_path, "a turn has exactly one of user or character, not both"
                )
            text = self.text(fields[roles[0]][1], _join(turn_path, roles[0])) if len(roles) == 1 else None

            gap = timedelta(0) if index == 0 else DEFAULT_TURN_GAP
            if "at" in fields:
                reference = "the session's start" if index == 0 else "the previous turn"
                offset = self.offset(fields["at"][1], f"{turn_path}.at", reference)
                if offset is None:
                    clock = None
                else:
                    gap = offset
            if clock is not None:
                at_node = fields["at"][1] if "at" in fields else item
                clock = self.advance(clock, gap, at_node, f"{turn_path}.at")

            probe: Probe | None = None
            if "probe" in fields:
                if roles == ["character"]:
                    self.fail(fields["probe"][0], f"{turn_path}.probe", "probes go on user turns only")
                else:
                    probe = self.probe(fields["probe"][1], f"{turn_path}.probe")
            if len(roles) == 1 and text is not None and clock is not None:
                turns.append(
                    TranscriptTurn(
                        index=index,
                        role=roles[0],
                        text=text,
                        at=clock,
                        line=item.start_mark.line + 1,
                        probe=probe,
                    )
                )
        return tuple(turns) if len(turns) == len(items) else None

    def probe(self, node: Node, path: str) -> Probe | None:
        fields = self.mapping(node, path, optional=PROBE_KEYS)
        if fields is None:
            return None
        if not fields:
            if isinstance(node, MappingNode) and not node.value:
                self.fail(node, path, f"a probe needs at least one check ({', '.join(PROBE_KEYS)})")
            return None
        checks: dict[str, Any] = {}
        ok = True
        for key, (_, value) in fields.items():
            key_path = f"{path}.{key}"
            parsed: object
            if key == "tone":
                parsed = self.tone(value, key_path)
            elif key == "no_tone":
                if isinstance(value, ScalarNode) and value.tag == _STR and value.value == "any":
                    parsed = "any"
                elif isinstance(value, SequenceNode):
                    parsed = self.registers(value, key_path)
                else:
                    self.fail(
                        value,
                        key_path,
                        f"expected a list of registers or the word any, got {_describe(value)}",
                    )
                    parsed = None
            else:
                parsed = self.strings(value, key_path)
            if parsed is None:
                ok = False
            checks[key] = parsed
        return Probe(**checks) if ok else None

    def tone(self, node: Node, path: str) -> tuple[ToneCheck, ...] | None:
        items = self.sequence(node, path, "tone items (mappings with register_any and/or anchors_any)")
        if items is None:
            return None
        checks: list[ToneCheck] = []
        ok = True
        for index, item in enumerate(items):
            item_path = f"{path}[{index}]"
            fields = self.mapping(item, item_path, optional=TONE_ITEM_KEYS)
            if fields is None:
                ok = False
                continue
            registers = (
                self.registers(fields["register_any"][1], f"{item_path}.register_any")
                if "register_any" in fields
                else None
            )
            anchors = (
                self.strings(fields["anchors_any"][1], f"{item_path}.anchors_any")
                if "anchors_any" in fields
                else None
            )
            if ("register_any" in fields and registers is None) or (
                "anchors_any" in fields and anchors is None
            ):
                ok = False
                continue
            checks.append(ToneCheck(register_any=registers, anchors_any=anchors))
        return tuple(checks) if ok else None


def parse_transcript(text: str, *, file: str) -> Transcript:
    """Parse and validate one transcript document; TranscriptInvalid lists every problem found."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = "; ".join(part for part in (exc.context, exc.problem) if part) or str(exc)
        raise TranscriptInvalid(
            [Issue(file, mark.line + 1 if mark else None, None, f"invalid YAML: {problem}")]
        ) from exc
    except yaml.YAMLError as exc:
        raise TranscriptInvalid([Issue(file, None, None, f"invalid YAML: {exc}")]) from exc
    if root is None:
        raise TranscriptInvalid([Issue(file, None, None, "the file is empty; expected a transcript")])
    validator = _Validator(file)
    transcript = validator.transcript(root)
    if validator.issues or transcript is None:
        raise TranscriptInvalid(sorted(validator.issues, key=lambda issue: issue.line or 0))
    return transcript


# ------------------------------------------------------------------------------------------------------------
# Checks


def _contains(haystack: str, needle: str) -> bool:
    return needle.casefold() in haystack.casefold()


def _quoted(strings: Iterable[str]) -> str:
    return ", ".join(repr(value) for value in strings)


def _clip(text: str, limit: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _constraint_label(constraint: ToneConstraint) -> str:
    standing = " (standing)" if constraint.standing else ""
    return f"{constraint.register}{standing} [{', '.join(constraint.anchors)}]"


def _tone_matches(check: ToneCheck, constraint: ToneConstraint) -> bool:
    if check.register_any is not None and constraint.register not in check.register_any:
        return False
    if check.anchors_any is None:
        return True
    places = (*constraint.anchors, constraint.instruction)
    return any(_contains(place, anchor) for anchor in check.anchors_any for place in places)


def _tone_wanted(check: ToneCheck) -> str:
    parts = ["a tone constraint"]
    if check.register_any is not None:
        parts.append(f"with register {' or '.join(check.register_any)}")
    if check.anchors_any is not None:
        parts.append(f"naming {' or '.join(check.anchors_any)}")
    return " ".join(parts)


def check_probe(probe: Probe, recall: RecallResult) -> tuple[str, ...]:
    """Each failed check of ``probe`` against what recall returned, as a sentence; empty when it passed."""
    failures: list[str] = []
    in_force = recall.tone_in_force
    texts = [memory.text for memory in recall.memories]
    context = "\n".join((recall.context.prefix, recall.context.tone, recall.context.tail))

    for index, tone in enumerate(probe.tone):
        if not any(_tone_matches(tone, constraint) for constraint in in_force):
            found = "; ".join(_constraint_label(c) for c in in_force) or "none"
            failures.append(f"tone[{index}]: expected {_tone_wanted(tone)} in force; in force: {found}")

    if probe.no_tone == "any":
        if in_force:
            found = "; ".join(_constraint_label(c) for c in in_force)
            failures.append(f"no_tone: expected no tone constraint in force; found {found}")
    elif probe.no_tone is not None:
        banned = [c for c in in_force if c.register in probe.no_tone]
        if banned:
            found = "; ".join(_constraint_label(c) for c in banned)
            failures.append(
                f"no_tone: expected no tone constraint with register {' or '.join(probe.no_tone)}; "
                f"found {found}"
            )

    if probe.recall_any and not any(_contains(text, needle) for text in texts for needle in probe.recall_any):
        failures.append(
            f"recall_any: expected a recalled memory containing one of {_quoted(probe.recall_any)}; "
            f"none of the {len(texts)} recalled does"
        )
    if probe.recall_all:
        missing = [
            needle for needle in probe.recall_all if not any(_contains(text, needle) for text in texts)
        ]
        if missing:
            failures.append(
                f"recall_all: expected each of {_quoted(probe.recall_all)} in some recalled memory; "
                f"missing {_quoted(missing)}"
            )
    if probe.recall_none:
        hits = [(needle, text) for text in texts for needle in probe.recall_none if _contains(text, needle)]
        if hits:
            found = "; ".join(f"{needle!r} in {_clip(text, 80)!r}" for needle, text in hits)
            failures.append(
                f"recall_none: expected no recalled memory containing {_quoted(probe.recall_none)}; "
                f"found {found}"
            )
    if probe.context_any and not any(_contains(context, needle) for needle in probe.context_any):
        failures.append(
            f"context_any: expected the assembled context to contain one of {_quoted(probe.context_any)}; "
            "it has none"
        )
    if probe.context_none:
        present = [needle for needle in probe.context_none if _contains(context, needle)]
        if present:
            failures.append(
                f"context_none: expected the assembled context to contain none of "
                f"{_quoted(probe.context_none)}; it has {_quoted(present)}"
            )
    return tuple(failures)


# ------------------------------------------------------------------------------------------------------------
# Replay


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


# ------------------------------------------------------------------------------------------------------------
# Comparing two profiles


MAX_REPLAY_TURNS = 400
"""Most turns one comparison replays (twice): a replay runs the write-time pass in the request, so it is bounded."""


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RankedMemory(_Out):
    text: str
    score: float
    session_id: str


class ProbeOutcome(_Out):
    """What one probe saw under one profile."""

    passed: bool
    failures: tuple[str, ...]
    memories: tuple[RankedMemory, ...] = ()
    tone: tuple[str, ...] = ()
    """The tone constraints in force, as ``register [anchors]`` (``(standing)`` for a standing rule)."""


class ProbeComparison(_Out):
    session: int
    turn: int
    line: int
    message: str
    current: ProbeOutcome
    proposed: ProbeOutcome
    verdict_changed: bool
    ranking_changed: bool
    """The recalled texts or their order differ (scores alone moving does not count)."""


class ReplayComparison(_Out):
    transcript: str
    character: str
    probes: tuple[ProbeComparison, ...]


def _outcome(result: ProbeResult) -> ProbeOutcome:
    return ProbeOutcome(
        passed=result.passed,
        failures=result.failures,
        memories=tuple(
            RankedMemory(text=m.text, score=m.components.score, session_id=m.session_id)
            for m in result.recall.memories
        ),
        tone=tuple(_constraint_label(c) for c in result.recall.tone_in_force),
    )


def replay_with_profile(
    transcript: Transcript, profile: TuningProfile, *, embedder: Embedder, classifier: Classifier
) -> list[ProbeResult]:
    """Replay into a fresh engine under ``profile``: an embedded store in a temporary directory, removed after.

    The embedder and classifier are shared (the service's own, already loaded); nothing else is, so a replay
    never touches stored memories.
    """
    from engine.adapters.embedded_store import EmbeddedStore

    data_dir = Path(tempfile.mkdtemp(prefix="feltsense-replay-"))
    try:
        store = EmbeddedStore(data_dir, embedding_model=embedder.model_id, dimension=embedder.dimension)
        engine = Engine(store=store, embedder=embedder, classifier=classifier,
                        profiles=ProfileSource(default=profile), ledger=Ledger())
        try:
            return replay(transcript, engine)
        finally:
            engine.close()
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def compare_profiles(
    transcript: Transcript, current: TuningProfile, proposed: TuningProfile, *, embedder: Embedder,
    classifier: Classifier,
) -> ReplayComparison:
    """Replay ``transcript`` under each profile and pair the probes up, so a change is seen before it is saved."""
    turns = sum(len(session.turns) for session in transcript.sessions)
    if turns > MAX_REPLAY_TURNS:
        raise InvalidInput(f"the transcript has {turns} turns; a replay takes at most {MAX_REPLAY_TURNS}",
                           field="transcript")
    before = replay_with_profile(transcript, current, embedder=embedder, classifier=classifier)
    after = replay_with_profile(transcript, proposed, embedder=embedder, classifier=classifier)
    probes = []
    for old, new in zip(before, after, strict=True):
        was, now = _outcome(old), _outcome(new)
        probes.append(ProbeComparison(
            session=old.session, turn=old.turn, line=old.line, message=old.query.message, current=was,
            proposed=now, verdict_changed=was.passed != now.passed,
            ranking_changed=[m.text for m in was.memories] != [m.text for m in now.memories],
        ))
    return ReplayComparison(transcript=transcript.id, character=transcript.character, probes=tuple(probes))
