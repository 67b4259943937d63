"""The service's commands (api/cli.py) under the ``feltsense`` script: refused settings stop them before they start,
and ``--version`` stays instant."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
IMPOSSIBLE = {"FELTSENSE_EMBEDDER": "mistral", "FELTSENSE_CLASSIFIER": "local", "MISTRAL_API_KEY": "not-used"}


def _environment(**values: str) -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items() if not k.startswith("FELTSENSE_") and k != "MISTRAL_API_KEY"}
    return {**kept, "PYTHONUNBUFFERED": "1", **values}


@pytest.mark.parametrize("module", ["eval.cli", "api.cli"])
def test_serve_with_a_mistral_embedder_and_the_local_classifier_exits_with_the_reason_and_starts_nothing(
    tmp_path: Path, module: str
) -> None:
    data_dir = tmp_path / "data"
    ran = subprocess.run(
        [sys.executable, "-m", module, "serve", "--port", "1", "--data-dir", str(data_dir)],
        env=_environment(**IMPOSSIBLE), capture_output=True, text=True, timeout=60, cwd=REPO, check=False,
    )
    assert ran.returncode == 2, ran.stderr
    assert ran.stderr.startswith("feltsense serve: FELTSENSE_CLASSIFIER=local with FELTSENSE_EMBEDDER=mistral")
    assert "Set FELTSENSE_EMBEDDER=local, or FELTSENSE_CLASSIFIER=mistral" in ran.stderr
    assert "Traceback" not in ran.stderr
    assert not data_dir.exists()  # no store, key or tuning file was opened; nothing was bound or loaded


def test_worker_with_the_same_combination_is_refused_too(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    from eval.cli import main

    for name, value in {**IMPOSSIBLE, "FELTSENSE_STORE": "weaviate",
                        "FELTSENSE_REDIS_URL": "redis://127.0.0.1:1/0"}.items():
        monkeypatch.setenv(name, value)
    assert main(["worker", "--burst"]) == 2
    assert "feltsense worker: FELTSENSE_CLASSIFIER=local with FELTSENSE_EMBEDDER=mistral" in capsys.readouterr().err


def test_a_setting_that_does_not_parse_is_named_without_a_traceback(monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from eval.cli import main

    monkeypatch.setenv("FELTSENSE_EMBEDDER", "word2vec")
    assert main(["keys", "list", "--data-dir", "unused"]) == 2
    assert "feltsense keys: invalid settings" in capsys.readouterr().err


def test_version_and_the_parser_import_neither_the_engine_nor_its_settings() -> None:
    probe = """\
import sys
from eval.cli import build_parser
build_parser()
loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('engine', 'traces', 'pydantic', 'numpy'))
print(loaded)
"""
    ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO,
                         timeout=60)
    assert ran.stdout.strip() == "[]"
