"""The TypeScript client (clients/typescript): its generated types are the served schema's, and its own tests
(Node's test runner, against a live ``feltsense serve`` they start) pass. ``npm ci`` installs its pinned
development packages from the lockfile first."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "typescript"


def npm(*args: str, timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.fail("the TypeScript client's tests need Node.js 20+ and npm on PATH "
                    "(Debian: apt-get install nodejs npm)")
    return subprocess.run(["npm", *args], cwd=PACKAGE, capture_output=True, text=True, timeout=timeout_s,
                          env={**os.environ, "FELTSENSE_PYTHON": sys.executable})


@pytest.fixture(scope="module")
def installed() -> None:
    done = npm("ci", "--no-audit", "--no-fund")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_generated_types_are_the_served_schemas(installed: None, tmp_path: Path) -> None:
    fresh = tmp_path / "schema.ts"
    done = npm("exec", "--", "openapi-typescript", "../../tests/api/openapi_snapshot.json",
               "--default-non-nullable", "false", "--output", str(fresh))
    assert done.returncode == 0, done.stdout + done.stderr
    assert fresh.read_text() == (PACKAGE / "src" / "schema.ts").read_text(), (
        "clients/typescript/src/schema.ts is not what the served schema generates: run `npm run generate` there")


def test_the_typescript_clients_own_tests_pass(installed: None) -> None:
    done = npm("test")
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
