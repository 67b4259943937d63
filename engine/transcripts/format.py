"""Parse and validate a transcript document (format version 1) into an ``engine.transcripts.model.Transcript``.

The parser accepts exactly what ../shared/transcripts/FORMAT.md describes and rejects anything else with a message
naming the file, the line and the field (``luna.yaml:12: sessions[1].turns[0].probe.recall_any: expected a list
of strings, got the string 'Luna'``). Validation walks the composed YAML node tree rather than the constructed
Python objects, because only the nodes remember their lines.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import yaml
from pydantic import TypeAdapter, ValidationError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from engine.domain.models import REGISTERS, Identifier, Role
from engine.transcripts.model import Probe, Session, ToneCheck, Transcript, TranscriptTurn

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


