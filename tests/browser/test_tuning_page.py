"""The tuning page in a real headless Chromium against the real service process (`make serve`'s embedded default).

Debian's chromium is driven through Playwright (``launch(executable_path=...)``; Playwright's own browser download
is never used). Set FELTSENSE_UPDATE_SCREENSHOT=1 to refresh docs/tuning-page.png from the run. Waits use
``expect`` on locators: ``wait_for_function`` evaluates a string, which the page's content security policy forbids.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from engine.recall import stage_two_params, strength_params
from engine.tuning import ScoringParams, StrengthParams, TuningProfile
from scoring.rerank import salience_for, stage_two
from scoring.strength import hybrid_decay, strength_curve
from tests.servers.feltsense import FeltsenseService

pytestmark = pytest.mark.browser
playwright_sync = pytest.importorskip("playwright.sync_api", reason="playwright is a dev dependency (.[dev])")
expect = playwright_sync.expect

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("FELTSENSE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
K = "scoring.half_life_days_per_intensity_squared"


def _cli(*args: str) -> list[str]:
    """The installed ``feltsense`` console script, or the same CLI as a module when it is not on disk."""
    script = Path(sys.executable).with_name("feltsense")
    return [str(script), *args] if script.exists() else [sys.executable, "-m", "eval.cli", *args]


Service = FeltsenseService


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    running = Service(tmp_path_factory.mktemp("tuning-page") / "data")
    running.start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def director_key(service: Service) -> str:
    created = subprocess.run(_cli("keys", "create", "--org", "dev", "--role", "director", "--data-dir",
                                  str(service.data_dir)), capture_output=True, text=True, check=True, cwd=REPO)
    return created.stdout.strip().splitlines()[0]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no chromium at {CHROMIUM}: `apt-get install -y chromium` (make test does it)")
    with playwright_sync.sync_playwright() as p:
        args = ["--no-sandbox"] if os.geteuid() == 0 else []  # Chromium refuses its sandbox as root
        launched = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any, service: Service) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1320, "height": 1700})
    opened = context.new_page()
    opened.set_default_timeout(30_000)
    problems: list[str] = []
    opened.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    # Console errors are script errors and policy violations; a 4xx answer the page handles is logged as a failed
    # resource load, which is expected here.
    opened.on("console", lambda message: problems.append(message.text)
              if message.type == "error" and not message.text.startswith("Failed to load resource") else None)
    opened.goto(f"{service.url}/tuning")
    yield opened
    context.close()
    assert not problems, problems  # no script errors and no content-security-policy violations


def _load(page: Any, key: str, character: str) -> None:
    page.fill("#character", character)
    page.fill("#key", key)
    page.click("#load")


def field(page: Any, path: str) -> Any:
    return page.locator(f'[data-field="{path}"]')


def test_the_pages_curves_match_the_python_scoring_functions(page: Any) -> None:
    profiles = [
        TuningProfile(),
        TuningProfile(scoring=ScoringParams(half_life_days_per_intensity_squared=60, min_half_life_days=4,
                                            factual_salience=0.45, factual_half_life_days=90, salience_base=0.2),
                      strength=StrengthParams(fast_weight=0.25, fast_half_life_days=3, tail_scale_days=90,
                                              tail_exponent=1.3)),
    ]
    ages = [-1.0, 0.0, 0.5, 3.0, 7.0, 27.0, 60.0, 119.5, 365.0]
    for profile in profiles:
        scoring, strength = profile.scoring.model_dump(), profile.strength.model_dump()
        params = stage_two_params(profile)
        for intensity in (0.3, 0.6, 0.9, 0.05):
            for emotional in (True, False):
                js = page.evaluate(
                    """([i, ages, emotional, s]) => ages.map((a) => {
                         const sal = window.tuningCurves.salience(i, a, emotional, s);
                         return [sal, window.tuningCurves.salienceWeight(sal, emotional, s)];
                       })""",
                    [intensity, ages, emotional, scoring],
                )
                n = len(ages)
                salience, _ = salience_for(np.full(n, intensity), np.array(ages), np.full(n, emotional), params)
                ranked = stage_two(np.ones(n), np.full(n, intensity), np.zeros(n), np.array(ages),
                                   np.full(n, emotional), np.zeros(n, dtype=bool), np.ones(n), np.ones(n), params)
                assert [s for s, _ in js] == pytest.approx(salience.tolist(), rel=1e-12, abs=1e-15)
                assert [w for _, w in js] == pytest.approx(ranked.salience_weight.tolist(), rel=1e-12, abs=1e-15)
        decay = page.evaluate("([ages, st]) => ages.map((a) => window.tuningCurves.hybridDecay(a, st))",
                              [ages, strength])
        assert decay == pytest.approx(strength_curve(np.array(ages), strength_params(profile)).tolist(), rel=1e-12)
        assert decay == pytest.approx(hybrid_decay(np.array(ages), **{k: strength[k] for k in (
            "fast_weight", "fast_half_life_days", "tail_scale_days", "tail_exponent")}).tolist(), rel=1e-12)


def test_a_runtime_key_cannot_load_a_profile(page: Any, service: Service) -> None:
    _load(page, (service.data_dir / "dev-key").read_text().strip(), "ava")
    page.wait_for_selector("#status.bad")
    assert "403" in page.inner_text("#status")
    assert page.locator("#save").is_disabled()


def test_edit_replay_save_and_roll_back(page: Any, service: Service, director_key: str, tmp_path: Path) -> None:
    _load(page, director_key, "mira")
    expect(page.locator("#status")).to_have_text(re.compile(r"^Loaded mira, version 1"))
    assert float(field(page, K).input_value()) == pytest.approx(100 / 3)
    assert page.evaluate("sessionStorage.getItem('feltsense.key')") == director_key

    # Editing a half-life redraws its curves at once; the saved curve stays as it was.
    before = page.get_attribute("#sal-90", "d")
    saved_before = page.get_attribute("#sal-90-saved", "d")
    field(page, K).fill("60")
    expect(page.locator("#sal-90")).not_to_have_attribute("d", before)
    assert page.get_attribute("#sal-90-saved", "d") == saved_before
    line_before = page.get_attribute("#standing-line", "y1")
    field(page, "tone.standing_rule_salience").fill("0.4")
    expect(page.locator("#standing-line")).not_to_have_attribute("y1", line_before)
    assert page.get_attribute("#standing-line", "class") == "threshold"
    strength_before = page.get_attribute("#strength-curve", "d")
    field(page, "strength.tail_exponent").fill("1.5")
    expect(page.locator("#strength-curve")).not_to_have_attribute("d", strength_before)

    # The server's validation shows inline, under the field, and goes away once the value is fixed.
    field(page, "scoring.salience_base").fill("1.5")
    error = page.locator('[data-error-for="scoring.salience_base"]')
    expect(error).to_have_text(re.compile(r"less than or equal to 1"))
    field(page, "scoring.salience_base").fill("0")
    expect(error).to_have_text("")
    expect(page.locator("input.invalid")).to_have_count(0)
    field(page, "tone.standing_rule_salience").fill("0.15")
    field(page, "strength.tail_exponent").fill("0.5")
    field(page, "scoring.factual_salience").fill("0")  # facts lose their weight: the ranking must change

    # Replay a transcript from the server's list under the saved and the proposed values.
    page.select_option("#transcript-pick", "transcripts/job-change.yaml")
    assert "Brightwave" in page.input_value("#transcript")
    page.click("#replay")
    page.wait_for_selector("#replay-table:not([hidden])", timeout=120_000)
    rows = page.locator("#replay-table tr.probe")
    assert rows.count() == 1
    cells = rows.first.locator("td").all_inner_texts()
    assert cells[1] == "Remind me, where do I work these days?"
    assert cells[2] in ("pass", "FAIL") and cells[3] in ("pass", "FAIL")
    assert "ranking" in cells[4] and "changed" in (rows.first.get_attribute("class") or "")
    proposed = page.locator("#replay-table tr.ranks ol.ranking").nth(1).locator("li").all_inner_texts()
    assert proposed[-1].endswith('The user works at "Brightwave".')  # the fact now ranks last
    assert page.locator("#replay-table ol.ranking").count() == 2
    assert page.inner_text("#replay-summary") == "job-change: 1 probe, 1 changed by the proposed values."
    page.screenshot(path=str(tmp_path / "tuning-page.png"), full_page=True)
    if os.environ.get("FELTSENSE_UPDATE_SCREENSHOT") == "1":
        page.screenshot(path=str(REPO / "docs" / "tuning-page.png"), full_page=True)

    # Save with a note: version 2, and the history shows what changed.
    page.fill("#note", "grief lingers longer for mira")
    page.click("#save")
    expect(page.locator("#save-status")).to_have_text("Saved version 2.")
    page.wait_for_selector("#history tbody tr[data-version='2']")
    assert page.locator("#history tbody tr").count() == 2
    newest = page.locator("#history tbody tr[data-version='2']")
    assert "grief lingers longer for mira" in newest.inner_text()
    assert newest.locator("ul.diff li").all_inner_texts() == [
        f"{K}: 33.333333333333336 → 60", "scoring.factual_salience: 0.3 → 0", "scoring.salience_base: 0.7 → 0"]
    assert float(field(page, K).input_value()) == 60

    # One click rolls back to version 1: a new version 3 with the old values and the note.
    page.click("#history button.rollback[data-version='1']")
    page.wait_for_selector("#history tbody tr[data-version='3']")
    assert page.locator("#history tbody tr").count() == 3
    rolled = page.locator("#history tbody tr[data-version='3']")
    assert "rollback to v1" in rolled.inner_text()
    assert f"{K}: 60 → 33.333333333333336" in rolled.inner_text()
    assert float(field(page, K).input_value()) == pytest.approx(100 / 3)
    assert field(page, "scoring.salience_base").input_value() == "0.7"
    served = httpx.get(f"{service.url}/v1/characters/mira/tuning",
                       headers={"Authorization": f"Bearer {director_key}"}).json()
    assert served["version"] == 3
    assert served["scoring"]["half_life_days_per_intensity_squared"] == pytest.approx(100 / 3)
