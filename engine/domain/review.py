"""The review queue's rules, the same for every ledger: which decision may follow which, and what a person's
decision counts towards (the organisation's earned trust, ``engine.trust``)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from engine.domain.errors import InvalidInput
from engine.domain.models import MemoryState
from engine.domain.scopes import namespace_prefix

MOVES: dict[str, dict[str, str | None]] = {
    "pending": {"kept": "kept", "rejected": "rejected", "auto_kept": None},
    "kept": {"reverted": "reverted"},
    "auto_kept": {"pending": None},
}
"""The review queue's moves, from a decision to the next, each with the trust record's column it counts in (None:
not a person's decision on the change, so never counted): a person keeps, rejects or reverts; earned trust
auto-keeps; undoing an auto-keep puts the item back to pending for a person."""


def trust_move(current: str, decision: str, item_id: str) -> str | None:
    """The trust column ``decision`` counts in when ``current`` moves to it; InvalidInput when it may not."""
    allowed = MOVES.get(current, {})
    if decision not in allowed:
        raise InvalidInput(f"review item {item_id!r} is {current}: it can be "
                           f"{' or '.join(allowed) or 'nothing more'}", field="decision")
    return allowed[decision]


def org_of(partition: str) -> str:
    """The organisation (namespace prefix, ``"acme:"``) of a ledger partition key; ``""`` in the empty one."""
    return namespace_prefix(partition.split("\x1f", 1)[0])


def dump_states(states: Sequence[MemoryState]) -> str:
    """A review item's ``applied`` states as the ledgers store them: a JSON list."""
    return json.dumps([state.model_dump(mode="json") for state in states])


def load_states(text: str | None) -> tuple[MemoryState, ...]:
    return tuple(MemoryState.model_validate(raw) for raw in json.loads(text or "[]"))


def applied_after(decision: str, applied: Sequence[MemoryState], held: str) -> str:
    """The ``applied`` column once an item moves to ``decision``: a keep (a person's or trust's) stores what it
    changed; a revert keeps what is ``held`` (the record of what it restored); a move back to pending clears it."""
    if decision in ("kept", "auto_kept"):
        return dump_states(applied)
    return held if decision == "reverted" else "[]"
