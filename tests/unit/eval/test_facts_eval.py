"""``feltsense eval facts`` on a tiny LoCoMo-shaped file (made-up lines): the extractor, both halves, precision."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.domain.models import ExtractedFact
from eval.cli import main
from eval.facts_eval import Observation, key_words, matches


def sample(index: int, a: str, b: str, turns: list[tuple[str, str]],
           observations: dict[str, list[Any]]) -> dict[str, Any]:
    speakers = [a, b]
    session = [{"speaker": speakers[i % 2], "dia_id": f"D1:{i + 1}", "text": text} for i, (_, text) in enumerate(turns)]
    return {
        "sample_id": f"made-up-{index}",
        "conversation": {"speaker_a": a, "speaker_b": b, "session_1_date_time": "1:00 pm on 1 May, 2023",
                         "session_1": session},
        "observation": {"session_1_observation": observations},
        "session_summary": {"session_1_summary": "They talked."},
        "qa": [],
    }


def tiny_locomo(path: Path) -> Path:
    samples = []
    for i in range(10):  # ten conversations, so both halves (0-4 and 5-9) have some
        samples.append(sample(i, "Ada", "Bo", [
            ("Ada", "I've joined Orbit Foods, the team is lovely."),
            ("Bo", "I love jazz, especially the old records."),
            ("Ada", "I take my coffee with oat milk and one sugar."),
            ("Bo", "My friend works at Kestrel Media."),
        ], {
            "Ada": [["Ada started a new job at Orbit Foods.", "D1:1"],
                    ["Ada takes her coffee with oat milk and one sugar.", "D1:3"]],
            "Bo": [["Bo loves jazz music.", "D1:2"], ["Bo's friend works at Kestrel Media.", "D1:4"],
                   ["Bo went to a concert last night.", ["D1:2", "D9:9"]]],
        }))
    path.write_text(json.dumps(samples), encoding="utf-8")
    return path


def test_it_prints_v2_recall_for_both_halves_and_sample_precision(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    data = tiny_locomo(tmp_path / "locomo10.json")
    judged = tmp_path / "sample.jsonl"
    rows = [
        {"extractor": "v2", "conversation": 0, "turn": "D1:1", "subject": "user", "relation": "works_at",
         "value": "Orbit Foods", "fact": 'The user works at "Orbit Foods".', "correct": True, "reason": "said so"},
        {"extractor": "v2", "conversation": 7, "turn": "D1:2", "subject": "jazz", "relation": "opinion",
         "value": "loves", "fact": 'The user loves "jazz".', "correct": True, "reason": "said so"},
        {"extractor": "v1", "conversation": 1, "turn": "D1:3", "subject": "coffee", "relation": "routine",
         "value": "with oat milk and one sugar", "fact": "…", "correct": True, "reason": "said so"},
        {"extractor": "v2", "conversation": 2, "turn": "D1:4", "subject": "user", "relation": "works_at",
         "value": "Kestrel Media", "fact": "…", "correct": False, "reason": "the friend's job; v2 never says it"},
    ]
    judged.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out_json = tmp_path / "facts.json"
    status = main(["eval", "facts", "--data", str(data), "--sample", str(judged), "--json", str(out_json)])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "tune (conversations 0-4)" in out and "held out (conversations 5-9)" in out
    header = next(line for line in out.splitlines() if line.strip().startswith("v2"))
    assert header.split() == ["v2"]  # the retired v1 is not run
    report = json.loads(out_json.read_text())
    recall = report["recall"]
    for half in ("tune (conversations 0-4)", "held out (conversations 5-9)"):
        # v2 finds jazz, the coffee and the new job; it does not take the friend's job for Bo's.
        assert recall["v2"][half]["recall_all"] == {"observations": 25, "recalled": 15, "recall": 60.0}
        assert recall["v2"][half]["recall_fact_kinds"]["observations"] == 20  # "went to a concert" is no kind
    precision = report["precision"]
    assert precision["v2"]["sampled"] == 3 and precision["v2"]["produced"] == 2  # the friend's job is not produced
    assert precision["v2"]["all"]["precision"] == 1.0
    assert "v1" not in precision and "v1" not in recall
    # v1's judged row is still scored for v2, from the row alone: v2 says coffee is a preference, not a routine
    assert precision["v2_on_v1_sample"]["sampled"] == 1 and precision["v2_on_v1_sample"]["produced"] == 0
    assert "v2: 1.000 (2/2)" in out and "v2 on v1's sample: n/a of the 0 it still produces (1 sampled)" in out


def test_drawing_a_sample_keeps_the_judgements_and_leaves_new_rows_to_judge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    data = tiny_locomo(tmp_path / "locomo10.json")
    judged = tmp_path / "sample.jsonl"
    v1_row = {"extractor": "v1", "conversation": 1, "turn": "D1:3", "subject": "coffee", "relation": "routine",
              "value": "with oat milk and one sugar", "fact": "…", "correct": True, "reason": "said so"}
    judged.write_text(json.dumps(v1_row) + "\n", encoding="utf-8")
    assert main(["eval", "facts", "--data", str(data), "--sample", str(judged), "--draw-sample", "4"]) == 0
    rows = [json.loads(line) for line in judged.read_text().splitlines()]
    assert rows[0] == v1_row  # the retired extractor's judged rows are kept, not redrawn
    assert [r["extractor"] for r in rows[1:]] == ["v2"] * 4
    assert all(r["correct"] is None for r in rows[1:])
    rows[1]["correct"], rows[1]["reason"] = True, "checked"
    judged.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(["eval", "facts", "--data", str(data), "--sample", str(judged), "--draw-sample", "4"]) == 0
    again = [json.loads(line) for line in judged.read_text().splitlines()]
    assert again == rows  # the same seed draws the same facts, and the judgement stays
    assert "3 sampled facts not judged yet" in capsys.readouterr().out


def test_missing_data_is_an_invalid_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "facts", "--data", str(tmp_path / "nowhere")]) == 2
    assert "not found" in capsys.readouterr().err


def fact(subject: str, relation: str, value: str) -> ExtractedFact:
    return ExtractedFact(subject=subject, relation=relation, value=value, sentence="unused")


def test_the_match_rule_takes_what_a_fact_is_about_not_the_servers_words() -> None:
    assert key_words(fact("jazz", "opinion", "loves")) == {"jazz"}
    assert key_words(fact("user's dog", "name", "Luna")) == {"dog", "luna"}
    assert key_words(fact("user", "works_at", "no longer Orbit Foods")) == {"orbit", "food"}
    observation = Observation(0, "Ada", "Ada left her job at Orbit Foods.", ("D1:1",))
    assert matches(fact("user", "works_at", "no longer Orbit Foods"), observation, ["Ada"])
    assert matches(fact("user", "works_at", "Orbit"), observation)  # half of the key words is enough
    assert not matches(fact("user", "works_at", "Kestrel Media"), observation)
    assert not matches(fact("running", "routine", "every morning"), observation)
