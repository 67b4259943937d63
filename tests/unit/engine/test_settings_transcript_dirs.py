"""The ``transcript_dirs`` setting: what the tuning page offers, from the environment like PATH."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.settings import DEFAULT_TRANSCRIPT_DIRS, Settings


def test_the_default_is_the_checkouts_transcripts_relative_to_the_working_directory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("FELTSENSE_TRANSCRIPT_DIRS", raising=False)

    dirs = Settings().transcript_dirs

    assert dirs == DEFAULT_TRANSCRIPT_DIRS == (Path("tests/transcripts"), Path("../shared/transcripts/examples"))
    assert not any(directory.is_absolute() for directory in dirs)


def test_the_environment_lists_directories_separated_like_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FELTSENSE_TRANSCRIPT_DIRS", os.pathsep.join(["mine", "/srv/transcripts", ""]))

    assert Settings().transcript_dirs == (Path("mine"), Path("/srv/transcripts"))


def test_an_empty_value_offers_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FELTSENSE_TRANSCRIPT_DIRS", "")

    assert Settings().transcript_dirs == ()


def test_the_recall_log_retention_reads_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert (Settings().recall_log.days, Settings().recall_log.max_bytes) == (30, 1_073_741_824)
    monkeypatch.setenv("FELTSENSE_RECALL_LOG__DAYS", "7")
    monkeypatch.setenv("FELTSENSE_RECALL_LOG__MAX_BYTES", "2097152")

    assert (Settings().recall_log.days, Settings().recall_log.max_bytes) == (7, 2_097_152)
    monkeypatch.setenv("FELTSENSE_RECALL_LOG__DAYS", "0")
    with pytest.raises(ValueError):
        Settings()
