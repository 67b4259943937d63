"""The frozen v1 fact extractor (``eval.baselines.facts_v1``) still extracts what it did when it was frozen.

v1 imports every piece it shares with v2 from ``traces.facts``, so an edit there could move the baseline that
``feltsense eval facts`` compares against. ``data/facts_v1_frozen.json`` holds v1's (subject, relation, value)
triples for every turn of ``tests/unit/traces/fact_cases.py`` (DEV and HELD_OUT, 372 turns, 175 with facts), as
the untouched v1 (``traces/facts.py`` at 7df002f) produced them. Never regenerate it to make this pass: change
the shared piece in ``traces.facts`` back, or give v1 its own copy of it.
"""

from __future__ import annotations

import json
from pathlib import Path

from eval.baselines import facts_v1

FROZEN = Path(__file__).parent / "data" / "facts_v1_frozen.json"


def test_v1_extracts_what_it_extracted_when_frozen() -> None:
    rows = json.loads(FROZEN.read_text(encoding="utf-8"))
    assert len(rows) == 372
    changed = [
        (text, expected, got)
        for text, expected in rows
        if (got := [[f.subject, f.relation, f.value] for f in facts_v1.extract(text)]) != expected
    ]
    assert not changed, f"v1's output moved on {len(changed)} turns, first: {changed[0]}"


def test_v1_keeps_its_own_relations() -> None:
    assert sorted(facts_v1.AUTO_ACTIVE_RELATIONS) == ["allergy", "birthday", "diet", "hometown", "lives_in", "name",
                                                      "occupation", "works_at"]
    assert sorted(facts_v1.RELATIONS) == ["allergy", "birthday", "diet", "hometown", "lives_in", "name",
                                          "occupation", "opinion", "routine", "works_at"]
