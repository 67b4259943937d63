"""What a hostile tester broke about trust (issue 13, items 7, 9, 10 and 11), pinned over HTTP and at the process.

- The development key is made only by ``serve --dev``, once; a revoked one never comes back, and its secret never
  reaches a log file.
- An unexpected error is RFC 9457 problem details with a request id that is also in the log; a page offset past
  the documented maximum is a 422 naming it.
- An admin's sweep stays in its organisation; only an operator's covers every organisation, and an operator key
  reaches nothing else.
- A recall's ``at`` and a close's ``closed_at`` are bounded like a turn's timestamp.
"""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from api.auth import KeyStore
from engine.domain.models import RecallQuery, RecallResult
from engine.service import Engine
from tests.inprocess import CachedKeys, Clock, in_process
from tests.keys import sqlite_key_store
from tests.servers.feltsense import FeltsenseService

pytestmark = pytest.mark.hostile

REPO = Path(__file__).resolve().parents[2]
T0 = "2025-03-02T18:00:00Z"


# -- item 7: the development key -----------------------------------------------------------------------------------


@contextlib.contextmanager
def _served(data_dir: Path, *flags: str) -> Iterator[Path]:
    """``python -m eval.cli serve`` with stdout (not a terminal) to a log file, up until /healthz answers; the log."""
    service = FeltsenseService(data_dir, cli="eval.cli", flags=flags)
    service.start()
    try:
        yield service.log
    finally:
        service.stop()


def _keys(data_dir: Path) -> list[Any]:
    store = sqlite_key_store(data_dir / "keys.sqlite3")
    try:
        return list(store.list())
    finally:
        store.close()


@pytest.mark.slow
def test_serve_without_dev_makes_no_development_key(tmp_path: Path) -> None:
    with _served(tmp_path / "data") as log:
        pass
    assert not (tmp_path / "data" / "dev-key").exists()
    assert _keys(tmp_path / "data") == []
    printed = log.read_text(errors="replace")
    assert "fs_" not in printed
    # What the start says is for the user: where it listens, not the tokenizer announcing its special tokens.
    assert "feltsense on http://127.0.0.1:" in printed and "special tokens" not in printed


@pytest.mark.slow
def test_serve_dev_keeps_the_secret_in_its_file_and_out_of_a_redirected_log(tmp_path: Path) -> None:
    key_file = tmp_path / "data" / "dev-key"
    with _served(tmp_path / "data", "--dev") as log:
        pass
    token = key_file.read_text().strip()
    assert key_file.stat().st_mode & 0o777 == 0o600
    [key] = _keys(tmp_path / "data")
    assert token.startswith(f"fs_{key.key_id}_") and (key.org, key.role, key.revoked_at) == ("dev", "runtime", None)
    printed = log.read_text(errors="replace")
    secret = token.removeprefix(f"fs_{key.key_id}_")  # the secret itself may hold "_": never split it
    assert token not in printed and secret not in printed
    assert str(key_file.resolve()) in printed  # where to find it instead


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_development_key_is_printed_to_a_terminal_and_the_same_one_after_a_restart(tmp_path: Path) -> None:
    from api.server import DEV_KEY_LINE, announce_development_key

    printed = []
    for _ in range(2):  # a restart: a new KeyStore over the same files
        keys, out = sqlite_key_store(tmp_path / "keys.sqlite3"), _Terminal()
        announce_development_key(keys, tmp_path, out)
        keys.close()
        printed.append(out.getvalue())
    token = (tmp_path / "dev-key").read_text().strip()
    assert printed == [DEV_KEY_LINE.format(key=token) + "\n"] * 2
    assert len(_keys(tmp_path)) == 1


@pytest.mark.parametrize("how", ["revoked", "revoked-legacy", "file-lost"])
def test_a_revoked_or_lost_development_key_is_never_made_again(tmp_path: Path, how: str) -> None:
    from api.server import announce_development_key

    keys = sqlite_key_store(tmp_path / "keys.sqlite3")
    if how == "revoked-legacy":  # a store from before the issue is recorded: its key is known by its label
        (tmp_path / "dev-key").write_text(keys.create("dev", "runtime", label="development key") + "\n")
    else:
        announce_development_key(keys, tmp_path, io.StringIO())
    [issued] = keys.list()
    if how == "file-lost":
        (tmp_path / "dev-key").unlink()
    else:
        keys.revoke(issued.key_id)
    keys.close()

    for _ in range(2):  # serve --dev, and again
        keys, out = sqlite_key_store(tmp_path / "keys.sqlite3"), _Terminal()
        announce_development_key(keys, tmp_path, out)
        assert [k.key_id for k in keys.list()] == [issued.key_id]  # nothing new was minted
        if how != "file-lost":
            assert keys.authenticate((tmp_path / "dev-key").read_text()) is None  # and it stays revoked
        keys.close()
        said = out.getvalue()
        assert issued.key_id in said and "never made again" in said and "feltsense keys create" in said, said
        assert "fs_" not in said
    assert (tmp_path / "dev-key").exists() == (how != "file-lost")


# -- the in-process service -----------------------------------------------------------------------------------------


class FailingRecallEngine(Engine):
    """An engine whose recall breaks in a way nothing maps: a bug, not a domain error."""

    def recall(self, query: RecallQuery) -> RecallResult:
        raise RuntimeError("kaboom in /srv/feltsense/internal.py for tester-1")


@dataclass
class Service(CachedKeys):
    client: TestClient[Litestar]
    keys: KeyStore
    tokens: dict[tuple[str, str], str] = field(default_factory=dict)
    clock: Clock = field(default_factory=Clock)

    def post(self, path: str, body: Any = None, role: str = "runtime", org: str = "acme") -> Any:
        return self.client.post(path, json=body, headers=self.headers(role, org))

    def say(self, org: str, text: str, at: str = T0, user: str = "u1", session: str = "s1") -> None:
        turn = {"turn_id": f"{session}-{user}", "session_id": session, "character_id": "ava", "user_id": user,
                "role": "user", "text": text, "timestamp": at}
        assert self.post("/v1/turns", {"turns": [turn]}, org=org).status_code == 200


@contextlib.contextmanager
def _service(tmp: Path, engine_class: type[Engine] = Engine) -> Iterator[Service]:
    with in_process(tmp, engine_class=engine_class) as running, TestClient(running.app) as client:
        yield Service(client, running.keys, clock=running.clock)


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    with _service(tmp_path) as running:
        yield running


def invalid(response: Any, field: str) -> list[str]:
    """A 422 problem naming ``field``; its messages for that field."""
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert field in body["detail"], body
    messages = [e["message"] for e in body["errors"] if e["field"] == field]
    assert messages, body
    return messages


# -- item 9: unexpected errors, and page bounds ------------------------------------------------------------------


@pytest.mark.parametrize("offset", ["100000000000000000000", "1000001"])
def test_a_page_offset_past_the_maximum_is_a_422_naming_it(service: Service, offset: str) -> None:
    service.say("acme", "My dog Luna died last week.")

    def page(offset: str) -> Any:
        return service.client.get("/v1/memories", params={"character_id": "ava", "user_id": "u1", "offset": offset},
                                  headers=service.headers("runtime"))

    invalid(page(offset), "offset")
    at_the_maximum = page("1000000")
    assert at_the_maximum.status_code == 200 and at_the_maximum.json()["items"] == [], at_the_maximum.text


def test_an_unexpected_error_is_a_problem_500_with_a_request_id_that_the_log_has(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with _service(tmp_path, FailingRecallEngine) as failing, caplog.at_level(logging.ERROR):
        response = failing.post("/v1/recall", {"character_id": "ava", "user_id": "u1", "message": "Luna"})
    assert response.status_code == 500, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == 500 and body["title"] and body["detail"]
    request_id = body["request_id"]
    assert request_id and response.headers["x-request-id"] == request_id and request_id in body["detail"]
    assert "kaboom" not in response.text  # the error's own text may carry internals: the log has it
    [record] = [r for r in caplog.records if request_id in r.getMessage()]
    assert record.exc_info is not None and isinstance(record.exc_info[1], RuntimeError)
    assert "kaboom" in caplog.text and "Traceback" in caplog.text


def test_two_unexpected_errors_get_different_request_ids(tmp_path: Path) -> None:
    with _service(tmp_path, FailingRecallEngine) as failing:
        ids = {failing.post("/v1/recall", {"character_id": "ava", "user_id": "u1", "message": "Luna"}).json()
               ["request_id"] for _ in range(2)}
    assert len(ids) == 2


# -- item 10: the sweep and the operator -------------------------------------------------------------------------


def _studio_fact_twice(service: Service, org: str) -> None:
    """A director states a shared fact twice: it stays provisional, and a sweep two months later (the default gate
    weighs standing uncontradicted most) proposes promoting it."""
    fact = {"scope": "shared", "character_id": "ava", "subject": "studio", "relation": "home_town",
            "value": "Porto", "sentence": "The studio is in Porto."}
    for _ in range(2):
        assert service.post("/v1/facts", fact, role="director", org=org).status_code == 200


def _review(service: Service, org: str) -> list[dict[str, Any]]:
    response = service.client.get("/v1/review", params={"character_id": "ava"}, headers=service.headers("admin", org))
    assert response.status_code == 200, response.text
    return list(response.json())


def test_an_admin_sweep_stays_in_its_organisation_and_an_operators_covers_every_one(service: Service) -> None:
    for org in ("acme", "globex"):
        service.say(org, "Hello!")
        # A closed session is a partition the sweep visits, with its levels: the character's canon, the shared.
        assert service.post("/v1/sessions/s1/close", org=org).status_code == 200
        _studio_fact_twice(service, org)

    service.clock.later(days=60)
    swept = service.post("/v1/maintenance/sweep", role="admin", org="acme")
    assert swept.status_code == 200, swept.text
    assert swept.json()["partitions"] == 3 and swept.json()["proposed"] == 1
    assert len(_review(service, "acme")) == 1
    assert _review(service, "globex") == []  # acme's admin never reached globex's levels

    swept = service.post("/v1/maintenance/sweep", role="operator", org="ops")
    assert swept.status_code == 200, swept.text
    assert swept.json()["partitions"] == 6 and swept.json()["proposed"] == 1  # acme's proposal is already filed
    assert len(_review(service, "globex")) == 1


def test_an_operator_key_reaches_no_route_but_the_sweep(service: Service) -> None:
    """Every route that needs a key: without one it is a 401; with an operator's it is a 403, but the sweep."""
    app = service.client.app
    checked = []
    for route in app.routes:
        path = route.path.replace("{", "").replace("}", "")  # "/v1/memories/{memory_id:str}" -> a literal id
        path = "/".join(part.split(":")[0] for part in path.split("/"))
        for method in sorted(getattr(route, "methods", set()) - {"HEAD", "OPTIONS"}):
            params = {"character_id": "ava", "user_id": "u1"}
            body: dict[str, str] | None = {} if method in ("POST", "PUT") else None
            if service.client.request(method, path, params=params, json=body).status_code != 401:
                continue  # no key needed (health, readiness, the docs, the tuning page)
            answer = service.client.request(method, path, params=params, json=body,
                                            headers=service.headers("operator", "ops"))
            expected = 200 if (method, path) == ("POST", "/v1/maintenance/sweep") else 403
            assert answer.status_code == expected, (method, path, answer.text)
            checked.append((method, path))
    assert len(checked) > 20, checked


# -- item 11: recall and close times ---------------------------------------------------------------------------


FAR_OFF = [pytest.param("9999-12-31T23:59:59Z", id="9999"), pytest.param("1900-01-01T00:00:00Z", id="1900"),
           pytest.param((datetime.now(UTC) + timedelta(days=2)).isoformat(), id="two-days-ahead"),
           pytest.param(0, id="a-number")]


@pytest.mark.parametrize("at", FAR_OFF)
def test_a_recall_at_a_far_off_time_is_a_422_naming_at(service: Service, at: Any) -> None:
    service.say("acme", "My dog Luna died last week.")
    assert service.post("/v1/sessions/s1/close").status_code == 200
    invalid(service.post("/v1/recall", {"character_id": "ava", "user_id": "u1", "message": "Luna", "at": at}), "at")
    # Nothing was stamped retrieved at that time, also once the sweep folds the usage in.
    assert service.post("/v1/maintenance/sweep", role="admin").status_code == 200
    items = service.client.get("/v1/memories", params={"character_id": "ava", "user_id": "u1"},
                               headers=service.headers("runtime")).json()["items"]
    assert items and all(item["state"]["signals"]["last_retrieved"] is None for item in items)
    soon = (datetime.now(UTC) + timedelta(hours=23)).isoformat()  # within the day of clock skew a turn gets
    recalled = service.post("/v1/recall", {"character_id": "ava", "user_id": "u1", "message": "Luna", "at": soon})
    assert recalled.status_code == 200 and recalled.json()["memories"], recalled.text


@pytest.mark.parametrize("closed_at", FAR_OFF)
def test_a_close_at_a_far_off_time_is_a_422_naming_closed_at(service: Service, closed_at: Any) -> None:
    service.say("acme", "My dog Luna died last week.")
    invalid(service.post("/v1/sessions/s1/close", {"closed_at": closed_at}), "closed_at")
    closed = service.post("/v1/sessions/s1/close", {"closed_at": "1970-01-01T00:00:00Z"})  # the earliest accepted
    assert closed.status_code == 200 and closed.json()["traces_written"] == 1, closed.text
