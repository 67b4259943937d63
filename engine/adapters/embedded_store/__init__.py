"""The embedded default store: SQLite records (``store``), one in-memory index per partition (``index``)."""

from engine.adapters.embedded_store.store import EmbeddedStore

__all__ = ["EmbeddedStore"]
