"""A user's export and its import elsewhere (GDPR Articles 15 and 20).

The export holds everything held about the user with one character; NDJSON carries the same records a line
each; only the user's own runtime key may take it, and the audit trail records each. An import into Weaviate of
an embedded store's export exports the same document again, ids and timestamps included; ``feltsense import``
refuses malformed files and non-empty partitions (unless asked to merge, then idempotently)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from litestar.testing import TestClient

import api.export
from api.app import create_app
from api.auth import KeyStore
from api.export import read_document, scoped_document
from engine.adapters.hashing_embedder import HashingEmbedder
from engine.adapters.sqlite_ledger import SqliteLedger
from engine.service import Engine
from tests.fakes import KeywordClassifier
from tests.keys import sqlite_key_store
from tests.servers.feltsense import REPO

if TYPE_CHECKING:
    from tests.servers.weaviate import WeaviateServer

pytestmark = pytest.mark.export

SAID = datetime(2025, 3, 2, 18, tzinfo=UTC)
NOW = datetime(2026, 4, 1, 9, tzinfo=UTC)  # a year on: the grief is a standing rule by now
WHERE = {"character_id": "ava", "user_id": "tester-1"}


def fixed() -> datetime:
    return NOW


def said(user: str, session: str, texts: tuple[str, ...], start: int = 0) -> dict[str, Any]:
    return {"turns": [{"turn_id": f"{session}-{start + i}", "session_id": session, "character_id": "ava",
                       "user_id": user, "role": "user" if i % 2 == 0 else "character", "text": text,
                       "timestamp": (SAID + timedelta(minutes=start + i)).isoformat()}
                      for i, text in enumerate(texts)]}


class Api:
    def __init__(self, engine: Engine, keys: KeyStore) -> None:
        self.engine, self.keys = engine, keys
        self.client = TestClient(create_app(engine, keys=keys, transcript_dirs=()))
        self.runtime = {"Authorization": f"Bearer {keys.create('acme', 'runtime')}"}

    def history(self) -> None:
        """A user's weeks with the character, as the API makes them: turns both ways, a closed session with its
        traces and facts, a recall, a pin and an archive (audit events), an open session."""
        c, h = self.client, self.runtime
        assert c.post("/v1/turns", headers=h, json=said("tester-1", "s1", (
            "My dog Luna died last week.", "I am so sorry. Luna sounds like she was dearly loved.",
            "Luna and I walked in the park every single morning.", "Those mornings sound precious."))).is_success
        closed = c.post("/v1/sessions/s1/close", headers=h, json={"closed_at": (SAID + timedelta(hours=1)).isoformat()})
        assert closed.status_code == 200, closed.text
        assert c.post("/v1/turns", headers=h, json=said("tester-1", "s2", ("I started pottery classes.",),
                                                        start=100)).is_success
        assert c.post("/v1/recall", headers=h, json={**WHERE, "message": "a walk in the park",
                                                     "at": NOW.isoformat()}).is_success
        listed = c.get("/v1/memories", headers=h, params=WHERE).json()["items"]
        first, last = listed[0]["memory"]["memory_id"], listed[-1]["memory"]["memory_id"]
        assert c.post(f"/v1/memories/{first}/pin", headers=h, params=WHERE, json={"pinned": True}).is_success
        assert c.post(f"/v1/memories/{last}/archive", headers=h, params=WHERE).is_success

    def export(self, **params: str) -> dict[str, Any]:
        answer = self.client.get("/v1/users/tester-1/export", headers=self.runtime,
                                 params={"character_id": "ava", **params})
        assert answer.status_code == 200, answer.text
        return dict(answer.json())


@pytest.fixture
def source(tmp_path: Path) -> Iterator[Api]:
    embedder = HashingEmbedder()
    from engine.adapters.embedded_store import EmbeddedStore

    store = EmbeddedStore(tmp_path / "data", embedding_model=embedder.model_id, dimension=embedder.dimension)
    engine = Engine(store=store, embedder=embedder, classifier=KeywordClassifier(), ledger=SqliteLedger.in_memory(),
                    clock=fixed)
    keys = sqlite_key_store(tmp_path / "keys.sqlite3")
    api_ = Api(engine, keys)
    with api_.client:
        api_.history()
        yield api_
    engine.close()
    keys.close()


def test_an_export_holds_everything_about_the_user_and_is_audited(source: Api) -> None:
    document = source.export()
    assert (document["format"], document["version"]) == ("feltsense.export", 1)
    assert (document["character_id"], document["user_id"]) == ("ava", "tester-1")
    assert [t["turn_id"] for t in document["turns"]] == ["s1-0", "s1-1", "s1-2", "s1-3", "s2-100"]
    assert {s["session_id"]: s["closed"] for s in document["sessions"]} == {"s1": True, "s2": False}
    kinds = {m["memory"]["kind"] for m in document["memories"]}
    assert "fact" in kinds, "the facts distilled at the close are part of what is held"
    assert any(m["trace"] and m["trace"]["register"] == "grief" for m in document["memories"])
    assert any(m["state"]["pinned"] for m in document["memories"])
    assert {e["event"] for e in document["audit"]} >= {"pinned", "archived"}
    assert [r["register"] for r in document["tone_rules"]] == ["grief"]
    assert "acme" not in json.dumps(document), "ids come back as the organisation sent them"
    trail = source.client.get("/v1/audit", headers=source.runtime, params=WHERE).json()
    assert [e["actor"].split(":")[0] for e in trail if e["event"] == "exported"] == ["runtime"]


def test_ndjson_streams_the_same_records_a_line_each(source: Api) -> None:
    whole = source.export()
    answer = source.client.get("/v1/users/tester-1/export", params={"character_id": "ava"},
                               headers={**source.runtime, "Accept": "application/x-ndjson"})
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in answer.text.splitlines()]
    assert lines[0]["kind"] == "header" and lines[0]["format"] == "feltsense.export"
    assert lines[-1]["kind"] == "end"
    read = read_document(answer.text, source="the stream").model_dump(mode="json")
    assert {k: v for k, v in read.items() if k not in ("exported_at", "audit")} == {
        k: v for k, v in whole.items() if k not in ("exported_at", "audit")}
    # The trail now also holds the first export.
    assert read["audit"][:-1] == whole["audit"] and read["audit"][-1]["event"] == "exported"
    assert lines[-1]["counts"]["memory"] == len(whole["memories"])


def test_only_the_users_own_runtime_key_exports(source: Api) -> None:
    for role in ("admin", "evaluator"):
        answer = source.client.get("/v1/users/tester-1/export", params={"character_id": "ava"},
                                   headers={"Authorization": f"Bearer {source.keys.create('acme', role)}"})
        assert answer.status_code == 403, (role, answer.text)
    stranger = {"Authorization": f"Bearer {source.keys.create('globex', 'runtime')}"}
    theirs = source.client.get("/v1/users/tester-1/export", params={"character_id": "ava"}, headers=stranger).json()
    assert theirs["memories"] == [] and theirs["turns"] == [] and theirs["audit"] == []


@pytest.mark.hostile
def test_an_export_too_large_for_one_document_is_a_413_naming_ndjson(
    source: Api, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(api.export, "MAX_JSON_RECORDS", 3)
    answer = source.client.get("/v1/users/tester-1/export", params={"character_id": "ava"}, headers=source.runtime)
    assert answer.status_code == 413
    assert answer.headers["content-type"] == "application/problem+json"
    assert "ndjson" in answer.json()["detail"].lower()
    streamed = source.client.get("/v1/users/tester-1/export", params={"character_id": "ava", "format": "ndjson"},
                                 headers=source.runtime)
    assert streamed.status_code == 200 and streamed.text.count("\n") > 3


@pytest.mark.weaviate
def test_embedded_to_weaviate_and_back_is_the_same_document(
    source: Api, weaviate_server: WeaviateServer, tmp_path: Path,
) -> None:
    from engine.adapters.weaviate import WeaviateStore

    exported = source.export()
    embedder = HashingEmbedder()
    prefix = f"Export{uuid.uuid4().hex[:10]}"
    store = WeaviateStore(weaviate_server.url, grpc_port=weaviate_server.grpc_port, embedding_model=embedder.model_id,
                          dimension=embedder.dimension, collection_prefix=prefix, timeout_s=30)
    target = Engine(store=store, embedder=embedder, classifier=KeywordClassifier(), ledger=SqliteLedger.in_memory(),
                    clock=fixed)
    keys = sqlite_key_store(tmp_path / "target-keys.sqlite3")
    try:
        document = scoped_document("acme", read_document(json.dumps(exported), source="the export"))
        added = target.import_partition(document)
        assert added["memories"] == len(exported["memories"]) and added["turns"] == len(exported["turns"])
        again = Api(target, keys)
        with again.client:
            assert again.export() == exported
            # And the imported memories answer recall there, with the standing grief rule.
            recalled = again.client.post("/v1/recall", headers=again.runtime, json={
                **WHERE, "message": "I went for a walk in the park", "at": NOW.isoformat()}).json()
            assert "grieving" in recalled["context"]["system"]
    finally:
        target.close()
        keys.close()
        weaviate_server.drop_collections(prefix)


# -- feltsense import -------------------------------------------------------------------------------------------


def run_import(data_dir: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "api.cli", "import", *args, "--data-dir", str(data_dir)],
                          cwd=REPO, capture_output=True, text=True, timeout=300, input=stdin)


@pytest.mark.slow
@pytest.mark.hostile
def test_feltsense_import_loads_once_refuses_a_second_unless_merging_and_refuses_malformed_files(
    source: Api, tmp_path: Path,
) -> None:
    exported = tmp_path / "export.json"
    exported.write_text(json.dumps(source.export()))
    target = tmp_path / "target"

    loaded = run_import(target, str(exported), "--org", "acme")
    assert loaded.returncode == 0, loaded.stderr
    report = json.loads(loaded.stdout)
    assert report["added"]["memories"] > 0 and report["added"]["audit"] > 0

    refused = run_import(target, str(exported), "--org", "acme")
    assert refused.returncode == 2 and "already holds" in refused.stderr and "merge" in refused.stderr
    merged = run_import(target, str(exported), "--org", "acme", "--merge")
    assert merged.returncode == 0, merged.stderr
    assert all(count == 0 for count in json.loads(merged.stdout)["added"].values()), merged.stdout

    document = json.loads(exported.read_text())
    broken = {
        "not JSON": "{not json",
        "a wrong format": json.dumps({**document, "format": "something.else"}),
        "a memory of another user": json.dumps({**document, "memories": [
            {**document["memories"][0], "memory": {**document["memories"][0]["memory"], "user_id": "someone-else"}}]}),
        "an NDJSON file cut short": '{"kind": "header", "format": "feltsense.export", "version": 1}\n',
        "a missing section": json.dumps({k: v for k, v in document.items() if k != "turns"}),
    }
    fresh = tmp_path / "fresh"
    for what, text in broken.items():
        done = run_import(fresh, "-", "--org", "acme", stdin=text)
        assert done.returncode == 2, (what, done.stdout, done.stderr)
        assert "nothing was loaded" in done.stderr, (what, done.stderr)
    store = fresh / "feltsense.sqlite3"  # only the one refused after the files were opened made them
    if store.exists():
        with contextlib.closing(sqlite3.connect(store)) as db:
            assert db.execute("SELECT COUNT(*) FROM memories").fetchone() == (0,)
            assert db.execute("SELECT COUNT(*) FROM turns").fetchone() == (0,)
