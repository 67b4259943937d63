"""The one place that turns settings into backends. Optional providers are imported lazily."""

from __future__ import annotations

from engine.domain.errors import ConfigurationError
from engine.domain.ports import Classifier, Embedder, MemoryStore
from engine.domain.tuning import ProfileSource
from engine.ledger import Ledger
from engine.service import Engine
from engine.settings import Settings


def _mistral_key(settings: Settings) -> str:
    if settings.mistral_api_key is None:
        raise ConfigurationError("MISTRAL_API_KEY is not set, but the settings ask for a Mistral provider")
    return settings.mistral_api_key.get_secret_value()


def build_embedder(settings: Settings) -> Embedder:
    if settings.embedder == "local":
        from engine.adapters.onnx_embedder import OnnxEmbedder

        return OnnxEmbedder()
    if settings.embedder == "mistral":
        from engine.adapters.mistral import MistralEmbedder

        m = settings.mistral
        return MistralEmbedder(
            _mistral_key(settings), server_url=m.server_url, model=m.embed_model, dimension=m.embed_dimension,
            timeout_s=m.timeout_s, max_retries=m.max_retries, batch_size=m.batch_size,
        )
    if settings.embedder == "hashing":
        from engine.adapters.hashing_embedder import HashingEmbedder

        return HashingEmbedder()
    raise ConfigurationError(f"unknown embedder {settings.embedder!r}")  # pragma: no cover


def build_classifier(settings: Settings) -> Classifier:
    if settings.classifier == "local":
        from traces.session_classifier import SessionClassifier

        return SessionClassifier.load()
    if settings.classifier == "local-v1":
        from traces.classifier import LocalClassifier

        return LocalClassifier.load()
    if settings.classifier == "mistral":
        from engine.adapters.mistral import MistralClassifier

        m = settings.mistral
        return MistralClassifier(
            _mistral_key(settings), server_url=m.server_url, model=m.chat_model, timeout_s=m.timeout_s,
            max_retries=m.max_retries,
        )
    raise ConfigurationError(f"unknown classifier {settings.classifier!r}")  # pragma: no cover


def build_store(settings: Settings, embedder: Embedder) -> MemoryStore:
    if settings.store == "embedded":
        from engine.adapters.embedded_store import EmbeddedStore

        return EmbeddedStore(settings.data_dir, embedding_model=embedder.model_id, dimension=embedder.dimension)
    if settings.store == "weaviate":
        from engine.adapters.weaviate_store import WeaviateStore

        w = settings.weaviate
        return WeaviateStore(
            w.url, grpc_port=w.grpc_port, api_key=None if w.api_key is None else w.api_key.get_secret_value(),
            embedding_model=embedder.model_id, dimension=embedder.dimension,
            collection_prefix=w.collection_prefix, timeout_s=w.timeout_s,
        )
    raise ConfigurationError(f"unknown store {settings.store!r}")  # pragma: no cover


def build_engine(
    settings: Settings,
    *,
    embedder: Embedder | None = None,
    classifier: Classifier | None = None,
    profiles: ProfileSource | None = None,
) -> Engine:
    """Build an engine from settings; pass an embedder or classifier to share one already loaded."""
    embedder = embedder or build_embedder(settings)
    return Engine(
        store=build_store(settings, embedder),
        embedder=embedder,
        classifier=classifier or build_classifier(settings),
        profiles=profiles,
        ledger=Ledger(settings.data_dir / "ledger.sqlite3"),
    )
