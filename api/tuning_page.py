"""``GET /tuning``: the creative directors' tuning page.

One static HTML file (``api/static/tuning.html``) with inline CSS and one inline script: no build step, no CDN,
so it works offline. The page is public, and so is the first call it makes (``GET /v1/tuning/defaults``: the shipped
defaults, and each constant's label and help), so a director sees the constants and their curves before any key;
every other call carries the key the user pastes. Its content security policy allows only its own inline script
and style (by hash) and calls to this origin, so text it shows from the API (memories, notes) could not run script
even if it slipped past the page's escaping.
"""

from __future__ import annotations

import base64
import hashlib
import re
from functools import cache
from importlib.resources import files

from litestar import Response, get
from litestar.enums import MediaType


def _hashes(html: str, tag: str) -> str:
    blocks = re.findall(rf"<{tag}>(.*?)</{tag}>", html, flags=re.DOTALL)
    return " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(b.encode()).digest()).decode()}'" for b in blocks)


@cache
def page() -> tuple[str, str]:
    """The page and its Content-Security-Policy, read once."""
    html = files("api").joinpath("static/tuning.html").read_text("utf-8")
    policy = (
        f"default-src 'none'; script-src {_hashes(html, 'script')}; style-src {_hashes(html, 'style')}; "
        "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
    return html, policy


@get("/tuning", include_in_schema=False, summary="The tuning page (HTML)")
async def tuning_page() -> Response[str]:
    html, policy = page()
    return Response(html, media_type=MediaType.HTML, headers={
        "Content-Security-Policy": policy, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-cache",
    })
