"""The Mistral adapters driving the real SDK against the fake Mistral server: request shapes, retries and
backoff, error mapping, validation; and the engine running on them through an outage."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pytest

from engine.adapters.embedded_store import EmbeddedStore
from engine.adapters.hashing_embedder import HashingEmbedder
from engine.adapters.mistral import MistralClassifier, MistralEmbedder
from engine.adapters.sqlite_ledger import SqliteLedger
from engine.domain.errors import BackendRejected, BackendUnavailable, ConfigurationError
from engine.domain.models import Partition, RecallQuery, RecallResult, TraceStatus, Turn
from engine.factory import build_classifier, build_embedder
from engine.service import Engine
from engine.settings import MistralSettings, Settings
from prompts.write_time import PROMPT_VERSION, SessionClassification
from tests.fake_mistral import FakeMistral, fake_vector
from tests.fakes import KeywordClassifier
from tests.sessions import LUNA_LONG as LUNA
from tests.sessions import T0, make_turns

EMBEDDINGS = "/v1/embeddings"
CHAT = "/v1/chat/completions"
LUNA_MEMORIES = [text for role, text in LUNA if role == "user"]


def luna_turns(session: str) -> list[Turn]:
    return make_turns(session, LUNA)


def recall(engine: Engine, message: str) -> RecallResult:
    return engine.recall(RecallQuery(character_id="ava", user_id="u1", message=message, session_id="later",
                                     at=T0 + timedelta(days=1)))


@pytest.fixture
def fake() -> Iterator[FakeMistral]:
    with FakeMistral(slow_s=1.0) as server:
        yield server


@pytest.fixture
def sleeps() -> list[float]:
    """The backoff delays the adapters asked for; recorded instead of slept, so retry tests take no time."""
    return []


Adapter = TypeVar("Adapter", MistralEmbedder, MistralClassifier)


def adapter_maker(adapter: type[Adapter], base: dict[str, Any], api_key: str, sleeps: list[float],
                  ) -> tuple[Callable[..., Adapter], list[Adapter]]:
    """A ``make(**overrides)`` for the adapter on the fake server (fast retries, recorded sleeps), and the list
    of what it made, to close afterwards."""
    made: list[Adapter] = []

    def make(**overrides: Any) -> Adapter:
        options: dict[str, Any] = {**base, "timeout_s": 2.0, "max_retries": 3, "backoff_base_s": 0.01,
                                   "backoff_max_s": 1.0, "sleep": sleeps.append, **overrides}
        made.append(adapter(options.pop("api_key", api_key), **options))
        return made[-1]

    return make, made


def adapter_fixture(adapter: type[Adapter], options: Callable[[FakeMistral], dict[str, Any]]) -> Any:
    """A fixture of ``make(**overrides)`` for the adapter (see ``adapter_maker``), closing what it made."""

    @pytest.fixture
    def fixture(fake: FakeMistral, sleeps: list[float]) -> Iterator[Callable[..., Adapter]]:
        make, made = adapter_maker(adapter, options(fake), fake.api_key, sleeps)
        yield make
        for each in made:
            each.close()

    return fixture


make_embedder = adapter_fixture(MistralEmbedder, lambda fake: {"server_url": fake.url, "dimension": fake.dimension})
make_classifier = adapter_fixture(MistralClassifier, lambda fake: {"server_url": fake.url, "model": fake.chat_model})


def classify(classifier: MistralClassifier, texts: list[str]):  # type: ignore[no-untyped-def]
    return classifier.classify(texts, HashingEmbedder().embed(texts))


# -- requests -------------------------------------------------------------------------------------------------


def test_embeddings_are_requested_in_batches_with_the_key_and_the_model(
    fake: FakeMistral, make_embedder: Callable[..., MistralEmbedder]
) -> None:
    texts = [f"memory {i}" for i in range(10)]
    vectors = make_embedder(batch_size=4).embed(texts)

    sent = fake.requests_to(EMBEDDINGS)
    assert len(sent) == 3  # ceil(10 / 4)
    assert [r.body["input"] for r in sent] == [texts[0:4], texts[4:8], texts[8:10]]
    assert {r.headers["authorization"] for r in sent} == {f"Bearer {fake.api_key}"}
    assert {r.body["model"] for r in sent} == {"mistral-embed"}
    expected = np.array([fake_vector(t, fake.dimension) for t in texts])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(vectors, expected, atol=1e-6)  # every row back in its place, normalised


def test_no_texts_make_no_request(fake: FakeMistral, make_embedder: Callable[..., MistralEmbedder],
                                  make_classifier: Callable[..., MistralClassifier]) -> None:
    assert make_embedder().embed([]).shape == (0, fake.dimension)
    assert classify(make_classifier(), []) == []
    assert fake.requests == []


def test_a_session_is_classified_in_one_structured_chat_call(
    fake: FakeMistral, make_classifier: Callable[..., MistralClassifier]
) -> None:
    classifier = make_classifier()
    results = classify(classifier, LUNA_MEMORIES)

    (sent,) = fake.requests_to(CHAT)
    assert sent.headers["authorization"] == f"Bearer {fake.api_key}"
    assert sent.body["model"] == fake.chat_model and sent.body["temperature"] == 0
    system, user = sent.body["messages"]
    assert (system["role"], user["role"]) == ("system", "user")
    assert "JSON only" in system["content"]
    assert json.loads(user["content"]) == {"memories": [{"index": i, "text": t}
                                                        for i, t in enumerate(LUNA_MEMORIES, start=1)]}
    schema_format = sent.body["response_format"]
    assert schema_format["type"] == "json_schema" and schema_format["json_schema"]["strict"] is True
    assert schema_format["json_schema"]["name"] == "SessionClassification"

    assert classifier.name == f"mistral:{fake.chat_model}@{PROMPT_VERSION}"
    assert classifier.per_sentence is False
    assert [r.register for r in results] == ["grief", "sadness", "grief"]
    assert results[0].facts == ("The user had a dog named Luna.",)
    assert results[2].anchors == ("Luna", "the park")  # "miss her": the model read the session
    assert {r.resolution for r in results} == {"none"} and all(r.resolves == () for r in results)
    memory_schema = schema_format["json_schema"]["schema"]["$defs"]["MemoryClassification"]
    assert {"resolution", "resolves"} <= set(memory_schema["required"])


def test_a_model_answer_that_resolves_nothing_it_could_is_refused() -> None:
    item = {"register": "joy", "valence": 0.5, "intensity": 0.5, "anchors": [], "facts": []}
    with pytest.raises(ValueError, match="resolution is none"):
        SessionClassification.model_validate(
            {"memories": [{**item, "index": 2, "resolution": "none", "resolves": [1]}]})
    with pytest.raises(ValueError, match="only resolve earlier"):
        SessionClassification.model_validate(
            {"memories": [{**item, "index": 2, "resolution": "apology", "resolves": [2]}]})


# -- retries and backoff ----------------------------------------------------------------------------------------


def test_a_429_is_retried_after_the_servers_retry_after(
    fake: FakeMistral, make_embedder: Callable[..., MistralEmbedder], sleeps: list[float]
) -> None:
    fake.fail_next("rate_limited", times=2, retry_after="0.25")
    assert make_embedder().embed(["hello"]).shape == (1, fake.dimension)
    assert len(fake.requests_to(EMBEDDINGS)) == 3
    assert sleeps == [0.25, 0.25]


def test_without_retry_after_the_backoff_grows_exponentially(
    fake: FakeMistral, make_classifier: Callable[..., MistralClassifier], sleeps: list[float]
) -> None:
    fake.fail_next("server_error", times=3)
    assert len(classify(make_classifier(backoff_base_s=0.01, backoff_max_s=0.03), LUNA_MEMORIES)) == 3
    assert len(fake.requests_to(CHAT)) == 4
    # base * 2**retry, capped at the maximum, with jitter in [50%, 100%]
    for delay, ceiling in zip(sleeps, [0.01, 0.02, 0.03], strict=True):
        assert ceiling / 2 <= delay <= ceiling


def test_server_errors_that_outlast_the_retries_are_unavailable(
    fake: FakeMistral, make_embedder: Callable[..., MistralEmbedder]
) -> None:
    fake.fail_next("server_error", times=2)
    fake.fail_next("unavailable", times=10)
    with pytest.raises(BackendUnavailable, match="after 3 attempt") as raised:
        make_embedder(max_retries=2).embed(["hello"])
    assert len(fake.requests_to(EMBEDDINGS)) == 3
    assert raised.value.backend == "mistral:mistral-embed"
    assert raised.value.retry_after_s > 0


def test_a_retry_after_longer_than_the_backoff_cap_is_raised_not_waited_out(
    fake: FakeMistral, make_embedder: Callable[..., MistralEmbedder], sleeps: list[float]
) -> None:
    fake.fail_next("rate_limited", retry_after="120")
    with pytest.raises(BackendUnavailable, match="retry in 120 s") as raised:
        make_embedder(backoff_max_s=10.0).embed(["hello"])
    assert raised.value.retry_after_s == 120  # what the API's 503 will tell its caller
    assert len(fake.requests_to(EMBEDDINGS)) == 1 and sleeps == []


def test_a_timeout_is_retried_then_unavailable(
    fake: FakeMistral, make_classifier: Callable[..., MistralClassifier]
) -> None:
    fake.fail_next("slow", times=2)
    with pytest.raises(BackendUnavailable, match=r"no answer within 0\.2 s"):
        classify(make_classifier(timeout_s=0.2, max_retries=1), ["hello"])
    assert len(fake.requests_to(CHAT)) == 2


def test_a_slow_answer_then_a_fast_one_succeeds(
    fake: FakeMistral, make_embedder: Callable[..., MistralEmbedder]
) -> None:
    fake.fail_next("slow")
    assert make_embedder(timeout_s=0.2).embed(["hello"]).shape == (1, fake.dimension)
    assert len(fake.requests_to(EMBEDDINGS)) == 2


def test_an_unreachable_server_is_unavailable(make_embedder: Callable[..., MistralEmbedder]) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens on it
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(BackendUnavailable, match="cannot be reached"):
        make_embedder(server_url=f"http://127.0.0.1:{port}", max_retries=1).embed(["hello"])


# -- rejections (never retried) ---------------------------------------------------------------------------------


def test_a_wrong_key_is_rejected_without_retrying(
    fake: FakeMistral, make_embedder: Callable[..., MistralEmbedder],
    make_classifier: Callable[..., MistralClassifier],
) -> None:
    with pytest.raises(BackendRejected, match="HTTP 401"):
        make_embedder(api_key="not-the-key").embed(["hello"])
    with pytest.raises(BackendRejected, match="HTTP 401"):
        classify(make_classifier(api_key="not-the-key"), ["hello"])
    assert len(fake.requests) == 2


def test_an_unknown_model_is_rejected(fake: FakeMistral, make_embedder: Callable[..., MistralEmbedder]) -> None:
    with pytest.raises(BackendRejected, match=r"HTTP 400.*Invalid model"):
        make_embedder(model="mistral-embed-v9").embed(["hello"])
    assert len(fake.requests) == 1


def test_a_malformed_body_is_rejected_without_retrying(
    fake: FakeMistral, make_embedder: Callable[..., MistralEmbedder],
    make_classifier: Callable[..., MistralClassifier],
) -> None:
    fake.fail_next("malformed", times=2)
    with pytest.raises(BackendRejected, match="malformed body"):
        make_embedder().embed(["hello"])
    with pytest.raises(BackendRejected, match="malformed body"):
        classify(make_classifier(), ["hello"])
    assert len(fake.requests) == 2


@pytest.mark.parametrize(("failure", "message"), [
    ("wrong_count", "2 vectors for 3 texts"),
    ("wrong_dimension", "dimension 1023, expected 1024"),
])
def test_unusable_embeddings_are_rejected(fake: FakeMistral, make_embedder: Callable[..., MistralEmbedder],
                                          failure: Any, message: str) -> None:
    fake.fail_next(failure)
    with pytest.raises(BackendRejected, match=message):
        make_embedder().embed(["a", "b", "c"])


@pytest.mark.parametrize(("failure", "message"), [
    ("out_of_range", r"valence: Input should be greater than or equal to -1.*intensity: Input should be less"),
    ("unknown_register", "register: Input should be 'grief'"),
    ("wrong_count", r"missing \[3\]"),
    ("not_json", "Invalid JSON"),
    ("refusal", "Invalid JSON"),
    ("bad_resolution", "memory 3 can only resolve earlier memories"),
])
def test_an_invalid_classification_is_rejected_not_clamped(
    fake: FakeMistral, make_classifier: Callable[..., MistralClassifier], failure: Any, message: str
) -> None:
    fake.fail_next(failure)
    with pytest.raises(BackendRejected, match=message):
        classify(make_classifier(), LUNA_MEMORIES)
    assert len(fake.requests) == 1


def test_each_memory_must_be_answered_exactly_once() -> None:
    item = {"register": "joy", "valence": 0.5, "intensity": 0.5, "anchors": [], "facts": [], "resolution": "none",
            "resolves": []}
    twice = SessionClassification.model_validate({"memories": [{**item, "index": 1}, {**item, "index": 1}]})
    with pytest.raises(ValueError, match="memory 1 was classified twice"):
        twice.in_order(2)
    shuffled = SessionClassification.model_validate(
        {"memories": [{**item, "index": 2, "register": "anger"}, {**item, "index": 1}]}
    )
    assert [c.register for c in shuffled.in_order(2)] == ["joy", "anger"]


# -- construction -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("overrides", [
    {"api_key": ""}, {"server_url": "127.0.0.1:8080"}, {"timeout_s": 0}, {"max_retries": -1},
    {"batch_size": 0}, {"dimension": 0},
])
def test_a_misconfigured_embedder_fails_at_construction(overrides: dict[str, Any]) -> None:
    options: dict[str, Any] = {"api_key": "key", "server_url": "http://127.0.0.1:1", **overrides}
    with pytest.raises(ConfigurationError):
        MistralEmbedder(options.pop("api_key"), **options)


def test_the_factory_builds_both_adapters_from_settings(fake: FakeMistral) -> None:
    settings = Settings(embedder="mistral", classifier="mistral", mistral_api_key=fake.api_key,  # type: ignore[arg-type]
                        mistral=MistralSettings(server_url=fake.url, chat_model=fake.chat_model, timeout_s=2.0))
    embedder, classifier = build_embedder(settings), build_classifier(settings)
    assert (embedder.model_id, embedder.dimension) == ("mistral-embed", 1024)
    assert embedder.embed(["hello"]).shape == (1, 1024)
    assert len(classifier.classify(["hello"], embedder.embed(["hello"]))) == 1
    for adapter in (embedder, classifier):
        adapter.close()  # type: ignore[attr-defined]


# -- the engine on Mistral --------------------------------------------------------------------------------------


def test_closing_a_session_writes_the_models_register_anchors_and_facts(
    tmp_path: Path, make_classifier: Callable[..., MistralClassifier]
) -> None:
    embedder = HashingEmbedder()
    store = EmbeddedStore(tmp_path, embedding_model=embedder.model_id, dimension=embedder.dimension)
    engine = Engine(ledger=SqliteLedger.in_memory(), store=store, embedder=embedder, classifier=make_classifier())
    engine.ingest(luna_turns("s1"))
    assert engine.close_session("s1", closed_at=T0 + timedelta(minutes=5)).traces_written == 3

    memories = store.session_memories("s1")
    traces = [store.get_traces([m.memory_id for m in memories])[m.memory_id] for m in memories]
    assert {t.classifier for t in traces} == {f"mistral:mistral-small-latest@{PROMPT_VERSION}"}
    # The model said sadness for the second memory; it shares Luna with the first, so the episode carries grief.
    assert [t.register for t in traces] == ["grief", "grief", "grief"]
    assert "The user had a dog named Luna." in traces[0].facts  # from the model, beside the extracted ones
    assert 'The user\'s dog is called "Luna".' in traces[0].facts
    assert "the park" in traces[1].anchors  # an anchor only the model named
    # The model's structured facts become atomic facts; a name is trusted from a first-person statement. Its
    # sentence is the server's, as for every fact from the user's words.
    facts = {f.text: s.status for f, s in engine.list_facts("user", memories[0].character_id, memories[0].user_id)}
    assert facts.get('The user\'s dog is called "Luna".') == "active"
    engine.close()


WORRY = [("user", "I'm so worried about the biopsy, I can't sleep."), ("character", "That's a lot to carry."),
         ("user", "Nervous about the biopsy results, honestly.")]
NEWS = [("user", "The biopsy came back clear, such a relief!"), ("character", "Wonderful news!")]


def session_turns(session: str, lines: list[tuple[str, str]], *, days: float) -> list[Turn]:
    start = T0 + timedelta(days=days)
    return [Turn(turn_id=f"{session}-{i}", session_id=session, character_id="ava", user_id="u1", role=role,  # type: ignore[arg-type]
                 text=text, timestamp=start + timedelta(seconds=30 * i)) for i, (role, text) in enumerate(lines)]


def test_the_models_resolutions_reach_the_trace_and_the_ledger(
    tmp_path: Path, fake: FakeMistral, make_classifier: Callable[..., MistralClassifier]
) -> None:
    """Worry and good news in one session: the model names the memories it settles. A later session's news
    settles an earlier session's worry by the writer's rule pass (the model only sees its own session)."""
    embedder = HashingEmbedder()
    store = EmbeddedStore(tmp_path, embedding_model=embedder.model_id, dimension=embedder.dimension)
    engine = Engine(ledger=SqliteLedger.in_memory(), store=store, embedder=embedder, classifier=make_classifier())
    partition = Partition(character_id="ava", user_id="u1")
    engine.ingest(session_turns("s1", [*WORRY, *NEWS], days=0))
    engine.close_session("s1", closed_at=T0 + timedelta(minutes=5))
    first, second, news = store.session_memories("s1")
    trace = store.get_traces([news.memory_id])[news.memory_id]
    assert trace.classifier == f"mistral:{fake.chat_model}@{PROMPT_VERSION}"
    assert (trace.register, trace.resolution_cue) == ("joy", "the result came back fine (model)")
    assert set(trace.resolves) == {first.memory_id, second.memory_id}
    assert {(r.memory_id, r.link) for r in engine.resolutions(partition)} == {
        (first.memory_id, "named by the model"), (second.memory_id, "named by the model")}

    engine.ingest(session_turns("s2", WORRY, days=10))
    engine.close_session("s2", closed_at=T0 + timedelta(days=10, minutes=5))
    engine.ingest(session_turns("s3", NEWS, days=20))
    engine.close_session("s3", closed_at=T0 + timedelta(days=20, minutes=5))
    later = {m.memory_id for m in store.session_memories("s2")}
    by_s3 = {r.memory_id: r.link for r in engine.resolutions(partition)
             if r.resolved_by == store.session_memories("s3")[0].memory_id}
    assert set(by_s3) == later and set(by_s3.values()) <= {"shared anchor", "same episode (shared anchor)"}
    result = engine.recall(RecallQuery(character_id="ava", user_id="u1", message="The biopsy follow-up is soon.",
                                       session_id="later", at=T0 + timedelta(days=25)))
    assert "anxiety" not in {c.register for c in result.tone_in_force}
    engine.close()


@pytest.mark.parametrize("failure", ["refusal", "malformed", "not_json", "out_of_range", "unknown_register",
                                     "wrong_count", "bad_resolution"])
def test_an_unusable_answer_leaves_traces_pending_and_a_retry_completes_them(
    tmp_path: Path, fake: FakeMistral, make_classifier: Callable[..., MistralClassifier], failure: Any
) -> None:
    """A refusal, a body that is not JSON, values out of range: nothing is clamped and nothing is lost."""
    embedder = HashingEmbedder()
    store = EmbeddedStore(tmp_path, embedding_model=embedder.model_id, dimension=embedder.dimension)
    engine = Engine(ledger=SqliteLedger.in_memory(), store=store, embedder=embedder, classifier=make_classifier())
    engine.ingest(session_turns("s1", [*WORRY, *NEWS], days=0))
    fake.fail_next(failure)

    report = engine.close_session("s1", closed_at=T0 + timedelta(minutes=5))
    assert (report.traces_written, report.traces_pending) == (0, 3)
    ids = [m.memory_id for m in store.session_memories("s1")]
    assert len(ids) == 3 and len(store.get_turns("s1")) == 5  # every memory and turn is kept
    pending = store.get_traces(ids)
    assert all(t.status is TraceStatus.PENDING and t.attempts == 1 and "BackendRejected" in t.last_error
               for t in pending.values())
    assert engine.resolutions(Partition(character_id="ava", user_id="u1")) == []

    assert engine.retry_pending() == 3
    done = store.get_traces(ids)
    assert {t.status for t in done.values()} == {TraceStatus.COMPLETE} and {t.attempts for t in done.values()} == {2}
    assert done[ids[2]].resolution_cue and len(engine.resolutions(Partition(character_id="ava", user_id="u1"))) == 2
    engine.close()


def test_a_classifier_outage_leaves_traces_pending_until_a_retry_completes_them(
    tmp_path: Path, fake: FakeMistral, make_classifier: Callable[..., MistralClassifier]
) -> None:
    embedder = HashingEmbedder()
    store = EmbeddedStore(tmp_path, embedding_model=embedder.model_id, dimension=embedder.dimension)
    engine = Engine(ledger=SqliteLedger.in_memory(),
                    store=store, embedder=embedder, classifier=make_classifier(max_retries=1))
    engine.ingest(luna_turns("s1"))
    fake.fail_next("server_error", times=2)

    report = engine.close_session("s1", closed_at=T0 + timedelta(minutes=5))
    assert (report.traces_written, report.traces_pending) == (0, 3)
    ids = [m.memory_id for m in store.session_memories("s1")]
    pending = store.get_traces(ids)
    assert all(t.status is TraceStatus.PENDING and "BackendUnavailable" in t.last_error for t in pending.values())

    assert engine.retry_pending() == 3
    assert {t.status for t in store.get_traces(ids).values()} == {TraceStatus.COMPLETE}
    assert len(fake.requests_to(CHAT)) == 3
    engine.close()


def test_an_embedder_outage_degrades_recall_to_lexical_and_loses_no_turn(
    tmp_path: Path, fake: FakeMistral, make_embedder: Callable[..., MistralEmbedder]
) -> None:
    embedder = make_embedder(max_retries=0)
    store = EmbeddedStore(tmp_path, embedding_model=embedder.model_id, dimension=embedder.dimension)
    engine = Engine(ledger=SqliteLedger.in_memory(), store=store, embedder=embedder, classifier=KeywordClassifier())
    fake.fail_next("server_error", times=100)

    report = engine.ingest(luna_turns("s1"))
    assert (report.stored, report.memories, report.awaiting_embedding) == (5, 3, 3)
    found = recall(engine, "walked in the park")
    assert found.trace.mode == "lexical" and any("park" in m.text for m in found.memories)
    assert any("BackendUnavailable" in note for note in found.trace.notes)

    fake.clear_failures()
    assert engine.backfill_vectors() == 3
    assert recall(engine, "walked in the park").trace.mode == "hybrid"
    engine.close()
