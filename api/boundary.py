"""What the API promises at its boundary: the id parameters it validates and the errors it documents.

Litestar ignores a pydantic ``Field`` inside ``Annotated`` on a handler's query and path parameters, so
``engine.models.Identifier`` there would be neither checked nor documented: parameters use ``IdQuery``/``IdPath``.
Litestar also documents a 400 with its own body for every handler with parameters, while the app answers
validation errors with 422 problem details: every route declares its errors with ``problems``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.spec import Operation, RequestBody
from litestar.params import PathParameter, QueryParameter
from pydantic import BaseModel, ConfigDict, Field

from engine.models import IDENTIFIER_MAX_CHARS, IDENTIFIER_PATTERN

PROBLEM_JSON = "application/problem+json"

_ID = {"min_length": 1, "max_length": IDENTIFIER_MAX_CHARS, "pattern": IDENTIFIER_PATTERN}
IdQuery = Annotated[str, QueryParameter(**_ID)]
OptionalIdQuery = Annotated[str | None, QueryParameter(**_ID)]
IdPath = Annotated[str, PathParameter(**_ID)]


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
