"""Assemble what the character is told, along two paths (seed 000, "Two paths into every agent run").

- **Path A, exact, every turn, never dropped:** the character's canon (pinned canon records and canon facts,
  read whole from their durable records), the user's current facts (rendered from their triples, the user's
  words in quotes), and the standing tone rules. Rendered compactly in a fixed order from nothing that depends
  on the turn's message or time, so the same character, user, pins, facts and rules give a byte-identical
  ``prefix`` (provider prompt caches stay warm).
- **Path B, per turn:** this turn's tone constraints (``tone``, after the prefix in the system message) and the
  reranked memories (``tail``, beside the user's message), whole items in rank order, filling what the budget
  leaves. The lowest-ranked whole memory drops first.

Budgets are tokens, counted on the joined text with a real tokenizer (``prompts.tokens``). Canon goes in
priority order and is never cut mid-record; a single pin larger than ``max_pin_tokens`` is cut at a paragraph
boundary and flagged. Memories are laid out with the most important at the edges (Liu et al., "Lost in the
Middle"): first, last, second, second to last, and so on.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from engine.domain.models import AssembledContext, ContextTrace, Memory, RecalledMemory, ToneConstraint
from engine.domain.vocabulary import fact_sentence, quote
from prompts.tokens import TokenCounter, cut_at_paragraph, fit
from prompts.wording import (
    CANON_HEADER,
    FACTS_HEADER,
    MEMORY_LINE,
    MEMORY_LINE_WITH_CONTEXT,
    REHEARSAL_HEADER,
    STANDING_HEADER,
    TAIL_HEADER,
    TONE_HEADER,
    TRUNCATED_MARK,
    age_in_words,
)

# The order the user's facts are listed in: what can hurt first (allergies, diet), then tastes in food and drink,
# then who and where they are.
FACT_ORDER = ("allergy", "diet", "taste", "preference", "name", "died", "relationship", "lives_in", "lives_with",
              "hometown", "works_at", "occupation", "studies_at", "birthday", "has", "hobby", "favourite", "routine",
              "activity", "opinion")
PREFERENCE_RELATIONS = frozenset({"taste", "preference", "favourite"})
"""The user's tastes ("can't stand coriander"), how they have things ("coffee with oat milk") and favourites. They
are in Path A whatever the message, because the message that needs them rarely shares a word with them ("what
should I get at the café?" and "The user takes "coffee" ...") and Path A is the part that does not depend on the
message: a topic map from the message's words to relations would make the prefix change turn by turn (losing the
prompt cache) or put the facts in the tail, behind retrieval again. A user states few of them, but so nothing can
crowd the prefix they have their own token cap (``Budget.max_preference_tokens``): the most recently stated fit
first, since a taste said last year is likelier to have changed than one said last week."""


_PREFIX_TOKENS: dict[tuple[str, str], int] = {}
_PREFIX_CACHE_SIZE = 4096


def _prefix_tokens(prefix: str, counter: TokenCounter) -> int:
    """The prefix is byte-stable across turns, so its count is too: counted once, then remembered."""
    key = (counter.name, prefix)
    found = _PREFIX_TOKENS.get(key)
    if found is None:
        if len(_PREFIX_TOKENS) >= _PREFIX_CACHE_SIZE:
            _PREFIX_TOKENS.clear()
        found = _PREFIX_TOKENS[key] = counter.count(prefix)
    return found


@dataclass(frozen=True)
class Budget:
    total_tokens: int
    max_pin_tokens: int
    max_preference_tokens: int = 200
    """The most the user's tastes and preferences (``PREFERENCE_RELATIONS``) take of Path A, as listed lines."""


def edges_first(count: int) -> list[int]:
    """Positions for ranks 0..count-1 so the best sit at the edges: ranks 0, 2, 4, ... from the top, then
    ..., 5, 3, 1 up from the bottom."""
    front = list(range(0, count, 2))
    back = list(range(1, count, 2))
    return front + back[::-1]


def _section(header: str, lines: Sequence[str]) -> str:
    return "\n".join([header, *lines]) if lines else ""


def _join(parts: Sequence[str]) -> str:
    return "\n\n".join(part for part in parts if part)


def _fact_key(fact: Memory) -> tuple[int, str, str]:
    relation = fact.fact.relation if fact.fact else ""
    order = FACT_ORDER.index(relation) if relation in FACT_ORDER else len(FACT_ORDER)
    return order, fact.fact.subject if fact.fact else "", fact.text


def _within_preference_budget(facts: Sequence[Memory], budget_tokens: int, counter: TokenCounter) -> list[Memory]:
    """Every fact but the preferences that do not fit their cap: whole lines, the most recently stated first (ties
    by id, so the same facts always give the same prefix)."""
    preferences = sorted((f for f in facts if f.fact is not None and f.fact.relation in PREFERENCE_RELATIONS),
                         key=lambda f: (f.created_at, f.memory_id), reverse=True)
    if not preferences:
        return list(facts)
    lines = [_fact_line(fact) for fact in preferences]
    kept = fit(lines, budget_tokens, counter)
    left_out = {f.memory_id for f in preferences[kept:]}
    return [f for f in facts if f.memory_id not in left_out]


def _fact_line(fact: Memory) -> str:
    """A user's fact comes from their words, so it is rendered from its triple with the value quoted, whatever
    sentence it was stored with (one written before sentences were rendered, say); canon and shared facts are
    a director's or an admin's own words and read as written."""
    if fact.scope == "user" and fact.fact is not None:
        return f"- {fact_sentence(fact.fact.subject, fact.fact.relation, fact.fact.value)}"
    return f"- {fact.text}"


def _fact_lines(facts: Sequence[Memory]) -> list[str]:
    """One line per fact, except that a user's name fact is left out when a death fact on the same role names the
    same one: the death's line ('The user's dog, "Luna", has died.') says both, so the prefix never says "The
    user's dog is called Luna." beside a grief rule about her. A new dog's name reads as itself."""
    dead = {(f.fact.subject, f.fact.value) for f in facts
            if f.scope == "user" and f.fact is not None and f.fact.relation == "died"}
    return [_fact_line(fact) for fact in facts
            if not (fact.scope == "user" and fact.fact is not None and fact.fact.relation == "name"
                    and (fact.fact.subject, fact.fact.value) in dead)]


def _memory_line(memory: RecalledMemory, now: datetime) -> str:
    age = age_in_words((now - memory.created_at).total_seconds() / 86400.0)
    age = age[:1].upper() + age[1:]
    if memory.kind == "fact":
        return f"- {memory.text}"
    if memory.context:
        return MEMORY_LINE_WITH_CONTEXT.format(age=age, context=quote(memory.context), text=quote(memory.text))
    return MEMORY_LINE.format(age=age, text=quote(memory.text))


def assemble(
    *,
    pins: Sequence[Memory],
    facts: Sequence[Memory],
    standing_rules: Sequence[ToneConstraint],
    tone_constraints: Sequence[ToneConstraint],
    memories: Sequence[RecalledMemory],
    now: datetime,
    budget: Budget,
    counter: TokenCounter,
    rehearsal: tuple[str, str] | None = None,
) -> tuple[AssembledContext, ContextTrace]:
    """``pins`` in priority order; ``facts`` in any order (they are sorted); ``memories`` in rank order;
    ``rehearsal`` (memory id, instruction) this turn's optional check, after the tone rules, when it fits."""
    # -- Path A: whole records, fixed order, nothing from this turn --------------------------------------
    pin_texts: list[str] = []
    truncated: list[str] = []
    for pin in pins:
        text = pin.text.strip()
        if counter.count(text) > budget.max_pin_tokens:
            text, cut = cut_at_paragraph(text, budget.max_pin_tokens, counter)
            if cut:
                truncated.append(pin.memory_id)
                text = f"{text}\n{TRUNCATED_MARK}" if text else TRUNCATED_MARK
        pin_texts.append(text)
    ordered_facts = sorted(_within_preference_budget(facts, budget.max_preference_tokens, counter), key=_fact_key)
    prefix = _join([
        _section(CANON_HEADER, pin_texts),
        _section(FACTS_HEADER, _fact_lines(ordered_facts)),
        _section(STANDING_HEADER, [f"- {rule.instruction}" for rule in standing_rules]),
    ])
    prefix_tokens = _prefix_tokens(prefix, counter)

    # -- Path B: tone constraints, then whole memories in rank order, within what is left --------------
    remaining = max(budget.total_tokens - prefix_tokens, 0)
    tone_lines = [f"- {rule.instruction}" for rule in tone_constraints]
    kept_rules = fit([TONE_HEADER, *tone_lines], remaining, counter) - 1 if tone_lines else 0
    tone = _section(TONE_HEADER, tone_lines[: max(kept_rules, 0)])
    cue = _section(REHEARSAL_HEADER, [f"- {rehearsal[1]}"]) if rehearsal is not None else ""
    if cue and counter.count(_join([tone, cue])) <= remaining:
        tone = _join([tone, cue])  # optional: it never displaces a tone rule, and goes when it does not fit
    else:
        rehearsal = None
    tone_tokens = counter.count(tone)
    remaining = max(remaining - tone_tokens, 0)

    lines = [_memory_line(memory, now) for memory in memories]
    kept = tail_count = 0
    if lines:
        # Whole memories in rank order while the joined tail fits; the layout below does not change the count
        # of lines, so the check is made on the tail as it will be emitted.
        for n in range(len(lines), 0, -1):
            order = edges_first(n)
            tail_count = counter.count(_section(TAIL_HEADER, [lines[i] for i in order]))
            if tail_count <= remaining:
                kept = n
                break
    tail = _section(TAIL_HEADER, [lines[i] for i in edges_first(kept)])
    context = AssembledContext(prefix=prefix, tone=tone, tail=tail)
    trace = ContextTrace(
        tokenizer=counter.name,
        budget_tokens=budget.total_tokens,
        prefix_tokens=prefix_tokens,
        tone_tokens=tone_tokens,
        tail_tokens=tail_count if kept else counter.count(tail),
        prefix_sha256=hashlib.sha256(prefix.encode()).hexdigest(),
        pins=tuple(pin.memory_id for pin in pins),
        pins_truncated=tuple(truncated),
        facts=tuple(fact.memory_id for fact in ordered_facts),
        standing_rules=len(standing_rules),
        tone_constraints=max(kept_rules, 0),
        memories=tuple(memory.memory_id for memory in memories[:kept]),
        memories_dropped=tuple(memory.memory_id for memory in reversed(memories[kept:])),
        over_budget=prefix_tokens > budget.total_tokens,
        rehearsal=None if rehearsal is None else rehearsal[0],
    )
    return context, trace
