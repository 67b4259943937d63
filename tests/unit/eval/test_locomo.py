"""LoCoMo evidence recall: parsing, recall@k, aggregation and the run, on tiny inline excerpts.

The excerpts are a few turns in LoCoMo's shape (texts shortened from conv-26), enough to pin each choice; the run
itself uses the fast hashing engine, so no model loads here.
"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engine.service import Engine
from eval.cli import main
from eval.locomo import (
    Bm25Index,
    Conversation,
    LocomoDataError,
    Progress,
    Scored,
    corrections,
    evaluate_conversation,
    format_table,
    load,
    method_report,
    parse_conversation,
    parse_session_date,
    recall_at_k,
    recall_row,
    report,
    split_evidence,
    summarise,
    top_k,
    turn_text,
    work_units,
)

SAMPLE: dict[str, Any] = {
    "sample_id": "conv-26",
    "conversation": {
        "speaker_a": "Caroline",
        "speaker_b": "Melanie",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Caroline", "dia_id": "D1:1", "text": "Hey Mel! Good to see you!"},
            {"speaker": "Melanie", "dia_id": "D1:2", "text": "I'm swamped with the kids & work."},
            {"speaker": "Caroline", "dia_id": "D1:3", "text": "I went to a LGBTQ support group yesterday."},
            {"speaker": "Melanie", "dia_id": "D1:4", "text": "By the way, take a look at this.",
             "blip_caption": "a photo of a painting of a sunset over a lake"},
        ],
        "session_2_date_time": "1:14 pm on 25 May, 2023",
        "session_2": [
            {"speaker": "Melanie", "dia_id": "D2:1", "text": "I ran a charity race for mental health."},
            {"speaker": "Caroline", "dia_id": "D2:2", "text": "That's great! I'm keen on counseling work."},
        ],
        "session_3_date_time": "7:55 pm on 9 June, 2023",
        "session_3": [],
    },
    "qa": [
        {"question": "When did Caroline go to the LGBTQ support group?", "answer": "7 May 2023",
         "evidence": ["D1:3"], "category": 2},
        {"question": "What did Melanie paint?", "answer": "a lake sunset", "evidence": ["D1:2"], "category": 4},
        {"question": "What do Melanie and Caroline care about?", "answer": "mental health",
         "evidence": ["D2:1; D2:2"], "category": 1},
        {"question": "What did Caroline race for?", "evidence": ["D2:1"], "category": 5,
         "adversarial_answer": "mental health"},
        {"question": "What is Melanie's dog called?", "answer": "?", "evidence": ["D"], "category": 3},
    ],
}
AUDIT = [
    {"question_id": "locomo_0_qa1", "error_type": "WRONG_CITATION", "cited_evidence": ["D1:2"],
     "correct_evidence": ["D1:4"]},
    {"question_id": "locomo_0_qa0", "error_type": "HALLUCINATION", "correct_evidence": ["D2:2"]},
]


def conversation() -> Conversation:
    return parse_conversation(0, SAMPLE, corrections(AUDIT))


def test_malformed_evidence_is_split_and_unknown_ids_are_dropped() -> None:
    existing = {"D8:6", "D9:17", "D9:1", "D4:4", "D4:6", "D30:5", "D11:26"}
    assert split_evidence(["D8:6; D9:17"], existing) == ("D8:6", "D9:17")
    assert split_evidence(["D9:1 D4:4 D4:6", "D4:4"], existing) == ("D9:1", "D4:4", "D4:6")
    assert split_evidence(["D", "D:11:26", "D30:05", "D10:19"], existing) == ()


def test_session_dates_and_turn_texts() -> None:
    assert parse_session_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_session_date("12:06 am on 11 November, 2022") == datetime(2022, 11, 11, 0, 6, tzinfo=UTC)
    turns = SAMPLE["conversation"]["session_1"]
    assert turn_text(turns[0]) == "Caroline: Hey Mel! Good to see you!"
    assert turn_text(turns[3]) == ("Melanie: By the way, take a look at this. "
                                   "[shares a photo: a photo of a painting of a sunset over a lake]")


def test_only_wrong_citations_correct_the_evidence() -> None:
    assert corrections(AUDIT) == {(0, 1): ("D1:4",)}
    with pytest.raises(LocomoDataError):
        corrections([{"question_id": "qa7", "error_type": "WRONG_CITATION"}])


def test_a_conversation_parses_into_dated_sessions_and_clean_questions() -> None:
    parsed = conversation()
    assert [s.number for s in parsed.sessions] == [1, 2]  # the empty session 3 is left out
    assert [t.dia_id for t in parsed.sessions[0].turns] == ["D1:1", "D1:2", "D1:3", "D1:4"]
    assert [q.evidence for q in parsed.questions] == [("D1:3",), ("D1:2",), ("D2:1", "D2:2"), ("D2:1",), ()]
    assert parsed.questions[1].corrected == ("D1:4",)
    assert parsed.questions[0].corrected == ("D1:3",)  # a hallucination flag leaves the evidence alone
    assert parsed.ask_at > parsed.sessions[-1].start
    assert work_units([parsed]) == 2 + 5


def test_recall_at_k_counts_evidence_credited_by_the_top_k_slots() -> None:
    ranked = [("D1:1",), ("D2:1", "D2:2"), (), ("D1:3",)]  # a fact credits its source turns; canon nothing
    assert recall_at_k(ranked, ("D2:1", "D1:3"), 1) == 0.0
    assert recall_at_k(ranked, ("D2:1", "D1:3"), 2) == 0.5
    assert recall_at_k(ranked, ("D2:1", "D1:3"), 10) == 1.0
    assert recall_at_k(ranked, (), 10) == 0.0
    assert recall_row(ranked, ()) is None
    assert recall_row(ranked, ("D1:3",)) == {"R@1": 0.0, "R@5": 1.0, "R@6": 1.0, "R@10": 1.0}


def test_summaries_are_percentages_overall_over_categories_one_to_four() -> None:
    full = {"R@1": 1.0, "R@5": 1.0, "R@6": 1.0, "R@10": 1.0}
    none = {"R@1": 0.0, "R@5": 0.0, "R@6": 0.0, "R@10": 0.0}
    third = {"R@1": 0.0, "R@5": 1 / 3, "R@6": 1 / 3, "R@10": 1.0}
    summary = summarise([(1, full), (4, third), (4, none), (5, none), (3, None)])
    assert summary["overall"] == {"R@1": 33.3, "R@5": 44.4, "R@6": 44.4, "R@10": 66.7}
    assert summary["by_category"] == {
        "1": {"R@1": 100.0, "R@5": 100.0, "R@6": 100.0, "R@10": 100.0},
        "4": {"R@1": 0.0, "R@5": 16.7, "R@6": 16.7, "R@10": 50.0},
        "5": {"R@1": 0.0, "R@5": 0.0, "R@6": 0.0, "R@10": 0.0},
    }  # category 3's only question had no evidence


def test_the_report_has_the_documented_shape_and_prints_as_a_table() -> None:
    row = {"R@1": 0.5, "R@5": 1.0, "R@6": 1.0, "R@10": 1.0}
    scored = [Scored(2, row, row), Scored(5, row, None)]
    result = report({m: scored for m in ("dense", "bm25", "stage1", "stage2")})
    assert list(result) == ["methods"] and list(result["methods"]) == ["dense", "bm25", "stage1", "stage2"]
    block = method_report(scored)
    assert set(block) == {"overall", "by_category", "corrected"}
    assert set(block["corrected"]) == {"overall", "by_category"} and set(block["corrected"]["by_category"]) == {"2"}
    table = format_table(result, questions=2)
    assert "overall (categories 1-4)" in table and "category 2 temporal" in table
    assert "corrected evidence (audit), category 2 temporal" in table
    assert "category 3" not in table
    assert "  stage2      50.0   100.0   100.0   100.0" in table


def test_bm25_ranks_with_the_engines_tokeniser() -> None:
    index = Bm25Index(["We walked the dogs in the park.", "The park was closed.", "I baked bread."], k1=1.2, b=0.75)
    assert index.rank("walking my dog", 10) == [0]  # stems meet: walked ~ walking, dogs ~ dog
    assert index.rank("the park", 10) == [1, 0]  # the shorter text first
    assert index.rank("the", 10) == []  # stopwords only: nothing matches
    assert top_k(np.array([0.2, 0.5, 0.5, 0.1]), 3) == [1, 2, 0]


def test_progress_is_a_carriage_return_bar() -> None:
    out = io.StringIO()
    progress = Progress(4, out, width=4)
    progress.advance("conv-26 session 1")
    progress.advance("conv-26 questions", 3)
    progress.close()
    assert out.getvalue().startswith("\r[#...] 1/4")
    assert "\r[####] 4/4" in out.getvalue() and out.getvalue().endswith("\n")


def test_a_conversation_runs_through_every_method(hashing_engine: Engine) -> None:
    parsed = conversation()
    scored = evaluate_conversation(hashing_engine, parsed)
    assert list(scored) == ["dense", "bm25", "stage1", "stage2"]
    for rows in scored.values():
        assert len(rows) == len(parsed.questions)
        assert rows[-1].original is None  # no evidence left for the last question
    # Lexically unambiguous: "LGBTQ support group" is in exactly one turn.
    assert scored["bm25"][0].original == {"R@1": 1.0, "R@5": 1.0, "R@6": 1.0, "R@10": 1.0}
    assert scored["stage2"][0].original is not None and scored["stage2"][0].original["R@10"] == 1.0
    result = report(scored)
    assert all(0.0 <= v <= 100.0 for m in result["methods"].values() for v in m["overall"].values())


def test_load_reads_the_folder_and_names_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(LocomoDataError, match=r"errors\.json"):
        load(tmp_path)
    (tmp_path / "audit").mkdir()
    (tmp_path / "locomo10.json").write_text(json.dumps([SAMPLE, SAMPLE]))
    (tmp_path / "audit" / "errors.json").write_text(json.dumps(AUDIT))
    assert [c.sample_id for c in load(tmp_path, limit=1)] == ["conv-26"]
    assert len(load(tmp_path / "locomo10.json")) == 2
    (tmp_path / "locomo10.json").write_text("[{}]")
    with pytest.raises(LocomoDataError, match=r"locomo10\.json"):
        load(tmp_path)


def test_the_cli_skips_clearly_when_the_data_is_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nowhere"
    assert main(["eval", "locomo", "--data", str(missing)]) == 2
    assert str(missing) in capsys.readouterr().err
    (tmp_path / "locomo10.json").write_text("[]")  # present, but the audit is not beside it
    assert main(["eval", "locomo", "--data", str(tmp_path)]) == 2
    assert "errors.json" in capsys.readouterr().err
