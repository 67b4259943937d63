"""The typed client against the real app: the client's own models in and out, problem details raised as exceptions.

The app runs in process (Litestar's test transport for the sync client, httpx's ASGI transport for the async one);
only the Authorization-header test uses ``httpx.MockTransport``, and only the dead-port and silent-server tests use
sockets. ``character_loop`` below is the README's example,
verbatim: ``test_readme_example_is_this_one`` keeps the two copies equal.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import socket
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import feltsense_client
import httpx
import pytest
from feltsense_client import (
    AsyncFeltsenseClient,
    AuthError,
    CloseAccepted,
    CloseReport,
    CompactRecall,
    ConflictError,
    FeltsenseAPIError,
    FeltsenseClient,
    GoneError,
    IngestReport,
    NotFoundError,
    RecallQuery,
    RecallResult,
    Turn,
    UnavailableError,
    ValidationError,
    WindowTurn,
)
from litestar import Litestar
from litestar.testing import TestClient
from litestar.testing import transport as litestar_transport

from api.app import create_app
from api.auth import KeyStore
from engine.domain.errors import BackendUnavailable
from engine.jobs import FINISHED, InProcessJobs
from engine.service import Engine
from tests.keys import sqlite_key_store

README = Path(__file__).resolve().parents[2] / "README.md"
Generate = Callable[[str, str, str], str]  # (system, memories, message) -> the character's reply


def character_loop(memory: FeltsenseClient, generate: Generate, session_id: str, messages: Iterable[str]) -> list[str]:
    """One session of Ava with tester-1: recall before every reply, remember both turns, close at the end."""
    replies = []
    for n, message in enumerate(messages):
        at = datetime.now(UTC)
        recalled = memory.recall(RecallQuery(character_id="ava", user_id="tester-1", message=message,
                                             session_id=session_id, at=at))
        reply = generate(recalled.context.system, recalled.context.tail, message)
        memory.ingest([Turn(turn_id=f"{session_id}-{n}u", session_id=session_id, character_id="ava",
                            user_id="tester-1", role="user", text=message, timestamp=at),
                       Turn(turn_id=f"{session_id}-{n}c", session_id=session_id, character_id="ava",
                            user_id="tester-1", role="character", text=reply, timestamp=datetime.now(UTC))])
        replies.append(reply)
    memory.close_session(session_id)
    return replies


class AppTransport(httpx.BaseTransport):
    """The app in process through Litestar's test transport, which has no ``close`` of its own for httpx to call."""

    def __init__(self, test_client: TestClient[Litestar]) -> None:
        self._inner = litestar_transport.TestClientTransport(test_client)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._inner.handle_request(request)


class Service:
    """The app over the hashing engine, and a runtime key of organisation acme."""

    def __init__(self, app: Litestar, keys: KeyStore) -> None:
        self.app = app
        self.keys = keys
        self.runtime_key = keys.create("acme", "runtime")

    def client(self, test_client: TestClient[Litestar], *, api_key: str | None = None) -> FeltsenseClient:
        return FeltsenseClient("http://testserver.local", api_key=api_key or self.runtime_key,
                               transport=AppTransport(test_client))


@pytest.fixture
def service(hashing_engine: Engine, tmp_path: Path) -> Iterator[Service]:
    keys = sqlite_key_store(tmp_path / "keys.sqlite3")
    yield Service(create_app(hashing_engine, keys=keys), keys)
    keys.close()


@pytest.fixture
def memory(service: Service) -> Iterator[FeltsenseClient]:
    with TestClient(service.app) as test_client, service.client(test_client) as client:
        yield client


def luna_turns(session_id: str = "s1") -> list[Turn]:
    said = [("user", "My dog Luna died last week."), ("character", "Oh no. I am so sorry."),
            ("user", "Luna and I walked in the park every single morning.")]
    return [Turn(turn_id=f"{session_id}-{i}", session_id=session_id, character_id="ava", user_id="tester-1",
                 role=role, text=text, timestamp=datetime(2025, 3, 2, 18, i, tzinfo=UTC))
            for i, (role, text) in enumerate(said)]


PARK = RecallQuery(character_id="ava", user_id="tester-1", message="I went for a walk in the park this morning.",
                   session_id="s2", at=datetime(2025, 3, 11, 9, tzinfo=UTC))


def test_ingest_close_and_recall_round_trip_as_the_clients_models(memory: FeltsenseClient) -> None:
    report = memory.ingest(luna_turns())
    assert report == IngestReport(stored=3, duplicates=0, memories=2, awaiting_embedding=0)
    assert memory.ingest(luna_turns()).duplicates == 3

    closed = memory.close_session("s1", closed_at=datetime(2025, 3, 2, 18, 10, tzinfo=UTC))
    assert closed == CloseReport(session_id="s1", traces_written=2, traces_pending=0)

    result = memory.recall(PARK)
    assert isinstance(result, CompactRecall)
    assert any("Luna" in m.text and m.session_id == "s1" for m in result.memories)
    assert any(m.feeling is not None and m.feeling.register == "grief" for m in result.memories)
    assert any(c.register == "grief" and "Luna" in c.anchors for c in result.tone_constraints)
    assert result.trace.mode == "hybrid" and result.context.system

    full = memory.recall(PARK, detail="full")
    assert isinstance(full, RecallResult)
    assert all(m.trace is not None and m.components.score > 0 for m in full.memories)
    assert [m.memory_id for m in full.memories] == [m.memory_id for m in result.memories]


def test_the_client_sends_the_window(memory: FeltsenseClient) -> None:
    memory.ingest(luna_turns())
    memory.close_session("s1", closed_at=datetime(2025, 3, 2, 18, 10, tzinfo=UTC))
    window = (WindowTurn(role="user", text="I keep thinking about Luna."),
              WindowTurn(role="character", text="She sounds like she was a wonderful dog."))
    result = memory.recall(PARK.model_copy(update={"window": window}), detail="full")
    assert result.trace.window_source == "passed" and result.trace.window_turns == 2
    # no window passed, and s2 has no stored turns
    assert memory.recall(PARK, detail="full").trace.window_source == "none"


def test_the_async_client_does_the_same(service: Service) -> None:
    async def run() -> tuple[IngestReport, object, CompactRecall, RecallResult]:
        transport = httpx.ASGITransport(app=service.app)
        async with AsyncFeltsenseClient("http://testserver.local", api_key=service.runtime_key,
                                        transport=transport) as memory:
            return (await memory.ingest(luna_turns()), await memory.close_session("s1"),
                    await memory.recall(PARK), await memory.recall(PARK, detail="full"))

    report, closed, result, full = asyncio.run(run())
    assert report.memories == 2
    assert isinstance(closed, CloseReport) and closed.traces_written == 2
    assert isinstance(result, CompactRecall) and any("Luna" in m.text for m in result.memories)
    assert isinstance(full, RecallResult) and [m.memory_id for m in full.memories] == [
        m.memory_id for m in result.memories]


def test_a_422_raises_validation_error_naming_the_field(memory: FeltsenseClient) -> None:
    naive = luna_turns()[0].model_copy(update={"timestamp": datetime(2025, 3, 2, 18)})  # skips the model's check
    with pytest.raises(ValidationError) as raised:
        memory.ingest([naive])
    assert raised.value.status == 422
    assert raised.value.fields == ("turns.0.timestamp",)
    assert "turns.0.timestamp" in raised.value.detail

    with pytest.raises(ValidationError) as raised:
        memory.recall(PARK.model_copy(update={"limit": 0}))
    assert raised.value.fields == ("limit",)


def test_a_404_raises_not_found(memory: FeltsenseClient) -> None:
    with pytest.raises(NotFoundError) as raised:
        memory.close_session("never-opened")
    assert raised.value.status == 404 and raised.value.title == "Not found"


def test_a_503_raises_unavailable_with_the_retry_delay(
    service: Service, hashing_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    def store_down(query: object) -> object:
        raise BackendUnavailable("the store is restarting", backend="embedded", retry_after_s=7)

    monkeypatch.setattr(hashing_engine, "recall", store_down)
    with TestClient(service.app) as test_client, service.client(test_client) as memory, \
            pytest.raises(UnavailableError) as raised:
        memory.recall(PARK)
    assert (raised.value.status, raised.value.retry_after_s) == (503, 7)
    assert "restarting" in raised.value.detail


def test_a_wrong_key_raises_auth_error_and_so_does_a_role_that_may_not(service: Service) -> None:
    evaluator = service.keys.create("acme", "evaluator")
    with TestClient(service.app) as test_client:
        with service.client(test_client, api_key="fs_0123456789abcdef_not-a-real-secret-at-all") as memory, \
                pytest.raises(AuthError) as raised:
            memory.recall(PARK)
        assert raised.value.status == 401
        with service.client(test_client, api_key=evaluator) as memory, pytest.raises(AuthError) as raised:
            memory.ingest(luna_turns())
        assert raised.value.status == 403


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_dead_port_raises_unavailable() -> None:
    with FeltsenseClient(f"http://127.0.0.1:{_free_port()}", timeout_s=2.0) as memory, \
            pytest.raises(UnavailableError) as raised:
        memory.recall(PARK)
    assert raised.value.status is None and "could not be reached" in raised.value.detail
    assert isinstance(raised.value.__cause__, httpx.ConnectError)


def test_a_server_that_never_answers_times_out_as_unavailable() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()  # connections complete in the backlog, but nothing ever reads or answers
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        with FeltsenseClient(url, timeout_s=0.3) as memory, pytest.raises(UnavailableError) as raised:
            memory.recall(PARK)
    assert "timed out" in raised.value.detail
    assert isinstance(raised.value.__cause__, httpx.TimeoutException)


def test_a_queued_close_comes_back_as_close_accepted(hashing_engine: Engine, service: Service) -> None:
    app = create_app(hashing_engine, keys=service.keys, jobs=InProcessJobs(hashing_engine))
    with TestClient(app) as test_client, service.client(test_client) as memory:
        memory.ingest(luna_turns())
        accepted = memory.close_session("s1", closed_at=datetime(2025, 3, 2, 18, 10, tzinfo=UTC))
    assert isinstance(accepted, CloseAccepted)
    assert accepted.session_id == "s1" and accepted.job_id
    # An in-process job can finish before the 202 is written; "queued" then says so rather than lying.
    assert accepted.queued == (accepted.status not in FINISHED)


def test_a_close_can_wait_for_its_pass_and_a_reused_turn_id_is_a_conflict(
    hashing_engine: Engine, service: Service
) -> None:
    app = create_app(hashing_engine, keys=service.keys, jobs=InProcessJobs(hashing_engine))
    with TestClient(app) as test_client, service.client(test_client) as memory:
        turns = luna_turns()
        memory.ingest(turns)
        report = memory.close_session("s1", closed_at=datetime(2025, 3, 2, 18, 10, tzinfo=UTC), wait_s=10)
        assert isinstance(report, CloseReport) and report.session_id == "s1" and report.traces_written >= 1
        with pytest.raises(ConflictError) as raised:
            memory.ingest([turns[0].model_copy(update={"text": "Something else."})])
        assert raised.value.status == 409 and turns[0].turn_id in raised.value.detail


def test_the_key_is_sent_as_a_bearer_token() -> None:
    # The one fake: the app cannot show the headers it received.
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"stored": 0, "duplicates": 3, "memories": 0})

    with FeltsenseClient("http://feltsense.test/", api_key="fs_key", transport=httpx.MockTransport(answer)) as memory:
        assert memory.ingest(luna_turns()).duplicates == 3
    with FeltsenseClient("http://feltsense.test", transport=httpx.MockTransport(answer)) as anonymous:
        anonymous.ingest(luna_turns())
    assert [r.headers.get("authorization") for r in seen] == ["Bearer fs_key", None]
    assert str(seen[0].url) == "http://feltsense.test/v1/turns"


def test_the_readme_character_loop_runs(memory: FeltsenseClient) -> None:
    prompts: list[tuple[str, str, str]] = []

    def generate(system: str, memories: str, message: str) -> str:
        prompts.append((system, memories, message))
        return "I'm here. Tell me more."

    character_loop(memory, generate, "s1", ["My dog Luna died last week.",
                                            "Luna and I walked in the park every single morning."])
    replies = character_loop(memory, generate, "s2", ["I went for a walk in the park this morning."])
    assert replies == ["I'm here. Tell me more."]
    system, memories, message = prompts[-1]
    assert "grieving" in system and "Luna" in system and "park" in memories
    assert message == "I went for a walk in the park this morning."


def test_readme_example_is_this_one() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.DOTALL)
    example = [block for block in blocks if "def character_loop(" in block]
    assert example, "README.md has no character-loop example (paste it from tests/api/test_client.py)"
    assert inspect.getsource(character_loop) in example[0], "README's character_loop differs from this file's"
    # Its imports are the ones a runtime can make: run them, in a namespace of their own.
    imports = "\n".join(line for line in example[0].splitlines() if line.startswith(("from ", "import ")))
    namespace: dict[str, object] = {}
    exec(imports, namespace)
    assert {"FeltsenseClient", "RecallQuery", "Turn"} <= set(namespace)
    assert all(not line.startswith(("from api", "from engine")) for line in imports.splitlines()), imports


def test_public_api() -> None:
    assert set(feltsense_client.__all__) == {
        "AsyncFeltsenseClient", "AuthError", "CloseAccepted", "CloseReport", "CloseResult", "CompactRecall",
        "ConflictError", "FeltsenseAPIError", "FeltsenseClient", "GoneError", "IngestReport", "NotFoundError",
        "RecallDetail", "RecallQuery", "RecallResult", "Turn", "UnavailableError", "ValidationError", "WindowTurn",
        "__version__",
    }
    for error in (AuthError, ConflictError, GoneError, NotFoundError, UnavailableError, ValidationError):
        assert issubclass(error, FeltsenseAPIError)


SERVER_PACKAGES = ("api", "engine", "eval", "traces", "scoring", "prompts")


def test_the_client_imports_none_of_the_servers_packages(tmp_path: Path) -> None:
    # A fresh interpreter, isolated (-I: no cwd, no PYTHONPATH) and with warnings as errors: a runtime that
    # installs feltsense-client gets httpx and pydantic, and none of the server's generic top-level names.
    check = (
        "import sys; import feltsense_client, feltsense_client.models; "
        f"server = sorted(m for m in sys.modules if m.split('.')[0] in {set(SERVER_PACKAGES)!r}); "
        "assert not server, server"
    )
    done = subprocess.run([sys.executable, "-I", "-W", "error", "-c", check], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr

