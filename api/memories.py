"""Memory endpoints: list and search one user's memories, read one and its trace, delete one; a past recall.

Every call names the character and the user; a memory of another user (or organisation) is a 404, never the
memory (seed 000, "Private by user"). A search (``q``) is how a user finds the memory they mean to read or erase:
it finds faded and archived memories too, and says which they are (``Engine.search``). Every float in these
answers has 4 decimal places (``api.boundary.RoundedJSON``).
"""

from __future__ import annotations

from feltsense_client.models import (
    CompactRecall,
    CompactToneRule,
    ErasureReceipt,
    MemoryState,
    RecallMode,
    RecallResult,
    Trace,
)
from litestar import delete, get
from litestar.params import FromPath, Parameter
from pydantic import BaseModel, ConfigDict, Field

from api.boundary import AUTHENTICATED, DetailQuery, RoundedJSON, UserPartitionDep, problems, recall_answer
from api.compact import compact_rule
from api.dependencies import EngineDep, PrincipalDep
from api.security import require
from api.tenancy import unscope_memory, unscope_result
from api.wire import to_wire, to_wire_or_none
from engine import Found
from engine.domain.errors import InvalidInput
from engine.domain.models import Memory

MAX_PAGE = 200
"""The most memories one page lists (``limit``)."""
MAX_OFFSET = 1_000_000
"""The furthest a listing pages (``offset``): far past any partition's size, and an offset too large for the
store's 64-bit integers is a 422 naming it, not an overflow deep in the store."""


class MemoryView(BaseModel):
    model_config = ConfigDict(extra="forbid")
    memory: Memory
    trace: Trace | None
    state: MemoryState | None = Field(
        default=None, description="status (active or archived: out of everyday recall, restorable), pins and "
                                  "strength signals; in a listing and a search")
    faded: bool | None = Field(
        default=None,
        description="in a listing and a search: its live strength (decay since it was last validated, use and source "
                    "trust, scoring.strength; pins and canon floored) is below the character's strength.archive_below "
                    "(0.05 by default: about five years after it was said, for a memory the user stated and recall "
                    "never returned). The nightly sweep moves a faded active memory to the archive, out of everyday "
                    "recall",
    )
    strength: float | None = Field(default=None, ge=0.0, le=1.0,
                                   description="in a listing and a search: that live strength, 0..1")
    relevance: float | None = Field(
        default=None, ge=0.0, le=1.0,
        description="in a search: how well it matches q, 0..1 (stage one's fused relevance; no decay, no floor), "
                    "the order items come in",
    )


class MemoryPage(BaseModel):
    """A page of one user's memories; every float has 4 decimal places."""

    model_config = ConfigDict(extra="forbid")
    items: list[MemoryView]
    offset: int
    limit: int
    next_offset: int | None
    mode: RecallMode | None = Field(
        default=None, description="in a search: which mode answered (hybrid; lexical or substring when degraded)")


def _view(org: str, found: Found) -> MemoryView:
    return MemoryView(memory=unscope_memory(org, found.memory), trace=to_wire_or_none(Trace, found.trace),
                      state=to_wire(MemoryState, found.state), faded=found.faded, strength=found.strength,
                      relevance=found.relevance)


@get("/v1/memories", sync_to_thread=True,
     summary="List one user's memories, or search them with q (faded and archived ones too, flagged)",
     responses=problems(*AUTHENTICATED), response_class=RoundedJSON)
def list_memories(
    engine: EngineDep,
    principal: PrincipalDep,
    partition: UserPartitionDep,
    q: str | None = Parameter(
        default=None, max_length=2000,
        description="search text: this user's own memories that match it, best match first, faded and archived "
                    "ones too (each item says its status, whether it faded, and its relevance); one page of the best "
                    "limit matches"),
    offset: int = Parameter(default=0, ge=0, le=MAX_OFFSET,
                            description=f"pages the listing, at most {MAX_OFFSET:,}; not with q"),
    limit: int = Parameter(default=50, ge=1, le=MAX_PAGE, description=f"at most {MAX_PAGE}"),
    archived: bool | None = Parameter(
        default=None, description="archived memories too: the listing leaves them out unless true (the audit flag); "
                                  "a search (q) finds them unless false"),
) -> MemoryPage:
    require(principal, "runtime", "evaluator")
    if q:
        if offset:
            raise InvalidInput("offset pages the listing; a search (q) answers its best limit matches in one page",
                               field="offset")
        # Archived memories too by default: a user looking for what to erase means wherever it is.
        search = engine.search(partition, q, limit=limit, include_archived=archived is not False)
        return MemoryPage(items=[_view(principal.org, found) for found in search.found], offset=0, limit=limit,
                          next_offset=None, mode=search.mode)
    page = engine.listing(partition, offset=offset, limit=limit)
    shown = ("active", "archived") if archived else ("active",)
    return MemoryPage(
        items=[_view(principal.org, found) for found in page if found.state.status in shown],
        offset=offset, limit=limit, next_offset=offset + limit if len(page) == limit else None,
    )


@get("/v1/memories/{memory_id:str}", sync_to_thread=True, summary="One memory with its trace",
     responses=problems(*AUTHENTICATED, 404), response_class=RoundedJSON)
def get_memory(
    memory_id: FromPath[str], engine: EngineDep, principal: PrincipalDep, partition: UserPartitionDep
) -> MemoryView:
    require(principal, "runtime", "evaluator")
    memory, trace = engine.memory(memory_id, partition)
    return MemoryView(memory=unscope_memory(principal.org, memory), trace=to_wire_or_none(Trace, trace))


@get("/v1/memories/{memory_id:str}/trace", sync_to_thread=True, summary="A memory's trace",
     responses=problems(*AUTHENTICATED, 404), response_class=RoundedJSON)
def get_trace(
    memory_id: FromPath[str], engine: EngineDep, principal: PrincipalDep, partition: UserPartitionDep
) -> Trace | None:
    require(principal, "runtime", "evaluator")
    return to_wire_or_none(Trace, engine.memory(memory_id, partition)[1])


@delete("/v1/memories/{memory_id:str}", status_code=200, sync_to_thread=True,
        summary="Erase one memory with its trace, facts, vector and lexical entries; returns a receipt",
        responses=problems(*AUTHENTICATED, 404))
def delete_memory(
    memory_id: FromPath[str], engine: EngineDep, principal: PrincipalDep, partition: UserPartitionDep,
    strict: bool = Parameter(default=False, description="drop names from the audit trail too"),
) -> ErasureReceipt:
    require(principal, "runtime")
    return to_wire(ErasureReceipt, engine.forget(memory_id, partition, strict=strict, actor=principal.actor))


@get("/v1/recalls/{recall_id:str}", sync_to_thread=True,
     summary="A past turn's recall as it was returned: what the character saw (detail=full: with every trace and "
             "the assembly's trace)",
     responses=problems(*AUTHENTICATED, 404), response_class=RoundedJSON)
def get_recall(
    recall_id: FromPath[str], engine: EngineDep, principal: PrincipalDep, partition: UserPartitionDep,
    detail: DetailQuery = "compact",
) -> CompactRecall | RecallResult:
    require(principal, "runtime", "evaluator")
    return recall_answer(unscope_result(principal.org, engine.recall_record(recall_id, partition)), detail)


@get("/v1/tone-rules", sync_to_thread=True,
     summary="The standing tone rules in force for one user with one character now, whatever a turn recalls",
     responses=problems(*AUTHENTICATED), response_class=RoundedJSON)
def standing_tone_rules(
    engine: EngineDep, principal: PrincipalDep, partition: UserPartitionDep
) -> list[CompactToneRule]:
    require(principal, "runtime", "evaluator")
    return [compact_rule(rule) for rule in engine.standing_rules(partition)]


memory_routes = [list_memories, get_memory, get_trace, delete_memory, get_recall, standing_tone_rules]
