"""The OpenAPI schema the service serves is the API's contract with every runtime and client generated from it.

A change to it (a field renamed, a parameter dropped, an error no longer documented) must be seen in review: the
schema is compared with a committed snapshot, ``openapi_snapshot.json``. After an intended change, refresh it with

    FELTSENSE_UPDATE_SNAPSHOT=1 .venv/bin/pytest tests/api/test_openapi_snapshot.py

and commit the new snapshot with the change.
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar
from litestar.routes import HTTPRoute
from litestar.testing import TestClient

from tests.inprocess import in_process

SNAPSHOT = Path(__file__).with_name("openapi_snapshot.json")
REFRESH = "FELTSENSE_UPDATE_SNAPSHOT=1 .venv/bin/pytest tests/api/test_openapi_snapshot.py"
SHOWN_DIFF_LINES = 80


def _rendered(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _served(app: Litestar) -> dict[str, Any]:
    with TestClient(app) as client:
        response = client.get("/openapi.json")
    assert response.status_code == 200
    schema: dict[str, Any] = response.json()
    return schema


def test_the_served_schema_matches_the_committed_snapshot(tmp_path: Path) -> None:
    # The app as `feltsense serve` builds it: with a job queue, so a close is queued (202 with the job id).
    with in_process(tmp_path, queued=True) as service:
        served = _rendered(_served(service.app))
    if os.environ.get("FELTSENSE_UPDATE_SNAPSHOT") == "1":
        SNAPSHOT.write_text(served, encoding="utf-8")
        return
    assert SNAPSHOT.is_file(), f"no OpenAPI snapshot at {SNAPSHOT}: create it with `{REFRESH}`"
    committed = SNAPSHOT.read_text(encoding="utf-8")
    if served != committed:
        diff = list(difflib.unified_diff(committed.splitlines(), served.splitlines(), "openapi_snapshot.json",
                                         "served /openapi.json", lineterm=""))
        shown = "\n".join(diff[:SHOWN_DIFF_LINES])
        more = f"\n… {len(diff) - SHOWN_DIFF_LINES} more diff lines" if len(diff) > SHOWN_DIFF_LINES else ""
        pytest.fail(f"the served OpenAPI schema differs from tests/api/openapi_snapshot.json. If the API change is "
                    f"intended, refresh the snapshot with `{REFRESH}` and commit it with the change.\n{shown}{more}")


def _documented_routes(app: Litestar) -> set[tuple[str, str]]:
    """(path, method) of every operation the app routes that its handler does not leave out of the schema."""
    return {(route.path_format, method.lower())
            for route in app.routes if isinstance(route, HTTPRoute)
            for method, (handler, _) in route.route_handler_map.items()
            if handler.resolve_include_in_schema()}


@pytest.mark.parametrize("queued", [False, True], ids=["close-in-request", "close-queued"])
def test_the_schema_documents_every_route_with_every_method_and_nothing_else(tmp_path: Path, queued: bool) -> None:
    with in_process(tmp_path, queued=queued) as service:
        routed = _documented_routes(service.app)
        paths = _served(service.app)["paths"]
    documented = {(path, method) for path, item in paths.items() for method in item
                  if method in {"get", "put", "post", "delete", "patch", "head", "options", "trace"}}
    assert {"/v1/turns", "/v1/recall", "/v1/memories", "/v1/facts", "/healthz"} <= {path for path, _ in routed}
    assert sorted(routed - documented) == [], "routes missing from the OpenAPI schema"
    assert sorted(documented - routed) == [], "operations in the schema that the app does not route"
