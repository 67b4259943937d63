"""The service builds and imports without a single warning: a deprecation today is an outage at the next major.

pytest turns warnings into errors (``filterwarnings = ["error", …]``), but only those raised while a test runs: a
warning at import time, or one a filter hides, slips past. These tests look for them directly.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

from litestar.testing import TestClient

from tests.inprocess import in_process

ROOT = Path(__file__).resolve().parents[2]

FRESH_IMPORT = """
import importlib, pkgutil, sys, tempfile
from pathlib import Path

import api

for module in pkgutil.walk_packages(api.__path__, "api."):
    importlib.import_module(module.name)

from litestar.testing import TestClient
from tests.inprocess import in_process

for queued in (False, True):
    with tempfile.TemporaryDirectory() as root, in_process(Path(root), queued=queued) as service:
        with TestClient(service.app) as client:
            assert client.get("/openapi.json").status_code == 200
print("imported", len(sys.modules), "modules")
"""


def _built_and_served(root: Path) -> list[str]:
    """Every warning raised while building both variants of the app and serving their schema."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for queued in (False, True):  # the queued app registers another close handler
            with in_process(root / str(queued), queued=queued) as service, TestClient(service.app) as client:
                assert client.get("/openapi.json").status_code == 200
    return [f"{w.category.__name__} at {w.filename}:{w.lineno}: {w.message}" for w in caught]


def test_building_the_app_and_serving_its_schema_warns_of_nothing(tmp_path: Path) -> None:
    # Litestar 2 checks each handler's signature as the app is built: an inferred dependency, a path parameter or a
    # body without its marker each warn that Litestar 3 will stop accepting it (api/dependencies.py).
    raised = _built_and_served(tmp_path)
    assert not raised, "\n".join(raised)


def test_every_api_module_imports_fresh_without_a_deprecation_warning() -> None:
    # A fresh interpreter: in this one the modules were imported (and their import-time warnings raised) before any
    # test could record them.
    done = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", FRESH_IMPORT], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"a deprecation warning while importing api/ or building the app:\n{done.stderr}"
    assert done.stdout.startswith("imported")
