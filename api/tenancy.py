"""Organisation namespacing at the boundary: ids go into the engine scoped, come back unscoped.

The engine partitions memory by (character, user); scoping the character, session and turn ids with the
caller's organisation makes every partition, session and memory id organisation-private by construction.
``model_copy`` is used on purpose: the caller's ids were validated on the way in, and the scoped form may be
longer than a caller may send.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel

from engine.domain.models import Memory, Partition, RecallQuery, RecallResult, Turn
from engine.domain.scopes import in_namespace, outside_namespace

_Model = TypeVar("_Model", bound=BaseModel)


def scoped(org: str, value: str) -> str:
    """An id as the engine stores it: in the organisation's namespace (each organisation is one)."""
    return in_namespace(org, value)


def unscoped(org: str, value: str) -> str:
    """The id as the organisation's key sent it."""
    return outside_namespace(org, value)


_TURN_IDS = ("character_id", "session_id", "turn_id")


def _rewritten(model: _Model, change: Callable[[str, str], str], org: str, names: tuple[str, ...]) -> _Model:
    return model.model_copy(update={name: change(org, getattr(model, name)) for name in names})


def scope_turn(org: str, turn: Turn) -> Turn:
    return _rewritten(turn, scoped, org, _TURN_IDS)


def unscope_turn(org: str, turn: Turn) -> Turn:
    return _rewritten(turn, unscoped, org, _TURN_IDS)


def scope_query(org: str, query: RecallQuery) -> RecallQuery:
    return query.model_copy(update={
        "character_id": scoped(org, query.character_id),
        "session_id": None if query.session_id is None else scoped(org, query.session_id),
    })


def scope_partition(org: str, character_id: str, user_id: str) -> Partition:
    return Partition.model_construct(character_id=scoped(org, character_id), user_id=user_id)


def scope_memory(org: str, memory: Memory) -> Memory:
    """A memory as the engine stores it (an import's): a fact's empty turn id stays empty."""
    return _rewritten(memory, lambda o, value: scoped(o, value) if value else value, org, _TURN_IDS)


def unscope_memory(org: str, memory: Memory) -> Memory:
    return _rewritten(memory, unscoped, org, _TURN_IDS)


def unscope_result(org: str, result: RecallResult) -> RecallResult:
    return result.model_copy(update={
        "memories": tuple(m.model_copy(update={"session_id": unscoped(org, m.session_id)}) for m in result.memories)
    })
