"""Where the engine's objects become the service's JSON: the wire models of ``feltsense_client.models``.

Every route declares and answers with a wire model, never an engine type, so a change to the engine cannot change
the HTTP contract by itself: the typed client reads the very models the service writes. ``to_wire`` converts at the
route's boundary, through the object's plain data (a pydantic model's dump, computed fields included, or a
dataclass's fields), and refuses an object that carries a field the wire model lacks, at any depth: a field the
engine adds later fails the API's tests (an unexpected 500) until the wire model, and so the contract, names it,
rather than vanishing from the answer unseen.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["WireMismatch", "to_wire", "to_wire_or_none"]

_Wire = TypeVar("_Wire", bound=BaseModel)


class WireMismatch(TypeError):
    """An engine object carries a field its wire model has no place for: the contract must change first."""


def _plain(obj: object) -> Any:
    if isinstance(obj, BaseModel):
        return obj.model_dump()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    raise TypeError(f"not a pydantic model or a dataclass instance: {type(obj).__name__}")


def _dropped(sent: Any, kept: Any, path: str = "") -> list[str]:
    """The dotted paths of the keys in ``sent`` that ``kept`` (the wire model's dump) has not."""
    if isinstance(sent, dict) and isinstance(kept, dict):
        missing = [f"{path}{key}" for key in sent if key not in kept]
        nested = (_dropped(sent[key], kept[key], f"{path}{key}.") for key in sent if key in kept)
        return missing + [lost for found in nested for lost in found]
    if isinstance(sent, list | tuple) and isinstance(kept, list | tuple):
        pairs = (_dropped(a, b, f"{path}{i}.") for i, (a, b) in enumerate(zip(sent, kept, strict=False)))
        return [lost for found in pairs for lost in found]
    return []


def to_wire(model: type[_Wire], obj: object) -> _Wire:
    """``obj`` (an engine model or dataclass) as the wire ``model``; ``WireMismatch`` if a field would be lost."""
    data = _plain(obj)
    wire = model.model_validate(data)
    lost = _dropped(data, wire.model_dump())
    if lost:
        raise WireMismatch(f"{type(obj).__name__} carries {', '.join(lost)}, which the wire {model.__name__} has "
                           "no field for: add it to feltsense_client.models (the API's contract) first")
    return wire


def to_wire_or_none(model: type[_Wire], obj: object | None) -> _Wire | None:
    return None if obj is None else to_wire(model, obj)
