"""The MCP server (the ``mcp`` SDK's FastMCP): feltsense's runtime calls as tools an agent finds by itself.

Every tool and resource is a call of the HTTP API, made in process (``httpx.ASGITransport`` over the app), with
the caller's own API key: a key sees over MCP exactly what it sees over HTTP, with the same roles, tenancy, 404s
for another user's ids and problem details for bad input (returned as the tool's error, JSON in its text). No MCP
path reaches the engine any other way.

Transports:

- **streamable HTTP**, mounted beside the API at ``/mcp`` (``create_app(..., mcp=True)``, which ``feltsense serve``
  does). Stateless and JSON-answering, so any API process behind a load balancer answers any request; each request
  carries ``Authorization: Bearer <key>`` like every HTTP call, and one without a valid key is a 401 before MCP sees it.
- **stdio** (``feltsense mcp``): the app is built in this process over the settings' data directory, and the key
  comes from ``FELTSENSE_API_KEY``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any, Literal
from urllib.parse import quote

import anyio.to_thread
import httpx
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.exceptions import ResourceError, ToolError
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import BaseModel, ConfigDict, Field
from starlette.types import ASGIApp, Receive, Scope, Send

from api.auth import KeyStore

INSTRUCTIONS = (
    "feltsense is the memory of a companion character: it remembers what a user told the character and how it "
    "felt. Each turn: call recall with the user's message (and the last lines of the conversation as window) "
    "before the character answers, and put its context.system into the character's system message; it carries "
    "the tone rules (for example, not to ask about a pet that died). Store each exchange with remember_turns, "
    "and call close_session when the conversation ends, so its feelings and facts are written. list_memories, "
    "forget_memory and erase_user serve a user who asks what is remembered or wants it gone."
)
ID = Field(min_length=1, max_length=200)
"""An id as the HTTP API takes it (``Identifier``): 1 to 200 characters."""

Caller = Callable[..., Awaitable[httpx.Response]]


class TurnIn(BaseModel):
    """One line of the conversation, as POST /v1/turns takes it."""

    model_config = ConfigDict(extra="forbid")
    turn_id: Annotated[str, Field(min_length=1, max_length=200,
                                  description="the runtime's own id: sending it again stores nothing twice")]
    session_id: Annotated[str, Field(min_length=1, max_length=200, description="the conversation it belongs to")]
    character_id: Annotated[str, ID]
    user_id: Annotated[str, ID]
    role: Literal["user", "character"] = Field(description="who said it")
    text: str = Field(min_length=1, max_length=20_000)
    timestamp: str = Field(description="when it was said: ISO-8601 with a time zone, e.g. 2025-03-01T18:00:00Z")


class WindowLine(BaseModel):
    """A line of the conversation before the message recall is asked about."""

    model_config = ConfigDict(extra="forbid")
    role: Literal["user", "character"]
    text: str = Field(min_length=1, max_length=20_000)


class Problem(Exception):
    """The API's answer to a call it refused: its status and problem details, as the tool's error text."""

    def __init__(self, status: int, body: Any) -> None:
        self.status = status
        self.body = body
        super().__init__(json.dumps({"status": status, **(body if isinstance(body, dict) else {"detail": body})}))


def _path(*parts: str) -> str:
    """Path segments quoted whole: an id is one segment, whatever slashes or dots it holds."""
    return "/".join(quote(part, safe="") for part in parts)


def _token(ctx: Context[Any, Any, Any], stdio_key: str | None) -> str | None:
    """The caller's key: the HTTP request's bearer token, or (over stdio) the key the process was started with."""
    request = ctx.request_context.request
    if request is not None:
        header = str(request.headers.get("authorization", ""))
        scheme, _, token = header.partition(" ")
        return token if scheme.lower() == "bearer" and token else None
    return stdio_key


def build_mcp(call: Caller, *, stdio_key: str | None = None) -> FastMCP[Any]:
    """The server over ``call(method, path, token, json=?, params=?)``, a request to the HTTP API."""
    server: FastMCP[Any] = FastMCP(
        "feltsense", instructions=INSTRUCTIONS, stateless_http=True, json_response=True, streamable_http_path="/",
        # The keys are bearer tokens, never cookies, so a rebound DNS name gains nothing; the API hosts' names
        # are the operator's, unknown here.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )

    async def api(ctx: Context[Any, Any, Any], method: str, path: str, *, error: type[Exception] = ToolError,
                  **kwargs: Any) -> Any:
        response = await call(method, path, _token(ctx, stdio_key), **kwargs)
        try:
            body = response.json()
        except ValueError:
            body = response.text
        if response.status_code >= 400:
            raise error(str(Problem(response.status_code, body)))
        return body

    @server.tool(description=(
        "Recall for one turn, before the character answers: returns context.system (put it in the character's "
        "system message: facts, pins and the tone rules in force) and context.tail, the tone rules and the "
        "recalled memories, best first. trace.mode says which mode answered: anything but hybrid is degraded."))
    async def recall(
        ctx: Context[Any, Any, Any],
        character_id: Annotated[str, ID], user_id: Annotated[str, ID],
        message: Annotated[str, Field(min_length=1, max_length=20_000, description="the user's message this turn")],
        session_id: Annotated[str | None, Field(max_length=200, description=(
            "the current conversation: its own memories are left out (the character has them in its window)"))]
        = None,
        window: Annotated[list[WindowLine] | None, Field(max_length=50, description=(
            "the last lines of the conversation before the message, oldest first"))] = None,
        at: Annotated[str | None, Field(description="the turn's time, ISO-8601 with a time zone; now if left out")]
        = None,
        limit: Annotated[int | None, Field(ge=1, le=20, description="how many memories at most")] = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"character_id": character_id, "user_id": user_id, "message": message}
        extra = {"session_id": session_id, "at": at, "limit": limit,
                 "window": None if window is None else [line.model_dump() for line in window]}
        body.update({key: value for key, value in extra.items() if value is not None})
        found: dict[str, Any] = await api(ctx, "POST", "/v1/recall", json=body)
        return found

    @server.tool(description=(
        "Store conversation turns (the user's and the character's lines), idempotent by turn_id. Returns how many "
        "were stored, how many were already there and how many memories the user's lines made."))
    async def remember_turns(
        ctx: Context[Any, Any, Any],
        turns: Annotated[list[TurnIn], Field(min_length=1, max_length=500)],
    ) -> dict[str, Any]:
        stored: dict[str, Any] = await api(ctx, "POST", "/v1/turns",
                                           json={"turns": [turn.model_dump() for turn in turns]})
        return stored

    @server.tool(description=(
        "Close a conversation: runs the write-time pass that records how each memory felt (register, valence, "
        "intensity, anchors) and the facts it states. Call it once the conversation has ended."))
    async def close_session(
        ctx: Context[Any, Any, Any],
        session_id: Annotated[str, ID],
        closed_at: Annotated[str | None, Field(description="when it ended, ISO-8601 with a time zone; now if left out")]
        = None,
    ) -> dict[str, Any]:
        body = {"closed_at": closed_at} if closed_at else None
        # Where closes are queued (the service), wait for the pass, up to 30 s; else the close runs it anyway.
        closed: dict[str, Any] = await api(ctx, "POST", f"/v1/sessions/{_path(session_id)}/close", json=body,
                                           params={"wait": "true", "timeout_s": "30"})
        return closed

    @server.tool(description=(
        "List one user's memories with one character, or search them with query (best match first; faded and "
        "archived ones too, flagged). Each item has the memory's id, text, feeling and state: what a user asking "
        "'what do you remember about me?' is shown, and what forget_memory takes."))
    async def list_memories(
        ctx: Context[Any, Any, Any],
        character_id: Annotated[str, ID], user_id: Annotated[str, ID],
        query: Annotated[str | None, Field(max_length=2000, description="search text; a listing if left out")]
        = None,
        offset: Annotated[int, Field(ge=0, le=1_000_000, description="pages the listing; not with query")] = 0,
        limit: Annotated[int, Field(ge=1, le=200)] = 50,
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"character_id": character_id, "user_id": user_id, "offset": offset,
                                  "limit": limit}
        if query:
            params["q"] = query
        page: dict[str, Any] = await api(ctx, "GET", "/v1/memories", params=params)
        return page

    @server.tool(description=(
        "Erase one memory for good, with its trace, the facts it stated, its vector and its words; returns a "
        "receipt that counts each. For a user who asks the character to forget one thing."))
    async def forget_memory(
        ctx: Context[Any, Any, Any],
        memory_id: Annotated[str, Field(min_length=1, max_length=300)],
        character_id: Annotated[str, ID], user_id: Annotated[str, ID],
    ) -> dict[str, Any]:
        receipt: dict[str, Any] = await api(ctx, "DELETE", f"/v1/memories/{_path(memory_id)}",
                                            params={"character_id": character_id, "user_id": user_id})
        return receipt

    @server.tool(description=(
        "Erase everything a user said to one character: memories, traces, facts, turns and the recall log; "
        "final, with a receipt. Only for a user's own erasure request."))
    async def erase_user(
        ctx: Context[Any, Any, Any], character_id: Annotated[str, ID], user_id: Annotated[str, ID],
    ) -> dict[str, Any]:
        receipt: dict[str, Any] = await api(ctx, "DELETE", f"/v1/users/{_path(user_id)}",
                                            params={"character_id": character_id})
        return receipt

    @server.resource("feltsense://characters/{character_id}/users/{user_id}/facts", mime_type="application/json",
                     description="A user's current facts with one character (name, pets, partner, diet ...), "
                                 "each with its status and strength")
    async def facts(character_id: str, user_id: str) -> str:
        found = await api(server.get_context(), "GET", "/v1/facts", error=ResourceError,
                          params={"character_id": character_id, "user_id": user_id, "scope": "user"})
        return json.dumps(found)

    @server.resource("feltsense://characters/{character_id}/users/{user_id}/tone-rules",
                     mime_type="application/json",
                     description="The standing tone rules in force for a user with one character now: what the "
                                 "character must be careful about whatever the turn is about")
    async def tone_rules(character_id: str, user_id: str) -> str:
        found = await api(server.get_context(), "GET", "/v1/tone-rules", error=ResourceError,
                          params={"character_id": character_id, "user_id": user_id})
        return json.dumps(found)

    return server


def in_process_caller(app: Callable[..., Awaitable[None]]) -> tuple[Caller, Callable[[], Awaitable[None]]]:
    """Calls of ``app`` in this process, and how to close the client."""
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://feltsense.internal",
                               timeout=60.0)

    async def call(method: str, path: str, token: str | None, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return await client.request(method, path, headers=headers, **kwargs)

    return call, client.aclose


class BearerGate:
    """The streamable HTTP app behind the API's key check: a request without a known key is a 401 problem with
    ``WWW-Authenticate: Bearer``, as on every HTTP route, before MCP parses anything."""

    def __init__(self, app: ASGIApp, keys: KeyStore) -> None:
        self._app = app
        self._keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        scheme, _, token = headers.get("authorization", "").partition(" ")
        why = None
        if scheme.lower() != "bearer" or not token:
            why = "send an API key as 'Authorization: Bearer <key>'"
        else:
            found = await anyio.to_thread.run_sync(self._keys.authenticate, token)
            if found is None:
                why = "unknown or revoked API key"
            elif found.role == "operator":  # as on HTTP: an operator crosses organisations, so it reaches no tool
                why = "an operator key may only run the sweep (POST /v1/maintenance/sweep)"
        if why is None:
            await self._app(scope, receive, send)
            return
        status = 403 if why.startswith("an operator") else 401
        body = json.dumps({"type": "about:blank", "title": "Unauthorized" if status == 401 else "Forbidden",
                           "status": status, "detail": why}).encode()
        extra = [(b"www-authenticate", b"Bearer")] if status == 401 else []
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/problem+json"),
                                (b"content-length", str(len(body)).encode()), *extra]})
        await send({"type": "http.response.body", "body": body})


@contextlib.asynccontextmanager
async def running(server: FastMCP[Any]) -> AsyncIterator[None]:
    """The streamable HTTP transport's session manager, for the life of the app that mounts it."""
    async with server.session_manager.run():
        yield
