"""Tuning endpoints for creative directors: the shipped defaults and what each constant means (public), read,
check, try (replay a transcript), change (validated, versioned, with a note) and see the history. The tuning page
(``api.tuning_page``) is a client of these and nothing more."""

from __future__ import annotations

import asyncio
import dataclasses
from functools import cache
from typing import Any, Literal, get_args, get_origin

from annotated_types import Ge, Gt, Le, Lt
from litestar import get, post, put
from litestar.exceptions import ServiceUnavailableException, ValidationException
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import JSONBody
from pydantic import BaseModel, ConfigDict, Field

from api.boundary import AUTHENTICATED, PROBLEM_JSON, WITH_BODY, IdPath, Problem, problems
from api.dependencies import PrincipalDep, ReplaysDep, TranscriptDirsDep, TuningDep
from api.security import require
from api.tenancy import scoped, unscoped
from engine import strength_params
from engine.domain.ports import ProfileStore, TuningVersion
from engine.domain.tuning import (
    ConsolidationParams,
    ContextParams,
    RehearsalParams,
    RetrievalParams,
    ScopeParams,
    ScoringParams,
    Shown,
    StrengthParams,
    ToneParams,
    TrustParams,
    TuningProfile,
    WriteParams,
)
from engine.transcripts.compare import ReplayComparison
from engine.transcripts.format import TranscriptInvalid, parse_transcript
from engine.transcripts.model import Transcript

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
    consolidation: ConsolidationParams = ConsolidationParams()
    rehearsal: RehearsalParams = RehearsalParams()
    trust: TrustParams = TrustParams()
    context: ContextParams = ContextParams()


class TuningUpdate(TuningSections):
    """A new profile for a character, with why it changed."""

    # Required by the store, after the caller's role is checked (a key that may not save is told that first), and
    # not by a check of the values, which needs none.
    note: str = Field(default="", max_length=2000,
                      description="why the values change, kept in the history: a save without one is a 422")


class TuningSectionInfo(BaseModel):
    name: str = Field(description='the section\'s key in the profile, such as "scoring"')
    label: str = Field(description="what a creative director calls it")
    help: str


class TunableConstant(BaseModel):
    """One constant of the profile as the tuning page presents it; its value is in the profile, at ``path``."""

    path: str = Field(description='section and name, as in the profile: "scoring.min_half_life_days"')
    label: str = Field(description="plain-language name")
    help: str = Field(description="what it does, for a creative director")
    description: str = Field(description="the engineer's note: the formula, and the measurement behind the default")
    kind: Literal["number", "integer", "choice", "set"] = Field(
        description="set: any of ``choices``, each at most once")
    choices: list[str] = Field(default_factory=list, description="for a choice or a set")
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = Field(default=False, description="the value must be above ``minimum``, not equal")
    exclusive_maximum: bool = False
    unit: str = ""
    calibrated_by: str = Field(default="", description="the evaluation that chooses the value: rerun it, not guess")
    engineering: str = Field(
        default="", description="why this is an engineer's constant rather than a director's; empty for a director's")


class TuningDefaults(BaseModel):
    profile: TuningProfile = Field(description="the profile of a character never tuned")
    sections: list[TuningSectionInfo]
    constants: list[TunableConstant] = Field(description="every constant of every section, in the profile's order")


@cache
def _presentation() -> tuple[tuple[TuningSectionInfo, ...], tuple[TunableConstant, ...]]:
    """The sections and constants with their labels and help, read from ``engine.domain.tuning``'s field metadata (a
    constant of a new type, or without a label, fails here: every constant must be presentable)."""
    sections, constants = [], []
    for name, holder in TuningProfile.model_fields.items():
        section = holder.annotation
        if not (isinstance(section, type) and issubclass(section, BaseModel)):
            continue  # character_id and version: not tunable
        shown = _shown(name, holder.metadata)
        sections.append(TuningSectionInfo(name=name, label=shown.label, help=shown.help))
        for field_name, field in section.model_fields.items():
            path = f"{name}.{field_name}"
            constants.append(TunableConstant(path=path, description=field.description or "",
                                             **_kind(path, field.annotation), **_bounds(field.metadata),
                                             **dataclasses.asdict(_shown(path, field.metadata))))
    return tuple(sections), tuple(constants)


def _shown(path: str, metadata: list[Any]) -> Shown:
    found = [rule for rule in metadata if isinstance(rule, Shown)]
    if not found:
        raise TypeError(f"{path} has no label: declare it with tunable() (a section: Annotated[..., Shown(...)]) "
                        "in engine/domain/tuning/")
    return found[0]


def _kind(path: str, annotation: object) -> dict[str, Any]:
    if annotation in (int, float):
        return {"kind": "integer" if annotation is int else "number"}
    if get_origin(annotation) is Literal:
        return {"kind": "choice", "choices": list(get_args(annotation))}
    if get_origin(annotation) is tuple and get_origin(get_args(annotation)[0]) is Literal:
        return {"kind": "set", "choices": list(get_args(get_args(annotation)[0]))}
    raise TypeError(f"{path} is a {annotation}: say how the tuning page edits it")


def _bounds(metadata: list[Any]) -> dict[str, Any]:
    bounds: dict[str, Any] = {}
    for rule in metadata:
        match rule:
            case Ge(ge=value):
                bounds["minimum"] = value
            case Gt(gt=value):
                bounds |= {"minimum": value, "exclusive_minimum": True}
            case Le(le=value):
                bounds["maximum"] = value
            case Lt(lt=value):
                bounds |= {"maximum": value, "exclusive_maximum": True}
    return bounds


NO_CHANGE = ResponseSpec(Problem, media_type=PROBLEM_JSON, generate_examples=False,
                         description="No change: the values equal the version in force (the detail names it)")


class ReplayRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    profile: TuningSections = Field(description="the proposed profile, compared with the character's saved one")
    transcript: str = Field(min_length=1, max_length=MAX_TRANSCRIPT_CHARS, description="a format 1 transcript")


class TranscriptFile(BaseModel):
    name: str
    text: str


def _store(tuning: ProfileStore | None) -> ProfileStore:
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
    profile = TuningProfile(character_id=character_id,
                            **{name: getattr(data, name) for name in TuningSections.model_fields})
    try:
        strength_params(profile)
    except ValueError as exc:
        name = str(exc).split(" ", 1)[0]
        field = f"{field_prefix}strength.{name}"
        raise ValidationException(f"invalid value for {field}", extra=[{"key": field, "message": str(exc)}]) from exc
    return profile


@get("/v1/tuning/defaults", sync_to_thread=False,
     summary="The shipped default profile, and each constant's label, help, unit and bounds (no key: defaults are "
             "not secret)")
def tuning_defaults(tuning: TuningDep) -> TuningDefaults:
    sections, constants = _presentation()
    return TuningDefaults(profile=tuning.defaults if tuning is not None else TuningProfile(), sections=list(sections),
                          constants=list(constants))


@get("/v1/characters/{character_id:str}/tuning", sync_to_thread=True, summary="A character's tuning profile",
     responses=problems(*AUTHENTICATED))
def get_tuning(character_id: IdPath, principal: PrincipalDep, tuning: TuningDep) -> TuningProfile:
    require(principal, "director", "evaluator")
    return _public(principal.org, _store(tuning).profile_for(scoped(principal.org, character_id)))


@put("/v1/characters/{character_id:str}/tuning", sync_to_thread=True,
     summary="Save a new version of a character's tuning profile, with a note saying why (the previous one is kept; "
             "the values in force again are a 409)",
     responses=dict(sorted({**problems(*WITH_BODY), 409: NO_CHANGE}.items())))
def put_tuning(
    character_id: IdPath, data: JSONBody[TuningUpdate], principal: PrincipalDep, tuning: TuningDep
) -> TuningProfile:
    require(principal, "director")
    profile = _profile(scoped(principal.org, character_id), data)
    saved = _store(tuning).save(profile, author=principal.actor, note=data.note)
    return _public(principal.org, saved)


@post("/v1/characters/{character_id:str}/tuning/validate", status_code=200, sync_to_thread=True,
      summary="Check a profile without saving it: 200 with the profile, or the 422 a PUT would answer",
      responses=problems(*WITH_BODY))
def validate_tuning(
    character_id: IdPath, data: JSONBody[TuningUpdate], principal: PrincipalDep, tuning: TuningDep
) -> TuningProfile:
    require(principal, "director", "admin")
    current = _store(tuning).profile_for(scoped(principal.org, character_id))
    return _profile(character_id, data).model_copy(update={"version": current.version})


@post("/v1/characters/{character_id:str}/tuning/replay", status_code=200,
      summary="Replay a transcript under the saved and the proposed profile, in fresh temporary memories, and "
              "compare each probe (one replay at a time per organisation)",
      responses=problems(*WITH_BODY, 429))
async def replay_tuning(
    character_id: IdPath, data: JSONBody[ReplayRequest], principal: PrincipalDep, tuning: TuningDep,
    replays: ReplaysDep,
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
    character_id: IdPath, principal: PrincipalDep, tuning: TuningDep
) -> list[TuningVersion]:
    require(principal, "director", "evaluator")
    return [
        v.model_copy(update={"profile": _public(principal.org, v.profile)})
        for v in _store(tuning).history(scoped(principal.org, character_id))
    ]


@get("/v1/transcripts", sync_to_thread=True,
     summary="The transcripts in the service's configured directories, to replay from the tuning page",
     responses=problems(401, 403))
def list_transcripts(principal: PrincipalDep, transcript_dirs: TranscriptDirsDep) -> list[TranscriptFile]:
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


tuning_routes = [
    tuning_defaults, get_tuning, put_tuning, validate_tuning, replay_tuning, tuning_history, list_transcripts,
]
