"""The command line's own promises: a version, and a quiet start."""

from __future__ import annotations

from importlib.metadata import version

import pytest

from eval.cli import main


def test_feltsense_version_prints_the_installed_distributions_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"feltsense {version('feltsense')}"
