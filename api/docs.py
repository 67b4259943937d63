"""First contact: the landing page (``/``), the API docs (``/docs``) and the schema (``/openapi.json``, ``/schema``).

The docs are Swagger UI 5 (it renders the OpenAPI 3.1 Litestar emits), served by the app itself from the files the
``openapi-ui-bundles`` package ships: no CDN, so they work offline. The schema declares the bearer scheme on every
operation that authenticates its caller, so Swagger's "Authorize" takes an API key and "Try it out" sends it.
"""

from __future__ import annotations

import base64
import hashlib
import inspect
import re
from collections.abc import Sequence
from typing import Any

from litestar import Request, Response, Router, get
from litestar.datastructures import CacheControlHeader
from litestar.enums import MediaType, OpenAPIMediaType
from litestar.handlers import HTTPRouteHandler
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import SwaggerRenderPlugin
from litestar.openapi.spec import Components, SecurityRequirement, SecurityScheme
from litestar.static_files import create_static_files_router
from litestar.types import ControllerRouterHandler
from openapi_ui_bundles import swagger_ui

DOCS_PATH = "/docs"
ASSETS_PATH = f"{DOCS_PATH}/assets"
SCHEMA_PATHS = ("/openapi.json", "/schema")
BEARER = "bearer"
AUTHENTICATES = "principal"
"""The dependency (``api.security.authenticator``) a handler takes when it needs the caller's key."""

_BEARER_SCHEME = SecurityScheme(
    type="http", scheme="bearer", bearer_format="feltsense API key",
    description="An API key, sent as `Authorization: Bearer <key>`. `feltsense keys create` makes one; "
                "`feltsense serve --dev` (and `make serve`) keeps a development key in `data/dev-key`.",
)
_REQUIRES_BEARER: list[SecurityRequirement] = [{BEARER: []}]


def openapi_config() -> OpenAPIConfig:
    """The schema at ``/docs/openapi.json`` and Swagger UI at ``/docs``, its script and styles from this app."""
    swagger = SwaggerRenderPlugin(
        path="/",
        js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
        css_url=f"{ASSETS_PATH}/swagger-ui.css",
        standalone_preset_js_url=f"{ASSETS_PATH}/swagger-ui-standalone-preset.js",
        favicon=f"<link rel='icon' type='image/png' href='{ASSETS_PATH}/favicon-32x32.png'>",  # Litestar's is a CDN's
    )
    return OpenAPIConfig(title="feltsense", version="0.1.0", path=DOCS_PATH, render_plugins=[swagger],
                         components=Components(security_schemes={BEARER: _BEARER_SCHEME}))


def authenticates(handler: HTTPRouteHandler) -> bool:
    return AUTHENTICATES in inspect.signature(handler.fn).parameters


def bearer_documented(handlers: Sequence[HTTPRouteHandler]) -> list[ControllerRouterHandler]:
    """``handlers``, those that authenticate their caller grouped under a router that documents the bearer scheme.

    Declared per operation, not for the whole schema: OpenAPI has no way for an operation to drop a schema-wide
    requirement that Litestar would emit (it leaves an empty ``security`` out), and /healthz and /readyz take no key.
    """
    authenticated = [h for h in handlers if authenticates(h)]
    public = [h for h in handlers if not authenticates(h)]
    return [Router("/", route_handlers=authenticated, security=_REQUIRES_BEARER), *public]


LANDING = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>feltsense</title>
<style>
body { font: 16px/1.5 system-ui, sans-serif; max-width: 40rem; margin: 3rem auto; padding: 0 1rem; color: #222; }
h1 { margin-bottom: 0.25rem; }
code { background: #f2f2f2; padding: 0 0.25rem; border-radius: 3px; }
li { margin: 0.4rem 0; }
</style>
</head>
<body>
<h1>feltsense</h1>
<p>Conversation memory for companion characters: it remembers how conversations felt.</p>
<ul>
<li><a id="docs" href="/docs">API docs</a>: every endpoint, with "Try it out". Click "Authorize" and paste an
API key first.</li>
<li><a id="schema" href="/openapi.json">OpenAPI schema</a> (JSON)</li>
<li><a id="tuning" href="/tuning">Tuning page</a>: curves, replays and versions of a character's tuning
(a director key)</li>
<li><a id="healthz" href="/healthz">/healthz</a> and <a id="readyz" href="/readyz">/readyz</a></li>
</ul>
<p>The development key (<code>feltsense serve --dev</code>, which <code>make serve</code> runs) is in
<code>data/dev-key</code>. Send it as <code>Authorization: Bearer &lt;key&gt;</code>.</p>
</body>
</html>
"""


def _style_hashes(html: str) -> str:
    blocks = re.findall(r"<style>(.*?)</style>", html, flags=re.DOTALL)
    return " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(b.encode()).digest()).decode()}'" for b in blocks)


_LANDING_POLICY = (f"default-src 'none'; style-src {_style_hashes(LANDING)}; base-uri 'none'; form-action 'none'; "
                   "frame-ancestors 'none'")


@get("/", include_in_schema=False, summary="The landing page (HTML)")
async def landing_page() -> Response[str]:
    return Response(LANDING, media_type=MediaType.HTML, headers={
        "Content-Security-Policy": _LANDING_POLICY, "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
    })


@get(list(SCHEMA_PATHS), include_in_schema=False, summary="The OpenAPI schema (JSON), as /docs/openapi.json")
async def openapi_schema(request: Request[Any, Any, Any]) -> Response[dict[str, Any]]:
    return Response(request.app.openapi_schema.to_schema(), media_type=OpenAPIMediaType.OPENAPI_JSON)


swagger_assets = create_static_files_router(
    ASSETS_PATH, directories=[swagger_ui.static_path], name="swagger-assets", include_in_schema=False,
    cache_control=CacheControlHeader(no_cache=True),  # revalidated: the files change when the package does
)

docs_routes: list[ControllerRouterHandler] = [landing_page, openapi_schema, swagger_assets]
