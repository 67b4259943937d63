"""Checking a YAML document's nodes: the issues a transcript can have, and the shapes and values its fields take.

Validation walks the composed YAML node tree rather than the constructed Python objects, because only the nodes
remember their lines. ``engine.transcripts.format`` checks a transcript's own structure on top of these.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import TypeAdapter, ValidationError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from engine.domain.models import REGISTERS, Identifier

_IDENTIFIER: TypeAdapter[str] = TypeAdapter(Identifier)

MAX_TEXT_CHARS = 20_000
"""The engine's limit on a turn's text (``engine.domain.models.Turn.text``)."""
MAX_ID_CHARS = 150
"""Leaves room under the engine's 200-character identifiers for the derived ``:s<n>:t<n>`` suffixes."""

_OFFSET = re.compile(r"\+(?:(?P<days>\d+)d)?(?:(?P<hours>\d+)h)?(?:(?P<minutes>\d+)m)?(?:(?P<seconds>\d+)s)?")
STR_TAG = "tag:yaml.org,2002:str"
TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
INT_TAG = "tag:yaml.org,2002:int"

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


def describe(node: Node) -> str:
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


def join_path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class NodeValidator:
    """Walks one document's nodes, collecting every issue rather than stopping at the first: the checks of shapes
    and values any field may need (``engine.transcripts.format`` adds the transcript's own)."""

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
            self.fail(node, path, f"expected a mapping with {', '.join(allowed)}; got {describe(node)}")
            return None
        fields: dict[str, tuple[Node, Node]] = {}
        for key_node, value_node in node.value:
            if not (isinstance(key_node, ScalarNode) and key_node.tag == STR_TAG):
                self.fail(key_node, path, f"expected a field name, got {describe(key_node)}")
                continue
            key = key_node.value
            if key in fields:
                self.fail(key_node, join_path(path, key), "duplicate field")
            elif key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f"did you mean {close[0]}?" if close else f"expected one of {', '.join(allowed)}"
                self.fail(key_node, join_path(path, key), f"unknown field ({hint})")
            else:
                fields[key] = (key_node, value_node)
        for key in required:
            if key not in fields:
                self.fail(node, join_path(path, key), "missing required field")
        return fields

    def sequence(self, node: Node, path: str, what: str) -> list[Node] | None:
        if not isinstance(node, SequenceNode):
            self.fail(node, path, f"expected a list of {what}, got {describe(node)}")
            return None
        if not node.value:
            self.fail(node, path, f"expected a non-empty list of {what}")
            return None
        return list(node.value)

    def string(self, node: Node, path: str) -> str | None:
        if not (isinstance(node, ScalarNode) and node.tag == STR_TAG):
            self.fail(node, path, f"expected a string, got {describe(node)}")
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
                node, path, f"expected a list of registers ({', '.join(REGISTERS)}), got {describe(node)}"
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
        if not (isinstance(node, ScalarNode) and node.tag in (STR_TAG, TIMESTAMP_TAG)):
            self.fail(node, path, f"expected an ISO-8601 timestamp with a zone, got {describe(node)}")
            return None
        try:
            return parse_timestamp(node.value)
        except ValueError as exc:
            self.fail(node, path, str(exc))
            return None

    def offset(self, node: Node, path: str, reference: str) -> timedelta | None:
        if not (isinstance(node, ScalarNode) and node.tag in (STR_TAG, TIMESTAMP_TAG)):
            self.fail(
                node, path, f"expected an offset from {reference} like +9d or +45s, got {describe(node)}"
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

    def entries(
        self, items: Sequence[Node], path: str, *, required: Sequence[str] = (), optional: Sequence[str] = ()
    ) -> Iterator[tuple[int, Node, str, dict[str, tuple[Node, Node]] | None]]:
        """Each list item checked as a mapping, as it is reached: (index, node, path, fields or None)."""
        for index, item in enumerate(items):
            item_path = f"{path}[{index}]"
            yield index, item, item_path, self.mapping(item, item_path, required=required, optional=optional)
