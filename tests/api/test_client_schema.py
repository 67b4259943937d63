"""The client's own models against the OpenAPI schema the service serves: they cannot drift apart.

``feltsense_client.models`` imports nothing of the server (a runtime installs only httpx and pydantic). The service
answers with most of its models itself (``api.wire``); the ones it defines on its own are the request models and
the queued close, named in ``SERVED_AS``. Each client model is compared with the served component of the same name
(or the one in ``SERVED_AS``): the same properties, the same ones required, the same types, so the service serves
every model under the client's name and its own models agree with the client's. Types are reduced to one form
from both dialects (pydantic's ``model_json_schema`` and Litestar's OpenAPI 3.1): a string, a date-time, an enum's
set of values, an array of a type, a map to a type, a model by its (served) name, a union of those. Descriptions,
bounds and defaults are left out: the service checks values, and its 422 names each bad field.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import feltsense_client.models
import pytest
from litestar.testing import TestClient
from pydantic import BaseModel

from api.app import create_app
from engine.adapters.sqlite_ledger import SqliteLedger
from engine.jobs import InProcessJobs
from engine.service import Engine
from tests.keys import sqlite_key_store

SERVED_AS = {"Turn": "ReportedTurn", "RecallQuery": "RecallRequest", "CloseAccepted": "CloseQueued"}
"""Client models whose served component has another name (the API's request models, and the queued close)."""
READS_ONLY_SOME = {"CloseAccepted"}
"""Tolerant on purpose: the client reads only some of the served properties (every one it reads must agree)."""

CLIENT_MODELS = sorted(
    (model for name, model in vars(feltsense_client.models).items()
     if inspect.isclass(model) and issubclass(model, BaseModel) and model.__module__ == feltsense_client.models.__name__
     and not name.startswith("_")),
    key=lambda model: model.__name__,
)

Shape = Any  # a hashable reduction of a property's schema: str, or nested tuples and frozensets


def shape(schema: dict[str, Any], components: dict[str, Any], rename: dict[str, str]) -> Shape:
    """A property's type in one form for both dialects; ``components`` resolves references to enums."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        target = components.get(name, {})
        if "enum" in target:  # a served StrEnum (Leg) is a component; the client's Literal is inline
            return ("enum", frozenset(target["enum"]))
        return ("model", rename.get(name, name))
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = frozenset(shape(option, components, rename) for option in schema[key])
            return next(iter(options)) if len(options) == 1 else ("union", options)
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return shape(schema["allOf"][0], components, rename)
    if "enum" in schema:
        values = frozenset(schema["enum"])
        if None in values:  # Litestar writes an optional Literal as one enum with null; pydantic as a union
            return ("union", frozenset({("enum", values - {None}), "null"}))
        return ("enum", values)
    if "const" in schema:
        return ("enum", frozenset([schema["const"]]))
    kind = schema.get("type")
    if kind == "array":
        return ("array", shape(schema["items"], components, rename))
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return ("map", shape(schema["additionalProperties"], components, rename))
    if kind == "string" and schema.get("format") == "date-time":
        return "date-time"
    if kind is None and not schema:
        return "anything"
    assert isinstance(kind, str), f"a schema this test does not know how to read: {schema}"
    return kind


def signature(schema: dict[str, Any], components: dict[str, Any], rename: dict[str, str]) -> dict[str, Shape]:
    """Each property: whether it is required, and its type."""
    required = set(schema.get("required", ()))
    return {name: (name in required, shape(prop, components, rename))
            for name, prop in schema.get("properties", {}).items()}


def client_signature(model: type[BaseModel]) -> dict[str, Shape]:
    schema = model.model_json_schema()
    return signature(schema, schema.get("$defs", {}), SERVED_AS)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The served components, of the app as it runs by default and of the app with a job queue (the 202 close)."""
    from engine.adapters.embedded_store import EmbeddedStore
    from engine.adapters.hashing_embedder import HashingEmbedder
    from tests.fakes import KeywordClassifier

    tmp = tmp_path_factory.mktemp("schema")
    embedder = HashingEmbedder()
    store = EmbeddedStore(Path(tmp) / "data", embedding_model=embedder.model_id, dimension=embedder.dimension)
    service = Engine(ledger=SqliteLedger.in_memory(), store=store, embedder=embedder, classifier=KeywordClassifier())
    keys = sqlite_key_store(Path(tmp) / "keys.sqlite3")
    schemas: dict[str, Any] = {"paths": {}, "queued_paths": {}, "components": {}}
    try:
        for key, app in (("paths", create_app(service, keys=keys)),
                         ("queued_paths", create_app(service, keys=keys, jobs=InProcessJobs(service)))):
            with TestClient(app) as client:
                document = client.get("/openapi.json").json()
            schemas[key] = document["paths"]
            schemas["components"].update(document["components"]["schemas"])
        yield schemas
    finally:
        keys.close()
        service.close()


@pytest.mark.parametrize("model", CLIENT_MODELS, ids=lambda model: model.__name__)
def test_each_client_model_agrees_with_the_served_schema(model: type[BaseModel], served: dict[str, Any]) -> None:
    mine = client_signature(model)
    name = SERVED_AS.get(model.__name__, model.__name__)
    assert name in served["components"], f"the service serves no {name} for the client's {model.__name__}"
    theirs = signature(served["components"][name], served["components"], {})
    if model.__name__ in READS_ONLY_SOME:
        theirs = {field: theirs.get(field) for field in mine}
    assert mine == theirs


def _ref(schema: dict[str, Any]) -> str:
    return str(schema["$ref"]).rsplit("/", 1)[-1]


def _answer(operation: dict[str, Any], status: str = "200") -> dict[str, Any]:
    return dict(operation["responses"][status]["content"]["application/json"]["schema"])


def test_the_client_sends_and_reads_what_its_endpoints_serve(served: dict[str, Any]) -> None:
    components, paths, queued = served["components"], served["paths"], served["queued_paths"]
    turns = paths["/v1/turns"]["post"]
    batch = components[_ref(turns["requestBody"]["content"]["application/json"]["schema"])]
    assert _ref(batch["properties"]["turns"]["items"]) == SERVED_AS["Turn"]
    assert _ref(_answer(turns)) == "IngestReport"

    recall = paths["/v1/recall"]["post"]
    assert _ref(recall["requestBody"]["content"]["application/json"]["schema"]) == SERVED_AS["RecallQuery"]
    assert {_ref(option) for option in _answer(recall)["oneOf"]} == {"CompactRecall", "RecallResult"}

    assert _ref(_answer(paths["/v1/sessions/{session_id}/close"]["post"])) == "CloseReport"
    assert _ref(_answer(queued["/v1/sessions/{session_id}/close"]["post"])) == SERVED_AS["CloseAccepted"]


def test_every_model_the_client_uses_is_checked() -> None:
    names = {model.__name__ for model in CLIENT_MODELS}
    assert {"Turn", "WindowTurn", "RecallQuery", "IngestReport", "CloseReport", "CloseAccepted", "CompactRecall",
            "RecallResult"} <= names
    for model in CLIENT_MODELS:  # every nested model is a client model too (and so checked above)
        assert {name for name in model.model_json_schema().get("$defs", {})} <= names
