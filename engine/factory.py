"""The one place that turns settings into backends. Optional providers are imported lazily.

``check_settings`` refuses, before anything loads or connects, the combinations that would start but could never
work; ``build_engine`` runs it first.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from engine.adapters.sqlite_ledger import SqliteLedger
from engine.domain.errors import ConfigurationError
from engine.domain.ports import Classifier, Embedder, KeyRecords, Ledger, MemoryStore, Profiles, ProfileStore
from engine.service import Engine, RecallRetention
from engine.settings import Settings
from engine.telemetry import exporter_from_environment

LEDGER_FILE = "ledger.sqlite3"
"""In the data directory when ``FELTSENSE_POSTGRES__URL`` is unset: the ledger."""

TUNING_FILE = "tuning.sqlite3"
"""In the data directory when ``FELTSENSE_POSTGRES__URL`` is unset: the versioned tuning profiles."""

KEYS_FILE = "keys.sqlite3"
"""In the data directory when ``FELTSENSE_POSTGRES__URL`` is unset: the API keys."""

POSTGRES_TUNING_CACHE_S = 1.0
"""How long a process serves a tuning profile from its cache before asking PostgreSQL for newer versions: a
director's save through one process reaches every other one's recalls within this."""

LOCAL_CLASSIFIERS = ("local", "local-v1")
"""They read the local embedder's MiniLM vectors (traces.classifier.EMBEDDING_DIMENSION, 384-d) beside the text."""


def _embedding_space(settings: Settings) -> str:
    if settings.embedder == "mistral":
        return f"{settings.mistral.embed_model} vectors ({settings.mistral.embed_dimension}-d)"
    if settings.embedder == "hashing":
        return "hashed word vectors (256-d, a stand-in for tests)"
    return "MiniLM vectors (384-d)"


def check_settings(settings: Settings) -> None:
    """Raise ConfigurationError for settings that cannot work together, naming the variables and the fix.

    Called at startup (``feltsense serve`` and ``worker``, and ``build_engine``), so a service never comes up
    only to fail on every session close, or after minutes spent loading models.
    """
    exporter_from_environment()  # an OTEL_TRACES_EXPORTER feltsense cannot export to
    if settings.classifier in LOCAL_CLASSIFIERS and settings.embedder != "local":
        raise ConfigurationError(
            f"FELTSENSE_CLASSIFIER={settings.classifier} with FELTSENSE_EMBEDDER={settings.embedder} cannot work: "
            "the local classifier reads the local embedder's MiniLM vectors (384-d), and this embedder makes "
            f"{_embedding_space(settings)}, so every session close would fail and its traces stay pending. Set "
            "FELTSENSE_EMBEDDER=local, or FELTSENSE_CLASSIFIER=mistral (it reads the text, not the vectors)."
        )
    for variable, provider in (("FELTSENSE_EMBEDDER", settings.embedder),
                               ("FELTSENSE_CLASSIFIER", settings.classifier)):
        if provider == "mistral" and settings.mistral_api_key is None:
            raise ConfigurationError(
                f"{variable}=mistral needs MISTRAL_API_KEY, which is not set. Set MISTRAL_API_KEY, or "
                f"{variable}=local for the offline model."
            )
    if settings.store == "weaviate":
        url = urlsplit(settings.weaviate.url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ConfigurationError(
                f"FELTSENSE_STORE=weaviate needs the server's address in FELTSENSE_WEAVIATE__URL, like "
                f"http://127.0.0.1:8080; it is {settings.weaviate.url!r}. Set it, or FELTSENSE_STORE=embedded for "
                "the store in FELTSENSE_DATA_DIR."
            )


def _mistral_key(settings: Settings) -> str:
    if settings.mistral_api_key is None:
        raise ConfigurationError("MISTRAL_API_KEY is not set, but the settings ask for a Mistral provider")
    return settings.mistral_api_key.get_secret_value()


def build_embedder(settings: Settings) -> Embedder:
    if settings.embedder == "local":
        from engine.adapters.onnx_embedder import LOCAL_MODELS, OnnxEmbedder

        return OnnxEmbedder(LOCAL_MODELS[settings.local_model])
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

        try:
            return EmbeddedStore(settings.data_dir, embedding_model=embedder.model_id, dimension=embedder.dimension)
        except ConfigurationError as exc:
            if settings.embedder != "local":
                raise
            from engine.adapters.onnx_embedder import LOCAL_MODELS

            builds = ", ".join(f"{name} makes {model.model_id}" for name, model in LOCAL_MODELS.items())
            hint = f"FELTSENSE_LOCAL_MODEL picks the local embedder's build: {builds}."
            raise ConfigurationError(f"{exc} {hint}") from exc
    if settings.store == "weaviate":
        from engine.adapters.weaviate import WeaviateStore

        w = settings.weaviate
        return WeaviateStore(
            w.url, grpc_port=w.grpc_port, api_key=None if w.api_key is None else w.api_key.get_secret_value(),
            embedding_model=embedder.model_id, dimension=embedder.dimension,
            collection_prefix=w.collection_prefix, timeout_s=w.timeout_s,
        )
    raise ConfigurationError(f"unknown store {settings.store!r}")  # pragma: no cover


def build_key_records(settings: Settings) -> KeyRecords:
    """The API keys every API process shares: in PostgreSQL when ``FELTSENSE_POSTGRES__URL`` is set (every host
    on that database shares them), else in ``keys.sqlite3`` in the data directory. Neither caches a lookup, so a
    revocation holds for every process at once."""
    pg = settings.postgres
    if pg.url is not None:
        from engine.adapters.postgres.keys import PostgresKeyRecords

        return PostgresKeyRecords(pg.url.get_secret_value(), min_size=pg.pool_min_size,
                                  max_size=pg.pool_max_size, timeout_s=pg.timeout_s)
    from engine.adapters.sqlite_keys import SqliteKeyRecords

    return SqliteKeyRecords(settings.data_dir / KEYS_FILE)


def build_profile_store(settings: Settings) -> ProfileStore:
    """The tuning profiles the service and its workers share: in PostgreSQL when ``FELTSENSE_POSTGRES__URL`` is set
    (a save through one process is used by every other one within ``POSTGRES_TUNING_CACHE_S``), else in
    ``tuning.sqlite3`` in the data directory."""
    pg = settings.postgres
    if pg.url is not None:
        from engine.adapters.postgres.tuning import PostgresTuningStore

        return PostgresTuningStore(pg.url.get_secret_value(), min_size=pg.pool_min_size,
                                   max_size=pg.pool_max_size, timeout_s=pg.timeout_s,
                                   cache_s=POSTGRES_TUNING_CACHE_S)
    from engine.adapters.sqlite_tuning import SqliteTuningStore

    return SqliteTuningStore(settings.data_dir / TUNING_FILE)


def build_ledger(settings: Settings) -> Ledger:
    """The ledger (audit trail, review queue, recall log, resolutions, erasure tombstones, the partitions the sweep
    visits): in PostgreSQL when ``FELTSENSE_POSTGRES__URL`` is set, shared by every process on that database, else
    in ``ledger.sqlite3`` in the data directory."""
    pg = settings.postgres
    if pg.url is not None:
        from engine.adapters.postgres.ledger import PostgresLedger

        return PostgresLedger(pg.url.get_secret_value(), min_size=pg.pool_min_size, max_size=pg.pool_max_size,
                              timeout_s=pg.timeout_s)
    return SqliteLedger(settings.data_dir / LEDGER_FILE)


def build_engine(
    settings: Settings,
    *,
    embedder: Embedder | None = None,
    classifier: Classifier | None = None,
    profiles: Profiles | None = None,
) -> Engine:
    """Build an engine from settings; pass an embedder or classifier to share one already loaded. Built wholly
    from settings, it runs ``check_settings`` first."""
    if embedder is None and classifier is None:
        check_settings(settings)
    embedder = embedder or build_embedder(settings)
    return Engine(
        store=build_store(settings, embedder),
        embedder=embedder,
        classifier=classifier or build_classifier(settings),
        profiles=profiles,
        ledger=build_ledger(settings),
        recall_retention=RecallRetention(days=settings.recall_log.days, max_bytes=settings.recall_log.max_bytes),
    )


def build_embedded_engine(
    data_dir: Path, *, embedder: Embedder, classifier: Classifier, profiles: Profiles | None = None
) -> Engine:
    """A fresh engine over the embedded store in ``data_dir`` (its ledger there too) with models already loaded:
    what an evaluation or a benchmark builds per run. It reads no settings: none of them bear on it."""
    from engine.adapters.embedded_store import EmbeddedStore

    store = EmbeddedStore(data_dir, embedding_model=embedder.model_id, dimension=embedder.dimension)
    return Engine(store=store, embedder=embedder, classifier=classifier, profiles=profiles,
                  ledger=SqliteLedger(data_dir / LEDGER_FILE))
