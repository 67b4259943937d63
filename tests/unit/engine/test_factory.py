"""The factory refuses, before it loads or connects anything, settings that would start but never work."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from engine.domain.errors import ConfigurationError
from engine.factory import build_embedded_engine, build_engine, check_settings
from engine.settings import Settings
from tests.fakes import KeywordClassifier


@pytest.fixture(autouse=True)
def _no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The settings under test are the ones written here, whatever FELTSENSE_* variables the runner has."""
    import os

    for name in list(os.environ):
        if name.startswith("FELTSENSE_") or name == "MISTRAL_API_KEY":
            monkeypatch.delenv(name)


def _settings(**values: object) -> Settings:
    return Settings.model_validate({"data_dir": Path("unused"), **values})


@pytest.mark.parametrize("classifier", ["local", "local-v1"])
def test_a_mistral_embedder_with_the_local_classifier_is_refused_naming_both_settings_and_the_fix(
    classifier: str,
) -> None:
    settings = _settings(embedder="mistral", classifier=classifier, mistral_api_key=SecretStr("k"))
    with pytest.raises(ConfigurationError) as refused:
        build_engine(settings)  # refused before any model loads or any request is made
    message = str(refused.value)
    assert f"FELTSENSE_CLASSIFIER={classifier}" in message and "FELTSENSE_EMBEDDER=mistral" in message
    assert "384-d" in message and "1024-d" in message and "pending" in message
    assert "Set FELTSENSE_EMBEDDER=local, or FELTSENSE_CLASSIFIER=mistral" in message


def test_the_hashing_embedder_with_the_local_classifier_is_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"FELTSENSE_EMBEDDER=hashing .*256-d"):
        check_settings(_settings(embedder="hashing", classifier="local"))


def test_a_mistral_provider_without_its_key_is_refused_before_anything_loads() -> None:
    settings = _settings(embedder="mistral", classifier="mistral", mistral_api_key=None)
    with pytest.raises(ConfigurationError, match=r"FELTSENSE_EMBEDDER=mistral needs MISTRAL_API_KEY"):
        check_settings(settings)
    with pytest.raises(ConfigurationError, match=r"FELTSENSE_CLASSIFIER=mistral needs MISTRAL_API_KEY"):
        check_settings(settings.model_copy(update={"embedder": "local"}))


@pytest.mark.parametrize("url", ["", "127.0.0.1:8080", "ftp://host:21"])
def test_the_weaviate_store_without_a_usable_url_is_refused(url: str) -> None:
    settings = _settings(store="weaviate", weaviate={"url": url})
    with pytest.raises(ConfigurationError, match=r"FELTSENSE_STORE=weaviate needs .* FELTSENSE_WEAVIATE__URL"):
        check_settings(settings)


@pytest.mark.parametrize(
    "values",
    [
        {},
        {"embedder": "mistral", "classifier": "mistral", "mistral_api_key": SecretStr("k")},
        {"embedder": "local", "classifier": "mistral", "mistral_api_key": SecretStr("k")},
        {"store": "weaviate", "weaviate": {"url": "https://weaviate.example:443"}},
    ],
)
def test_the_combinations_that_work_pass(values: dict[str, object]) -> None:
    check_settings(_settings(**values))


def test_an_embedded_scratch_engine_keeps_its_ledger_in_its_data_directory(tmp_path: Path) -> None:
    from engine.adapters.hashing_embedder import HashingEmbedder

    engine = build_embedded_engine(tmp_path, embedder=HashingEmbedder(), classifier=KeywordClassifier())
    try:
        assert (tmp_path / "ledger.sqlite3").is_file()
    finally:
        engine.close()
