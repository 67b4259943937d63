"""Authentication and role checks for the handlers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from litestar import Request
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException

from api.auth import KeyStore, Principal, Role

OPERATOR_ROUTE = "operator_route"
"""A route ``opt`` flag: the routes an operator key may reach. It reaches no other."""


def authenticator(keys: KeyStore) -> Callable[[Request[Any, Any, Any]], Principal]:
    """A dependency: the caller's Principal from ``Authorization: Bearer <key>``, or 401."""

    def principal(request: Request[Any, Any, Any]) -> Principal:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise NotAuthorizedException("send an API key as 'Authorization: Bearer <key>'")
        found = keys.authenticate(token)
        if found is None:
            raise NotAuthorizedException("unknown or revoked API key")
        # Refused here, once, rather than left to each handler's role check: an operator crosses organisations,
        # so a handler that forgets to exclude it must not become a way into another organisation's data.
        if found.role == "operator" and not request.route_handler.opt.get(OPERATOR_ROUTE):
            raise PermissionDeniedException("an operator key may only run the sweep (POST /v1/maintenance/sweep)")
        return found

    return principal


def require(principal: Principal, *roles: Role) -> None:
    """403 unless the caller's role is one of ``roles``."""
    if principal.role not in roles:
        article = "an" if principal.role[:1] in "aeiou" else "a"
        raise PermissionDeniedException(f"{article} {principal.role} key may not do this (needs {' or '.join(roles)})")
