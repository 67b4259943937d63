"""Memory levels, namespaces, and where each level lives.

Narrowest first: a user's private memory with one character (the partition ``(character, user)``), the
character's canon (``(character, "~canon")``) and the namespace's shared memory (``("ns:~shared", "ns:~shared")``).
The reserved ids start with ``~``, which the identifier pattern never lets a caller's id start with, so no user can
ever be, or collide with, a level.

A **namespace** divides one store into parts that share nothing: an id may start with one (``acme:ava`` is ``ava``
in the namespace ``acme``; the first ``:`` ends it). The shared level is per namespace, so each namespace has its
own, and ``Engine.sweep`` can visit one namespace alone. The engine never chooses a namespace; whoever calls it does
(the HTTP API gives each organisation its own). An id without one is in the empty namespace.
"""

from __future__ import annotations

from engine.domain.models import Partition, Scope

CANON = "~canon"
SHARED = "~shared"
SCOPES: tuple[Scope, ...] = ("user", "canon", "shared")


NAMESPACE_SEPARATOR = ":"


def in_namespace(namespace: str, value: str) -> str:
    """``value`` in ``namespace`` (``"acme", "ava"`` gives ``"acme:ava"``); the empty namespace leaves it as it is."""
    return f"{namespace}{NAMESPACE_SEPARATOR}{value}" if namespace else value


def outside_namespace(namespace: str, value: str) -> str:
    """``value`` without the prefix of ``namespace``: the id as whoever chose the namespace first sent it."""
    prefix = in_namespace(namespace, "")
    return value[len(prefix):] if namespace and value.startswith(prefix) else value


def namespace_prefix(character_id: str) -> str:
    """The namespace prefix an id starts with (``"acme:"``), or ``""`` in the empty namespace."""
    head, separator, _ = character_id.partition(NAMESPACE_SEPARATOR)
    return f"{head}{separator}" if separator else ""


def partition_for(scope: Scope, character_id: str, user_id: str | None = None) -> Partition:
    if scope == "user":
        if user_id is None:
            raise ValueError("a user-private record needs its user")
        return Partition(character_id=character_id, user_id=user_id)
    if scope == "canon":
        return Partition(character_id=character_id, user_id=CANON)
    shared = f"{namespace_prefix(character_id)}{SHARED}"
    return Partition(character_id=shared, user_id=shared)


def visible(character_id: str, user_id: str) -> list[tuple[Scope, Partition]]:
    """The levels one user's recall fans out over, narrowest first: never another user's."""
    return [(scope, partition_for(scope, character_id, user_id)) for scope in SCOPES]
