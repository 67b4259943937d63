"""The MCP server, driven by the ``mcp`` SDK's own client: over streamable HTTP against a real ``feltsense serve``
(mounted at /mcp), and over stdio against a real ``feltsense mcp`` process. A key sees over MCP what it sees over
HTTP and never more: no key is a 401, another organisation's memory id is the API's 404, a role's limits hold,
and bad input comes back as the API's problem details."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextResourceContents

from tests.servers.feltsense import REPO, FeltsenseService

pytestmark = [pytest.mark.mcp, pytest.mark.slow]

TOOLS = {"recall", "remember_turns", "close_session", "list_memories", "forget_memory", "erase_user"}
LUNA = ("My dog Luna died last week.", "Luna and I walked in the park every single morning.")
Session = Callable[[ClientSession], Awaitable[Any]]


def create_key(data_dir: Path, org: str, role: str) -> str:
    done = subprocess.run([sys.executable, "-m", "api.cli", "keys", "create", "--org", org, "--role", role,
                           "--data-dir", str(data_dir)], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def over_http(url: str, key: str | None, body: Session) -> Any:
    async def run() -> Any:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        async with httpx.AsyncClient(headers=headers, timeout=60) as client, \
                streamable_http_client(f"{url}/mcp/", http_client=client) as (read, write, _), \
                ClientSession(read, write) as session:
            await session.initialize()
            return await body(session)

    return asyncio.run(run())


def structured(result: CallToolResult) -> Any:
    assert not result.isError, result.content
    return result.structuredContent


def problem(result: CallToolResult) -> dict[str, Any]:
    """The API's problem details a refused tool call carries in its text."""
    assert result.isError, result.structuredContent
    text = result.content[0].text  # type: ignore[union-attr]
    return dict(json.loads(text[text.index("{"):]))


def turns(user: str, session: str) -> list[dict[str, Any]]:
    return [{"turn_id": f"{session}-{i}", "session_id": session, "character_id": "ava", "user_id": user,
             "role": "user", "text": text, "timestamp": f"2025-03-02T18:0{i}:00Z"} for i, text in enumerate(LUNA)]


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FeltsenseService]:
    running = FeltsenseService(tmp_path_factory.mktemp("mcp") / "data")
    running.start()
    yield running
    running.stop()


def test_a_character_turn_over_streamable_http(service: FeltsenseService) -> None:
    key = create_key(service.data_dir, "acme", "runtime")

    async def turn(session: ClientSession) -> dict[str, Any]:
        listed = await session.list_tools()
        described = {tool.name: tool for tool in listed.tools}
        assert set(described) == TOOLS
        assert all(tool.description and tool.inputSchema.get("properties") for tool in described.values())
        stored = structured(await session.call_tool("remember_turns", {"turns": turns("tester-1", "s1")}))
        closed = structured(await session.call_tool("close_session",
                                                    {"session_id": "s1", "closed_at": "2025-03-02T19:00:00Z"}))
        recalled = structured(await session.call_tool("recall", {
            "character_id": "ava", "user_id": "tester-1", "message": "I went for a walk in the park",
            "at": "2025-03-11T09:00:00Z"}))
        listing = structured(await session.call_tool("list_memories",
                                                     {"character_id": "ava", "user_id": "tester-1"}))
        facts = await session.read_resource("feltsense://characters/ava/users/tester-1/facts")
        tone = await session.read_resource("feltsense://characters/ava/users/tester-1/tone-rules")
        return {"stored": stored, "closed": closed, "recalled": recalled, "listing": listing,
                "facts": json.loads(_text(facts.contents)), "tone": json.loads(_text(tone.contents))}

    got = over_http(service.url, key, turn)
    assert got["stored"]["stored"] == 2
    assert got["closed"]["status"] == "complete", got["closed"]
    recalled = got["recalled"]
    assert recalled["trace"]["mode"] == "hybrid"
    assert any("Luna" in m["text"] for m in recalled["memories"])
    assert "grieving" in recalled["context"]["system"]
    assert {item["memory"]["text"] for item in got["listing"]["items"]} >= set(LUNA)
    assert any("Luna" in fact["fact"]["text"] for fact in got["facts"])
    assert [rule["register"] for rule in got["tone"]] == ["grief"]  # standing: nothing was recalled for it
    # The same key over HTTP sees the same memories: MCP is a way in, not a second truth.
    over = httpx.get(f"{service.url}/v1/memories", headers={"Authorization": f"Bearer {key}"},
                     params={"character_id": "ava", "user_id": "tester-1"}).json()
    assert over["items"] == got["listing"]["items"]


def _text(contents: list[Any]) -> str:
    [content] = contents
    assert isinstance(content, TextResourceContents)
    return content.text


def test_without_a_key_mcp_is_a_401_and_the_sdk_client_cannot_start(service: FeltsenseService) -> None:
    for headers in ({}, {"Authorization": "Bearer fs_0000000000000000_notakey"}):
        answer = httpx.post(f"{service.url}/mcp/", headers={"Accept": "application/json", **headers},
                            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"] == "Bearer"
        assert answer.headers["content-type"] == "application/problem+json"
        assert answer.json()["detail"]
    with pytest.raises(BaseExceptionGroup) as refused:  # the SDK's task group's, around httpx's 401
        over_http(service.url, None, lambda session: session.list_tools())
    assert "401" in repr(refused.value.exceptions)


def test_another_organisations_ids_are_the_apis_404_and_roles_hold(service: FeltsenseService) -> None:
    owner = create_key(service.data_dir, "acme", "runtime")
    stranger = create_key(service.data_dir, "globex", "runtime")
    evaluator = create_key(service.data_dir, "acme", "evaluator")
    over_http(service.url, owner, lambda s: s.call_tool("remember_turns", {"turns": turns("tester-2", "s2")}))
    mine = over_http(service.url, owner, lambda s: s.call_tool(
        "list_memories", {"character_id": "ava", "user_id": "tester-2"}))
    memory_id = structured(mine)["items"][0]["memory"]["memory_id"]

    theirs = over_http(service.url, stranger, lambda s: s.call_tool(
        "list_memories", {"character_id": "ava", "user_id": "tester-2"}))
    assert structured(theirs)["items"] == []
    forget = over_http(service.url, stranger, lambda s: s.call_tool(
        "forget_memory", {"memory_id": memory_id, "character_id": "ava", "user_id": "tester-2"}))
    assert problem(forget)["status"] == 404
    # An id is one path segment, whatever it holds: no way around to another route.
    sneaky = over_http(service.url, stranger, lambda s: s.call_tool(
        "forget_memory", {"memory_id": "../../users/tester-2", "character_id": "ava", "user_id": "tester-2"}))
    assert problem(sneaky)["status"] == 404
    erase = over_http(service.url, evaluator, lambda s: s.call_tool(
        "erase_user", {"character_id": "ava", "user_id": "tester-2"}))
    assert problem(erase)["status"] == 403
    still = over_http(service.url, owner, lambda s: s.call_tool(
        "list_memories", {"character_id": "ava", "user_id": "tester-2"}))
    assert [item["memory"]["memory_id"] for item in structured(still)["items"]][:1] == [memory_id]


def test_bad_input_gets_the_apis_problem_details(service: FeltsenseService) -> None:
    key = create_key(service.data_dir, "acme", "runtime")
    bad = [{**turns("tester-3", "s3")[0], "timestamp": "yesterday"}]
    refused = over_http(service.url, key, lambda s: s.call_tool("remember_turns", {"turns": bad}))
    details = problem(refused)
    assert details["status"] == 422
    assert [error["field"] for error in details["errors"]] == ["turns.0.timestamp"]
    unknown = over_http(service.url, key, lambda s: s.call_tool("close_session", {"session_id": "no-such"}))
    assert problem(unknown)["status"] == 404


def test_a_character_turn_over_stdio(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    key = create_key(data_dir, "acme", "runtime")
    parameters = StdioServerParameters(
        command=sys.executable, args=["-m", "api.cli", "mcp", "--data-dir", str(data_dir)], cwd=str(REPO),
        env={**os.environ, "FELTSENSE_API_KEY": key, "FELTSENSE_TRANSCRIPT_DIRS": ""})

    async def run() -> tuple[Any, Any, Any]:
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            stored = structured(await session.call_tool("remember_turns", {"turns": turns("tester-4", "s4")}))
            structured(await session.call_tool("close_session",
                                               {"session_id": "s4", "closed_at": "2025-03-02T19:00:00Z"}))
            recalled = structured(await session.call_tool("recall", {
                "character_id": "ava", "user_id": "tester-4", "message": "I went for a walk in the park",
                "at": "2025-03-11T09:00:00Z"}))
            erased = structured(await session.call_tool("erase_user", {"character_id": "ava", "user_id": "tester-4"}))
            return stored, recalled, erased

    stored, recalled, erased = asyncio.run(run())
    assert stored["stored"] == 2
    assert "grieving" in recalled["context"]["system"]
    assert erased["turns"] == 2


def test_feltsense_mcp_refuses_to_start_without_a_usable_key(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "FELTSENSE_API_KEY"}
    for extra in ({}, {"FELTSENSE_API_KEY": "fs_0000000000000000_notakey"}):
        done = subprocess.run([sys.executable, "-m", "api.cli", "mcp", "--data-dir", str(tmp_path / "data")],
                              cwd=REPO, env={**env, **extra}, capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 2, done.stderr
        assert "FELTSENSE_API_KEY" in done.stderr


def test_the_readme_example_runs_as_written(service: FeltsenseService) -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index("\n## MCP\n")
    [block] = re.findall(r"```python\n(.*?)```", text[start:text.index("\n## ", start + 1)], flags=re.DOTALL)
    # The Try it block's session, as the example assumes it was stored (idempotent by turn id).
    said = [{"turn_id": f"readme-{i}", "session_id": "readme-s1", "character_id": "ava", "user_id": "tester-1",
             "role": "user", "text": text, "timestamp": f"2025-03-02T18:0{i}:00Z"} for i, text in enumerate(LUNA)]
    assert httpx.post(f"{service.url}/v1/turns", headers=service.headers(), json={"turns": said}).is_success
    assert httpx.post(f"{service.url}/v1/sessions/readme-s1/close", headers=service.headers(),
                      params={"wait": "true"}, json={"closed_at": "2025-03-02T19:00:00Z"}).is_success
    script = block.replace("localhost:8000", f"127.0.0.1:{service.port}")
    done = subprocess.run([sys.executable, "-c", script], cwd=service.data_dir.parent, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "grieving" in done.stdout and "Luna" in done.stdout
