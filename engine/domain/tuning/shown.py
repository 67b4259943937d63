"""How a constant is declared and presented: the sections' base model, ``Shown`` (a creative director's label and
help for a constant or a section), ``tunable`` (one constant's field, declared once) and the shared texts of
``Shown.engineering`` and ``Shown.calibrated_by``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field
from pydantic.fields import FieldInfo

T = TypeVar("T")


class _Params(BaseModel):
    # Infinity is saved as JSON null, which no later load accepts (a bad row once stopped the service starting).
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


@dataclass(frozen=True)
class Shown:
    """How a constant (or a section) is presented to a creative director: a plain-language ``label`` and ``help``,
    its ``unit``, the evaluation that chooses its value (``calibrated_by``: rerun it rather than guess) and, for a
    constant that is an engineer's to change rather than a director's, why (``engineering``; the page folds those
    away). Pydantic keeps it in the field's metadata and does not validate with it."""

    label: str
    help: str
    unit: str = ""
    calibrated_by: str = ""
    engineering: str = ""


def tunable(
    default: T, label: str, help: str, *, description: str, unit: str = "", calibrated_by: str = "",
    engineering: str = "", ge: float | None = None, gt: float | None = None, le: float | None = None,
    lt: float | None = None,
) -> T:
    """One constant of a section, said once: its ``default``, its ``Shown`` (``label``, ``help``, ``unit``,
    ``calibrated_by``, ``engineering``), and its bounds and engineer's ``description`` as pydantic's ``Field`` takes
    them. The ``Shown`` joins the field's metadata, where ``Annotated[type, Shown(...)]`` would put it (the schema
    and the validation are the same), and the result is typed as the default, so mypy checks the default against the
    field's annotation."""
    field = cast(FieldInfo, Field(default=default, description=description, ge=ge, gt=gt, le=le, lt=lt))
    field.metadata.append(Shown(label, help, unit=unit, calibrated_by=calibrated_by, engineering=engineering))
    return cast(T, field)


EMBEDDER = "it depends on the embedder's scale of similarity: set for the embedder in use, by measurement"
SEARCH = "it tunes how well search finds the expected memory (`feltsense eval window`), not how the character feels"
CALIBRATED = "it is fitted to evaluation data, not chosen: refit it when the search or the embedder changes"
OPERATIONS = "an operational setting: how often the service retries, not what the character remembers"
TONE_EVAL = "feltsense eval tone-thresholds"
WINDOW_EVAL = "feltsense eval window --calibrate"
