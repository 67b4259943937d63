"""The service in process, over real stores in a test's directory: the app, and the engine and stores behind it.

The hashing embedder and the keyword classifier stand in for the models, so what a test exercises is the API,
the engine and the stores. ``engine_class``, ``ledger_class`` and ``replays`` take a test's own subclass or runner
(a recall that fails, a ledger that stalls); ``queued`` gives the app the in-process job queue, as
``feltsense serve`` runs it. ``KeyedClient`` is a test client with a header for any role's fresh key.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from litestar import Litestar
from litestar.testing import TestClient

from api.app import create_app
from api.auth import KeyStore
from engine.adapters.embedded_store import EmbeddedStore
from engine.adapters.hashing_embedder import HashingEmbedder
from engine.adapters.sqlite_ledger import SqliteLedger
from engine.adapters.sqlite_tuning import SqliteTuningStore
from engine.jobs import InProcessJobs
from engine.replay_runner import ReplayRunner
from engine.service import Engine
from tests.fakes import KeywordClassifier
from tests.keys import sqlite_key_store


@dataclass
class Clock:
    """The engine's clock: now, plus however far a test moved it on (``later``), so that a fact written "now"
    can be swept weeks later."""

    offset: timedelta = timedelta(0)

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.offset

    def later(self, **delta: float) -> None:
        self.offset += timedelta(**delta)


@dataclass(frozen=True)
class InProcess:
    app: Litestar
    engine: Engine
    keys: KeyStore
    tuning: SqliteTuningStore
    clock: Clock


@contextlib.contextmanager
def in_process(root: Path, *, engine_class: type[Engine] = Engine, ledger_class: type[SqliteLedger] = SqliteLedger,
               queued: bool = False, replays: ReplayRunner | None = None,
               transcript_dirs: Sequence[Path] | None = ()) -> Iterator[InProcess]:
    """Files under ``root``: ``data/`` (the store), ``ledger.sqlite3``, ``tuning.sqlite3``, ``keys.sqlite3``. The
    tuning page lists no transcripts unless ``transcript_dirs`` says where (None: the setting's default)."""
    embedder = HashingEmbedder()
    tuning = SqliteTuningStore(root / "tuning.sqlite3")
    store = EmbeddedStore(root / "data", embedding_model=embedder.model_id, dimension=embedder.dimension)
    clock = Clock()
    engine = engine_class(store=store, embedder=embedder, classifier=KeywordClassifier(), profiles=tuning,
                          ledger=ledger_class(root / "ledger.sqlite3"), clock=clock)
    keys = sqlite_key_store(root / "keys.sqlite3")
    try:
        app = create_app(engine, keys=keys, tuning=tuning, transcript_dirs=transcript_dirs,
                         jobs=InProcessJobs(engine) if queued else None, replays=replays)
        yield InProcess(app, engine, keys, tuning, clock)
    finally:
        engine.close()
        tuning.close()
        keys.close()


@dataclass
class KeyedClient:
    """A test client of the app, and its key store: ``as_`` is the header of a fresh key for a role."""

    client: TestClient[Any]
    keys: KeyStore

    def as_(self, role: str, org: str = "acme") -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys.create(org, role)}"}


class CachedKeys:
    """``headers(role, org)``: the header of one key per role and organisation, created on first use, for a
    dataclass with the fields ``keys`` and ``tokens`` (``field(default_factory=dict)``)."""

    keys: KeyStore
    tokens: dict[tuple[str, str], str]

    def headers(self, role: str, org: str = "acme") -> dict[str, str]:
        if (org, role) not in self.tokens:
            self.tokens[(org, role)] = self.keys.create(org, role)
        return {"Authorization": f"Bearer {self.tokens[(org, role)]}"}
