"""The control plane on PostgreSQL, as the factory builds it: with ``FELTSENSE_POSTGRES__URL`` set, the ledger and
the tuning profiles of two engines (two processes, each with its own data directory) are one, and nothing of the
control plane is written to either data directory."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engine import build_ledger, build_profile_store
from engine.adapters.hashing_embedder import HashingEmbedder
from engine.adapters.postgres.ledger import PostgresLedger
from engine.adapters.postgres.tuning import PostgresTuningStore
from engine.domain.models import Partition, RecallQuery, Turn
from engine.domain.ports import ProfileStore
from engine.domain.tuning import ScoringParams
from engine.factory import LEDGER_FILE, POSTGRES_TUNING_CACHE_S, TUNING_FILE, build_engine
from engine.service import Engine
from engine.settings import Settings
from tests.fakes import KeywordClassifier

pytestmark = pytest.mark.postgres

T0 = datetime(2025, 3, 2, 18, tzinfo=UTC)


def _settings(url: str, data_dir: Path) -> Settings:
    return Settings(data_dir=data_dir, postgres={"url": url}, embedder="hashing")


@pytest.fixture
def two(postgres_url: str, tmp_path: Path) -> Iterator[tuple[tuple[Engine, ProfileStore], tuple[Engine, ProfileStore]]]:
    built = []
    for host in ("a", "b"):
        settings = _settings(postgres_url, tmp_path / host)
        tuning = build_profile_store(settings)
        engine = build_engine(settings, embedder=HashingEmbedder(), classifier=KeywordClassifier(), profiles=tuning)
        built.append((engine, tuning))
    yield built[0], built[1]
    for engine, tuning in built:
        engine.close()
        tuning.close()


def test_with_a_postgres_url_the_ledger_and_the_tuning_store_are_postgres_and_the_data_dir_holds_neither(
    postgres_url: str, tmp_path: Path,
) -> None:
    settings = _settings(postgres_url, tmp_path)
    ledger, tuning = build_ledger(settings), build_profile_store(settings)
    try:
        assert isinstance(ledger, PostgresLedger) and isinstance(tuning, PostgresTuningStore)
    finally:
        ledger.close()
        tuning.close()
    assert not (tmp_path / LEDGER_FILE).exists() and not (tmp_path / TUNING_FILE).exists()


def test_two_engines_share_the_recall_log_the_audit_and_the_tuning(
    two: tuple[tuple[Engine, ProfileStore], tuple[Engine, ProfileStore]],
) -> None:
    (a, tuning_a), (b, _) = two
    a.ingest([Turn(turn_id="t1", session_id="s1", character_id="ava", user_id="u1", role="user",
                   text="My dog Luna loves the beach.", timestamp=T0)])
    a.close_session("s1", closed_at=T0 + timedelta(minutes=5))
    on_a = a.recall(RecallQuery(character_id="ava", user_id="u1", message="the beach", at=T0 + timedelta(days=1)))

    partition = Partition(character_id="ava", user_id="u1")
    assert b.recall_record(on_a.recall_id, partition).recall_id == on_a.recall_id  # A's recall, read through B
    memory_id = on_a.memories[0].memory_id
    a.pin(memory_id, [partition], pinned=True, actor="director:k1")
    trail = b.audit_trail(partition)  # A's pin, in the one trail
    assert [(e.memory_id, e.event, e.actor) for e in trail][-1] == (memory_id, "pinned", "director:k1")
    assert trail == a.audit_trail(partition)

    saved = tuning_a.save(tuning_a.profile_for("ava").model_copy(update={"scoring": ScoringParams(anchor_boost=2.0)}),
                          author="director:k1", note="a stronger anchor boost")
    deadline = time.monotonic() + POSTGRES_TUNING_CACHE_S + 2.0
    while b.profiles.profile_for("ava").version != saved.version and time.monotonic() < deadline:
        time.sleep(0.05)
    on_b = b.recall(RecallQuery(character_id="ava", user_id="u1", message="the beach", at=T0 + timedelta(days=1)))
    assert on_b.trace.profile_version == saved.version  # B's next recall runs on A's save
