"""The landing page and the API docs in a real headless Chromium against the real service process, offline.

Every request to another origin than the service's own is aborted and recorded, so the docs must render (and a call
through "Try it out" must succeed) from what the service serves itself. Debian's chromium is driven through
Playwright (``launch(executable_path=...)``; Playwright's own browser download is never used). Set
FELTSENSE_UPDATE_SCREENSHOT=1 to refresh docs/api-docs.png from the run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.servers.feltsense import FeltsenseService, module_service

pytestmark = pytest.mark.browser
playwright_sync = pytest.importorskip("playwright.sync_api", reason="playwright is a dev dependency (.[dev])")
expect = playwright_sync.expect

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FeltsenseService]:
    yield from module_service(tmp_path_factory, "docs-page")


@pytest.fixture
def page(browser: Any, service: FeltsenseService) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1320, "height": 1000})
    elsewhere: list[str] = []

    def offline(route: Any) -> None:
        if route.request.url.startswith(f"{service.url}/"):
            route.continue_()
        else:
            elsewhere.append(route.request.url)
            route.abort()

    context.route("**/*", offline)
    opened = context.new_page()
    opened.set_default_timeout(30_000)
    problems: list[str] = []
    opened.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    opened.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    yield opened
    context.close()
    assert elsewhere == [], f"requests to other origins: {elsewhere}"
    assert not problems, problems  # no script errors, no failed loads


def test_the_docs_render_offline_and_try_it_out_calls_the_api_with_the_key(
    page: Any, service: FeltsenseService
) -> None:
    turns = [{"turn_id": f"t{i}", "session_id": "s1", "character_id": "ava", "user_id": "tester-1", "role": "user",
              "text": text, "timestamp": f"2025-03-02T18:0{i}:00Z"}
             for i, text in enumerate(["My dog Luna died last week.", "Luna and I walked in the park every morning."])]
    httpx.post(f"{service.url}/v1/turns", json={"turns": turns}, headers=service.headers(),
               timeout=30).raise_for_status()

    page.goto(f"{service.url}/docs")
    expect(page.locator(".info .title")).to_contain_text("feltsense")
    recall = page.locator(".opblock-post", has=page.locator('.opblock-summary-path[data-path="/v1/recall"]'))
    expect(recall).to_be_visible()
    expect(page.locator(".opblock-summary-path")).to_have_count(
        sum(len(item) for item in httpx.get(f"{service.url}/openapi.json").json()["paths"].values()))

    # Authorize with the development key: Swagger sends it as a bearer token from then on.
    page.click(".auth-wrapper button.authorize")
    dialog = page.locator(".modal-ux")
    expect(dialog).to_contain_text("bearer  (http, Bearer)")
    dialog.locator("input").fill((service.data_dir / "dev-key").read_text().strip())
    dialog.locator("button.modal-btn.authorize").click()
    expect(dialog.get_by_role("button", name="Remove authorization")).to_have_text("Logout")
    dialog.locator("button.btn-done").click()
    expect(page.locator(".auth-wrapper button.authorize.locked")).to_be_visible()

    memories = page.locator(".opblock-get", has=page.locator('.opblock-summary-path[data-path="/v1/memories"]'))
    memories.locator(".opblock-summary").click()
    memories.locator("button.try-out__btn").click()
    memories.locator('tr[data-param-name="character_id"] input').fill("ava")
    memories.locator('tr[data-param-name="user_id"] input').fill("tester-1")
    memories.locator("button.execute").click()
    live = memories.locator(".live-responses-table")
    expect(live.locator("tr.response td.response-col_status")).to_have_text("200", timeout=30_000)
    expect(live.locator("tr.response td.response-col_description")).to_contain_text("Luna")
    expect(memories.locator(".curl-command")).to_contain_text("Authorization: Bearer ")

    if os.environ.get("FELTSENSE_UPDATE_SCREENSHOT") == "1":  # from the title down to the call's answer
        page.mouse.move(0, 0)
        bottom = page.evaluate("(el) => el.getBoundingClientRect().bottom + window.scrollY",
                               live.locator("tr.response").element_handle())
        page.screenshot(path=str(REPO / "docs" / "api-docs.png"), full_page=True,
                        clip={"x": 0, "y": 0, "width": 1320, "height": bottom + 16})


def test_the_landing_page_links_resolve(page: Any, service: FeltsenseService) -> None:
    page.goto(f"{service.url}/")
    expect(page.locator("h1")).to_have_text("feltsense")
    expect(page.locator("body")).to_contain_text("data/dev-key")
    hrefs = page.locator("a").evaluate_all("links => links.map((a) => a.href)")
    assert {f"{service.url}{path}" for path in ("/docs", "/openapi.json", "/tuning")} <= set(hrefs)
    for href in hrefs:
        assert page.request.get(href).status == 200, href
    page.click("a#docs")
    expect(page.locator(".info .title")).to_contain_text("feltsense")
    page.go_back()
    page.click("a#schema")
    assert page.evaluate("JSON.parse(document.body.innerText).openapi").startswith("3.1")
