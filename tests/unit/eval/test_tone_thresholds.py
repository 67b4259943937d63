"""``feltsense eval tone-thresholds``: the documented rules, on small made-up data (the real run reads ESConv and
ISEAR, evaluation-only sets, and is not part of the suite)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from eval.cli import EXIT_INVALID, main
from eval.tone_thresholds import (
    Scored,
    auc,
    choose,
    precision_threshold,
    read_esconv,
    score_esconv,
    youden_threshold,
)


def test_youden_picks_the_cut_that_best_separates_and_the_higher_among_equals() -> None:
    scores = np.array([0.2, 0.3, 0.6, 0.7, 0.8, 0.9])
    intense = np.array([False, False, True, False, True, True])
    # At 0.6: TPR 1, FPR 1/3; at 0.8: TPR 2/3, FPR 0. Both J = 2/3: the higher cut wins.
    assert youden_threshold(scores, intense) == 0.8
    assert youden_threshold(np.array([0.1, 0.5, 0.5, 0.9]), np.array([False, True, True, True])) == 0.5


def test_the_standing_bar_needs_precision_with_support_or_takes_the_best_share() -> None:
    scores = np.arange(20) / 20.0
    top = scores >= 0.75
    cut, reached = precision_threshold(scores, top, floor=0.5, precision=0.9, support=5)
    assert (cut, reached) == (0.75, True)
    top[-2:] = False  # the top five are 60% top-rated now; nothing reaches 90% with five sessions left
    cut, reached = precision_threshold(scores, top, floor=0.5, precision=0.9, support=5)
    assert not reached and cut == 0.75  # the best share (3 of 5) under the same support


def test_auc_counts_ties_as_half() -> None:
    assert auc(np.array([0.1, 0.5, 0.5, 0.9]), np.array([False, False, True, True])) == pytest.approx(0.875)
    assert auc(np.array([0.5]), np.array([True])) is None


def test_rounding_never_admits_more_than_the_rule() -> None:
    units = [Scored(score, rating, "", "sadness", "") for score, rating in
             [(0.301, 2), (0.4, 3), (0.551, 4), (0.6, 4), (0.7, 5), (0.88, 5), (0.9, 5), (0.91, 5), (0.93, 5),
              (0.95, 5)]]
    chosen = choose(units)
    assert chosen["tone_bar_raw"] == 0.551 and chosen["tone_bar"] == 0.55
    assert chosen["standing_bar_raw"] == 0.7 and chosen["standing_bar"] == 0.7
    assert chosen["standing_precision_reached"] is True


@dataclass(frozen=True)
class _Reading:
    register: str
    valence: float
    intensity: float


class _Classifier:
    """Intensity by keyword; sentence-level, like the shipped one."""

    name = "fake@1"
    per_sentence = True

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def classify(self, texts: Any, embeddings: Any) -> list[_Reading]:
        self.calls.append(list(texts))
        return [_Reading("sadness", -0.8, 0.9) if "awful" in t else _Reading("joy", 0.8, 0.95) if "great" in t
                else _Reading("neutral", 0.0, 0.1) for t in texts]


class _Builder:
    def embed(self, key: str, texts: Any) -> np.ndarray:
        return np.zeros((len(texts), 4), dtype=np.float32)


def test_a_session_scores_its_most_intense_negative_turn_in_one_call(tmp_path: Path) -> None:
    path = tmp_path / "valid.jsonl"
    rows = [{"survey_score": {"seeker": {"initial_emotion_intensity": "5"}}, "emotion_type": "sadness",
             "dialog": [{"speaker": "sys", "text": "Hi"}, {"speaker": "usr", "text": "Hello."},
                        {"speaker": "usr", "text": "It was fine. Then it got awful."},
                        {"speaker": "usr", "text": "You're great!"}]},
            {"survey_score": {"seeker": {"initial_emotion_intensity": "2"}}, "emotion_type": "anxiety",
             "dialog": [{"speaker": "usr", "text": "All good, just checking in."}]}]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    assert [(len(turns), rating) for turns, rating, _ in read_esconv(path)] == [(3, 5), (1, 2)]
    classifier = _Classifier()
    scored = score_esconv(classifier, _Builder(), path, -0.25)  # type: ignore[arg-type]
    # The joyful turn is more intense but not negative; the awful sentence lifts its turn.
    assert [(s.score, s.register, s.rating) for s in scored] == [(0.9, "sadness", 5), (0.0, "", 2)]
    assert len(classifier.calls) == 2 and classifier.calls[0][:3] == ["Hello.", "It was fine. Then it got awful.",
                                                                     "You're great!"]


def test_the_command_refuses_missing_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "tone-thresholds", "--data", str(tmp_path)]) == EXIT_INVALID
    assert "missing" in capsys.readouterr().err
    assert main(["eval", "standing-rules", "--data", str(tmp_path / "absent")]) == EXIT_INVALID
