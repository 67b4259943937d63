"""The engine's public API: what ``engine`` exports (the facade the API calls), and that it loads lazily."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import engine

REPO = Path(__file__).resolve().parents[3]

PUBLIC = {
    "Engine", "Found", "Search", "build_engine", "build_key_records", "build_profile_store", "build_ledger",
    "check_settings",
    "FactWrite", "Writer", "may_write", "stored_sentence", "ErasureReceipt", "SweepReport", "strength_params", "earned",
}


def test_the_facade_exports_exactly_its_public_names() -> None:
    assert set(engine.__all__) == PUBLIC
    assert len(engine.__all__) == len(PUBLIC)


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_every_public_name_imports(name: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from engine import {name}", namespace)  # the import statement itself is under test
    assert namespace[name] is getattr(engine, name)
    assert name in dir(engine)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'store'"):
        engine.store  # type: ignore[attr-defined]  # noqa: B018


def test_the_domain_imports_without_the_services() -> None:
    """``import engine.domain...`` runs engine/__init__.py first; the facade loads its names on first use only."""
    probe = (
        "import sys\n"
        "import engine, engine.domain.models\n"
        "print(sorted(m for m in sys.modules if m.startswith('engine.') and not m.startswith('engine.domain')))\n"
    )
    ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=REPO,
                         check=True)
    assert ran.stdout.strip() == "[]"
