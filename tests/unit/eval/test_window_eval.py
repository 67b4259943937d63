"""Window recall eval: the dev set's shape, the ESConv case builder, the scores, and a small real run.

The run goes through a real embedded engine with the hashing embedder and the keyword classifier, so no model loads
here; the ESConv rows are synthetic, in ESConv's shape (``usr``/``sys`` speakers, ``text``).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engine.adapters.hashing_embedder import HashingEmbedder
from eval.bench import MemoEmbedder
from eval.cli import main
from eval.window_eval import (
    DEV_SET,
    SWEEP_GRID,
    Case,
    CaseMemory,
    Probe,
    Ranked,
    WindowDataError,
    esconv_cases,
    format_report,
    format_sweep,
    load_dev,
    method_report,
    parse_dev,
    run,
    score_probe,
    sweep_profiles,
    tail_query,
)
from tests.fakes import KeywordClassifier

AT = datetime(2025, 3, 1, 20, 0, tzinfo=UTC)


def _probe(expect: tuple[str, ...], *, group: str = "vague", window: tuple[tuple[str, str], ...] = ()) -> Probe:
    return Probe(probe_id="p", message="any tips?", window=window, expect=expect, at=AT, group=group)


# ------------------------------------------------------------------------------------------------------------
# Scores


def test_a_probe_scores_the_rank_of_its_first_expected_memory() -> None:
    ranked = Ranked(credits=(frozenset({"a"}), frozenset(), frozenset({"b"}), frozenset({"c"})),
                    tiers=("standard", "low", "low", "low"))
    score = score_probe(_probe(("c", "b")), ranked)
    assert score.rank == 3
    assert score.top == "a"
    assert score.top_tier == "standard"
    assert score.tiers == (("standard", False), ("low", False), ("low", True), ("low", True))
    assert score_probe(_probe(("z",)), ranked).rank is None
    assert score_probe(_probe(("z",)), Ranked(credits=())).top is None


def test_a_rank_beyond_six_is_a_miss() -> None:
    ranked = Ranked(credits=tuple(frozenset({f"m{i}"}) for i in range(8)))
    assert score_probe(_probe(("m6",)), ranked).rank is None
    assert score_probe(_probe(("m5",)), ranked).rank == 6


def test_the_report_averages_over_probes_that_expect_something() -> None:
    scores = [
        score_probe(_probe(("a",)), Ranked(credits=(frozenset({"a"}),), tiers=("high",))),
        score_probe(_probe(("a",), group="name"), Ranked(credits=(frozenset({"b"}), frozenset({"a"})),
                                                         tiers=("standard", "standard"))),
        score_probe(_probe(("a",), group="name"), Ranked(credits=(frozenset({"b"}),), tiers=("low",))),
        score_probe(_probe((), group="none"), Ranked(credits=(frozenset({"b"}),), tiers=("low",))),
    ]
    report = method_report(scores, tiered=True)
    assert report["overall"] == {"probes": 3, "hit@1": pytest.approx(1 / 3, abs=1e-4),
                                 "hit@3": pytest.approx(2 / 3, abs=1e-4), "hit@6": pytest.approx(2 / 3, abs=1e-4),
                                 "mrr": pytest.approx(0.5, abs=1e-4)}
    assert report["by_group"]["vague"]["hit@1"] == 1.0
    assert report["by_group"]["name"]["mrr"] == 0.25
    assert "none" not in report["by_group"]
    assert report["nothing_expected_top_tier"] == {"high": 0, "standard": 0, "low": 1, "empty": 0}
    assert report["tiers"]["high"] == {"results": 1, "expected": 1, "share_expected": 1.0}
    assert report["tiers"]["standard"] == {"results": 2, "expected": 1, "share_expected": 0.5}
    assert report["tiers"]["low"] == {"results": 2, "expected": 0, "share_expected": 0.0}
    assert report["top_tier_when_top_is_expected"] == {"high": 1, "standard": 0, "low": 0}
    assert report["top_tier_when_top_is_not_expected"] == {"high": 0, "standard": 1, "low": 1}
    assert "tiers" not in method_report(scores, tiered=False)


def test_the_tail_query_is_the_last_two_lines_and_the_message() -> None:
    probe = _probe(("a",), window=(("user", "one"), ("character", "two"), ("user", "three")))
    assert tail_query(probe) == "two\nthree\nany tips?"
    assert tail_query(_probe(("a",))) == "any tips?"


def test_the_memo_embedder_gives_the_inner_rows() -> None:
    inner = HashingEmbedder()
    memo = MemoEmbedder(inner)
    texts = ["my dog Luna", "the interview", "my dog Luna"]
    np.testing.assert_array_equal(memo.embed(texts), inner.embed(texts))
    np.testing.assert_array_equal(memo.embed(["the interview"]), inner.embed(["the interview"]))
    assert memo.embed([]).shape == (0, inner.dimension)


# ------------------------------------------------------------------------------------------------------------
# A real run


def _cases() -> list[Case]:
    day = datetime(2025, 2, 1, 19, 0, tzinfo=UTC)
    memories = (
        CaseMemory("luna", "My dog Luna has been limping on her back leg all week.", day),
        CaseMemory("interview", "I have a job interview at Brightline on Thursday and I'm nervous.",
                   day.replace(day=5)),
        CaseMemory("garden", "I planted tomatoes and courgettes in the raised beds.", day.replace(day=8)),
        CaseMemory("landlord", "My landlord still hasn't fixed the heating in my flat.", day.replace(day=10)),
        CaseMemory("later", "Luna is limping again after the vet visit.", datetime(2025, 4, 1, 19, 0, tzinfo=UTC)),
    )
    probes = (
        Probe("luna", "Luna is still limping on her back leg.",
              (("user", "Long day."), ("character", "What happened?")), ("luna",), AT, "message"),
        Probe("heating", "The landlord fixed the heating in my flat at last!", (), ("landlord",), AT, "message"),
        Probe("nothing", "What should I watch tonight?", (("user", "I'm bored."),), (), AT, "none"),
    )
    other = Case(user="other", memories=(CaseMemory("x", "My dog Luna has been limping all week.", day),),
                 probes=(Probe("other", "Luna is limping.", (), ("x",), AT, "message"),))
    return [Case(user="maya", memories=memories, probes=probes), other]


def test_a_real_run_scores_every_method() -> None:
    result = run(_cases(), embedder=HashingEmbedder(), classifier=KeywordClassifier())
    assert set(result["methods"]) == {"message", "window", "cosine", "cosine-tail3"}
    assert result["users"] == 2 and result["memories"] == 6 and result["probes"] == 4
    assert result["probes_expecting_nothing"] == 1
    for method in ("message", "window", "cosine"):
        overall = result["methods"][method]["overall"]
        assert overall["probes"] == 3
        assert overall["hit@1"] == 1.0, method  # each message names its memory outright
        assert overall["mrr"] == 1.0, method
    for method in ("message", "window"):
        block = result["methods"][method]
        returned = sum(row["results"] for row in block["tiers"].values())
        assert returned >= 4  # at least the three hits and the none-probe's answers
        assert sum(block["nothing_expected_top_tier"].values()) == 1
    ranks = {p["id"]: p for p in result["per_probe"]}
    assert ranks["luna"]["rank"] == {"message": 1, "window": 1, "cosine": 1, "cosine-tail3": 1}
    # a memory dated after the probe is never an answer, for recall or the baselines
    assert all(top != "later" for p in result["per_probe"] for top in p["top"].values())
    assert result["constants"]["window_turns"] is not None
    text = format_report(result, title="test")
    assert "cosine-tail3" in text and "tiers" in text


def test_the_sweep_runs_the_grid_on_the_same_engine() -> None:
    from eval.window_eval import make_sweep

    cases = _cases()
    result = run(cases, embedder=HashingEmbedder(), classifier=KeywordClassifier(), methods=("message",),
                 sweep=make_sweep(cases))
    rows = result["sweep"]
    assert len(rows) == math.prod(len(values) for values in SWEEP_GRID.values())
    assert {row["window_turns"] for row in rows} == set(SWEEP_GRID["window_turns"])
    assert all(row["probes"] == 3 for row in rows)
    default = {"window_vector_weight": 1.0, "window_lexical_weight": 0.5, "window_recency": 0.85, "window_turns": 6}
    assert "(defaults)" in format_sweep(rows, baseline=result["methods"]["message"]["overall"], default=default)


def test_the_sweep_grid_holds_valid_profiles() -> None:
    grid = sweep_profiles()
    assert len(grid) == math.prod(len(values) for values in SWEEP_GRID.values())
    setting, profile = grid[-1]
    assert profile.retrieval.window_vector_weight == setting["window_vector_weight"] == 2.0
    assert profile.retrieval.window_recency == setting["window_recency"] == 1.0
    assert profile.retrieval.window_turns == 6


# ------------------------------------------------------------------------------------------------------------
# The dev set


def test_the_dev_set_loads_with_every_failure_class() -> None:
    cases = load_dev(DEV_SET)
    probes = [p for c in cases for p in c.probes]
    assert 20 <= len(cases) <= 30
    assert 60 <= len(probes) <= 90
    assert {p.group for p in probes} == {"vague", "distractor", "message", "shift", "name", "none"}
    assert all(6 <= len(c.memories) <= 12 for c in cases)
    assert all(3 <= len(p.window) <= 6 for p in probes)
    assert any(not p.expect for p in probes)


def _document(**probe: Any) -> dict[str, Any]:
    return {"format": 1, "users": [{
        "user": "u", "now": "2025-03-01",
        "memories": [{"id": "a", "date": "2025-02-01", "text": "I adopted a dog."}],
        "probes": [{"id": "p", "kind": "name", "window": [{"user": "hi"}], "message": "hello", "expect": ["a"],
                    **probe}],
    }]}


def test_a_dev_file_with_a_problem_is_refused_with_its_place() -> None:
    assert parse_dev(_document())[0].probes[0].expect == ("a",)
    with pytest.raises(WindowDataError, match=r"probes\[0\]\.expect: 'b' is not one of u's memories"):
        parse_dev(_document(expect=["b"]))
    with pytest.raises(WindowDataError, match="dated after the probe"):
        parse_dev(_document(at="2025-01-01"))
    with pytest.raises(WindowDataError, match="neither user nor character"):
        parse_dev(_document(window=[{"narrator": "hi"}]))
    with pytest.raises(WindowDataError, match="format: 1"):
        parse_dev({"users": []})


# ------------------------------------------------------------------------------------------------------------
# ESConv cases


def _row(i: int, problem: str) -> dict[str, Any]:
    return {
        "problem_type": problem, "emotion_type": "sadness", "situation": f"situation number {i} about {problem}",
        "dialog": [
            {"speaker": "sys", "text": "Hello, how are you?"},
            {"speaker": "usr", "text": "hi"},
            {"speaker": "sys", "text": "What is on your mind?"},
            {"speaker": "usr", "text": f"I lost my job last week, number {i}"},
            {"speaker": "usr", "text": "so sad"},
            {"speaker": "sys", "text": "I am sorry to hear that."},
            {"speaker": "usr", "text": "I do not know what to do now"},
        ],
    }


ROWS = [_row(i, ("job crisis", "breakup with partner", "ongoing depression")[i % 3]) for i in range(12)]


def test_esconv_distractors_are_of_other_problem_types_and_deterministic() -> None:
    cases = esconv_cases(ROWS, distractors=5)
    assert len(cases) == len(ROWS)
    again = esconv_cases(ROWS, distractors=5)
    assert cases == again
    for i, case in enumerate(cases):
        keys = [m.key for m in case.memories]
        assert f"d{i}" in keys and len(keys) == 6
        others = [int(k[1:]) for k in keys if k != f"d{i}"]
        assert all(ROWS[j]["problem_type"] != ROWS[i]["problem_type"] for j in others)
        assert all(m.at < case.probes[0].at for m in case.memories)
    assert esconv_cases(ROWS, distractors=5, seed=1) != cases
    # a limited run builds the same first cases
    assert esconv_cases(ROWS, distractors=5, limit=3) == cases[:3]
    # fewer candidates than asked: all of them
    assert len(esconv_cases(ROWS, distractors=100)[0].memories) == 1 + 8


def test_esconv_cuts_are_seeker_turns_with_the_lines_before_as_window() -> None:
    case = esconv_cases(ROWS, distractors=2)[0]
    # seeker turns: 1 "hi", 2 "I lost my job...", 3 "so sad" (under 4 words: skipped), 4 "I do not know..."
    assert [p.group for p in case.probes] == ["cut 2", "cut 4"]
    first, second = case.probes
    assert first.message == "I lost my job last week, number 0"
    assert first.window == (
        ("character", "Hello, how are you?"), ("user", "hi"), ("character", "What is on your mind?"))
    assert second.window[-2:] == (("user", "so sad"), ("character", "I am sorry to hear that."))
    assert first.expect == ("d0",)


# ------------------------------------------------------------------------------------------------------------
# The command


def test_the_command_refuses_a_sweep_on_esconv(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "window", "--set", "esconv", "--sweep"]) == 2
    assert "development set only" in capsys.readouterr().err


def test_the_command_refuses_missing_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "window", "--data", str(tmp_path / "absent.yaml")]) == 2
    assert "no data at" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("format: 2\nusers: []\n", encoding="utf-8")
    assert main(["eval", "window", "--data", str(bad)]) == 2
    assert "format: 1" in capsys.readouterr().err
    assert main(["eval", "window", "--limit", "0"]) == 2


def test_the_report_renders_without_groups() -> None:
    result = {"users": 1, "memories": 1, "probes": 1, "probes_expecting_nothing": 0, "constants": {},
              "methods": {"cosine": method_report([score_probe(_probe(("a",)), Ranked((frozenset({"a"}),)))],
                                                  tiered=False)}}
    assert "100.0" in format_report(result, title="t")
