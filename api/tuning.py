"""Tuning endpoints for creative directors: read, check, try (replay a transcript), change (validated, versioned)
and see the history. The tuning page (``api.tuning_page``) is a client of these and nothing more."""

from __future__ import annotations

import asyncio
from pathlib import Path

from litestar import get, post, put
from litestar.exceptions import ServiceUnavailableException, ValidationException
from pydantic import BaseModel, ConfigDict, Field

from api.auth import Principal, scoped, unscoped
from api.boundary import AUTHENTICATED, WITH_BODY, IdPath, problems
from api.security import require
from engine.recall import strength_params
from engine.replay import ReplayComparison, Transcript, TranscriptInvalid, parse_transcript
from engine.replay_runner import ReplayRunner
from engine.tuning import (
    ContextParams,
    RetrievalParams,
    ScopeParams,
    ScoringParams,
    StrengthParams,
    ToneParams,
    TuningProfile,
    WriteParams,
)
from engine.tuning_store import TuningStore, TuningVersion

MAX_TRANSCRIPT_CHARS = 500_000
MAX_LISTED_TRANSCRIPT_BYTES = 256 * 1024
TRANSCRIPT_SUFFIXES = (".yaml", ".yml")
class TuningSections(BaseModel):
    """A character's tunable sections; every section left out keeps the defaults."""

    model_config = ConfigDict(extra="forbid")
    retrieval: RetrievalParams = RetrievalParams()
    scoring: ScoringParams = ScoringParams()
    tone: ToneParams = ToneParams()
    write: WriteParams = WriteParams()
    strength: StrengthParams = StrengthParams()
    scopes: ScopeParams = ScopeParams()
    context: ContextParams = ContextParams()


class TuningUpdate(TuningSections):
    """A new profile for a character, with why it changed."""

    note: str = Field(default="", max_length=2000, description="why: kept in the history")


class ReplayRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    profile: TuningSections = Field(description="the proposed profile, compared with the character's saved one")
    transcript: str = Field(min_length=1, max_length=MAX_TRANSCRIPT_CHARS, description="a format 1 transcript")


class TranscriptFile(BaseModel):
    name: str
    text: str


def _store(tuning: TuningStore | None) -> TuningStore:
    if tuning is None:
        raise ServiceUnavailableException("this service has no tuning store configured")
    return tuning


def _public(org: str, profile: TuningProfile) -> TuningProfile:
    return profile.model_copy(update={"character_id": unscoped(org, profile.character_id)})


def _profile(character_id: str, data: TuningSections, *, field_prefix: str = "") -> TuningProfile:
    """The profile ``data`` describes, refused (422) when recall would refuse it.

    The scoring kernels check a little more than the profile's fields (``fast_weight`` must stay below 1 so
    decay keeps a tail); such a profile must fail here, not at the character's next recall.
    """
    profile = TuningProfile(character_id=character_id, retrieval=data.retrieval, scoring=data.scoring, tone=data.tone,
                            write=data.write, strength=data.strength, scopes=data.scopes, context=data.context)
    try:
        strength_params(profile)
    except ValueError as exc:
        name = str(exc).split(" ", 1)[0]
        field = f"{field_prefix}strength.{name}"
        raise ValidationException(f"invalid value for {field}", extra=[{"key": field, "message": str(exc)}]) from exc
    return profile


@get("/v1/characters/{character_id:str}/tuning", sync_to_thread=True, summary="A character's tuning profile",
     responses=problems(*AUTHENTICATED))
def get_tuning(character_id: IdPath, principal: Principal, tuning: TuningStore | None) -> TuningProfile:
    require(principal, "director", "evaluator")
    return _public(principal.org, _store(tuning).profile_for(scoped(principal.org, character_id)))


@put("/v1/characters/{character_id:str}/tuning", sync_to_thread=True,
     summary="Save a new version of a character's tuning profile (the previous one is kept)",
     responses=problems(*WITH_BODY))
def put_tuning(
    character_id: IdPath, data: TuningUpdate, principal: Principal, tuning: TuningStore | None
) -> TuningProfile:
    require(principal, "director")
    profile = _profile(scoped(principal.org, character_id), data)
    saved = _store(tuning).save(profile, author=f"{principal.role}:{principal.key_id}", note=data.note)
    return _public(principal.org, saved)


@post("/v1/characters/{character_id:str}/tuning/validate", status_code=200, sync_to_thread=True,
      summary="Check a profile without saving it: 200 with the profile, or the 422 a PUT would answer",
      responses=problems(*WITH_BODY))
def validate_tuning(
    character_id: IdPath, data: TuningUpdate, principal: Principal, tuning: TuningStore | None
) -> TuningProfile:
    require(principal, "director", "admin")
    current = _store(tuning).profile_for(scoped(principal.org, character_id))
    return _profile(character_id, data).model_copy(update={"version": current.version})


@post("/v1/characters/{character_id:str}/tuning/replay", status_code=200,
      summary="Replay a transcript under the saved and the proposed profile, in fresh temporary memories, and "
              "compare each probe (one replay at a time per organisation)",
      responses=problems(*WITH_BODY, 429))
async def replay_tuning(
    character_id: IdPath, data: ReplayRequest, principal: Principal, tuning: TuningStore | None,
    replays: ReplayRunner,
) -> ReplayComparison:
    require(principal, "director", "admin")
    current = _store(tuning).profile_for(scoped(principal.org, character_id))
    proposed = _profile(current.character_id, data.profile, field_prefix="profile.")
    # Admitted before the transcript is parsed: a refused replay costs the service no parsing.
    with replays.admit(principal.org) as replay:
        transcript = await asyncio.to_thread(_transcript, data.transcript)
        return await replay.compare(transcript, current, proposed)


def _transcript(text: str) -> Transcript:
    try:
        return parse_transcript(text, file="transcript")
    except TranscriptInvalid as exc:
        errors = [{"key": f"transcript.{issue.field}" if issue.field else "transcript", "message": str(issue)}
                  for issue in exc.issues]
        raise ValidationException("invalid value for transcript", extra=errors) from exc


@get("/v1/characters/{character_id:str}/tuning/history", sync_to_thread=True,
     summary="Every saved version of a character's tuning, newest first, with who saved it and why",
     responses=problems(*AUTHENTICATED))
def tuning_history(
    character_id: IdPath, principal: Principal, tuning: TuningStore | None
) -> list[TuningVersion]:
    require(principal, "director", "evaluator")
    return [
        v.model_copy(update={"profile": _public(principal.org, v.profile)})
        for v in _store(tuning).history(scoped(principal.org, character_id))
    ]


def default_transcript_dirs() -> tuple[Path, ...]:
    """The checkout's test transcripts and the shared examples beside it; missing ones are skipped."""
    root = Path(__file__).resolve().parents[1]
    return root / "tests" / "transcripts", root.parent / "shared" / "transcripts" / "examples"


@get("/v1/transcripts", sync_to_thread=True,
     summary="The transcripts in the service's configured directories, to replay from the tuning page",
     responses=problems(401, 403))
def list_transcripts(principal: Principal, transcript_dirs: tuple[Path, ...]) -> list[TranscriptFile]:
    require(principal, "director", "admin", "evaluator")
    found = []
    for directory in transcript_dirs:
        if not directory.is_dir():
            continue
        for file in sorted(directory.iterdir()):
            if file.suffix in TRANSCRIPT_SUFFIXES and file.is_file() and \
                    file.stat().st_size <= MAX_LISTED_TRANSCRIPT_BYTES:
                text = file.read_text("utf-8", errors="replace")
                found.append(TranscriptFile(name=f"{directory.name}/{file.name}", text=text))
    return found


tuning_routes = [get_tuning, put_tuning, validate_tuning, replay_tuning, tuning_history, list_transcripts]
