"""The collections and what their objects hold: names (one memory collection per embedding model and dimension,
one tenant per partition), properties and their index settings, the conversion between the engine's models and
stored properties, and opening (creating, checking, migrating) the collections at startup."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit
from uuid import UUID

import weaviate
from weaviate import exceptions as wx
from weaviate.classes.config import (
    Configure,
    DataType,
    Property,
    StopwordsPreset,
    Tokenization,
    VectorDistances,
    Vectorizers,
)
from weaviate.classes.init import AdditionalConfig, Auth, Timeout
from weaviate.collections import Collection
from weaviate.util import generate_uuid5

from engine.adapters.weaviate.errors import translated
from engine.domain.errors import ConfigurationError
from engine.domain.models import FactInfo, Memory, MemoryState, Partition, Trace, Turn
from engine.domain.text import terms
from engine.domain.tuning import RetrievalParams

PREFIX_PATTERN = re.compile(r"[A-Z][A-Za-z0-9]*")
MEMORY_PROPERTIES = ["memory_id", "turn_id", "session_id", "character_id", "user_id", "text", "context",
                     "preceding", "created_at", "record_kind", "scope", "fact"]
ACTIVE = "active"
LEGACY_TURNS = "feltsense: every turn, as sent (some stored before turns recorded their tenant)"

Props = dict[str, Any]


# -- naming --------------------------------------------------------------------------------------------------


def slug(value: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", value).strip("_") or "x"


def tenant_for(partition: Partition) -> str:
    """A tenant name for a partition: readable, and unique by its digest (names allow 64 of [A-Za-z0-9_-])."""
    digest = hashlib.blake2b(f"{partition.character_id}\x1f{partition.user_id}".encode(), digest_size=10)
    return f"{slug(partition.character_id)[:16]}-{slug(partition.user_id)[:16]}-{digest.hexdigest()}"


def object_id(kind: str, key: str) -> UUID:
    return UUID(generate_uuid5(key, kind))


def as_datetime(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).astimezone(UTC)


def model_suffix(embedding_model: str, dimension: int) -> str:
    """What names the memory collections of one embedding model and dimension."""
    return f"{slug(embedding_model)}_{dimension}"


# -- schema --------------------------------------------------------------------------------------------------


def _key(name: str) -> Property:
    """A whole-value text property that filters can use (ids, states)."""
    return Property(name=name, data_type=DataType.TEXT, tokenization=Tokenization.FIELD, index_filterable=True,
                    index_searchable=False)


def _stored(name: str, data_type: DataType = DataType.TEXT) -> Property:
    """A property that is only ever read back, never filtered or searched."""
    return Property(name=name, data_type=data_type, index_filterable=False, index_searchable=False,
                    index_range_filters=False)


def _sequence(name: str = "seq") -> Property:
    """The ingest order: sorted on, and range-filtered for keyset paging past the server's offset window."""
    return Property(name=name, data_type=DataType.INT, index_filterable=True, index_range_filters=True,
                    index_searchable=False)


def _value(name: str, data_type: DataType) -> Property:
    return Property(name=name, data_type=data_type, index_filterable=True, index_range_filters=False)


MEMORY_SCHEMA = [
    _key("memory_id"), _stored("turn_id"), _key("session_id"), _stored("character_id"), _stored("user_id"),
    _stored("text"), _stored("context"),
    # The session's turn before this one: its words are in ``terms`` too (``Memory.preceding``).
    _stored("preceding"),
    # The lower-cased text as one token, for the substring fallback's `like *word*` filters.
    _key("folded"),
    # What BM25 searches: engine.domain.text.terms of the text and of the trace's facts, space-separated; and when
    # it was last written, on seq's clock (what the statistics caches catch up from: see the package docstring).
    Property(name="terms", data_type=DataType.TEXT, tokenization=Tokenization.WHITESPACE, index_filterable=False,
             index_searchable=True),
    _sequence("terms_seq"),
    _value("created_at", DataType.DATE), _sequence(),
    # created_at again as seconds since the epoch: tone candidates read thousands of them per recall, and
    # parsing a date string each is the client's slowest step.
    _stored("created_epoch", DataType.NUMBER),
    _key("trace_status"), _key("kind"), _stored("register"), _value("intensity", DataType.NUMBER),
    _value("valence", DataType.NUMBER), _stored("trace"),
    # The record: "turn" or "fact" (``kind`` above is the trace's emotional/factual kind), its scope, and a
    # fact's slot and provenance as JSON (read back only: never in the BM25 index, which is ``terms`` alone).
    _key("record_kind"), _key("scope"), _stored("fact"),
    # The lifecycle: ``status`` filters search (objects stored before it existed have none and count as
    # active), ``state`` is the whole MemoryState as JSON, present once a state has been written.
    _key("status"), _stored("state"),
]
DIRECTORY_SCHEMA = [_stored("memory_id"), _stored("tenant"), _sequence(),
                    _value("has_vector", DataType.BOOL)]
TURN_SCHEMA = [_stored("turn_id"), _key("session_id"), _stored("character_id"), _stored("user_id"), _stored("role"),
               _stored("text"), _stored("timestamp", DataType.DATE), _sequence(),
               # The partition's tenant name (turns are not multi-tenant): what erasing a partition's turns filters on.
               _key("tenant")]
SESSION_SCHEMA = [_stored("session_id"), _stored("tenant"), _stored("character_id"), _stored("user_id"),
                  _value("closed", DataType.BOOL), _stored("closed_at", DataType.DATE),
                  _value("pending", DataType.BOOL)]



# -- records -------------------------------------------------------------------------------------------------


def memory_properties(memory: Memory, seq: int, state: MemoryState | None = None) -> Props:
    props: Props = {
        "memory_id": memory.memory_id, "turn_id": memory.turn_id, "session_id": memory.session_id,
        "character_id": memory.character_id, "user_id": memory.user_id, "text": memory.text,
        "context": memory.context, "preceding": memory.preceding, "folded": memory.text.lower(),
        "terms": indexed_terms(memory, ()), "terms_seq": seq,
        "created_at": memory.created_at, "created_epoch": memory.created_at.timestamp(), "seq": seq,
        "record_kind": memory.kind, "scope": memory.scope, "status": ACTIVE,
    }
    if memory.fact is not None:
        props["fact"] = memory.fact.model_dump_json()
    if state is not None:
        props.update(state_properties(state))
    return props


def state_properties(state: MemoryState) -> Props:
    return {"status": state.status, "state": state.model_dump_json()}


def indexed_terms(memory: Memory, facts: Sequence[str]) -> str:
    """``terms``: the index terms of the memory's text, of the turn before it and of each distinct fact sentence
    of its trace, as the embedded store indexes them."""
    indexed = terms(memory.text) + terms(memory.preceding)
    indexed += [term for fact in dict.fromkeys(facts) for term in terms(fact)]
    return " ".join(indexed)


def trace_properties(trace: Trace, memory: Memory, terms_seq: int) -> Props:
    return {
        "trace_status": trace.status.value, "kind": trace.kind.value, "register": trace.register,
        "intensity": trace.intensity, "valence": trace.valence, "trace": trace.model_dump_json(),
        "terms": indexed_terms(memory, trace.facts), "terms_seq": terms_seq,
    }


def memory_from(props: Mapping[str, Any]) -> Memory:
    fact = props.get("fact")
    return Memory(
        memory_id=props["memory_id"], turn_id=props.get("turn_id") or "", session_id=props["session_id"],
        character_id=props["character_id"], user_id=props["user_id"], text=props["text"],
        context=props.get("context") or "", preceding=props.get("preceding") or "",
        created_at=as_datetime(props["created_at"]),
        # Objects stored before these properties existed are user turns.
        kind=props.get("record_kind") or "turn", scope=props.get("scope") or "user",
        fact=FactInfo.model_validate_json(fact) if fact else None,
    )


def turn_from(props: Mapping[str, Any]) -> Turn:
    return Turn(
        turn_id=props["turn_id"], session_id=props["session_id"], character_id=props["character_id"],
        user_id=props["user_id"], role=props["role"], text=props["text"],
        timestamp=as_datetime(props["timestamp"]),
    )


# -- opening the collections ---------------------------------------------------------------------------------


def connect(url: str, *, grpc_port: int, api_key: str | None, timeout_s: float) -> weaviate.WeaviateClient:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(f"Weaviate URL {url!r} must look like http://host:port")
    secure = parts.scheme == "https"
    with translated(f"connect to {url}"):
        try:
            return weaviate.connect_to_custom(
                http_host=parts.hostname, http_port=parts.port or (443 if secure else 80), http_secure=secure,
                grpc_host=parts.hostname, grpc_port=grpc_port, grpc_secure=secure,
                auth_credentials=None if api_key is None else Auth.api_key(api_key),
                additional_config=AdditionalConfig(
                    timeout=Timeout(init=min(timeout_s, 30.0), query=timeout_s, insert=timeout_s)
                ),
            )
        except ValueError as exc:  # the client validates its connection parameters (pydantic)
            raise ConfigurationError(f"cannot connect to Weaviate at {url} (gRPC port {grpc_port}): {exc}") from exc


def open_collection(
    client: weaviate.WeaviateClient, name: str, schema: list[Property], *, multi_tenant: bool, description: str,
    before_migrating: Callable[[Collection[Props, None], list[str]], None] | None = None,
) -> Collection[Props, None]:
    if not client.collections.exists(name):
        try:
            client.collections.create(
                name,
                description=description,
                properties=schema,
                # Explicit even where nothing is stored: a server's default vectorizer must never run.
                vector_config=Configure.Vectors.self_provided(
                    vector_index_config=Configure.VectorIndex.flat(distance_metric=VectorDistances.COSINE)
                ),
                multi_tenancy_config=Configure.multi_tenancy(
                    enabled=multi_tenant, auto_tenant_creation=multi_tenant,
                    auto_tenant_activation=multi_tenant,
                ),
                inverted_index_config=Configure.inverted_index(
                    bm25_k1=RetrievalParams().bm25_k1, bm25_b=RetrievalParams().bm25_b,
                    stopwords_preset=StopwordsPreset.NONE,
                ),
            )
        except wx.UnexpectedStatusCodeError:
            if not client.collections.exists(name):  # else another process created it meanwhile
                raise
    collection: Collection[Props, None] = client.collections.use(name)
    config = collection.config.get()
    if config.multi_tenancy_config.enabled != multi_tenant:
        raise ConfigurationError(
            f"the Weaviate collection {name} exists with multi-tenancy "
            f"{'on' if config.multi_tenancy_config.enabled else 'off'}; this store needs it "
            f"{'on' if multi_tenant else 'off'}. Use another collection prefix."
        )
    _add_missing_properties(collection, schema, {p.name for p in config.properties}, before_migrating)
    return collection


def _add_missing_properties(
    collection: Collection[Props, None], schema: list[Property], existing: set[str],
    before_migrating: Callable[[Collection[Props, None], list[str]], None] | None,
) -> None:
    """Add the properties a collection made by an earlier release lacks, with their own index settings
    (left to Weaviate's auto-schema, a text property would be tokenised into words and made searchable).
    Objects stored before keep no value for them; the readers treat that as the old default."""
    missing = [prop for prop in schema if prop.name not in existing]
    if not missing:
        return
    if before_migrating is not None:
        before_migrating(collection, [prop.name for prop in missing])
    for prop in missing:
        try:
            collection.config.add_property(prop)
        except (wx.WeaviateInvalidInputError, wx.UnexpectedStatusCodeError):
            # Another process added it meanwhile; anything else is still an error.
            if not any(p.name == prop.name for p in collection.config.get().properties):
                raise


def mark_legacy_turns(turns: Collection[Props, None], missing: list[str]) -> None:
    # Recorded before the property is added, so that a crash in between cannot hide the old turns.
    if "tenant" in missing:
        turns.config.update(description=LEGACY_TURNS)


def check_memory_collection(memories: Collection[Props, None], embedding_model: str, dimension: int) -> None:
    # Vectors of two embedding models never mix: the collection is bound to the model that created it.
    config = memories.config.get()
    try:
        found = json.loads(config.description or "")
        model, found_dimension = found["embedding_model"], found["dimension"]
    except (ValueError, KeyError, TypeError):
        raise ConfigurationError(
            f"the Weaviate collection {config.name} was not made by feltsense (its description does not "
            "name an embedding model); use another collection prefix"
        ) from None
    if model != embedding_model or found_dimension != dimension:
        raise ConfigurationError(
            f"the Weaviate collection {config.name} holds vectors of {model} ({found_dimension}-d); this engine "
            f"embeds with {embedding_model} ({dimension}-d). Use another collection prefix or re-embed."
        )
    vectors = list(config.vector_config.values()) if config.vector_config else []
    if len(vectors) != 1 or vectors[0].vectorizer.vectorizer != Vectorizers.NONE or (
        getattr(vectors[0].vector_index_config, "distance_metric", None) != VectorDistances.COSINE
    ):
        raise ConfigurationError(
            f"the Weaviate collection {config.name} must have one self-provided vector with cosine distance"
        )
