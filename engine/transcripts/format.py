"""Parse and validate a transcript document (format version 1) into an ``engine.transcripts.model.Transcript``.

The parser accepts exactly what ../shared/transcripts/FORMAT.md describes and rejects anything else with a message
naming the file, the line and the field (``luna.yaml:12: sessions[1].turns[0].probe.recall_any: expected a list
of strings, got the string 'Luna'``). Validation walks the composed YAML node tree rather than the constructed
Python objects, because only the nodes remember their lines.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from engine.domain.models import Role
from engine.transcripts.model import Probe, Session, ToneCheck, Transcript, TranscriptTurn
from engine.transcripts.nodes import (
    INT_TAG,
    STR_TAG,
    Issue,
    NodeValidator,
    TranscriptInvalid,
    describe,
    join_path,
    parse_offset,
    parse_timestamp,
)

__all__ = ["FORMAT_VERSION", "Issue", "TranscriptInvalid", "parse_offset", "parse_timestamp", "parse_transcript"]

FORMAT_VERSION = 1
DEFAULT_TURN_GAP = timedelta(seconds=30)
TOP_LEVEL_REQUIRED = ("format", "id", "character", "user", "sessions")
TOP_LEVEL_OPTIONAL = ("description",)
SESSION_KEYS = ("at", "turns")
TURN_KEYS = ("user", "character", "at", "probe")
TONE_ITEM_KEYS = ("register_any", "anchors_any")
STRING_CHECKS = ("recall_any", "recall_all", "recall_none", "context_any", "context_none")
PROBE_KEYS = ("tone", "no_tone", *STRING_CHECKS)

class _Validator(NodeValidator):
    """Checks one transcript document: its format version, sessions, turns and probes."""

    # -- the document -------------------------------------------------------------------------------------

    def format_is_supported(self, root: Node) -> bool:
        """False (and one issue) when ``format`` names another version: its fields mean other things, so
        checking them against version 1 would only mislead."""
        if not isinstance(root, MappingNode):
            return True
        for key_node, node in root.value:
            if not (isinstance(key_node, ScalarNode) and key_node.tag == STR_TAG and key_node.value == "format"):
                continue
            if not (isinstance(node, ScalarNode) and node.tag == INT_TAG and node.value == str(FORMAT_VERSION)):
                self.fail(
                    node,
                    "format",
                    f"expected {FORMAT_VERSION} (the only version this runner reads), got {describe(node)}",
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
        for index, item, path, fields in self.entries(items, "sessions", required=SESSION_KEYS):
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
        for index, item, turn_path, fields in self.entries(items, path, optional=TURN_KEYS):
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
            text = self.text(fields[roles[0]][1], join_path(turn_path, roles[0])) if len(roles) == 1 else None

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
                if isinstance(value, ScalarNode) and value.tag == STR_TAG and value.value == "any":
                    parsed = "any"
                elif isinstance(value, SequenceNode):
                    parsed = self.registers(value, key_path)
                else:
                    self.fail(
                        value,
                        key_path,
                        f"expected a list of registers or the word any, got {describe(value)}",
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
        found = [None if fields is None else self.tone_item(fields, item_path)
                 for _, _, item_path, fields in self.entries(items, path, optional=TONE_ITEM_KEYS)]
        checks = [check for check in found if check is not None]
        return tuple(checks) if len(checks) == len(found) else None

    def tone_item(self, fields: dict[str, tuple[Node, Node]], item_path: str) -> ToneCheck | None:
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
        if ("register_any" in fields and registers is None) or ("anchors_any" in fields and anchors is None):
            return None
        return ToneCheck(register_any=registers, anchors_any=anchors)


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


