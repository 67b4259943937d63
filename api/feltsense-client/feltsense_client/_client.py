"""A small typed client for character runtimes: ``ingest``, ``close_session`` and ``recall`` over HTTP.

Requests and answers are the client's own models (``feltsense_client.models``), not the server's: the client
needs only httpx and pydantic. ``recall`` answers a ``CompactRecall``: what a runtime needs for the turn,
``context.system`` for the system message and ``context.tail`` beside the user's message, with the tone rules in
force and each memory in brief; ``recall(query, detail="full")`` answers the whole ``RecallResult`` (every
write-time trace, the score components, the recall's trace) for debugging and evaluation. Every error the service
reports as RFC 9457 problem details, and every failure to reach it, leaves as one of these exceptions:

    FeltsenseAPIError            any problem the service reported (status, title, detail, errors)
    ├── AuthError                401 / 403: no key, a wrong key, or a key without the role
    ├── NotFoundError            404: e.g. closing a session that has no turns
    ├── ConflictError            409: a turn id already stored (or sent twice) with other content or owner
    ├── GoneError                410: a turn id whose turn was erased; it is never stored again
    ├── ValidationError          422: ``fields`` names each bad field ("turns.0.timestamp")
    └── UnavailableError         503, or the service could not be reached (refused, timed out): try again
                                 after ``retry_after_s``; ``status`` is None when nothing answered

    with FeltsenseClient("http://127.0.0.1:8000", api_key=key) as memory:
        memory.ingest(turns)
        recalled = memory.recall(RecallQuery(character_id="ava", user_id="tester-1", message=message))
        reply = my_model(recalled.context.system, recalled.context.tail, message)

``AsyncFeltsenseClient`` is the same client for asyncio runtimes. Both take an httpx transport, so tests can drive
an app in process or hand in ``httpx.MockTransport``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Literal, Self, TypeVar, overload
from urllib.parse import quote

import httpx
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from feltsense_client.models import (
    CloseAccepted,
    CloseReport,
    CloseResult,
    CompactRecall,
    IngestReport,
    RecallDetail,
    RecallQuery,
    RecallResult,
    Turn,
)

__all__ = [
    "AsyncFeltsenseClient",
    "AuthError",
    "ConflictError",
    "FeltsenseAPIError",
    "FeltsenseClient",
    "GoneError",
    "NotFoundError",
    "UnavailableError",
    "ValidationError",
]

__version__ = "0.1.0"
USER_AGENT = f"feltsense-client/{__version__}"
DEFAULT_RETRY_AFTER_S = 5
"""Used when a 503 or a transport error carries no Retry-After: the service's own default."""


class FeltsenseAPIError(Exception):
    """A problem the service reported, or (for ``UnavailableError``) the service could not be reached."""

    def __init__(
        self, status: int | None, title: str, detail: str, errors: Sequence[Mapping[str, Any]] = ()
    ) -> None:
        super().__init__(f"{status or 'no answer'} {title}: {detail}")
        self.status = status
        self.title = title
        self.detail = detail
        self.errors: tuple[Mapping[str, Any], ...] = tuple(errors)


class AuthError(FeltsenseAPIError):
    """401 or 403: the key is missing, wrong, or lacks the role this call needs."""


class NotFoundError(FeltsenseAPIError):
    """404: the thing does not exist (or is not the caller's to see)."""


class ConflictError(FeltsenseAPIError):
    """409: a turn id the service already holds, sent with other content or for another user; nothing was
    stored. Send new content under a new id."""


class GoneError(FeltsenseAPIError):
    """410: the batch holds a turn id whose turn was erased at the user's request; nothing was stored. Send the
    batch again without it."""


class ValidationError(FeltsenseAPIError):
    """422: a value in the request is wrong; ``fields`` names each one ("turns.0.timestamp", "limit")."""

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(str(e.get("field", "")) for e in self.errors if e.get("field"))


class UnavailableError(FeltsenseAPIError):
    """503, or no answer at all (refused, reset, timed out): the call may succeed after ``retry_after_s``."""

    def __init__(
        self,
        status: int | None,
        title: str,
        detail: str,
        errors: Sequence[Mapping[str, Any]] = (),
        *,
        retry_after_s: int = DEFAULT_RETRY_AFTER_S,
    ) -> None:
        super().__init__(status, title, detail, errors)
        self.retry_after_s = retry_after_s


_STATUS_ERRORS: dict[int, type[FeltsenseAPIError]] = {
    401: AuthError,
    403: AuthError,
    404: NotFoundError,
    409: ConflictError,
    410: GoneError,
    422: ValidationError,
    503: UnavailableError,
}

_Model = TypeVar("_Model", bound=BaseModel)


# -- the HTTP exchange, shared by both clients -----------------------------------------------------------------


def _headers(api_key: str | None) -> dict[str, str]:
    headers = {"user-agent": USER_AGENT, "accept": "application/json, application/problem+json"}
    if api_key is not None:
        if not api_key:
            raise ValueError("api_key is empty: pass None to send no Authorization header")
        headers["authorization"] = f"Bearer {api_key}"
    return headers


def _client_options(base_url: str, api_key: str | None, timeout_s: float) -> dict[str, Any]:
    if timeout_s <= 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s}")
    if not base_url.startswith(("http://", "https://")):
        raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
    return {"base_url": base_url.rstrip("/"), "headers": _headers(api_key), "timeout": httpx.Timeout(timeout_s)}


def _turns_body(turns: Sequence[Turn]) -> dict[str, Any]:
    return {"turns": [turn.model_dump(mode="json") for turn in turns]}


def _close_request(session_id: str, closed_at: datetime | None, wait_s: float | None) -> tuple[str, dict[str, Any]]:
    path = f"/v1/sessions/{quote(session_id, safe='')}/close"
    if wait_s is not None:
        path += f"?wait=true&timeout_s={wait_s:g}"
    return path, ({} if closed_at is None else {"closed_at": closed_at.isoformat()})


def _recall_body(query: RecallQuery) -> dict[str, Any]:
    return query.model_dump(mode="json", exclude_none=True)


def _recall_path(detail: RecallDetail) -> str:
    if detail not in ("compact", "full"):
        raise ValueError(f"detail must be 'compact' or 'full', got {detail!r}")
    return f"/v1/recall?detail={detail}"


def _recalled(response: httpx.Response, detail: RecallDetail) -> CompactRecall | RecallResult:
    return _ok(response, RecallResult) if detail == "full" else _ok(response, CompactRecall)


def _unreachable(exc: httpx.TransportError, request: str) -> UnavailableError:
    kind = "timed out" if isinstance(exc, httpx.TimeoutException) else "could not be reached"
    return UnavailableError(None, "Service unavailable", f"{request}: the service {kind} ({exc!r})")


def _retry_after_s(response: httpx.Response, body: Mapping[str, Any]) -> int:
    # Retry-After may also be an HTTP date; only the delay-seconds form is read, else the service's default.
    for value in (response.headers.get("retry-after"), body.get("retry_after_s")):
        if isinstance(value, int) and value >= 0:
            return value
        if isinstance(value, str) and value.strip().isdigit():
            return int(value)
    return DEFAULT_RETRY_AFTER_S


def _problem(response: httpx.Response) -> FeltsenseAPIError:
    """The exception for a non-2xx answer, read from its problem-details body (or from the status alone)."""
    try:
        parsed = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        parsed = None
    body: Mapping[str, Any] = parsed if isinstance(parsed, dict) else {}
    title = str(body.get("title") or response.reason_phrase or "HTTP error")
    detail = str(body.get("detail") or response.text[:200] or f"HTTP {response.status_code}")
    raw_errors = body.get("errors")
    errors = [e for e in raw_errors if isinstance(e, dict)] if isinstance(raw_errors, list) else []
    status = response.status_code
    error_type = _STATUS_ERRORS.get(status, FeltsenseAPIError)
    if error_type is UnavailableError:
        return UnavailableError(status, title, detail, errors, retry_after_s=_retry_after_s(response, body))
    return error_type(status, title, detail, errors)


def _parse(response: httpx.Response, model: type[_Model]) -> _Model:
    try:
        return model.model_validate_json(response.content)
    except PydanticValidationError as exc:
        # The service answered 2xx with a body this client cannot read: a version mismatch, not a caller error.
        raise FeltsenseAPIError(
            response.status_code, "Unexpected response", f"{response.request.url.path}: not a {model.__name__}: {exc}"
        ) from exc


def _ok(response: httpx.Response, model: type[_Model]) -> _Model:
    if response.is_success:
        return _parse(response, model)
    raise _problem(response)


class _Waited(CloseAccepted):
    report: CloseReport | None = None


def _close_result(response: httpx.Response) -> CloseResult:
    if response.status_code == 202:
        return _parse(response, CloseAccepted)
    if response.status_code == 200 and b'"job_id"' in response.content:  # a queued pass it waited for
        waited = _parse(response, _Waited)
        return waited.report or CloseAccepted(session_id=waited.session_id, job_id=waited.job_id,
                                              queued=waited.queued, status=waited.status)
    return _ok(response, CloseReport)


# -- the clients -------------------------------------------------------------------------------------------------


class FeltsenseClient:
    """The feltsense HTTP API for a character runtime. One client per process; it keeps connections alive.

    ``timeout_s`` bounds each phase of a request (connect, send, wait for the answer). ``transport`` replaces the
    network, e.g. ``httpx.MockTransport`` in tests.
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 10.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._http = httpx.Client(**_client_options(base_url, api_key, timeout_s), transport=transport)

    def ingest(self, turns: Sequence[Turn]) -> IngestReport:
        """Append turns (at most 500 per call); a turn id seen before is counted as a duplicate, not stored."""
        return _ok(self._post("/v1/turns", _turns_body(turns)), IngestReport)

    def close_session(self, session_id: str, closed_at: datetime | None = None, *,
                      wait_s: float | None = None) -> CloseResult:
        """Close a session: the write-time pass runs now (``CloseReport``) or is queued (``CloseAccepted``). With
        ``wait_s`` (at most 30), a queued pass is waited for that long: its ``CloseReport`` once it has run."""
        path, body = _close_request(session_id, closed_at, wait_s)
        return _close_result(self._post(path, body))

    @overload
    def recall(self, query: RecallQuery, *, detail: Literal["compact"] = "compact") -> CompactRecall: ...

    @overload
    def recall(self, query: RecallQuery, *, detail: Literal["full"]) -> RecallResult: ...

    def recall(self, query: RecallQuery, *, detail: RecallDetail = "compact") -> CompactRecall | RecallResult:
        """Recall for one turn of the character.

        By default a ``CompactRecall``, what a runtime needs: ``context.system`` (the stable prefix, then this
        turn's tone rules) goes in the system message and ``context.tail`` (the recalled memories, worded) beside
        the user's message. ``tone_constraints`` and ``standing_rules`` are the rules in force (already worded in
        ``context.system``); ``memories`` are what the tail was assembled from, each with its tier, calibrated
        relevance, score and feeling in brief; ``trace.mode`` says which mode answered (anything but ``hybrid``
        is degraded). ``detail="full"`` answers the whole ``RecallResult`` instead: each memory's write-time trace,
        legs and score components, and the recall's full trace, for debugging and evaluation. Floats come with 4
        decimal places."""
        return _recalled(self._post(_recall_path(detail), _recall_body(query)), detail)

    def _post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        try:
            return self._http.post(path, json=body)
        except httpx.TransportError as exc:
            raise _unreachable(exc, f"POST {path}") from exc

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class AsyncFeltsenseClient:
    """``FeltsenseClient`` for asyncio: the same methods, awaited."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
        max_connections: int = 100,
    ) -> None:
        self._http = httpx.AsyncClient(
            **_client_options(base_url, api_key, timeout_s), transport=transport,
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
        )

    async def ingest(self, turns: Sequence[Turn]) -> IngestReport:
        """Append turns (at most 500 per call); a turn id seen before is counted as a duplicate, not stored."""
        return _ok(await self._post("/v1/turns", _turns_body(turns)), IngestReport)

    async def close_session(self, session_id: str, closed_at: datetime | None = None, *,
                      wait_s: float | None = None) -> CloseResult:
        """Close a session: the write-time pass runs now (``CloseReport``) or is queued (``CloseAccepted``). With
        ``wait_s`` (at most 30), a queued pass is waited for that long: its ``CloseReport`` once it has run."""
        path, body = _close_request(session_id, closed_at, wait_s)
        return _close_result(await self._post(path, body))

    @overload
    async def recall(self, query: RecallQuery, *, detail: Literal["compact"] = "compact") -> CompactRecall: ...

    @overload
    async def recall(self, query: RecallQuery, *, detail: Literal["full"]) -> RecallResult: ...

    async def recall(self, query: RecallQuery, *, detail: RecallDetail = "compact") -> CompactRecall | RecallResult:
        """``FeltsenseClient.recall``, awaited: a ``CompactRecall``, or with ``detail="full"`` a ``RecallResult``."""
        return _recalled(await self._post(_recall_path(detail), _recall_body(query)), detail)

    async def _post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        try:
            return await self._http.post(path, json=body)
        except httpx.TransportError as exc:
            raise _unreachable(exc, f"POST {path}") from exc

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
