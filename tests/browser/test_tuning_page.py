"""The tuning page in a real headless Chromium against the real service process (`make serve`'s embedded default).

Debian's chromium is driven through Playwright (``launch(executable_path=...)``; Playwright's own browser download
is never used). Set FELTSENSE_UPDATE_SCREENSHOT=1 to refresh docs/tuning-page.png from the run. Waits use
``expect`` on locators: ``wait_for_function`` evaluates a string, which the page's content security policy forbids.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from engine.domain.tuning import ScoringParams, StrengthParams, TuningProfile
from engine.strength import stage_two_params, strength_params
from scoring.rerank import salience_for, stage_two
from scoring.strength import hybrid_decay, strength_curve
from tests.servers.feltsense import FeltsenseService, module_service

pytestmark = pytest.mark.browser
playwright_sync = pytest.importorskip("playwright.sync_api", reason="playwright is a dev dependency (.[dev])")
expect = playwright_sync.expect

REPO = Path(__file__).resolve().parents[2]
K = "scoring.half_life_days_per_intensity_squared"


def _cli(*args: str) -> list[str]:
    """The installed ``feltsense`` console script, or the same CLI as a module when it is not on disk."""
    script = Path(sys.executable).with_name("feltsense")
    return [str(script), *args] if script.exists() else [sys.executable, "-m", "eval.cli", *args]


Service = FeltsenseService


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    yield from module_service(tmp_path_factory, "tuning-page")


@pytest.fixture(scope="module")
def director_key(service: Service) -> str:
    created = subprocess.run(_cli("keys", "create", "--org", "dev", "--role", "director", "--data-dir",
                                  str(service.data_dir)), capture_output=True, text=True, check=True, cwd=REPO)
    return created.stdout.strip().splitlines()[0]


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
    expect(page.locator("#status")).to_contain_text("shipped defaults")  # the page has built its fields
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


def _api_requests(page: Any) -> list[Any]:
    """Every request the page makes to the API from now on."""
    seen: list[Any] = []
    page.on("request", lambda request: seen.append(request) if "/v1/" in request.url else None)
    return seen


def test_before_any_key_the_page_shows_the_shipped_defaults_and_draws_their_curves(page: Any) -> None:
    requests = _api_requests(page)
    page.reload()
    status = page.locator("#status")
    expect(status).to_contain_text("Showing the shipped defaults")
    assert page.input_value("#character") == "ava"  # the README's example character: Load works with a key alone
    assert page.input_value("#key") == ""

    # Rounded for reading, exact underneath: 100/3 reads 33.33 and is still 33.333333333333336.
    half_life = field(page, K)
    assert half_life.input_value() == "33.33"
    assert half_life.get_attribute("title") == "exactly 33.333333333333336"
    assert field(page, "tone.min_intensity").input_value() == "0.52"
    assert field(page, "context.min_tier").input_value() == "standard"
    assert page.locator('[data-field="tone.standing_registers"] input:checked').evaluate_all(
        "boxes => boxes.map((b) => b.value)") == ["sadness", "shame"]

    # The curves are drawn from those defaults, with no key and no authenticated call.
    for curve in ("#sal-30", "#sal-60", "#sal-90", "#sal-factual", "#strength-curve", "#sal-90-saved"):
        assert (page.get_attribute(curve, "d") or "").startswith("M44.00,"), curve
    expect(page.locator("#sal-90-label")).to_have_text("0.9: halves in 27 d")
    assert [(r.method, r.url.split("/v1/")[1]) for r in requests] == [("GET", "tuning/defaults")]
    assert all("authorization" not in r.headers for r in requests)
    assert page.locator("#save").is_disabled()

    # A director can try values on the curves before loading anything; the declared bounds are checked at once.
    before = page.get_attribute("#sal-90", "d")
    half_life.fill("60")
    expect(page.locator("#sal-90")).not_to_have_attribute("d", before)
    expect(page.locator("#sal-90-label")).to_have_text("0.9: halves in 48.6 d")
    field(page, "scoring.salience_base").fill("1.5")
    expect(page.locator('[data-error-for="scoring.salience_base"]')).to_have_text("must be at most 1")

    # Load without a key names what is missing (the id is already there).
    page.click("#load")
    expect(status).to_have_text(re.compile(r"^Paste a director API key"))
    assert len(requests) == 1


def test_each_constant_has_a_plain_label_and_help_with_its_internal_name_in_small_type(page: Any,
                                                                                     service: Service) -> None:
    expect(page.locator("#status")).to_contain_text("shipped defaults")
    block = page.locator(f'[data-constant="{K}"]')
    expect(block.locator("label")).to_have_text("How long feelings last (days)")
    expect(block.locator(".help")).to_contain_text("How long the character stays careful after a very sad moment")
    name = block.locator(".name")
    expect(name).to_have_text(K)
    for shown in (block.locator("label"), block.locator(".help"), name):
        expect(shown).to_be_visible()
    size = name.evaluate("n => parseFloat(getComputedStyle(n).fontSize)")
    assert size < block.locator("label").evaluate("n => parseFloat(getComputedStyle(n).fontSize)")
    assert field(page, K).get_attribute("aria-describedby") == block.locator(".help").get_attribute("id")

    # Every constant of the profile is on the page, once, in its section (the newer ones included).
    served = httpx.get(f"{service.url}/v1/tuning/defaults").json()
    paths = [c["path"] for c in served["constants"]]
    on_page = page.locator("[data-constant]").evaluate_all("ns => ns.map((n) => n.dataset.constant)")
    assert sorted(on_page) == sorted(paths) and len(on_page) == len(set(on_page))
    leaves = [f"{section}.{name}" for section, values in TuningProfile().model_dump().items()
              if isinstance(values, dict) for name in values]
    assert sorted(paths) == sorted(leaves)
    # The groups the curves show are open; the others are one click away, and say what they hold while closed.
    retrieval = page.locator('[data-section="retrieval"]')
    expect(retrieval.locator("> summary")).to_contain_text(
        "Finding memories8 constants, and 13 engineering constantsBefore ranking, memories are found two ways")
    expect(page.locator('[data-constant="retrieval.window_turns"]')).to_be_hidden()
    retrieval.locator("> summary").click()
    page.locator('[data-section="context"] > summary').click()
    for path in ("retrieval.window_turns", "retrieval.window_recency", "retrieval.tier_high", "retrieval.tier_low",
                 "scoring.window_anchor_weight", "scoring.anchor_feeling_share", "tone.anniversary_window_days",
                 "context.min_tier"):
        expect(page.locator(f'[data-constant="{path}"]')).to_be_visible()
    expect(page.locator('[data-section="tone"] > summary .section-label')).to_have_text("Tone rules")
    calibrated = page.locator('[data-constant="tone.min_intensity"] .badge')
    expect(calibrated).to_have_text(re.compile(r"feltsense eval tone-thresholds"))

    # The engineers' constants are there too, folded away under their reason.
    intercept = page.locator('[data-constant="retrieval.tier_intercept"]')
    expect(intercept).to_be_hidden()
    retrieval.locator("details.engineering > summary").click()
    expect(intercept).to_be_visible()
    expect(intercept.locator(".why")).to_contain_text("fitted to evaluation data")


def test_the_intensity_curves_differ_by_dash_pattern_and_carry_their_own_labels(page: Any) -> None:
    expect(page.locator("#status")).to_contain_text("shipped defaults")
    curves = ["#sal-30", "#sal-60", "#sal-90", "#sal-factual"]
    dashes = [page.get_attribute(curve, "stroke-dasharray") for curve in curves]
    assert all(dashes) and len(set(dashes)) == len(curves), dashes
    for curve in curves:  # the ranking weight of an intensity is dashed like its curve; the saved one is grey
        if curve != "#sal-factual":
            assert page.get_attribute(curve.replace("sal", "weight"), "stroke-dasharray") == \
                page.get_attribute(curve, "stroke-dasharray")
    labels = [page.text_content(f"{curve}-label") for curve in curves]
    assert labels == ["0.3: halves in 3 d", "0.6: halves in 12 d", "0.9: halves in 27 d", "fact"]
    # The legend draws each line as it is drawn on the chart, and names it.
    legend = page.locator("#salience-legend > span")
    entries = {legend.nth(i).inner_text(): legend.nth(i).locator("line").get_attribute("stroke-dasharray")
               for i in range(4)}
    assert entries == {"intensity 0.3 (mild)": dashes[0], "intensity 0.6": dashes[1],
                       "intensity 0.9 (very intense)": dashes[2], "a plain fact": dashes[3]}
    expect(page.locator("#standing-line-label")).to_have_text("tone rule")


def test_a_runtime_key_cannot_load_a_profile(page: Any, service: Service) -> None:
    _load(page, (service.data_dir / "dev-key").read_text().strip(), "ava")
    page.wait_for_selector("#status.bad")
    assert "403" in page.inner_text("#status")
    assert page.locator("#save").is_disabled()


def test_edit_save_replay_and_roll_back(page: Any, service: Service, director_key: str, tmp_path: Path) -> None:
    _load(page, director_key, "mira")
    status = page.locator("#status")
    expect(status).to_have_text("Loaded mira: version 1 in force (the shipped defaults: never tuned).")
    assert field(page, K).input_value() == "33.33"
    assert page.evaluate("sessionStorage.getItem('feltsense.key')") == director_key
    requests = _api_requests(page)

    # Editing a half-life redraws its curves at once; the saved curve stays as it was.
    before = page.get_attribute("#sal-90", "d")
    saved_before = page.get_attribute("#sal-90-saved", "d")
    field(page, K).fill("60")
    expect(page.locator("#sal-90")).not_to_have_attribute("d", before)
    assert page.get_attribute("#sal-90-saved", "d") == saved_before
    line_before = page.get_attribute("#standing-line", "y1")
    field(page, "tone.standing_rule_salience").fill("0.4")
    expect(page.locator("#standing-line")).not_to_have_attribute("y1", line_before)
    strength_before = page.get_attribute("#strength-curve", "d")
    field(page, "strength.tail_exponent").fill("1.5")
    expect(page.locator("#strength-curve")).not_to_have_attribute("d", strength_before)

    # The server's validation shows inline, under the field, and goes away once the value is fixed.
    field(page, "scoring.salience_base").fill("1.5")
    error = page.locator('[data-error-for="scoring.salience_base"]')
    expect(error).to_have_text(re.compile(r"less than or equal to 1"))
    field(page, "scoring.salience_base").fill("0")
    expect(error).to_have_text("")
    expect(page.locator(".invalid")).to_have_count(0)
    field(page, "tone.standing_rule_salience").fill("0.15")
    field(page, "strength.tail_exponent").fill("0.5")

    # No note, no save: the page says so and sends nothing.
    page.click("#save")
    expect(page.locator("#save-status")).to_have_text("Write a note first: why these values? Every version keeps one.")
    expect(page.locator('[data-error-for="note"]')).to_have_text(re.compile(r"^a note is needed"))
    assert page.locator("#note.invalid").count() == 1
    page.fill("#note", "   ")
    page.click("#save")
    expect(page.locator("#save-status")).to_have_text(re.compile(r"^Write a note first"))
    assert not [r for r in requests if r.method == "PUT"]

    # With a note: version 2, in force, and the history shows what changed, in rounded values.
    page.fill("#note", "grief lingers longer for mira")
    page.click("#save")
    expect(page.locator("#save-status")).to_have_text("Saved version 2.")
    expect(status).to_have_text("mira: version 2 in force, saved just now.")
    page.wait_for_selector("#history tbody tr[data-version='2']")
    newest = page.locator("#history tbody tr[data-version='2']")
    assert "grief lingers longer for mira" in newest.inner_text()
    assert newest.locator("ul.diff li").all_inner_texts() == [
        f"How long feelings last {K}: 33.33 → 60", "Relevance before feeling scoring.salience_base: 0.7 → 0"]
    assert field(page, K).input_value() == "60"

    # Saving the values in force again is refused by the service, and the page says why.
    page.fill("#note", "once more")
    page.click("#save")
    expect(page.locator("#save-status")).to_have_text(
        "409: no change: the values equal version 2, the one in force; change a value first")
    assert page.locator("#history tbody tr").count() == 2

    # Replay a transcript from the server's list under the saved and the proposed values.
    field(page, "scoring.factual_salience").fill("0")  # facts lose their weight: the ranking must change
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
    assert page.inner_text("#replay-summary") == "job-change: 1 probe, 1 changed by the proposed values."
    page.evaluate("window.scrollTo(0, 0)")  # the charts and the save box stick to the top of the view
    page.screenshot(path=str(tmp_path / "tuning-page.png"), full_page=True)
    if os.environ.get("FELTSENSE_UPDATE_SCREENSHOT") == "1":
        page.screenshot(path=str(REPO / "docs" / "tuning-page.png"), full_page=True)

    # One click rolls back to version 1: a new version 3 with the old values, and the status names it.
    page.click("#history button.rollback[data-version='1']")
    page.wait_for_selector("#history tbody tr[data-version='3']")
    expect(status).to_have_text("mira: version 3 in force, the values of v1 (rolled back).")
    expect(page.locator("#history-status")).to_have_text(
        "Rolled back to v1: saved as version 3, now in force.")
    assert page.locator("#history tbody tr").count() == 3
    rolled = page.locator("#history tbody tr[data-version='3']")
    assert "rollback to v1" in rolled.inner_text() and "in force" in rolled.inner_text()
    assert f"{K}: 60 → 33.33" in rolled.inner_text()
    assert field(page, K).input_value() == "33.33"
    assert field(page, "scoring.salience_base").input_value() == "0.7"
    served = httpx.get(f"{service.url}/v1/characters/mira/tuning",
                       headers={"Authorization": f"Bearer {director_key}"}).json()
    assert served["version"] == 3
    assert served["scoring"]["half_life_days_per_intensity_squared"] == 100 / 3  # exactly, though shown rounded

    # Rolling back to the version in force changes nothing, and says so.
    page.click("#history button.rollback[data-version='1']")
    expect(page.locator("#history-status")).to_have_text(
        "409: no change: the values equal version 3, the one in force; change a value first")
    expect(status).to_have_text(re.compile(r"^mira: version 3 in force"))
