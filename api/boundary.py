"""What the API promises at its boundary: the id parameters it validates and the errors it documents.

Litestar ignores a pydantic ``Field`` inside ``Annotated`` on a handler's query and path parameters, so
``engine.domain.models.Identifier`` there would be neither checked nor documented: parameters use
``IdQuery``/``IdPath``.
Litestar also documents a 400 with its own body for every handler with parameters, while the app answers
validation errors with 422 problem details: every route declares its errors with ``problems``.

The memory and recall endpoints answer with ``RoundedJSON``: every float in the body is rounded to
``FLOAT_DECIMALS`` places once, as the body is written. The engine ranks, logs and stores the exact values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from feltsense_client.models import CompactRecall, RecallDetail, RecallResult
from litestar import Response
from litestar.di import NamedDependency
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.spec import Operation, RequestBody
from litestar.params import PathParameter, QueryParameter
from litestar.serialization import decode_json, default_serializer, encode_json
from litestar.types import Serializer
from pydantic import BaseModel, ConfigDict, Field

from api.compact import compact_recall
from api.dependencies import PrincipalDep
from api.tenancy import scope_partition
from api.wire import to_wire
from engine.domain.models import IDENTIFIER_MAX_CHARS, IDENTIFIER_PATTERN, Partition
from engine.domain.models import RecallResult as EngineRecallResult

PROBLEM_JSON = "application/problem+json"

_ID = {"min_length": 1, "max_length": IDENTIFIER_MAX_CHARS, "pattern": IDENTIFIER_PATTERN}
IdQuery = Annotated[str, QueryParameter(**_ID)]
OptionalIdQuery = Annotated[str | None, QueryParameter(**_ID)]
IdPath = Annotated[str, PathParameter(**_ID)]
CharacterQuery = Annotated[str, QueryParameter(**_ID, description="the character the memory belongs to (e.g. ava)")]
UserQuery = Annotated[str, QueryParameter(
    **_ID, description="the user whose memory it is (e.g. tester-1): another user's memory id answers 404")]


def user_partition(principal: PrincipalDep, character_id: CharacterQuery, user_id: UserQuery) -> Partition:
    """The partition a route about one user's memories names: ``character_id`` and ``user_id`` of the query,
    in the caller's organisation. Registered as the ``partition`` dependency (``UserPartitionDep``)."""
    return scope_partition(principal.org, character_id, user_id)


UserPartitionDep = NamedDependency[Partition]
"""``partition``: one user's memories with one character, from the ``character_id`` and ``user_id`` queries."""


class FieldError(BaseModel):
    field: str = Field(description='which: a dotted path such as "turns.0.timestamp", or a parameter name; empty '
                                   "for the whole body")
    location: Literal["body", "query", "path", "header", "cookie"] = Field(
        default="body", description="where the field was expected")
    message: str


class Problem(BaseModel):
    """RFC 9457 problem details. Some problems carry more members (``errors`` for a 422, ``backend`` and
    ``retry_after_s`` for a 503, ``checks`` for readiness)."""

    model_config = ConfigDict(extra="allow")
    type: str = "about:blank"
    title: str
    status: int
    detail: str = Field(description="what went wrong, for a person")
    errors: list[FieldError] | None = Field(default=None, description="each invalid field, for a 422")


_WHY: dict[int, str] = {
    400: "Malformed request: the body is not JSON, not UTF-8, or nested too deeply",
    401: "No API key, or an unknown or revoked one",
    403: "The key's role may not do this",
    404: "No such resource for this caller (another user's or organisation's is a 404 too)",
    409: "A turn id already stored (or sent twice) with other content or for another character or user",
    410: "A turn id whose turn was erased at the user's request: it is never stored again",
    413: "The body is larger than the service accepts",
    415: "The body is not application/json",
    422: "Invalid request: the problem names each invalid field",
    429: "This organisation already runs as much of this as it may (one tuning replay); retry after Retry-After "
         "seconds",
    502: "A backend rejected the request",
    503: "A backend (or the tuning store) is unavailable; retry after Retry-After seconds",
}

# Every authenticated route: a malformed request, the key, the role, an invalid field, a backend down.
AUTHENTICATED = (400, 401, 403, 422, 502, 503)
WITH_BODY = (*AUTHENTICATED, 413, 415)


def problems(*statuses: int) -> dict[int, ResponseSpec]:
    """The response specs for ``statuses``, each a problem details body."""
    return {status: ResponseSpec(Problem, description=_WHY[status], media_type=PROBLEM_JSON, generate_examples=False)
            for status in sorted(set(statuses))}


@dataclass
class OptionalBody(Operation):
    """An operation whose request body may be left out: Litestar marks every body required."""

    def __post_init__(self) -> None:
        if isinstance(self.request_body, RequestBody):
            self.request_body.required = False


FLOAT_DECIMALS = 4
"""Decimal places of every float the memory and recall endpoints send. Scores, relevances and feelings are read to
two or three places; the other twelve digits of a float64 are noise to a reader (measured on the README's recall:
3,485 bytes before, 3,300 with only the rounding, 1,727 compact)."""


def rounded(value: Any, decimals: int = FLOAT_DECIMALS) -> Any:
    """Decoded JSON with every finite float rounded to ``decimals`` places; everything else as it is."""
    if isinstance(value, float):
        return round(value, decimals) if math.isfinite(value) else value
    if isinstance(value, dict):
        return {key: rounded(item, decimals) for key, item in value.items()}
    if isinstance(value, list):
        return [rounded(item, decimals) for item in value]
    return value


class RoundedJSON(Response[Any]):
    """A response whose JSON body has every float rounded (``rounded``): a handler's ``response_class``.

    It rounds what Litestar would have sent, after the models are encoded, so no model and no field needs to
    know about it, and what the engine computed is never changed."""

    def render(self, content: Any, media_type: str, enc_hook: Serializer = default_serializer) -> bytes:
        body = super().render(content, media_type, enc_hook)
        kind = media_type.split(";", 1)[0].strip().lower()
        if body and (kind == "application/json" or kind.endswith("+json")):
            return encode_json(rounded(decode_json(body)))
        return body


DetailQuery = Annotated[RecallDetail, QueryParameter(
    description="compact (the default): what a character runtime reads (CompactRecall: the context, "
                "the tone rules, each memory in brief, the mode that answered). full: the whole RecallResult, with "
                "each memory's write-time trace, legs and score components and the recall's whole trace",
)]


def recall_answer(result: EngineRecallResult, detail: RecallDetail) -> CompactRecall | RecallResult:
    """What a recall endpoint sends for ``detail``, as the wire models (``api.wire``)."""
    if detail == "full":
        return to_wire(RecallResult, result)
    return compact_recall(result)
