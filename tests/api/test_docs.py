"""First contact without a browser: the landing page, the schema at its three addresses, the bearer scheme, and
API docs that load nothing from another origin."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient
from openapi_ui_bundles import swagger_ui

from api.app import create_app
from engine.service import Engine
from tests.keys import sqlite_key_store

REFERENCE = re.compile(r"""\b(?:src|href)\s*=\s*["']([^"']*)["']""")
ANY_URL = re.compile(r"https?://[^\s\"'<>]+")


@pytest.fixture
def client(hashing_engine: Engine, tmp_path: Path) -> Iterator[TestClient[Any]]:
    with TestClient(create_app(hashing_engine, keys=sqlite_key_store(tmp_path / "keys.sqlite3"))) as c:
        yield c  # no key: everything here is public


def _local(references: list[str]) -> list[str]:
    """The references that are not a path on this origin (a scheme, or a protocol-relative //host)."""
    return [r for r in references if not r.startswith("/") or r.startswith("//")]


def test_the_schema_answers_at_openapi_json_and_schema_as_at_docs(client: TestClient[Any]) -> None:
    served = client.get("/docs/openapi.json")
    assert served.status_code == 200
    for alias in ("/openapi.json", "/schema"):
        response = client.get(alias)
        assert response.status_code == 200, alias
        assert response.headers["content-type"].startswith("application/vnd.oai.openapi+json")
        assert response.json() == served.json()
    assert served.json()["openapi"].startswith("3.1")
    assert not {"/", "/openapi.json", "/schema"} & set(served.json()["paths"])  # the pages are not API operations


def test_every_operation_that_takes_a_key_declares_the_bearer_scheme_and_no_other_does(
    client: TestClient[Any],
) -> None:
    schema = client.get("/openapi.json").json()
    assert schema["components"]["securitySchemes"]["bearer"] | {"description": ""} == {
        "type": "http", "scheme": "bearer", "bearerFormat": "feltsense API key", "description": ""}
    assert "data/dev-key" in schema["components"]["securitySchemes"]["bearer"]["description"]
    assert "security" not in schema  # declared per operation: /healthz and /readyz take no key
    operations = {f"{method.upper()} {path}": op for path, item in schema["paths"].items()
                  for method, op in item.items()}
    for name, operation in operations.items():
        # A route that authenticates documents its 401 (api.boundary.AUTHENTICATED); that is what the scheme says.
        expected = [{"bearer": []}] if "401" in operation["responses"] else None
        assert operation.get("security") == expected, name
    assert "security" not in operations["GET /healthz"] and "security" not in operations["GET /readyz"]
    assert operations["POST /v1/recall"]["security"] == [{"bearer": []}]


def test_the_docs_page_loads_swagger_ui_5_from_this_app_and_nothing_from_elsewhere(client: TestClient[Any]) -> None:
    page = client.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    html = page.text
    assert ANY_URL.findall(html) == []
    references = REFERENCE.findall(html)
    assert references and _local(references) == []
    assert {"/docs/assets/swagger-ui-bundle.js", "/docs/assets/swagger-ui.css",
            "/docs/assets/swagger-ui-standalone-preset.js"} <= set(references)
    for reference in references:
        asset = client.get(reference)
        assert asset.status_code == 200, reference
        assert "no-cache" in asset.headers["cache-control"], reference
    assert client.get("/docs/assets/swagger-ui-bundle.js").headers["content-type"].startswith("text/javascript")
    assert client.get("/docs/assets/swagger-ui.css").headers["content-type"].startswith("text/css")
    assert client.get("/docs/assets/no-such-file.js").status_code == 404


def test_the_bundled_swagger_ui_renders_openapi_3_1() -> None:
    # Swagger UI 4 renders no OpenAPI 3.1 document, and Litestar emits 3.1: a downgrade would blank /docs.
    bundle = (swagger_ui.static_path / "swagger-ui-bundle.js").read_text("utf-8")
    [version] = re.findall(r'PACKAGE_VERSION:"(\d+)\.\d+\.\d+"', bundle)
    assert int(version) >= 5


def test_the_landing_page_says_what_this_is_and_links_what_resolves(client: TestClient[Any]) -> None:
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert page.headers["content-security-policy"].startswith("default-src 'none'")
    html = page.text
    assert "Conversation memory for companion characters" in html and "data/dev-key" in html
    assert ANY_URL.findall(html) == []
    links = REFERENCE.findall(html)
    assert {"/docs", "/openapi.json", "/tuning"} <= set(links) and _local(links) == []
    for link in links:
        assert client.get(link).status_code == 200, link
