"""The API answers with its own wire models (``feltsense_client.models``), never the engine's, and ``api.wire``
refuses to drop a field on the way.

A route returning an engine type would make every change to the engine a change to the HTTP contract; a field the
engine adds later must fail here (and in every route test, as a 500) until the wire model names it.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import feltsense_client.models as wire
import pytest
from litestar.response import Response
from litestar.routes import HTTPRoute
from pydantic import BaseModel

from api.wire import WireMismatch, to_wire
from engine.domain.models import CloseReport, Resolution
from engine.facts import FactWrite
from tests.inprocess import in_process

ENGINE_TYPED_ROUTES = {"put_tuning", "get_tuning", "validate_tuning", "replay_tuning", "tuning_history"}
"""The tuning routes (``api.tuning``) still answer with the engine's tuning types: they are left for a change of
their own. Every other route answers with a wire model or a view the API defines (which may nest the engine's
``Memory``)."""


def _classes(annotation: Any) -> set[type]:
    """Every class an annotation names: through unions, ``list[...]`` and ``Response[...]``."""
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return set()
    if origin is not None:
        found = set() if origin in (typing.Union, types.UnionType, list, tuple, dict) else {origin}
        return found | {cls for arg in typing.get_args(annotation) for cls in _classes(arg)}
    return {annotation} if isinstance(annotation, type) else set()


def test_every_route_answers_with_a_wire_model_or_the_apis_own(tmp_path: Path) -> None:
    with in_process(tmp_path, queued=True) as service:
        handlers = [handler for route in service.app.routes if isinstance(route, HTTPRoute)
                    for handler in route.route_handlers if handler.handler_name != "options_handler"]
    checked = 0
    for handler in handlers:
        if handler.handler_name in ENGINE_TYPED_ROUTES:
            continue
        for cls in _classes(handler.parsed_fn_signature.return_type.annotation) - {Response, type(None)}:
            assert not cls.__module__.startswith(("engine", "traces")), (
                f"{handler.handler_name} answers with the engine's {cls.__module__}.{cls.__name__}: declare a wire "
                "model of feltsense_client.models (or an api view) and convert with api.wire.to_wire")
            checked += 1
    assert checked >= 20


class _LaterCloseReport(CloseReport):
    reviewed: bool = False  # a field the engine adds later, which no wire model has


class _EngineJob(BaseModel):
    job_id: str
    status: str
    report: _LaterCloseReport | None = None


def test_a_field_the_wire_model_lacks_is_refused_not_dropped() -> None:
    report = _LaterCloseReport(session_id="s1", traces_written=1, traces_pending=0, reviewed=True)
    with pytest.raises(WireMismatch, match=r"reviewed.*wire CloseReport"):
        to_wire(wire.CloseReport, report)
    with pytest.raises(WireMismatch, match=r"report\.reviewed.*wire JobState"):
        to_wire(wire.JobState, _EngineJob(job_id="j1", status="complete", report=report))


def test_computed_fields_and_dataclasses_cross_whole() -> None:
    at = datetime(2025, 3, 1, 18, tzinfo=UTC)
    resolution = Resolution(memory_id="m1", resolved_by="m2", register="anxiety", at=at, cue="an apology (rule)",
                            link="shared anchor", recorded_at=at)
    crossed = to_wire(wire.Resolution, resolution)
    assert crossed.note == resolution.note
    assert crossed.model_dump(mode="json") == resolution.model_dump(mode="json")
    written = FactWrite(fact_id="f1", status="active", outcome="written", superseded=("f0",))
    assert to_wire(wire.FactWrite, written).model_dump() == dataclasses.asdict(written)
    with pytest.raises(TypeError, match="not a pydantic model or a dataclass"):
        to_wire(wire.FactWrite, {"fact_id": "f1"})
