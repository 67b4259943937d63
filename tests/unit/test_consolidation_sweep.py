"""The consolidation gate (``scoring.consolidation``) and its sweep (``eval.consolidation_sweep``) on tiny inputs.

The gate's behaviour first (k-of-n, the blended threshold, one score in both modes, bad constants refused), then
the sweep's pure parts (labels, signal vectors, the metric, choosing from each grid, the report), and one replay of
a two-session conversation through the fast hashing engine.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engine.domain.models import FactInfo, Memory, MemoryState, StrengthSignals
from engine.service import Engine
from eval.cli import main
from eval.consolidation_sweep import (
    THRESHOLDS,
    CandidateSet,
    Sweep,
    best_row,
    blended_sweep,
    candidates,
    cited_turns,
    constant_signals,
    evaluate,
    grid_f1,
    is_keep,
    k_of_n_sweep,
    metrics,
    render,
    replay,
    signal_vector,
    single_bars,
    single_sweep,
    weight_grid,
)
from eval.locomo import Conversation, corrections, parse_conversation
from scoring.consolidation import SIGNALS, GateParams, gate

NONE_CLEARED = (0.0, 0.0, 0.5, 0.7, 1.0, 0.0)
"""Below every default bar (2, 2, 0.8, 1.0, 2, 7)."""


def cset(rows: list[tuple[float, ...]], keep: list[bool]) -> CandidateSet:
    return CandidateSet(signals=np.array(rows, dtype=np.float64), keep=np.array(keep), conversations=1,
                        statuses=("provisional",) * len(rows))


# ------------------------------------------------------------------------------------------------------------
# The gate


def test_k_of_n_with_k_1_fires_on_any_single_cleared_bar() -> None:
    params = GateParams(mode="k_of_n", k=1)
    rows = [NONE_CLEARED]
    for j, bar in enumerate(params.bars):  # each row clears exactly one bar, at the bar itself
        row = list(NONE_CLEARED)
        row[j] = bar
        rows.append(tuple(row))
    result = gate(np.array(rows), params)
    assert result.passed.tolist() == [False] + [True] * len(SIGNALS)
    assert result.cleared.sum(axis=1).tolist() == [0] + [1] * len(SIGNALS)
    two = GateParams(mode="k_of_n", k=2)
    assert not gate(np.array(rows), two).passed.any()


def test_blended_passes_at_the_threshold_and_not_below() -> None:
    params = GateParams(mode="blended", threshold=0.5, weights=(0.0, 0.0, 1.0, 0.0, 0.0, 0.0))
    signals = np.array([[0, 0, 0.5, 1, 1, 0], [0, 0, 0.49, 1, 1, 0], [9, 9, 0.0, 1, 9, 99]], dtype=np.float64)
    result = gate(signals, params)
    assert result.score.tolist() == [0.5, 0.49, 0.0]  # confidence alone: the score is the confidence
    assert result.passed.tolist() == [True, False, False]


def test_the_score_is_the_same_in_both_modes() -> None:
    signals = np.array([[3, 2, 0.9, 1.0, 2, 5], [0, 0, 0.2, 0.5, 1, 0]], dtype=np.float64)
    weights = (2.0, 1.0, 0.5, 0.0, 1.0, 0.5)
    blended = gate(signals, GateParams(mode="blended", weights=weights))
    k_of_n = gate(signals, GateParams(mode="k_of_n", weights=weights, k=6))
    np.testing.assert_array_equal(blended.score, k_of_n.score)
    assert blended.score[0] == pytest.approx((2 * (1 - math.exp(-1)) + (1 - math.exp(-1)) + 0.5 * 0.9
                                              + (1 - math.exp(-1)) + 0.5 * (1 - math.exp(-5 / 14))) / 5)
    assert blended.passed.tolist() == [True, False]
    assert k_of_n.cleared[0].tolist() == [True, True, True, True, True, False]  # age 5 < 7
    assert k_of_n.passed.tolist() == [False, False]


@pytest.mark.parametrize("bad", [
    {"mode": "sometimes"},
    {"weights": (1.0,) * 5},
    {"bars": (1.0,) * 7},
    {"weights": (0.0,) * 6},
    {"weights": (1.0, 1.0, 1.0, 1.0, 1.0, -1.0)},
    {"weights": (1.0, 1.0, 1.0, 1.0, 1.0, math.nan)},
    {"k": 0},
    {"k": 7},
    {"threshold": 1.5},
    {"threshold": -0.1},
    {"retrieval_scale": 0.0},
    {"age_scale_days": -1.0},
])
def test_bad_params_raise_value_error(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        GateParams(**bad)


def test_signals_that_are_not_finite_raise_value_error() -> None:
    with pytest.raises(ValueError, match="finite"):
        gate(np.array([[math.inf, 0, 1, 1, 1, 0]]), GateParams())


# ------------------------------------------------------------------------------------------------------------
# Labels and signal vectors

SAMPLE: dict[str, Any] = {
    "sample_id": "tiny",
    "conversation": {
        "speaker_a": "Ana", "speaker_b": "Ben",
        "session_1_date_time": "10:00 am on 1 March, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I live in Lisbon now."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "My sister is called Marta."},
            {"speaker": "Ana", "dia_id": "D1:3", "text": "Nice weather today."},
        ],
        "session_2_date_time": "10:00 am on 15 March, 2023",
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1", "text": "Do you still live in Lisbon?"},
            {"speaker": "Ana", "dia_id": "D2:2", "text": "Yes, Lisbon is home, I live in Lisbon."},
        ],
    },
    "qa": [
        {"question": "Where does Ana live?", "answer": "Lisbon", "evidence": ["D1:3"], "category": 4},
        {"question": "What is Ben's sister called?", "answer": "Marta", "evidence": ["D1:2"], "category": 5},
        {"question": "What was the weather?", "answer": "nice", "evidence": ["D1:3"], "category": 2},
    ],
}
AUDIT = [{"question_id": "locomo_0_qa0", "error_type": "WRONG_CITATION", "correct_evidence": ["D1:1"]}]


def conversation() -> Conversation:
    return parse_conversation(0, SAMPLE, corrections(AUDIT))


def test_keep_is_a_turn_a_question_of_categories_1_to_4_cites_with_the_audits_correction() -> None:
    cited = cited_turns(conversation())
    assert cited == frozenset({"D1:1", "D1:3"})  # D1:1 by the correction; D1:2 only by an adversarial question
    assert is_keep(("D1:2", "D1:1"), cited)
    assert not is_keep(("D1:2",), cited)
    assert not is_keep((), cited)


def test_a_facts_signal_vector_reads_its_state_and_its_age() -> None:
    created = datetime(2023, 3, 1, tzinfo=UTC)
    memory = Memory(memory_id="f1", turn_id="", session_id="s", character_id="c", user_id="u", text="x",
                    created_at=created, kind="fact",
                    fact=FactInfo(subject="user", relation="lives_in", value="Lisbon", content_hash="h",
                                  source="inferred", provenance=("m1",)))
    state = MemoryState(memory_id="f1", status="provisional", signals=StrengthSignals(
        retrievals=3, mentions=2, query_kinds=("live", "home"), confidence=0.9, source="inferred"))
    assert signal_vector(memory, state, created + timedelta(days=2, hours=12)) == (3.0, 2.0, 0.9, 0.7, 2.0, 2.5)


# ------------------------------------------------------------------------------------------------------------
# The metric


def test_metrics_count_precision_recall_f1_and_the_share_promoted() -> None:
    keep = np.array([True, True, False, False, True])
    found = metrics(np.array([True, False, True, False, False]), keep)
    assert (found.precision, found.recall, found.f1, found.promoted) == (0.5, 1 / 3, 0.4, 0.4)
    assert (found.passed, found.kept) == (2, 1)
    none = metrics(np.zeros(5, dtype=bool), keep)
    assert (none.precision, none.recall, none.f1, none.promoted) == (0.0, 0.0, 0.0, 0.0)


def test_grid_f1_agrees_with_metrics_column_by_column() -> None:
    rng = np.random.default_rng(7)
    passed, keep = rng.random((30, 8)) < 0.4, rng.random(30) < 0.5
    f1, n_passed = grid_f1(passed, keep)
    for j in range(8):
        assert f1[j] == pytest.approx(metrics(passed[:, j], keep).f1)
        assert n_passed[j] == passed[:, j].sum()


# ------------------------------------------------------------------------------------------------------------
# Choosing from the grids

SEPARATED_BY_RETRIEVALS = cset([(5, 0, 1, 1, 1, 0), (4, 0, 1, 1, 1, 0), (1, 0, 1, 1, 1, 0), (0, 0, 1, 1, 1, 0)],
                               [True, True, False, False])


def test_the_grids_are_the_briefs() -> None:
    grid = weight_grid()
    assert len(grid) == 4**6 - 1 and (0.0,) * 6 not in grid
    assert len(THRESHOLDS) == 37 and THRESHOLDS[0] == 0.05 and THRESHOLDS[-1] == 0.95
    assert single_bars(np.array([0.0, 2.6, 4.0]), (1.0, 7.0), whole=True) == [0.0, 1.0, 2.0, 4.0, 7.0]
    assert single_bars(np.array([0.75, 1.0]), (0.7, 1.0), whole=False) == [0.7, 0.75, 1.0]


def test_best_row_breaks_ties_by_fewer_passed_then_the_tie_keys() -> None:
    f1 = np.array([0.5, 0.8, 0.8, 0.8, 0.8])
    passed = np.array([1, 4, 3, 3, 3])
    assert best_row(f1, passed, [0, 0, 2, 1, 1]) == 3  # 0.8, 3 passed, key 1: the first such
    assert best_row(f1, passed) == 2


def test_blended_picks_the_best_f1_then_the_simplest_weights_and_the_middle_threshold() -> None:
    choice = blended_sweep(SEPARATED_BY_RETRIEVALS)
    assert choice.dev.f1 == 1.0 and choice.dev.passed == 2
    # Retrievals alone, at the smallest weight (0.5, 1 and 2 score alike). The keep rows score 1 - exp(-4/3) =
    # 0.736 and more, the others 1 - exp(-1/3) = 0.283: thresholds 0.3 .. 0.725 split them; the middle is 0.525.
    assert choice.params.weights == (0.5, 0.0, 0.0, 0.0, 0.0, 0.0)
    assert choice.params.threshold == 0.525
    assert choice.tied > 1


def test_k_of_n_picks_per_k_with_the_strictest_bars_on_a_tie() -> None:
    # Confidence and trust below every bar tried; the keep rows clear retrievals and stated, the others one of them.
    data = cset([(3, 0, 0.4, 0.5, 3, 0), (3, 0, 0.4, 0.5, 3, 0), (3, 0, 0.4, 0.5, 1, 0), (0, 0, 0.4, 0.5, 3, 0)],
                [True, True, False, False])
    chosen = k_of_n_sweep(data)
    assert list(chosen) == [1, 2, 3, 4, 5, 6]
    assert chosen[2].dev.f1 == 1.0
    assert chosen[2].params.bars == (3.0, 3.0, 1.0, 1.0, 3.0, 30.0)
    assert chosen[1].dev.f1 < 1.0
    assert all(chosen[k].dev.passed == 0 for k in (3, 4, 5, 6))


def test_a_signal_alone_is_k_1_with_the_other_bars_unreachable_and_the_higher_bar_on_a_tie() -> None:
    chosen = single_sweep(SEPARATED_BY_RETRIEVALS)
    alone = chosen["retrievals"]
    assert alone.params.mode == "k_of_n" and alone.params.k == 1
    assert alone.params.bars[0] == 4.0  # 2, 3 and 4 all split the rows
    assert all(math.isinf(b) for b in alone.params.bars[1:])
    assert alone.dev.f1 == 1.0
    assert chosen["confidence"].dev.promoted == 1.0  # constant: every bar seen passes everything


def test_the_default_mode_is_the_better_dev_f1_and_the_defaults_combine_both_bests() -> None:
    data = SEPARATED_BY_RETRIEVALS
    blended = blended_sweep(data)
    k_of_n = k_of_n_sweep(data)
    result = Sweep(blended=blended, k_of_n=k_of_n, single=single_sweep(data))
    assert result.best_k_of_n.dev.f1 <= result.blended.dev.f1
    assert result.mode == "blended"  # a tie goes to blended
    defaults = result.defaults
    assert (defaults.mode, defaults.threshold, defaults.weights) == ("blended", 0.525, blended.params.weights)
    assert (defaults.k, defaults.bars) == (result.best_k_of_n.params.k, result.best_k_of_n.params.bars)


def test_the_report_scores_every_choice_on_both_sets_and_says_the_data_rule() -> None:
    dev = SEPARATED_BY_RETRIEVALS
    other = cset([(6, 1, 1, 1, 1, 3), (0, 0, 1, 1, 2, 40), (2, 0, 1, 1, 1, 3)], [True, False, False])
    document = evaluate(Sweep(blended=blended_sweep(dev), k_of_n=k_of_n_sweep(dev), single=single_sweep(dev)),
                        dev, other)
    names = [row["name"] for row in document["configurations"]]
    assert names[:3] == ["promote all (reference)", "blended", "k_of_n k=1"] and "age_days alone" in names
    blended = document["configurations"][1]
    expected = metrics(gate(other.signals, GateParams(weights=(0.5, 0, 0, 0, 0, 0), threshold=0.525)).passed,
                       other.keep)
    assert blended["locomo"]["f1"] == expected.f1 and blended["dev"]["f1"] == 1.0
    assert document["configurations"][0]["locomo"]["promoted"] == 1.0
    assert document["constant_signals"] == {"confidence": 1.0, "source_trust": 1.0}
    assert constant_signals(other) == {"confidence": 1.0, "source_trust": 1.0}
    document["run"] = {"command": "feltsense eval consolidation", "commit": "abc1234", "date": "2026-01-01",
                       "seconds": 1.0, "dev_seconds": 0.5, "locomo_seconds": 0.5, "embedder": "e",
                       "classifier": "c", "limited": None}
    text = render(document)
    assert "chosen on the development sets only" in text
    assert "GateParams(mode='blended', threshold=0.525" in text and "weight_retrievals = 0.5" in text
    assert "abc1234" in text and "too small to choose on" in text


# ------------------------------------------------------------------------------------------------------------
# A replay


def test_a_replay_yields_labelled_fact_candidates_with_their_usage(hashing_engine: Engine) -> None:
    parsed = conversation()
    replay(hashing_engine, parsed)
    found = candidates(hashing_engine, parsed)
    lives = [c for c in found if c.sources == ("D1:1",)]
    assert lives, [c.sources for c in found]
    [fact] = lives
    assert fact.keep  # D1:1 is cited (by the audit's correction)
    assert fact.status == "active"  # lives_in is auto-active, so recall can return it
    assert fact.signals[0] >= 1 and fact.signals[1] >= 1  # recalled in session 2, and the usage was flushed
    assert fact.signals[4] == 2.0  # D2:2 says it again
    assert fact.signals[2:4] == (1.0, 1.0)  # confidence and trust as the write-time pass writes them
    assert fact.signals[5] == pytest.approx((parsed.ask_at - parsed.sessions[0].start).total_seconds() / 86_400)
    sister = [c for c in found if c.sources == ("D1:2",)]
    assert all(not c.keep for c in sister)  # cited by an adversarial question only


def test_the_cli_says_clearly_when_data_is_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nowhere"
    assert main(["eval", "consolidation", "--dev", str(missing)]) == 2
    assert f"no development conversations at {missing}" in capsys.readouterr().err
    assert main(["eval", "consolidation", "--data", str(missing)]) == 2
    assert f"no LoCoMo data at {missing}" in capsys.readouterr().err
    assert main(["eval", "consolidation", "--limit", "0"]) == 2
