"""A probe's checks against what recall returned: each failed check as a sentence saying what was expected and
what was found. Strings match case-insensitively, as substrings."""

from __future__ import annotations

from collections.abc import Iterable

from engine.domain.models import RecallResult, ToneConstraint
from engine.transcripts.model import Probe, ToneCheck


def _contains(haystack: str, needle: str) -> bool:
    return needle.casefold() in haystack.casefold()


def _quoted(strings: Iterable[str]) -> str:
    return ", ".join(repr(value) for value in strings)


def clip(text: str, limit: int = 100) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis: for messages and report lines."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def constraint_label(constraint: ToneConstraint) -> str:
    """A tone constraint as ``register [anchors]``, with ``(standing)`` for a standing rule."""
    standing = " (standing)" if constraint.standing else ""
    return f"{constraint.register}{standing} [{', '.join(constraint.anchors)}]"


def _tone_matches(check: ToneCheck, constraint: ToneConstraint) -> bool:
    if check.register_any is not None and constraint.register not in check.register_any:
        return False
    if check.anchors_any is None:
        return True
    places = (*constraint.anchors, constraint.instruction)
    return any(_contains(place, anchor) for anchor in check.anchors_any for place in places)


def _tone_wanted(check: ToneCheck) -> str:
    parts = ["a tone constraint"]
    if check.register_any is not None:
        parts.append(f"with register {' or '.join(check.register_any)}")
    if check.anchors_any is not None:
        parts.append(f"naming {' or '.join(check.anchors_any)}")
    return " ".join(parts)


def check_probe(probe: Probe, recall: RecallResult) -> tuple[str, ...]:
    """Each failed check of ``probe`` against what recall returned, as a sentence; empty when it passed."""
    failures: list[str] = []
    in_force = recall.tone_in_force
    texts = [memory.text for memory in recall.memories]
    context = "\n".join((recall.context.prefix, recall.context.tone, recall.context.tail))

    for index, tone in enumerate(probe.tone):
        if not any(_tone_matches(tone, constraint) for constraint in in_force):
            found = "; ".join(constraint_label(c) for c in in_force) or "none"
            failures.append(f"tone[{index}]: expected {_tone_wanted(tone)} in force; in force: {found}")

    if probe.no_tone == "any":
        if in_force:
            found = "; ".join(constraint_label(c) for c in in_force)
            failures.append(f"no_tone: expected no tone constraint in force; found {found}")
    elif probe.no_tone is not None:
        banned = [c for c in in_force if c.register in probe.no_tone]
        if banned:
            found = "; ".join(constraint_label(c) for c in banned)
            failures.append(
                f"no_tone: expected no tone constraint with register {' or '.join(probe.no_tone)}; "
                f"found {found}"
            )

    if probe.recall_any and not any(_contains(text, needle) for text in texts for needle in probe.recall_any):
        failures.append(
            f"recall_any: expected a recalled memory containing one of {_quoted(probe.recall_any)}; "
            f"none of the {len(texts)} recalled does"
        )
    if probe.recall_all:
        missing = [
            needle for needle in probe.recall_all if not any(_contains(text, needle) for text in texts)
        ]
        if missing:
            failures.append(
                f"recall_all: expected each of {_quoted(probe.recall_all)} in some recalled memory; "
                f"missing {_quoted(missing)}"
            )
    if probe.recall_none:
        hits = [(needle, text) for text in texts for needle in probe.recall_none if _contains(text, needle)]
        if hits:
            found = "; ".join(f"{needle!r} in {clip(text, 80)!r}" for needle, text in hits)
            failures.append(
                f"recall_none: expected no recalled memory containing {_quoted(probe.recall_none)}; "
                f"found {found}"
            )
    if probe.context_any and not any(_contains(context, needle) for needle in probe.context_any):
        failures.append(
            f"context_any: expected the assembled context to contain one of {_quoted(probe.context_any)}; "
            "it has none"
        )
    if probe.context_none:
        present = [needle for needle in probe.context_none if _contains(context, needle)]
        if present:
            failures.append(
                f"context_none: expected the assembled context to contain none of "
                f"{_quoted(probe.context_none)}; it has {_quoted(present)}"
            )
    return tuple(failures)


