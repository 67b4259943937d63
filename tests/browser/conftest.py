"""One headless Chromium per browser test module: Debian's chromium driven through Playwright
(``launch(executable_path=...)``; Playwright's own browser download is never used)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("FELTSENSE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    playwright_sync = pytest.importorskip("playwright.sync_api", reason="playwright is a dev dependency (.[dev])")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no chromium at {CHROMIUM}: `apt-get install -y chromium` (make test does it)")
    with playwright_sync.sync_playwright() as p:
        args = ["--no-sandbox"] if os.geteuid() == 0 else []  # Chromium refuses its sandbox as root
        launched = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)
        yield launched
        launched.close()
