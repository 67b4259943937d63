"""Tuning endpoints for creative directors: read, change (validated, versioned) and see the history."""

from __future__ import annotations

from litestar import get, put
from litestar.exceptions import ServiceUnavailableException
from pydantic import BaseModel, ConfigDict, Field

from api.auth import Principal, scoped, unscoped
from api.security import require
from engine.models import Identifier
from engine.tuning import RetrievalParams, ScoringParams, ToneParams, TuningProfile, WriteParams
from engine.tuning_store import TuningStore, TuningVersion


class TuningUpdate(BaseModel):
    """A new profile for a character; every section left out keeps the defaults."""

    model_config = ConfigDict(extra="forbid")
    retrieval: RetrievalParams = RetrievalParams()
    scoring: ScoringParams = ScoringParams()
    tone: ToneParams = ToneParams()
    write: WriteParams = WriteParams()
    note: str = Field(default="", max_length=2000, description="why: kept in the history")


def _store(tuning: TuningStore | None) -> TuningStore:
    if tuning is None:
        raise ServiceUnavailableException("this service has no tuning store configured")
    return tuning


def _public(org: str, profile: TuningProfile) -> TuningProfile:
    return profile.model_copy(update={"character_id": unscoped(org, profile.character_id)})


@get("/v1/characters/{character_id:str}/tuning", sync_to_thread=True, summary="A character's tuning profile")
def get_tuning(character_id: Identifier, principal: Principal, tuning: TuningStore | None) -> TuningProfile:
    require(principal, "director", "evaluator")
    return _public(principal.org, _store(tuning).profile_for(scoped(principal.org, character_id)))


@put("/v1/characters/{character_id:str}/tuning", sync_to_thread=True,
     summary="Save a new version of a character's tuning profile (the previous one is kept)")
def put_tuning(
    character_id: Identifier, data: TuningUpdate, principal: Principal, tuning: TuningStore | None
) -> TuningProfile:
    require(principal, "director")
    profile = TuningProfile(character_id=scoped(principal.org, character_id), retrieval=data.retrieval,
                            scoring=data.scoring, tone=data.tone, write=data.write)
    saved = _store(tuning).save(profile, author=f"{principal.role}:{principal.key_id}", note=data.note)
    return _public(principal.org, saved)


@get("/v1/characters/{character_id:str}/tuning/history", sync_to_thread=True,
     summary="Every saved version of a character's tuning, newest first, with who saved it and why")
def tuning_history(
    character_id: Identifier, principal: Principal, tuning: TuningStore | None
) -> list[TuningVersion]:
    require(principal, "director", "evaluator")
    return [
        v.model_copy(update={"profile": _public(principal.org, v.profile)})
        for v in _store(tuning).history(scoped(principal.org, character_id))
    ]


tuning_routes = [get_tuning, put_tuning, tuning_history]
