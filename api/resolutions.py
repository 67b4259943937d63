"""Resolutions over HTTP: list a user's, and undo one (a creative director's call).

A resolution takes an earlier memory's anxiety or anger out of tone force because a later memory settled it
("the scan came back clear"; ``traces.resolution``). A director who disagrees undoes it and the tone is in force
again; the undo is audited in the ledger. A resolution holds ids, a register, times and labels from a fixed
vocabulary, never what the user said, so a director may list them although they may not read the user's memories.

| route | roles |
|---|---|
| ``GET /v1/resolutions`` | runtime, director, evaluator |
| ``POST /v1/resolutions/{memory_id}/undo`` | director |
"""

from __future__ import annotations

from feltsense_client.models import Resolution
from litestar import get, post
from litestar.params import FromPath, Parameter

from api.boundary import AUTHENTICATED, UserPartitionDep, problems
from api.dependencies import EngineDep, PrincipalDep
from api.security import require
from api.wire import to_wire


@get("/v1/resolutions", sync_to_thread=True,
     summary="A user's resolutions: which memory's tone a later memory settled, when and why",
     responses=problems(*AUTHENTICATED))
def list_resolutions(
    engine: EngineDep, principal: PrincipalDep, partition: UserPartitionDep,
    undone: bool = Parameter(default=True, description="list undone resolutions too"),
) -> list[Resolution]:
    require(principal, "runtime", "director", "evaluator")
    return [to_wire(Resolution, resolution) for resolution in engine.resolutions(partition, include_undone=undone)]


@post("/v1/resolutions/{memory_id:str}/undo", status_code=200, sync_to_thread=True,
      summary="Undo a resolution: the memory's tone (and its episode's) is in force again; audited",
      responses=problems(*AUTHENTICATED, 404))
def undo_resolution(
    memory_id: FromPath[str], engine: EngineDep, principal: PrincipalDep, partition: UserPartitionDep
) -> list[Resolution]:
    require(principal, "director")
    return [to_wire(Resolution, resolution) for resolution in engine.undo_resolution(memory_id, partition,
                                                                                      actor=principal.actor)]


resolution_routes = [list_resolutions, undo_resolution]
