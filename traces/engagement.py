"""Engagement without a model: how invested the user was, from behaviour alone (seed 004).

Three signals per user turn, each in [0, 1]:
- length trend: this turn's length against the user's average in the session (longer than usual = leaning in);
- reply latency: how quickly the user answered the character's previous turn (seconds, from timestamps);
- questions back: whether the user asked the character something.
engagement = 0.4 x length + 0.3 x latency + 0.3 x question. The weights are fixed here rather than tuned,
because engagement is stored in the trace and changing them would make old and new traces incomparable.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.domain.models import Turn
from engine.domain.text import words

LENGTH_WEIGHT, LATENCY_WEIGHT, QUESTION_WEIGHT = 0.4, 0.3, 0.3
LATENCY_HALF_SCORE_S = 120.0  # a reply after two minutes scores 0.5
NEUTRAL_LATENCY = 0.5  # the first turn of a session has no latency to measure


def engagement(turns: Sequence[Turn]) -> dict[str, float]:
    """Engagement in [0, 1] for every user turn of one session, by turn id. ``turns`` in conversation order."""
    user_lengths = [len(words(t.text)) for t in turns if t.role == "user"]
    if not user_lengths:
        return {}
    mean_length = max(sum(user_lengths) / len(user_lengths), 1.0)
    scores: dict[str, float] = {}
    previous: Turn | None = None
    for turn in turns:
        if turn.role == "user":
            length = min(len(words(turn.text)) / mean_length / 2.0, 1.0)
            if previous is not None and previous.role == "character":
                seconds = max((turn.timestamp - previous.timestamp).total_seconds(), 0.0)
                latency = 1.0 / (1.0 + seconds / LATENCY_HALF_SCORE_S)
            else:
                latency = NEUTRAL_LATENCY
            question = 1.0 if "?" in turn.text else 0.0
            score = LENGTH_WEIGHT * length + LATENCY_WEIGHT * latency + QUESTION_WEIGHT * question
            scores[turn.turn_id] = round(min(max(score, 0.0), 1.0), 4)
        previous = turn
    return scores
