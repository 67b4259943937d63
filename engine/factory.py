"""The one place that turns settings into backends."""

from __future__ import annotations

from engine.errors import ConfigurationError
from engine.ports import Classifier, Embedder
from engine.service import Engine
from engine.settings import Settings
from engine.tuning import ProfileSource


def build_embedder(settings: Settings) -> Embedder:
    if settings.embedder == "local":
        from engine.adapters.onnx_embedder import OnnxEmbedder

        return OnnxEmbedder()
    if settings.embedder == "hashing":
        from engine.adapters.hashing_embedder import HashingEmbedder

        return HashingEmbedder()
    raise ConfigurationError(f"unknown embedder {settings.embedder!r}")  # pragma: no cover


def build_classifier(settings: Settings) -> Classifier:
    if settings.classifier == "local":
        from traces.classifier import LocalClassifier

        return LocalClassifier.load()
    raise ConfigurationError(f"unknown classifier {settings.classifier!r}")  # pragma: no cover


def build_engine(
    settings: Settings,
    *,
    embedder: Embedder | None = None,
    classifier: Classifier | None = None,
    profiles: ProfileSource | None = None,
) -> Engine:
    """Build an engine from settings; pass an embedder or classifier to share one already loaded."""
    from engine.adapters.embedded_store import EmbeddedStore

    embedder = embedder or build_embedder(settings)
    store = EmbeddedStore(settings.data_dir, embedding_model=embedder.model_id, dimension=embedder.dimension)
    return Engine(
        store=store,
        embedder=embedder,
        classifier=classifier or build_classifier(settings),
        profiles=profiles,
    )
