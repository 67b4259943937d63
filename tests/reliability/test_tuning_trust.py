"""Issue 13, items 1 and 5: what a hostile tester broke in tuning.

1. A profile value the store cannot read back (Infinity, saved as JSON null) stopped the service from starting
   again. Every numeric tuning field is now finite and bounded, and a bad stored row is skipped, never fatal.
2. Replays ran on the request threads, so eight of them made a 15 ms recall take 91 s. They now run one per
   organisation, a few in all, in a worker process at a lower priority, each within a deadline; recall for other
   tenants stays within 2x of its latency without replays, measured on the served process (``feltsense serve``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import numpy as np
import pytest
from annotated_types import Le, Lt
from litestar.testing import TestClient
from numpy.typing import NDArray
from pydantic import BaseModel, ValidationError

from engine.adapters.hashing_embedder import HashingEmbedder
from engine.adapters.sqlite_tuning import SqliteTuningStore
from engine.domain.errors import InvalidInput
from engine.domain.models import REGISTERS, Register, Tier
from engine.domain.ports import Classifier, Embedder, NoChange
from engine.domain.tuning import (
    ConsolidationParams,
    ContextParams,
    RehearsalParams,
    ScoringParams,
    TrustParams,
    TuningProfile,
)
from tests.fakes import KeywordClassifier
from tests.inprocess import KeyedClient, in_process
from tests.servers.feltsense import FeltsenseService

if TYPE_CHECKING:
    from engine.replay_runner import ReplayRunner as ReplayRunnerType

pytestmark = pytest.mark.hostile

T0 = "2025-03-02T18:00:00Z"
LINES = (
    "I finally told my sister about the move to Lisbon, {n} days before it happens.",
    "That must have been a relief. How did she take it?",
    "She cried a bit, then asked if she could visit in the spring with the kids.",
    "It sounds like she will miss you, and also wants to be part of it.",
    "My dog Luna hates the car, so the drive south worries me more than the flat.",
    "Maybe short trips first would help her get used to it.",
)


def transcript(turns: int, *, probe_every: int = 0, transcript_id: str = "load", marker: str = "") -> str:
    """A format 1 transcript of ``turns`` turns in sessions of ten; every ``probe_every``-th user turn probes."""
    lines = ["format: 1", f"id: {transcript_id}", "character: ava", "user: tester-9", "sessions:"]
    user_turns = 0
    for number in range(turns):
        if number % 10 == 0:
            lines += [f'  - at: "{T0 if number == 0 else "+2d"}"', "    turns:"]
        role = "user" if number % 2 == 0 else "character"
        text = LINES[number % len(LINES)].format(n=number) + (f" {marker}" if marker else "")
        lines.append(f"      - {role}: {json.dumps(text)}")
        if role == "user":
            if probe_every and user_turns % probe_every == 0:
                lines += ["        probe:", "          recall_any: [Lisbon]"]
            user_turns += 1
    return "\n".join(lines) + "\n"


def profile_sections(profile: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in profile.items() if k not in ("character_id", "version")}


DEFAULT_SECTIONS = profile_sections(TuningProfile().model_dump(mode="json"))


# -- item 1: a profile is finite and bounded; a bad stored row is never fatal ----------------------------------


REGISTER_SET = tuple[Register, ...]
"""The one other kind of tuning field: a set of registers (``ToneParams.loss_registers``, ...), checked below."""


CHOICES = (ConsolidationParams.model_fields["mode"].annotation, RehearsalParams.model_fields["enrol"].annotation,
           TrustParams.model_fields["kinds"].annotation)
"""The profile's other choices (a gate mode, the rehearsal policy, the kinds earned trust may keep): Literals."""


def _numeric_fields(kind: object = (int, float)) -> Iterator[tuple[str, type[BaseModel], str]]:
    """(dotted name, model, field) for every int or float field of the profile, its sections' included (or, with
    ``kind=REGISTER_SET``, every register-set field). A section field of another type stops collection: decide
    whether it is a number before it is left unchecked."""
    numeric = kind == (int, float)
    for name, info in TuningProfile.model_fields.items():
        if numeric and info.annotation in (int, float):
            yield name, TuningProfile, name
        elif isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
            section = info.annotation
            for field_name, field in section.model_fields.items():
                if field.annotation not in (int, float) and field.annotation not in (REGISTER_SET, Tier, *CHOICES):
                    raise TypeError(f"{name}.{field_name} is a {field.annotation}: is it a number to bound?")
                if field.annotation == Tier or field.annotation in CHOICES:
                    continue  # a choice, validated by its Literal
                if (field.annotation in (int, float)) == numeric:
                    yield f"{name}.{field_name}", section, field_name


NUMERIC_FIELDS = list(_numeric_fields())
REGISTER_FIELDS = list(_numeric_fields(REGISTER_SET))


def test_the_lowest_told_tier_is_one_of_the_three() -> None:
    for value in ("medium", "", 1, None):
        with pytest.raises(ValidationError):
            ContextParams.model_validate({"min_tier": value})
    assert ContextParams.model_validate({"min_tier": "low"}).min_tier == "low"


@pytest.mark.parametrize(("model", "field"), [(model, field) for _, model, field in REGISTER_FIELDS],
                         ids=[name for name, _, _ in REGISTER_FIELDS])
def test_every_register_set_refuses_an_unknown_register_and_is_bounded(model: type[BaseModel], field: str) -> None:
    for value in (["grief", "melancholy"], list(REGISTERS) * 2, "grief"):
        with pytest.raises(ValidationError):
            model.model_validate({field: value})
    model.model_validate({field: getattr(model(), field)})


@pytest.mark.parametrize(("model", "field"), [(model, field) for _, model, field in NUMERIC_FIELDS],
                         ids=[name for name, _, _ in NUMERIC_FIELDS])
def test_every_numeric_tuning_field_has_an_upper_bound_and_refuses_what_is_not_finite(
    model: type[BaseModel], field: str
) -> None:
    info = model.model_fields[field]
    assert any(isinstance(rule, Le | Lt) for rule in info.metadata), f"{field} has no upper bound"
    for value in (math.inf, -math.inf, math.nan, "Infinity", "NaN", 1e308):
        with pytest.raises(ValidationError) as refused:
            model.model_validate({field: value})
        assert [error["loc"] for error in refused.value.errors()] == [(field,)], value
    model.model_validate({field: getattr(model(), field)})  # the default is inside the bounds


def _store_rows(path: Path, rows: Sequence[tuple[str, object, object]]) -> None:
    """Write (character, version, profile body) rows straight into the store's file, as damage or an older
    release would have left them."""
    with sqlite3.connect(path) as db:
        db.executemany("INSERT INTO tuning VALUES (?, ?, ?, 'director:k1', 'hostile', '2026-12-01T10:00:00+00:00')",
                       rows)
    db.close()


def _body(character_id: str, version: int, **scoring: object) -> str:
    profile = TuningProfile(character_id=character_id, version=version).model_dump(mode="json")
    profile["scoring"].update(scoring)
    return json.dumps(profile)  # float("inf") becomes the token Infinity, which strict JSON refuses


def test_a_bad_stored_row_is_skipped_and_logged_and_the_store_still_opens(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "tuning.sqlite3"
    store = SqliteTuningStore(path)
    tail = TuningProfile(character_id="ava").strength.model_copy(update={"tail_exponent": 0.8})
    store.save(TuningProfile(character_id="ava", strength=tail), author="director:k1", note="slower tail")
    store.save(TuningProfile(character_id="bea", scoring=ScoringParams(min_half_life_days=2.0)), author="director:k1",
               note="bea's first")
    store.close()
    _store_rows(path, [
        ("ava", 3, _body("ava", 3, factual_half_life_days=None)),  # what PUT "Infinity" saved
        ("ava", 4, _body("ava", 4, factual_half_life_days=math.inf)),
        ("cara", 1, "{not json"),
        ("dora", 1, _body("ava", 1)),  # a row whose profile is another character's
    ])

    with caplog.at_level(logging.WARNING):
        reopened = SqliteTuningStore(path)
    skipped = [r for r in caplog.records if r.name.startswith("feltsense.") and r.levelno == logging.WARNING]
    assert len(skipped) == 4, [r.getMessage() for r in caplog.records]
    assert any("'ava'" in r.getMessage() and "factual_half_life_days" in r.getMessage() for r in skipped)

    ava = reopened.profile_for("ava")
    assert (ava.version, ava.strength.tail_exponent) == (2, 0.8)  # the newest valid version
    assert reopened.profile_for("bea").version == 2
    assert reopened.profile_for("cara") == TuningProfile(character_id="cara")  # nothing valid: the defaults
    assert reopened.profile_for("dora") == TuningProfile(character_id="dora")
    assert [v.version for v in reopened.history("ava")] == [2, 1]
    assert [v.version for v in reopened.history("bea")] == [2, 1]
    assert reopened.history("cara") == []
    # A new version goes above the skipped ones: their numbers stay taken.
    saved = reopened.save(TuningProfile(character_id="ava"), author="director:k1", note="defaults again")
    assert saved.version == 5 and [v.version for v in reopened.history("ava")] == [5, 2, 1]
    reopened.close()


def test_a_version_always_says_why_and_changes_something_and_setting_the_one_in_force_is_no_version(
    tmp_path: Path,
) -> None:
    store = SqliteTuningStore(tmp_path / "tuning.sqlite3")
    softer = TuningProfile(character_id="ava", scoring=ScoringParams(min_half_life_days=2.0))
    with pytest.raises(InvalidInput) as blank:
        store.save(softer, author="director:k1", note=" \n")
    assert blank.value.field == "note"
    with pytest.raises(NoChange, match="equal version 1"):
        store.save(TuningProfile(character_id="ava"), author="director:k1", note="nothing")
    assert store.history("ava") == []
    store.save(softer, author="director:k1", note="a softer floor")
    store.set(softer)  # the engine and the evals set profiles freely: the one in force again is no new version
    assert [v.version for v in store.history("ava")] == [2, 1]
    store.set(TuningProfile(character_id="ava"))
    newest = store.history("ava")[0]
    assert (newest.version, newest.author, newest.note) == (3, "engine", "set by the engine")
    store.close()


@dataclass
class Api(KeyedClient):
    tuning_path: Path


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    with in_process(tmp_path) as running, TestClient(running.app) as client:
        yield Api(client, running.keys, tmp_path / "tuning.sqlite3")


@pytest.mark.parametrize("value", ["Infinity", "-Infinity", "NaN", 1e308])
def test_a_value_that_is_not_finite_or_is_huge_is_refused_with_a_422_naming_the_field(api: Api, value: object) -> None:
    director = api.as_("director")
    body = {**DEFAULT_SECTIONS, "scoring": {**DEFAULT_SECTIONS["scoring"], "factual_half_life_days": value}}
    for method, path in (("PUT", "/v1/characters/ava/tuning"), ("POST", "/v1/characters/ava/tuning/validate")):
        response = api.client.request(method, path, json={**body, "note": "forever"}, headers=director)
        assert response.status_code == 422, (method, response.text)
        assert response.headers["content-type"].startswith("application/problem+json")
        assert [e["field"] for e in response.json()["errors"]] == ["scoring.factual_half_life_days"]
    replay = api.client.post("/v1/characters/ava/tuning/replay", headers=director,
                             json={"profile": body, "transcript": transcript(4, probe_every=1)})
    assert replay.status_code == 422, replay.text
    assert [e["field"] for e in replay.json()["errors"]] == ["profile.scoring.factual_half_life_days"]

    history = api.client.get("/v1/characters/ava/tuning/history", headers=director)
    assert history.status_code == 200 and history.json() == []
    SqliteTuningStore(api.tuning_path).close()  # what the next start opens


def test_the_history_endpoint_skips_an_unreadable_row_instead_of_answering_500(api: Api) -> None:
    director = api.as_("director")
    first = {**DEFAULT_SECTIONS, "strength": {**DEFAULT_SECTIONS["strength"], "tail_exponent": 0.8}}
    saved = api.client.put("/v1/characters/ava/tuning", json={**first, "note": "first"}, headers=director)
    assert saved.status_code == 200, saved.text
    _store_rows(api.tuning_path, [("acme:ava", 3, _body("acme:ava", 3, factual_half_life_days=None)),
                                  ("acme:ava", 4, "garbage")])
    history = api.client.get("/v1/characters/ava/tuning/history", headers=director)
    assert history.status_code == 200, history.text
    assert [v["version"] for v in history.json()] == [2, 1]
    assert history.json()[0]["profile"]["character_id"] == "ava"


# -- item 5: replays run bounded, off the serving process ---------------------------------------------------------

REPLAY_PROFILE = {"profile": DEFAULT_SECTIONS}


@dataclass(frozen=True)
class SlowComponents:
    """A worker's embedder and classifier for the replay tests: hashing and keyword fakes whose embeds take
    ``delay_s`` each; a text containing ``STUCK`` makes its embed block for a minute regardless of any deadline,
    as a hung native call would. Module level, so a spawned worker process can unpickle it."""

    delay_s: float = 0.0

    def __call__(self) -> tuple[Embedder, Classifier]:
        return _SlowEmbedder(self.delay_s), KeywordClassifier()


class _SlowEmbedder(HashingEmbedder):
    def __init__(self, delay_s: float) -> None:
        super().__init__()
        self._delay_s = delay_s

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        time.sleep(60.0 if any("STUCK" in text for text in texts) else self._delay_s)
        return super().embed(texts)


@contextlib.contextmanager
def app_over(tmp_path: Path, replays: ReplayRunnerType) -> Iterator[Api]:
    """The app over a test engine, its replays on ``replays``."""
    try:
        with in_process(tmp_path, replays=replays) as running, TestClient(running.app) as client:
            yield Api(client, running.keys, tmp_path / "tuning.sqlite3")
    finally:
        replays.close()


def alive(pid: int) -> bool:
    """Whether the process runs (a zombie does not: an orphan's is reaped only where an init process reaps)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    with contextlib.suppress(OSError):
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return True


def assert_retry_later(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert int(response.headers["retry-after"]) >= 1
    body: dict[str, Any] = response.json()
    assert body["status"] == status and body["title"] and body["detail"]
    assert body["retry_after_s"] == int(response.headers["retry-after"])
    return body


SMALL = transcript(4, probe_every=1, transcript_id="small")


def test_a_replay_past_its_deadline_answers_503_and_its_worker_stops_it_and_cleans_up(tmp_path: Path) -> None:
    from engine.replay_runner import ProcessWorkers, ReplayRunner

    workers = ProcessWorkers(SlowComponents(delay_s=0.05))
    for ready in workers.warm_up():
        ready.result(timeout=60)
    (pid,) = workers.pids
    with app_over(tmp_path, ReplayRunner(workers, timeout_s=1.5)) as api:
        director = api.as_("director")
        started = time.monotonic()
        # 80 turns and 20 probes, each embedded under both profiles: 200 embeds of 50 ms, 10 s unstopped.
        slow = api.client.post("/v1/characters/ava/tuning/replay", headers=director,
                               json={**REPLAY_PROFILE, "transcript": transcript(80, probe_every=2)})
        elapsed = time.monotonic() - started
        body = assert_retry_later(slow, 503)
        assert "did not finish within 1.5 s" in body["detail"] and body["backend"] == "replays"
        assert elapsed < 4.0  # stopped at its deadline, not run to the end
        assert workers.pids == [pid]  # the worker stopped it itself and is free again
        assert list(workers.scratch.iterdir()) == []  # its temporary memories are gone
        again = api.client.post("/v1/characters/ava/tuning/replay", headers=director,
                                json={**REPLAY_PROFILE, "transcript": SMALL})
        assert again.status_code == 200, again.text
    assert not alive(pid)  # closing the app's runner ended its worker


def test_a_worker_that_ignores_its_deadline_is_killed_and_replaced(tmp_path: Path) -> None:
    from engine.replay_runner import ProcessWorkers, ReplayRunner

    workers = ProcessWorkers(SlowComponents())
    for ready in workers.warm_up():
        ready.result(timeout=60)
    (pid,) = workers.pids
    scratch = workers.scratch
    with app_over(tmp_path, ReplayRunner(workers, timeout_s=1.0, abandon_after_s=1.0)) as api, \
            ThreadPoolExecutor(max_workers=1) as pool:
        director = api.as_("director")
        started = time.monotonic()
        stuck = pool.submit(api.client.post, "/v1/characters/ava/tuning/replay", headers=director,
                            json={**REPLAY_PROFILE, "transcript": transcript(6, probe_every=1, marker="STUCK")})
        time.sleep(0.3)
        # Another organisation's replay, waiting for the stuck worker, goes down with its pool.
        queued = api.client.post("/v1/characters/ava/tuning/replay", headers=api.as_("director", org="initech"),
                                 json={**REPLAY_PROFILE, "transcript": SMALL})
        assert_retry_later(stuck.result(), 503)
        assert time.monotonic() - started < 5.0  # the deadline and the grace after it, not the embed's minute
        assert_retry_later(queued, 503)
        assert not alive(pid) and not scratch.exists()  # killed and reaped; what it wrote is removed
        for ready in workers.warm_up():  # its replacement, once it has loaded
            ready.result(timeout=60)
        again = api.client.post("/v1/characters/ava/tuning/replay", headers=director,
                                json={**REPLAY_PROFILE, "transcript": SMALL})
        assert again.status_code == 200, again.text
        assert workers.pids and workers.pids != [pid]


ORPHANED_SERVICE = """
import time
from engine.replay_runner import ProcessWorkers
from tests.reliability.test_tuning_trust import SlowComponents

workers = ProcessWorkers(SlowComponents())
for ready in workers.warm_up():
    ready.result(timeout=60)
print(workers.pids[0], workers.scratch, flush=True)
time.sleep(120)
"""


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_the_worker_of_a_service_that_dies_without_closing_it_exits_too(stop: signal.Signals) -> None:
    # SIGTERM too: uvicorn raises it again after its shutdown, so `feltsense serve` never reaches its `finally`.
    service = subprocess.Popen([sys.executable, "-c", ORPHANED_SERVICE], stdout=subprocess.PIPE,
                               cwd=Path(__file__).resolve().parents[2])
    try:
        assert service.stdout is not None
        pid, scratch = service.stdout.readline().decode().split()
        assert alive(int(pid)) and Path(scratch).is_dir()
    finally:
        service.send_signal(stop)
        service.wait()
    deadline = time.monotonic() + 10.0
    while alive(int(pid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(int(pid)) and not Path(scratch).exists()


# -- item 5 on the served process (``feltsense serve``, the real embedder and classifier) ---------------------

REPLAY_TIMEOUT_S = 120.0
"""The client's; the service's own deadline is shorter."""
RECALL_TIMEOUT_S = 10.0
SAMPLES = 60
LOAD_ORGS = 8
"""Issue 13's measurement: eight replays at once."""
LOADED_PHASE_LIMIT_S = 30.0
"""Bounds the test when recall is starved (the original code: a recall took 91 s)."""


@dataclass
class Served:
    service: FeltsenseService
    tokens: dict[tuple[str, str], str]

    def headers(self, org: str, role: str = "director") -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[(org, role)]}"}

    def replay(self, org: str, text: str, client: httpx.Client | None = None) -> httpx.Response:
        post = client.post if client is not None else httpx.post
        return post(f"{self.service.url}/v1/characters/ava/tuning/replay", headers=self.headers(org),
                    json={**REPLAY_PROFILE, "transcript": text}, timeout=REPLAY_TIMEOUT_S)


SERVED_ORGS = ["warm", "busy", "other", "cost", *(f"g{i}" for i in range(8)), *(f"load{i}" for i in range(LOAD_ORGS))]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    from api.server import key_store
    from engine.settings import Settings

    data_dir = tmp_path_factory.mktemp("served") / "data"
    keys = key_store(Settings(data_dir=data_dir))
    tokens = {(org, "director"): keys.create(org, "director") for org in SERVED_ORGS}
    tokens["tenant", "runtime"] = keys.create("tenant", "runtime")
    keys.close()
    service = FeltsenseService(data_dir)
    service.start()
    try:
        served = Served(service, tokens)
        warm = served.replay("warm", SMALL)  # waits until the replay worker has loaded its models
        assert warm.status_code == 200, warm.text
        yield served
    finally:
        service.stop()


@pytest.mark.slow
def test_a_replay_above_the_cost_bound_is_refused_before_it_runs(served: Served) -> None:
    started = time.monotonic()
    refused = served.replay("cost", transcript(400, probe_every=1))  # 400 turns, 200 probes
    assert refused.status_code == 422, refused.text[:300]
    assert time.monotonic() - started < 5.0
    (error,) = refused.json()["errors"]
    assert error["field"] == "transcript"
    assert "200 probes" in error["message"] and re.search(r"at most \d+ turns x probes", error["message"])


@pytest.mark.slow
def test_a_second_replay_for_one_organisation_answers_429_with_retry_after(served: Served) -> None:
    with ThreadPoolExecutor(max_workers=2) as pool:
        first = pool.submit(served.replay, "busy", transcript(400, probe_every=5))  # seconds of work
        time.sleep(1.0)
        other = pool.submit(served.replay, "other", SMALL)
        second = served.replay("busy", SMALL)
        body = assert_retry_later(second, 429)
        assert "one runs at a time" in body["detail"]
        assert first.result().status_code == 200
        assert other.result().status_code == 200  # another organisation waits its turn, it is not refused


@pytest.mark.slow
def test_beyond_the_replays_the_service_takes_in_all_the_rest_answer_503_with_retry_after(served: Served) -> None:
    text = transcript(40, probe_every=2)
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda org: served.replay(org, text), [f"g{i}" for i in range(8)]))
    statuses = [answer.status_code for answer in answers]
    assert set(statuses) == {200, 503} and statuses.count(200) >= 2, statuses
    for answer in answers:
        if answer.status_code == 503:
            assert assert_retry_later(answer, 503)["backend"] == "replays"


def _covered(window: tuple[float, float], spans: Sequence[tuple[float, float]]) -> bool:
    """Whether the spans together cover the whole window."""
    reached = window[0]
    for start, end in sorted(spans):
        if start > reached:
            break
        reached = max(reached, end)
    return reached >= window[1]


@pytest.mark.slow
def test_recall_for_other_tenants_stays_within_2x_while_replays_run(served: Served) -> None:
    url = served.service.url
    runtime = served.headers("tenant", "runtime")
    turns = [{"turn_id": f"t{n}", "session_id": "s1", "character_id": "ava", "user_id": "u1",
              "role": "user" if n % 2 == 0 else "character", "text": LINES[n % len(LINES)].format(n=n),
              "timestamp": f"2025-03-02T18:{n:02d}:00Z"} for n in range(40)]
    with httpx.Client(base_url=url, headers=runtime, timeout=RECALL_TIMEOUT_S) as client:
        assert client.post("/v1/turns", json={"turns": turns}).status_code == 200

        def recall_ms() -> float:
            started = time.perf_counter()
            try:
                answer = client.post("/v1/recall", json={
                    "character_id": "ava", "user_id": "u1", "message": "How is Luna coping with the move?",
                    "session_id": "s2"})
            except httpx.TimeoutException:
                return RECALL_TIMEOUT_S * 1000
            assert answer.status_code == 200, answer.text
            time.sleep(0.01)
            return (time.perf_counter() - started - 0.01) * 1000

        for _ in range(10):
            recall_ms()
        quiet = [recall_ms() for _ in range(SAMPLES)]

        stop = threading.Event()
        replies: list[tuple[float, float, int]] = []
        load = transcript(150, probe_every=5)  # 150 turns, 15 probes: seconds of model calls

        def keep_replaying(org: str) -> None:
            with httpx.Client() as replayer:
                while not stop.is_set():
                    started = time.monotonic()
                    try:
                        status = served.replay(org, load, replayer).status_code
                    except httpx.TimeoutException:
                        status = 0
                    replies.append((started, time.monotonic(), status))
                    if status != 200:
                        stop.wait(0.25)

        threads = [threading.Thread(target=keep_replaying, args=(f"load{i}",)) for i in range(LOAD_ORGS)]
        for thread in threads:
            thread.start()
        try:
            time.sleep(2.0)  # every organisation's first replay has been admitted, queued or refused
            window_start = time.monotonic()
            loaded: list[float] = []
            while len(loaded) < SAMPLES and time.monotonic() - window_start < LOADED_PHASE_LIMIT_S:
                loaded.append(recall_ms())
            window_end = time.monotonic()
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=REPLAY_TIMEOUT_S)

    ratio = statistics.median(loaded) / statistics.median(quiet)
    print(f"recall median {statistics.median(quiet):.1f} ms quiet, {statistics.median(loaded):.1f} ms while "
          f"replays ran: {ratio:.2f}x ({sum(s == 200 for *_, s in replies)} replays answered, "
          f"{sum(s in (429, 503) for *_, s in replies)} refused)")
    assert _covered((window_start, window_end), [(start, end) for start, end, status in replies if status == 200]), \
        "replays did not run through the whole measurement"
    assert len(loaded) == SAMPLES, f"only {len(loaded)} recalls in {LOADED_PHASE_LIMIT_S:.0f} s"
    assert ratio <= 2.0, f"recall median {ratio:.1f}x slower while replays ran"
