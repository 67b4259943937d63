"""Assemble what the character is told: a system part (tone rules) and a context tail (the memories).

The two are kept apart on purpose: tone rules belong in the system message, recalled memories beside the
user's message. Standing rules come first because they change least (which keeps provider prompt caches warm).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from engine.models import AssembledContext, RecalledMemory, ToneConstraint
from prompts.wording import (
    MEMORY_LINE,
    MEMORY_LINE_WITH_CONTEXT,
    SYSTEM_HEADER,
    TAIL_HEADER,
    age_in_words,
    quote,
)


def assemble(
    memories: Sequence[RecalledMemory],
    tone_constraints: Sequence[ToneConstraint],
    standing_rules: Sequence[ToneConstraint],
    *,
    now: datetime,
) -> AssembledContext:
    rules = [*standing_rules, *tone_constraints]
    system = "\n".join([SYSTEM_HEADER, *(f"- {rule.instruction}" for rule in rules)]) if rules else ""
    lines = []
    for memory in memories:
        age = age_in_words((now - memory.created_at).total_seconds() / 86400.0)
        age = age[:1].upper() + age[1:]
        if memory.context:
            lines.append(MEMORY_LINE_WITH_CONTEXT.format(age=age, context=quote(memory.context),
                                                         text=quote(memory.text)))
        else:
            lines.append(MEMORY_LINE.format(age=age, text=quote(memory.text)))
    tail = "\n".join([TAIL_HEADER, *lines]) if lines else ""
    return AssembledContext(system=system, tail=tail)
