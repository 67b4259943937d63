"""Memory endpoints: list and search one user's memories, read one and its trace, delete one.

Every call names the character and the user; a memory of another user (or organisation) is a 404, never the
memory (seed 000, "Private by user").
"""

from __future__ import annotations

from litestar import delete, get
from litestar.params import Parameter
from pydantic import BaseModel, ConfigDict, Field

from api.auth import Principal
from api.boundary import AUTHENTICATED, IdQuery, problems
from api.security import require
from api.tenancy import scope_partition, scope_query, unscope_memory, unscope_result
from engine.lifecycle import ErasureReceipt
from engine.models import Memory, MemoryState, RecallQuery, RecallResult, Trace
from engine.service import Engine

MAX_PAGE = 200
"""The most memories one page lists (``limit``)."""
MAX_OFFSET = 1_000_000
"""The furthest a listing pages (``offset``): far past any partition's size, and an offset too large for the
store's 64-bit integers is a 422 naming it, not an overflow deep in the store."""


class MemoryView(BaseModel):
    model_config = ConfigDict(extra="forbid")
    memory: Memory
    trace: Trace | None
    state: MemoryState | None = Field(default=None, description="status, pins and strength signals")


class MemoryPage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    items: list[MemoryView]
    offset: int
    limit: int
    next_offset: int | None


@get("/v1/memories", sync_to_thread=True, summary="List one user's memories, or search them with q",
     responses=problems(*AUTHENTICATED))
def list_memories(
    engine: Engine,
    principal: Principal,
    character_id: IdQuery,
    user_id: IdQuery,
    q: str | None = Parameter(default=None, max_length=2000, description="search text (hybrid, then reranked)"),
    offset: int = Parameter(default=0, ge=0, le=MAX_OFFSET, description=f"at most {MAX_OFFSET:,}"),
    limit: int = Parameter(default=50, ge=1, le=MAX_PAGE, description=f"at most {MAX_PAGE}"),
    archived: bool = Parameter(default=False, description="the audit flag: list archived memories too"),
) -> MemoryPage:
    require(principal, "runtime", "evaluator")
    if q:
        result = engine.recall(scope_query(principal.org, RecallQuery(
            character_id=character_id, user_id=user_id, message=q, include_current_session=True,
            limit=min(limit, 40),
        )))
        # Recall only returns what this user may see: their own memories, the canon and the shared level.
        found = {m.memory_id: m.trace for m in result.memories}
        states = engine.states(list(found))
        items = [MemoryView(memory=unscope_memory(principal.org, memory), trace=found[memory.memory_id],
                            state=states[memory.memory_id])
                 for memory in engine.store.get_memories(list(found))]
        return MemoryPage(items=items, offset=0, limit=limit, next_offset=None)
    page = engine.memories(scope_partition(principal.org, character_id, user_id), offset=offset, limit=limit)
    states = engine.states([m.memory_id for m, _ in page])
    shown = ("active", "archived") if archived else ("active",)
    return MemoryPage(
        items=[MemoryView(memory=unscope_memory(principal.org, m), trace=t, state=states[m.memory_id])
               for m, t in page if states[m.memory_id].status in shown],
        offset=offset, limit=limit, next_offset=offset + limit if len(page) == limit else None,
    )


@get("/v1/memories/{memory_id:str}", sync_to_thread=True, summary="One memory with its trace",
     responses=problems(*AUTHENTICATED, 404))
def get_memory(
    memory_id: str, engine: Engine, principal: Principal, character_id: IdQuery, user_id: IdQuery
) -> MemoryView:
    require(principal, "runtime", "evaluator")
    memory, trace = engine.memory(memory_id, scope_partition(principal.org, character_id, user_id))
    return MemoryView(memory=unscope_memory(principal.org, memory), trace=trace)


@get("/v1/memories/{memory_id:str}/trace", sync_to_thread=True, summary="A memory's trace",
     responses=problems(*AUTHENTICATED, 404))
def get_trace(
    memory_id: str, engine: Engine, principal: Principal, character_id: IdQuery, user_id: IdQuery
) -> Trace | None:
    require(principal, "runtime", "evaluator")
    return engine.memory(memory_id, scope_partition(principal.org, character_id, user_id))[1]


@delete("/v1/memories/{memory_id:str}", status_code=200, sync_to_thread=True,
        summary="Erase one memory with its trace, facts, vector and lexical entries; returns a receipt",
        responses=problems(*AUTHENTICATED, 404))
def delete_memory(
    memory_id: str, engine: Engine, principal: Principal, character_id: IdQuery, user_id: IdQuery,
    strict: bool = Parameter(default=False, description="drop names from the audit trail too"),
) -> ErasureReceipt:
    require(principal, "runtime")
    return engine.forget(memory_id, scope_partition(principal.org, character_id, user_id), strict=strict,
                         actor=f"{principal.role}:{principal.key_id}")


@get("/v1/recalls/{recall_id:str}", sync_to_thread=True,
     summary="A past turn's recall as it was returned: what the character saw, with the assembly's trace",
     responses=problems(*AUTHENTICATED, 404))
def get_recall(
    recall_id: str, engine: Engine, principal: Principal, character_id: IdQuery, user_id: IdQuery
) -> RecallResult:
    require(principal, "runtime", "evaluator")
    return unscope_result(principal.org, engine.recall_record(
        recall_id, scope_partition(principal.org, character_id, user_id)))


memory_routes = [list_memories, get_memory, get_trace, delete_memory, get_recall]
