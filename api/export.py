"""``GET /v1/users/{user_id}/export``: everything held about one user with one character (GDPR Articles 15 and
20), in the versioned format of ``engine.domain.models.exchange``: one JSON document, or NDJSON lines that stream
a large partition (``Accept: application/x-ndjson`` or ``?format=ndjson``).

Only the user's own runtime key may export: an admin manages shared memory and never sees a user's (private stays
private), and an evaluator replays, it does not take copies. Each export is an audit event (``exported``, by the
key). Ids come back as the organisation sent them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import feltsense_client.models as wire
from litestar import Request, Response, get
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.spec import OpenAPIMediaType, OpenAPIResponse, OpenAPIType, Operation, Schema
from litestar.params import Parameter
from litestar.response import Stream
from pydantic import BaseModel, Field, ValidationError

from api.boundary import AUTHENTICATED, IdPath, IdQuery, problems
from api.dependencies import EngineDep, PrincipalDep
from api.security import require
from api.tenancy import scope_memory, scope_partition, scope_turn, scoped, unscope_memory, unscope_turn, unscoped
from engine.domain.errors import FeltsenseError, InvalidInput
from engine.domain.models import Memory, Turn
from engine.domain.models.exchange import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
    SECTIONS,
    ExportedMemory,
    ExportedSession,
    RecordKind,
    UserExport,
    grouped,
)

NDJSON = "application/x-ndjson"


# -- the document as the schema documents it: the wire models where the client has them --------------------------


class ExportedSessionView(BaseModel):
    session_id: str
    closed: bool = Field(description="closed: its write-time pass recorded")


class ExportedTurnView(BaseModel):
    turn_id: str
    session_id: str
    character_id: str
    user_id: str
    role: Literal["user", "character"]
    text: str
    timestamp: datetime


class ExportedMemoryView(BaseModel):
    memory: Memory
    trace: wire.Trace | None = Field(description="how the moment felt, once its session closed")
    state: wire.MemoryState | None = Field(description="status, supersession (a fact's history), pins, strength")


class ExportedReviewView(BaseModel):
    item_id: str
    kind: Literal["promote", "demote"]
    memory_id: str
    proposed_at: datetime
    score: float
    reason: str
    before: wire.MemoryState
    after: wire.MemoryState
    decision: Literal["pending", "kept", "rejected", "reverted"]
    decided_at: datetime | None
    decided_by: str | None


class ExportedAuditView(BaseModel):
    memory_id: str = Field(description="empty for an event of the whole partition (an export)")
    event: str
    at: datetime
    status: str | None
    strength: float | None
    names: list[str] | None = Field(description="proper names at most; null after a strict erasure")
    actor: str


class ExportDocument(BaseModel):
    """``engine.domain.models.exchange.UserExport`` as the API documents it."""

    format: Literal["feltsense.export"]
    version: Literal[1]
    exported_at: datetime
    character_id: str
    user_id: str
    sessions: list[ExportedSessionView]
    turns: list[ExportedTurnView]
    memories: list[ExportedMemoryView] = Field(description="turn memories and facts, superseded ones too")
    resolutions: list[wire.Resolution]
    review_items: list[ExportedReviewView]
    audit: list[ExportedAuditView]
    tone_rules: list[wire.ToneConstraint] = Field(description="the standing rules in force at exported_at")
MAX_JSON_RECORDS = 20_000
"""The most records a JSON export holds; a larger partition is a 413 that names NDJSON, which has no bound."""


class TooLarge(FeltsenseError):
    """A JSON export of more records than ``MAX_JSON_RECORDS``."""


def _unscoped(org: str, kind: RecordKind, record: BaseModel) -> BaseModel:
    if kind == "turn" and isinstance(record, Turn):
        return unscope_turn(org, record)
    if kind == "memory" and isinstance(record, ExportedMemory):
        return record.model_copy(update={"memory": unscope_memory(org, record.memory)})
    if kind == "session" and isinstance(record, ExportedSession):
        return record.model_copy(update={"session_id": unscoped(org, record.session_id)})
    return record


def _lines(header: dict[str, Any], records: Iterator[tuple[RecordKind, BaseModel]],
           audited: Callable[[], None]) -> Iterator[bytes]:
    """The NDJSON lines; ``audited`` runs once the first line has gone, however the stream ends (a client that
    hangs up half-way still took part of a copy), so that, as in JSON, an export's own event is not in it."""
    try:
        yield json.dumps({"kind": "header", **header}).encode() + b"\n"
        counts = {kind: 0 for kind in SECTIONS}
        for kind, record in records:
            counts[kind] += 1
            yield b'{"kind":"' + kind.encode() + b'","record":' + record.model_dump_json().encode() + b"}\n"
        yield json.dumps({"kind": "end", "counts": counts}).encode() + b"\n"
    finally:
        audited()


def _at_most(limit: int, records: Iterator[tuple[RecordKind, BaseModel]]) -> Iterator[tuple[RecordKind, BaseModel]]:
    for count, record in enumerate(records, start=1):
        if count > limit:
            raise TooLarge(f"this partition holds more than {limit:,} records, more than one JSON document "
                           f"carries: ask for NDJSON (Accept: {NDJSON}, or ?format=ndjson), which streams them a "
                           "line each")
        yield record


@dataclass
class ExportOperation(Operation):
    """The export's 200 in both of its forms: the JSON document, and NDJSON lines (header, records, end)."""

    def __post_init__(self) -> None:
        answer = (self.responses or {}).get("200")
        if isinstance(answer, OpenAPIResponse) and answer.content:
            answer.content[NDJSON] = OpenAPIMediaType(schema=Schema(
                type=OpenAPIType.STRING, description="one JSON object a line: the header (format, version, "
                "exported_at, character_id, user_id), then {kind, record} for each record, then an end line with "
                "the counts of each kind"))


@get("/v1/users/{user_id:str}/export", sync_to_thread=True, operation_class=ExportOperation,
     summary="Everything held about one user with one character: turns, memories with traces and states, facts "
             "with their history, resolutions, review items, audit events, tone rules (JSON, or NDJSON lines)",
     responses={200: ResponseSpec(ExportDocument, generate_examples=False, description=(
                     f"the export: the JSON document, or with format=ndjson (or Accept: {NDJSON}) the same records "
                     "a line each")),
                **problems(*AUTHENTICATED, 413)})
def export_user(
    user_id: IdPath, character_id: IdQuery, engine: EngineDep, principal: PrincipalDep, request: Request[Any, Any, Any],
    format: Literal["json", "ndjson"] | None = Parameter(
        default=None, description="ndjson: one record a line, streamed (also with Accept: application/x-ndjson); "
                                  f"json: one document, at most {MAX_JSON_RECORDS:,} records"),
) -> Response[Any]:
    require(principal, "runtime")  # not admin, not evaluator: a user's private memory is the user's runtime's
    partition = scope_partition(principal.org, character_id, user_id)
    at = engine.clock()
    records = ((kind, _unscoped(principal.org, kind, record))
               for kind, record in engine.export_records(partition, at=at))
    if format == "ndjson" or (format is None and NDJSON in request.headers.get("accept", "")):
        header = {"format": EXPORT_FORMAT, "version": EXPORT_VERSION, "exported_at": at.isoformat(),
                  "character_id": character_id, "user_id": user_id}
        return Stream(_lines(header, records, lambda: engine.record_export(partition, actor=principal.actor, at=at)),
                      media_type=NDJSON)
    document = UserExport.model_validate({"exported_at": at, "character_id": character_id, "user_id": user_id,
                                          **grouped(_at_most(MAX_JSON_RECORDS, records))})
    engine.record_export(partition, actor=principal.actor, at=at)
    return Response(document.model_dump(mode="json"), media_type="application/json")


export_routes = [export_user]


# -- import: ``feltsense import`` -------------------------------------------------------------------------------


def scoped_document(org: str, document: UserExport) -> UserExport:
    """An export's ids as the engine stores them for ``org`` (the export carries them as the organisation sent
    them)."""
    return document.model_copy(update={
        "character_id": scoped(org, document.character_id),
        "sessions": tuple(s.model_copy(update={"session_id": scoped(org, s.session_id)}) for s in document.sessions),
        "turns": tuple(scope_turn(org, t) for t in document.turns),
        "memories": tuple(m.model_copy(update={"memory": scope_memory(org, m.memory)}) for m in document.memories),
    })


def read_document(text: str, *, source: str) -> UserExport:
    """An export file, JSON or NDJSON, as one document; InvalidInput saying where and why when it is not one."""
    stripped = text.lstrip()
    if not stripped:
        raise InvalidInput(f"{source} is empty: not a feltsense export")
    try:
        if _is_header(stripped.split("\n", 1)[0]):
            return _from_lines(text, source)
        return UserExport.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise InvalidInput(f"{source}: {where or 'the document'}: {first['msg']} ({exc.error_count()} problem(s) "
                           "in all)", field=where) from None


def _is_header(line: str) -> bool:
    try:
        entry = json.loads(line)
    except json.JSONDecodeError:
        return False
    return isinstance(entry, dict) and entry.get("kind") == "header"


def _from_lines(text: str, source: str) -> UserExport:
    records: list[tuple[RecordKind, Any]] = []
    header: dict[str, Any] | None = None
    ended = False
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if ended:
            raise InvalidInput(f"{source} line {number}: a record after the end line")
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"{source} line {number}: not JSON ({exc.msg} at column {exc.colno})") from None
        kind = entry.get("kind") if isinstance(entry, dict) else None
        if header is None:
            if kind != "header":
                raise InvalidInput(f"{source} line {number}: the first line must be the header "
                                   '({"kind": "header", "format": "feltsense.export", ...})')
            header = {k: v for k, v in entry.items() if k != "kind"}
        elif kind == "end":
            ended = True
        elif kind in SECTIONS and "record" in entry:
            records.append((kind, entry["record"]))
        else:
            raise InvalidInput(f"{source} line {number}: unknown record kind {kind!r} (one of "
                               f"{', '.join(SECTIONS)}, with its record)")
    if header is None or not ended:
        raise InvalidInput(f"{source}: {'no header' if header is None else 'no end line'}: the file is cut short")
    return UserExport.model_validate({**header, **grouped(records)})
