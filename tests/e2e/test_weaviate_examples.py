"""The shipped tester transcripts (and the repository's own) pass on Weaviate too, replayed by the real CLI with
the real models.

Engines are built the way ``FELTSENSE_STORE=weaviate`` builds them (``engine.factory``), against the session's
server, with a fresh collection prefix per transcript so each replays into an empty memory.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from eval.cli import main
from tests.conftest import shared_path

if TYPE_CHECKING:
    from engine.transcripts.replay import TranscriptEngine
    from tests.servers.weaviate import WeaviateServer

pytestmark = [pytest.mark.slow, pytest.mark.weaviate]


def test_every_example_transcript_passes_on_weaviate(
    weaviate_server: WeaviateServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from engine.factory import build_classifier, build_embedder, build_engine
    from engine.settings import Settings, WeaviateSettings

    examples = shared_path("transcripts", "examples")
    settings = Settings(store="weaviate", data_dir=tmp_path / "unused",
                        weaviate=WeaviateSettings(url=weaviate_server.url, grpc_port=weaviate_server.grpc_port))
    embedder, classifier = build_embedder(settings), build_classifier(settings)
    prefixes: list[str] = []

    def engine_factory(data_dir: Path) -> TranscriptEngine:
        prefixes.append(f"Examples{uuid.uuid4().hex[:10]}")
        fresh = settings.model_copy(update={
            "data_dir": data_dir,
            "weaviate": settings.weaviate.model_copy(update={"collection_prefix": prefixes[-1]}),
        })
        return build_engine(fresh, embedder=embedder, classifier=classifier)

    report_path = tmp_path / "report.json"
    try:
        status = main(["eval", "run", str(examples), str(Path(__file__).parents[1] / "transcripts"),
                       "--json", str(report_path)], engine_factory=engine_factory)
    finally:
        for prefix in prefixes:
            weaviate_server.drop_collections(prefix)
    out = capsys.readouterr().out
    assert status == 0, out
    report = json.loads(report_path.read_text())
    assert report["failed"] == 0 and report["passed"] == report["probes"] >= 4
    assert len(prefixes) == report["transcripts"] >= 3  # one fresh set of collections per transcript
