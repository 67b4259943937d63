"""Memory levels and where each lives.

Narrowest first: a user's private memory with one character (the partition ``(character, user)``), the
character's canon (``(character, "~canon")``) and the organisation's shared memory (``("org:~shared",
"org:~shared")``). The reserved ids start with ``~``, which the API's identifier pattern never lets a caller's
id start with, so no user can ever be, or collide with, a level. The API namespaces every id with its
organisation (``org:``); the shared level takes the same prefix, so each organisation has its own.
"""

from __future__ import annotations

from engine.domain.models import Partition, Scope

CANON = "~canon"
SHARED = "~shared"
SCOPES: tuple[Scope, ...] = ("user", "canon", "shared")


def namespace(character_id: str) -> str:
    """The organisation prefix the API put on an id (``"acme:"``), or ``""`` for an engine used directly."""
    head, separator, _ = character_id.partition(":")
    return f"{head}{separator}" if separator else ""


def partition_for(scope: Scope, character_id: str, user_id: str | None = None) -> Partition:
    if scope == "user":
        if user_id is None:
            raise ValueError("a user-private record needs its user")
        return Partition(character_id=character_id, user_id=user_id)
    if scope == "canon":
        return Partition(character_id=character_id, user_id=CANON)
    shared = f"{namespace(character_id)}{SHARED}"
    return Partition(character_id=shared, user_id=shared)


def visible(character_id: str, user_id: str) -> list[tuple[Scope, Partition]]:
    """The levels one user's recall fans out over, narrowest first: never another user's."""
    return [(scope, partition_for(scope, character_id, user_id)) for scope in SCOPES]
