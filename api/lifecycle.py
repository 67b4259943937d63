"""Facts, archive, pins, erasure, the review queue and the audit trail, over HTTP.

Who may act on which level:

| level | read | change |
|---|---|---|
| ``user`` (one user with one character) | runtime, evaluator | runtime (on the user's behalf); never admins |
| ``canon`` (the character's own lore) | every role | director, admin |
| ``shared`` (the organisation's) | every role | admin (a director's shared fact lands provisional) |

A fact's status is computed server-side (``engine.facts.status_for``); callers never send one. A key's role
decides on whose authority it writes (``WRITERS``): a runtime relays the user's own words, a director writes as the
character's author, an admin as the organisation; evaluators and operators write none.
"""

from __future__ import annotations

from typing import Annotated, Literal

from feltsense_client.models import (
    AuditEvent,
    ErasureReceipt,
    FactWrite,
    MemoryState,
    ReviewItem,
    SweepReport,
    TrustRecord,
)
from litestar import delete, get, post, put
from litestar.params import FromPath, FromQuery, JSONBody, Parameter, QueryParameter
from pydantic import BaseModel, ConfigDict, Field

from api.auth import Principal, Role
from api.boundary import AUTHENTICATED, WITH_BODY, IdPath, IdQuery, OptionalIdQuery, problems
from api.dependencies import EngineDep, PrincipalDep
from api.security import OPERATOR_ROUTE, require
from api.tenancy import scoped, unscope_memory, unscoped
from api.wire import to_wire
from engine import Writer, earned, may_write, stored_sentence
from engine.domain.errors import Forbidden, InvalidInput
from engine.domain.models import ExtractedFact, Identifier, Memory, Partition, Scope
from engine.domain.models import ReviewItem as EngineReviewItem
from engine.domain.scopes import partition_for

READ_ROLES: dict[Scope, tuple[Role, ...]] = {
    "user": ("runtime", "evaluator"), "canon": ("runtime", "director", "evaluator", "admin"),
    "shared": ("runtime", "director", "evaluator", "admin"),
}
CHANGE_ROLES: dict[Scope, tuple[Role, ...]] = {"user": ("runtime",), "canon": ("director", "admin"),
                                               "shared": ("admin",)}


def _partition(principal: Principal, scope: Scope, character_id: str, user_id: str | None) -> Partition:
    if scope == "user" and user_id is None:
        raise InvalidInput("user_id is required for the user level", field="user_id")
    return partition_for(scope, scoped(principal.org, character_id), user_id)


def _changeable(principal: Principal, character_id: str, user_id: str | None) -> list[Partition]:
    """The levels this caller may change, for this character (and user)."""
    return [_partition(principal, scope, character_id, user_id)
            for scope, roles in CHANGE_ROLES.items()
            if principal.role in roles and (scope != "user" or user_id is not None)]


def _readable(principal: Principal, character_id: str, user_id: str | None) -> list[Partition]:
    return [_partition(principal, scope, character_id, user_id)
            for scope, roles in READ_ROLES.items()
            if principal.role in roles and (scope != "user" or user_id is not None)]


class FactRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    scope: Scope
    character_id: Identifier
    user_id: Identifier | None = Field(default=None, description="required for the user level")
    subject: str = Field(min_length=1, max_length=120, description='"user", "user\'s dog", "ava", "jazz"')
    relation: str = Field(min_length=1, max_length=60, pattern=r"^[a-z_]+$")
    value: str = Field(min_length=1, max_length=200)
    sentence: str | None = Field(
        default=None, min_length=1, max_length=500,
        description="optional, kept for compatibility. On the canon and shared levels a director's or admin's "
                    "sentence is stored as written. On the user level it is ignored: the server renders the "
                    'sentence from subject, relation and value, with the value quoted (\'The user lives in '
                    '"Lisbon".\'), so a caller\'s text never reaches the character as a line of its prompt',
    )


class FactView(BaseModel):
    model_config = ConfigDict(extra="forbid")
    fact: Memory
    state: MemoryState


class StateView(BaseModel):
    model_config = ConfigDict(extra="forbid")
    memory_id: str
    state: MemoryState


class CanonRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1, max_length=50_000, description="the record, whole (paragraphs separated by a "
                                                                      "blank line)")


class PinRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pinned: bool


WRITERS: dict[Role, Writer] = {"runtime": "user", "director": "author", "admin": "organisation"}
"""The engine's writer each role writes facts as (``engine.facts.STATUS_MATRIX`` decides what each may write)."""


class Decision(BaseModel):
    model_config = ConfigDict(extra="forbid")
    decision: Literal["kept", "rejected", "reverted", "undone"] = Field(
        description="kept applies a pending item, rejected drops it, reverted restores the exact prior state of a "
                    "kept one, undone restores the exact prior state of an auto_kept one and puts it back to pending"
    )


@post("/v1/facts", status_code=200, sync_to_thread=True,
      summary="Write an atomic fact: supersedes its slot's current fact, dedups identical content",
      responses=problems(*WITH_BODY))
def write_fact(data: JSONBody[FactRequest], engine: EngineDep, principal: PrincipalDep) -> FactWrite:
    writer = WRITERS.get(principal.role)
    if writer is None:
        raise Forbidden("an evaluator key is read-only" if principal.role == "evaluator"
                        else f"an {principal.role} key may not write facts")
    if not may_write(writer, data.scope):
        raise Forbidden(f"a {principal.role} key may not write {data.scope} facts")
    if data.scope == "user" and data.user_id is None:
        raise InvalidInput("user_id is required for the user level", field="user_id")
    subject = data.subject.strip().lower()
    return to_wire(FactWrite, engine.write_fact(
        ExtractedFact(subject=subject, relation=data.relation, value=data.value,
                      sentence=stored_sentence(subject, data.relation, data.value, said=data.sentence, writer=writer)),
        scope=data.scope, character_id=scoped(principal.org, data.character_id),
        user_id=data.user_id if data.scope == "user" else None, writer=writer, actor=principal.actor,
        source="director" if writer in ("author", "organisation") else "user_stated",
    ))


@get("/v1/facts", sync_to_thread=True, summary="One level's facts with their status and strength signals",
     responses=problems(*AUTHENTICATED))
def list_facts(
    engine: EngineDep, principal: PrincipalDep, character_id: IdQuery,
    level: Annotated[Scope, QueryParameter(name="scope", description="user, canon or shared")],
    user_id: OptionalIdQuery = None,
    status: FromQuery[Literal["active", "provisional", "revoked", "archived"] | None] = None,
) -> list[FactView]:
    scope = level  # "scope" is the query parameter's name; Litestar reserves it for the ASGI scope
    require(principal, *READ_ROLES[scope])
    partition = _partition(principal, scope, character_id, user_id)
    return [FactView(fact=unscope_memory(principal.org, fact), state=to_wire(MemoryState, state))
            for fact, state in engine.list_facts(scope, partition.character_id, user_id if scope == "user" else None)
            if status is None or state.status == status]


@post("/v1/memories/{memory_id:str}/archive", status_code=200, sync_to_thread=True,
      summary="Move a memory to the cold archive: out of everyday recall, restorable exactly",
      responses=problems(*AUTHENTICATED, 404))
def archive_memory(memory_id: FromPath[str], engine: EngineDep, principal: PrincipalDep, character_id: IdQuery,
                   user_id: OptionalIdQuery = None) -> StateView:
    return StateView(memory_id=memory_id, state=to_wire(MemoryState, engine.archive(
        memory_id, _changeable(principal, character_id, user_id), actor=principal.actor)))


@post("/v1/memories/{memory_id:str}/restore", status_code=200, sync_to_thread=True,
      summary="Bring an archived memory back into recall as it was", responses=problems(*AUTHENTICATED, 404))
def restore_memory(memory_id: FromPath[str], engine: EngineDep, principal: PrincipalDep, character_id: IdQuery,
                   user_id: OptionalIdQuery = None) -> StateView:
    return StateView(memory_id=memory_id, state=to_wire(MemoryState, engine.restore(
        memory_id, _changeable(principal, character_id, user_id), actor=principal.actor)))


@post("/v1/memories/{memory_id:str}/pin", status_code=200, sync_to_thread=True,
      summary="Pin (or unpin) a memory: a pinned memory's strength never falls below the pin floor",
      responses=problems(*WITH_BODY, 404))
def pin_memory(memory_id: FromPath[str], data: JSONBody[PinRequest], engine: EngineDep, principal: PrincipalDep,
               character_id: IdQuery, user_id: OptionalIdQuery = None) -> StateView:
    partitions = _changeable(principal, character_id, user_id)
    return StateView(memory_id=memory_id, state=to_wire(MemoryState, engine.pin(
        memory_id, partitions, pinned=data.pinned, actor=principal.actor)))


@delete("/v1/users/{user_id:str}", status_code=200, sync_to_thread=True,
        summary="A user's erasure request: everything they said to this character, with a receipt",
        responses=problems(*AUTHENTICATED))
def erase_user(user_id: IdPath, engine: EngineDep, principal: PrincipalDep, character_id: IdQuery,
               strict: bool = Parameter(default=False, description="drop names from the audit trail too")
               ) -> ErasureReceipt:
    require(principal, "runtime")
    return to_wire(ErasureReceipt, engine.erase_user(scoped(principal.org, character_id), user_id, strict=strict,
                                                     actor=principal.actor))


@get("/v1/review", sync_to_thread=True, summary="Consolidation proposals waiting for (or given) a decision",
     responses=problems(*AUTHENTICATED))
def review_queue(
    engine: EngineDep, principal: PrincipalDep, character_id: IdQuery, user_id: OptionalIdQuery = None,
    decision: FromQuery[Literal["pending", "kept", "rejected", "reverted", "auto_kept"] | None] = "pending",
) -> list[ReviewItem]:
    return [_unscope_item(principal, item) for item in
            engine.review_items(_changeable(principal, character_id, user_id), decision)]


@get("/v1/review/trust", sync_to_thread=True,
     summary="The organisation's record of people's decisions on one kind of change, and whether it has earned "
             "automatic keeps",
     responses=problems(*AUTHENTICATED))
def trust_record(
    engine: EngineDep, principal: PrincipalDep, character_id: IdQuery,
    change_kind: Annotated[str, QueryParameter(
        description="promote:<relation> (promote:diet), demote, conflict or contradiction",
        min_length=1, max_length=80, pattern=r"^[a-z_]+(:[a-z_]+)?$")],
) -> TrustRecord:
    require(principal, "director", "admin")
    record, profile = engine.trust_record(scoped(principal.org, character_id), change_kind)
    kind = change_kind.split(":", 1)[0]
    return TrustRecord(change_kind=record.change_kind, kept=record.kept, rejected=record.rejected,
                       reverted=record.reverted, held=record.held, rate=round(record.rate, 6),
                       auto_keep_after=profile.trust.auto_keep_after, min_keep_rate=profile.trust.min_keep_rate,
                       eligible=kind in profile.trust.kinds,
                       earned=earned(record, kind, profile.trust))  # type: ignore[arg-type]


@post("/v1/review/{item_id:str}", status_code=200, sync_to_thread=True,
      summary="Decide a proposal: kept applies it, rejected drops it, reverted restores the exact prior state, "
              "undone takes back an automatic keep (exact prior state, pending again)",
      responses=problems(*WITH_BODY, 404))
def decide(item_id: FromPath[str], data: JSONBody[Decision], engine: EngineDep, principal: PrincipalDep,
           character_id: IdQuery, user_id: OptionalIdQuery = None) -> ReviewItem:
    return _unscope_item(principal, engine.decide(item_id, data.decision,
                                                  _changeable(principal, character_id, user_id),
                                                  by=principal.actor))


def _public(principal: Principal, key: str) -> str:
    """A ledger partition key as a caller reads it: ``character/user`` without the organisation prefix."""
    return "/".join(unscoped(principal.org, part) for part in key.split("\x1f"))


def _unscope_item(principal: Principal, item: EngineReviewItem) -> ReviewItem:
    return to_wire(ReviewItem, item.model_copy(update={"partition": _public(principal, item.partition)}))


@get("/v1/audit", sync_to_thread=True,
     summary="The audit trail of a level: what existed and how it changed, never what it said",
     responses=problems(*AUTHENTICATED))
def audit_trail(engine: EngineDep, principal: PrincipalDep, character_id: IdQuery,
                level: Annotated[Scope, QueryParameter(name="scope", description="user, canon or shared")] = "user",
                user_id: OptionalIdQuery = None) -> list[AuditEvent]:
    scope = level
    require(principal, *READ_ROLES[scope])
    partition = _partition(principal, scope, character_id, user_id)
    events = engine.audit_trail(partition)
    return [to_wire(AuditEvent, e.model_copy(update={"partition": _public(principal, e.partition)})) for e in events]


@post("/v1/maintenance/sweep", status_code=200, sync_to_thread=True,
      summary="Run the nightly sweep now (usage, repairs, archive, consolidation proposals): an admin's covers "
              "its organisation, an operator's every organisation",
      responses=problems(401, 403, 502, 503), opt={OPERATOR_ROUTE: True})
def sweep(engine: EngineDep, principal: PrincipalDep) -> SweepReport:
    require(principal, "admin", "operator")
    if principal.role == "operator":
        return to_wire(SweepReport, engine.sweep())
    return to_wire(SweepReport, engine.sweep(namespace=scoped(principal.org, "")))


@put("/v1/characters/{character_id:str}/canon/{record_id:str}", status_code=200, sync_to_thread=True,
     summary="Write a canon record (the character's own lore): stored whole, pinned, in every turn's prefix",
     responses=problems(*WITH_BODY))
def put_canon(character_id: IdPath, record_id: IdPath, data: JSONBody[CanonRecord],
              engine: EngineDep, principal: PrincipalDep) -> FactView:
    require(principal, "director", "admin")
    memory = engine.write_canon(scoped(principal.org, character_id), record_id, data.text,
                                actor=principal.actor)
    state = engine.states([memory.memory_id])[memory.memory_id]
    return FactView(fact=unscope_memory(principal.org, memory), state=to_wire(MemoryState, state))


lifecycle_routes = [put_canon, write_fact, list_facts, archive_memory, restore_memory, pin_memory, erase_user,
                    review_queue, trust_record, decide, audit_trail, sweep]
