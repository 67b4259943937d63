"""``feltsense eval standing-rules``: per LoCoMo conversation, the standing rules in force at its end and the
resolutions recorded (a small made-up conversation here; the real run reads ../shared/data/locomo)."""

from __future__ import annotations

import copy

from engine.service import Engine
from eval.locomo import corrections, parse_conversation
from eval.standing_rules import conversation_rules, render
from tests.unit.eval.test_locomo import AUDIT, SAMPLE


def test_a_conversation_lists_its_standing_rules_and_resolutions(hashing_engine: Engine) -> None:
    sample = copy.deepcopy(SAMPLE)
    body = sample["conversation"]
    body["session_1"].append({"speaker": "Melanie", "dia_id": "D1:5", "text": "My dog Luna died last week."})
    body["session_2"] += [{"speaker": "Caroline", "dia_id": "D2:3", "text": "I'm so worried about the scan."},
                          {"speaker": "Caroline", "dia_id": "D2:4", "text": "Worried the scan shows something."}]
    body["session_3"] = [{"speaker": "Caroline", "dia_id": "D3:1", "text": "The scan came back clear, what a relief!"}]
    body["session_4_date_time"] = "9:00 am on 1 June, 2024"
    body["session_4"] = [{"speaker": "Melanie", "dia_id": "D4:1", "text": "Long time no see!"}]
    row = conversation_rules(hashing_engine, parse_conversation(0, sample, corrections(AUDIT)))
    assert row["standing_rules"] == 1 and row["rules"][0]["register"] == "grief"
    assert "Luna" in row["rules"][0]["text"]
    assert {r["register"] for r in row["resolutions"]} == {"anxiety"}
    resolved = {r["resolved_text"] for r in row["resolutions"]}
    assert {"Caroline: I'm so worried about the scan.", "Caroline: Worried the scan shows something."} <= resolved
    assert all(r["resolving_text"].startswith("Caroline: The scan came back clear") for r in row["resolutions"])
    text = render({"classifier": "keyword-fake@1", "tone": {}, "conversations": [row], "standing_rules": 1,
                   "resolutions": 2})
    assert "conv-26: 1 standing rules" in text and "resolved:" in text
