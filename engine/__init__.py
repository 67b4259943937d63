"""feltsense engine: domain models, ports, adapters and the ingest / recall / write-time services.

This package is the engine's public API, the facade the API calls: ``Engine`` (``engine.service``), how it is built
from settings (``build_engine``, ``build_profile_store``, ``build_key_records``, ``build_ledger``,
``check_settings``), and the types its methods take and return. ``engine.domain`` (models, ports, errors; the
ledger's records among them) is the shared vocabulary and may be imported freely; the service modules
(``engine.recall``, ``engine.lifecycle``, ``engine.adapters`` ...) are the engine's own, and an import-linter contract
keeps the API out of them.

The names load on first use (PEP 562), not when the package is imported: every ``import engine.domain...`` runs
this file first, so importing the services here would make the domain import them all (and cycle through
``traces``, which imports the domain).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.factory import build_engine, build_key_records, build_ledger, build_profile_store, check_settings
    from engine.facts import FactWrite, Writer, may_write, stored_sentence
    from engine.lifecycle import ErasureReceipt, SweepReport
    from engine.service import Engine, Found, Search
    from engine.strength import strength_params
    from engine.trust import earned

_WHERE = {
    "Engine": "engine.service",
    "Found": "engine.service",
    "Search": "engine.service",
    "build_engine": "engine.factory",
    "check_settings": "engine.factory",
    "build_profile_store": "engine.factory",
    "build_ledger": "engine.factory",
    "build_key_records": "engine.factory",
    "FactWrite": "engine.facts",
    "stored_sentence": "engine.facts",
    "may_write": "engine.facts",
    "Writer": "engine.facts",
    "ErasureReceipt": "engine.lifecycle",
    "SweepReport": "engine.lifecycle",
    "strength_params": "engine.strength",
    "earned": "engine.trust",
}

__all__ = [
    "Engine",
    "ErasureReceipt",
    "FactWrite",
    "Found",
    "Search",
    "SweepReport",
    "Writer",
    "build_engine",
    "build_key_records",
    "build_ledger",
    "build_profile_store",
    "check_settings",
    "earned",
    "may_write",
    "stored_sentence",
    "strength_params",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value  # once loaded, a plain module attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
