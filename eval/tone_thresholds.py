"""``feltsense eval tone-thresholds``: choose the tone bar and the standing bar on human intensity labels.

Two tuning constants decide what the character treats carefully: ``ToneParams.min_intensity`` (the tone bar: an
intense negative moment carries a tone constraint) and ``ToneParams.standing_min_intensity`` (the standing bar:
the rare moment that, once decayed, stands as a rule for good). Both compare against the *shipped* classifier's
intensity, so they are chosen on human labels with that classifier, and chosen again whenever it changes.

Data (evaluation only, ../shared/data/README.md; nothing is fitted on it but these two numbers):

- ESConv: emotional-support conversations, each with the seeker's own rating of their emotion's intensity (1-5)
  at the start. ``valid.jsonl`` chooses, ``test.jsonl`` reports.
- ISEAR: first-person event reports with an intensity rating (INTS 1-4); reported only.

Scoring, as the write-time pass sees a session: the shipped classifier runs once per ESConv session over the
seeker's turns in order (for a sentence-level classifier, each multi-sentence turn's sentences ride in the same
call and the turn keeps its most intense reading, as ``traces.write_pass`` does). A session scores the intensity
of its most intense turn among those negative enough for a tone rule (valence at or below ``ToneParams.
max_valence``); a session without one scores 0. An ISEAR report is one text.

Rules:

- Tone bar: the score that best separates sessions the seeker rated intense (4-5) from the rest (1-3) by
  Youden's J (true-positive rate minus false-positive rate) on valid; among equal J the higher score. (A split
  at 4+ against 1-2 is what one would pick with enough mild sessions, but ESConv valid has 4 sessions rated 1-2
  and test 2: J would rest on four sessions.)
- Standing bar: the lowest score s at or above the tone bar such that, among valid sessions scoring at least s,
  at least ``STANDING_PRECISION`` (90%) were rated 5 by the seeker, with at least ``STANDING_SUPPORT`` sessions
  there. When no score reaches it (the classifier cannot single out the top of the scale that well), the bar
  is the score with the best share of 5s among those with the support, and the output says so.

Values are rounded to two decimals for the defaults (down for the tone bar, up for the standing bar, so
rounding never admits more than the rule did) and scored on test as rounded.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from engine.domain.tuning import ToneParams
from traces.write_pass import sentences

if TYPE_CHECKING:
    from engine.domain.ports import Classifier
    from engine.settings import Settings
    from eval.train_classifier import FeatureBuilder

STANDING_PRECISION = 0.9
STANDING_SUPPORT = 5
INTENSE_FROM = 4
"""Seeker ratings at or above this are the positives of the tone bar."""
TOP_RATING = 5
F64 = NDArray[np.float64]


@dataclass(frozen=True)
class Scored:
    """One labelled unit (an ESConv session, an ISEAR report): its score, its human rating, what it was about."""

    score: float
    rating: int
    label: str  # ESConv's emotion_type, ISEAR's emotion
    register: str  # the register of the unit's most intense negative reading ("" when none)
    text: str


# ------------------------------------------------------------------------------------------------------------
# Data


def read_esconv(path: Path) -> list[tuple[list[str], int, str]]:
    """Per session: the seeker's turns in order, their initial intensity rating (1-5), the emotion type."""
    sessions = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            raw = json.loads(line)
            turns = [text for t in raw["dialog"] if t.get("speaker") == "usr" and (text := str(t["text"]).strip())]
            rating = int(raw["survey_score"]["seeker"]["initial_emotion_intensity"])
            if turns:
                sessions.append((turns, rating, str(raw.get("emotion_type", ""))))
    return sessions


def read_isear(path: Path) -> list[tuple[str, int, str]]:
    """Reports with an intensity of 1-4 (0, a missing rating, is left out): text, INTS, emotion."""
    rows = []
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="|"):
            text = " ".join((row.get("SIT") or "").replace("á", " ").split())
            try:
                rating = int(row.get("INTS") or 0)
            except ValueError:
                continue
            if text and 1 <= rating <= 4:
                rows.append((text, rating, str(row.get("Field1") or "")))
    return rows


# ------------------------------------------------------------------------------------------------------------
# Scoring with the shipped classifier


def _readings(classifier: Classifier, builder: FeatureBuilder, key: str, units: Sequence[Sequence[str]],
              max_valence: float) -> list[tuple[float, str]]:
    """Per unit (a list of turns, classified in one call): the most intense negative reading and its register."""
    per_sentence = classifier.per_sentence
    splits = [[sentences(turn) for turn in turns] for turns in units]
    calls = [list(turns) + ([s for parts in split for s in parts if len(parts) > 1] if per_sentence else [])
             for turns, split in zip(units, splits, strict=True)]
    flat = [text for call in calls for text in call]
    vectors = builder.embed(key, flat)
    out: list[tuple[float, str]] = []
    start = 0
    for turns, split, call in zip(units, splits, calls, strict=True):
        results = list(classifier.classify(call, vectors[start:start + len(call)]))
        start += len(call)
        best = results[: len(turns)]
        cursor = len(turns)
        for i, parts in enumerate(split):
            if per_sentence and len(parts) > 1:
                for result in results[cursor:cursor + len(parts)]:
                    if result.intensity > best[i].intensity:
                        best[i] = result
                cursor += len(parts)
        negative = [(float(r.intensity), r.register) for r in best if float(r.valence) <= max_valence]
        out.append(max(negative) if negative else (0.0, ""))
    return out


def score_esconv(classifier: Classifier, builder: FeatureBuilder, path: Path, max_valence: float) -> list[Scored]:
    sessions = read_esconv(path)
    readings = _readings(classifier, builder, f"esconv-{path.stem}-seeker", [s[0] for s in sessions], max_valence)
    return [Scored(score, rating, label, register, " / ".join(turns)[:300])
            for (turns, rating, label), (score, register) in zip(sessions, readings, strict=True)]


def score_isear(classifier: Classifier, builder: FeatureBuilder, path: Path, max_valence: float) -> list[Scored]:
    rows = read_isear(path)
    readings = _readings(classifier, builder, "isear", [[text] for text, _, _ in rows], max_valence)
    return [Scored(score, rating, label, register, text[:300])
            for (text, rating, label), (score, register) in zip(rows, readings, strict=True)]


# ------------------------------------------------------------------------------------------------------------
# Rules and measures


def auc(scores: F64, positive: NDArray[np.bool_]) -> float | None:
    """The probability that a positive outranks a negative (ties count half); None without both classes."""
    pos, neg = scores[positive], scores[~positive]
    if not len(pos) or not len(neg):
        return None
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater) / (len(pos) * len(neg))


def separation(scores: F64, positive: NDArray[np.bool_], threshold: float) -> dict[str, Any]:
    """How ``score >= threshold`` separates the positives from the rest."""
    flagged = scores >= threshold
    tp, fp = int((flagged & positive).sum()), int((flagged & ~positive).sum())
    p, n = int(positive.sum()), int((~positive).sum())
    tpr = tp / p if p else float("nan")
    fpr = fp / n if n else float("nan")
    return {"threshold": round(threshold, 4), "positives": p, "negatives": n, "flagged": int(flagged.sum()),
            "tpr": round(tpr, 4), "fpr": round(fpr, 4), "youden_j": round(tpr - fpr, 4),
            "precision": round(tp / (tp + fp), 4) if tp + fp else None}


def youden_threshold(scores: F64, positive: NDArray[np.bool_]) -> float:
    """The score with the highest Youden's J as a ``>=`` cut; among equal J the highest score."""
    best, best_j = float(scores.max(initial=0.0)), -math.inf
    for cut in np.unique(scores):
        flagged = scores >= cut
        j = flagged[positive].mean() - flagged[~positive].mean()
        if j >= best_j - 1e-12:
            best, best_j = float(cut), float(j)
    return best


def precision_threshold(scores: F64, top: NDArray[np.bool_], *, floor: float, precision: float,
                        support: int) -> tuple[float, bool]:
    """The lowest score ``s >= floor`` such that at least ``precision`` of the units scoring ``>= s`` are ``top``
    and at least ``support`` units score ``>= s``; (s, True). When none reaches ``precision``, the score with the
    best share of ``top`` under the same support, (s, False)."""
    best, best_share = float(scores.max(initial=floor)), -1.0
    for cut in np.unique(scores[scores >= floor]):
        flagged = scores >= cut
        if flagged.sum() < support:
            break
        share = float(top[flagged].mean())
        if share >= precision:
            return float(cut), True
        if share > best_share + 1e-12:
            best, best_share = float(cut), share
    return best, False


def _by_rating(units: Sequence[Scored], tone_bar: float, standing_bar: float) -> list[dict[str, Any]]:
    rows = []
    for rating in sorted({u.rating for u in units}):
        chosen = [u for u in units if u.rating == rating]
        scores = np.array([u.score for u in chosen])
        rows.append({"rating": rating, "n": len(chosen), "median_score": round(float(np.median(scores)), 3),
                     "over_tone_bar": round(float((scores >= tone_bar).mean()), 3),
                     "over_standing_bar": round(float((scores >= standing_bar).mean()), 3)})
    return rows


def _registers_over(units: Sequence[Scored], bar: float) -> dict[str, int]:
    counts: dict[str, int] = {}
    for unit in units:
        if unit.score >= bar:
            counts[unit.register] = counts.get(unit.register, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: -item[1]))


def _labels(units: Iterable[Scored]) -> dict[str, int]:
    """How many units carry each human label, most first."""
    counts: dict[str, int] = {}
    for unit in units:
        counts[unit.label] = counts.get(unit.label, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: -item[1]))


def choose(valid: Sequence[Scored]) -> dict[str, Any]:
    """The two bars from ESConv valid, by the module's rules, raw and rounded."""
    scores = np.array([u.score for u in valid])
    ratings = np.array([u.rating for u in valid])
    tone_raw = youden_threshold(scores, ratings >= INTENSE_FROM)
    tone_bar = math.floor(tone_raw * 100) / 100
    standing_raw, reached = precision_threshold(scores, ratings >= TOP_RATING, floor=tone_bar,
                                                precision=STANDING_PRECISION, support=STANDING_SUPPORT)
    standing_bar = math.ceil(standing_raw * 100) / 100
    return {"tone_bar_raw": round(tone_raw, 4), "tone_bar": tone_bar, "standing_bar_raw": round(standing_raw, 4),
            "standing_bar": standing_bar, "standing_precision_reached": reached}


def report_split(units: Sequence[Scored], tone_bar: float, standing_bar: float, *, intense_from: int,
                 top: int) -> dict[str, Any]:
    scores = np.array([u.score for u in units])
    ratings = np.array([u.rating for u in units])
    over = scores >= standing_bar
    return {
        "n": len(units),
        "ratings": {str(r): int((ratings == r).sum()) for r in sorted(set(ratings.tolist()))},
        "auc_intense": None if (a := auc(scores, ratings >= intense_from)) is None else round(a, 4),
        "auc_top": None if (b := auc(scores, ratings >= top)) is None else round(b, 4),
        "tone_bar": separation(scores, ratings >= intense_from, tone_bar),
        "standing_bar": {**separation(scores, ratings >= top, standing_bar),
                         "share_top_over_bar": round(float((ratings[over] >= top).mean()), 4) if over.any() else None},
        "by_rating": _by_rating(units, tone_bar, standing_bar),
        "registers_over_tone_bar": _registers_over(units, tone_bar),
        "registers_over_standing_bar": _registers_over(units, standing_bar),
    }


def evaluate(data_dir: Path, cache_dir: Path, *, settings: Settings, classifier: Classifier | None = None
             ) -> dict[str, Any]:
    """Choose on ESConv valid, report on ESConv test and ISEAR; the classifier ``settings`` build
    (``FELTSENSE_CLASSIFIER`` honoured) unless one is given."""
    from eval.train_classifier import FeatureBuilder

    if classifier is None:
        from engine.factory import build_classifier

        classifier = build_classifier(settings)
    builder = FeatureBuilder(cache_dir)
    max_valence = ToneParams().max_valence
    valid = score_esconv(classifier, builder, data_dir / "esconv" / "valid.jsonl", max_valence)
    chosen = choose(valid)
    tone_bar, standing_bar = chosen["tone_bar"], chosen["standing_bar"]
    test = score_esconv(classifier, builder, data_dir / "esconv" / "test.jsonl", max_valence)
    isear = score_isear(classifier, builder, data_dir / "isear" / "isear.csv", max_valence)
    return {
        "classifier": classifier.name,
        "max_valence": max_valence,
        "rules": {"tone_bar": f"Youden's J, ESConv valid, seeker rating >= {INTENSE_FROM} vs <= {INTENSE_FROM - 1}",
                  "standing_bar": f">= {STANDING_PRECISION:.0%} of valid sessions at or above it rated "
                                  f"{TOP_RATING}, at least {STANDING_SUPPORT} sessions"},
        "chosen": chosen,
        "esconv_valid": report_split(valid, tone_bar, standing_bar, intense_from=INTENSE_FROM, top=TOP_RATING),
        "esconv_test": report_split(test, tone_bar, standing_bar, intense_from=INTENSE_FROM, top=TOP_RATING),
        "isear": {**report_split(isear, tone_bar, standing_bar, intense_from=4, top=4),
                  "grief_between_bars": _labels(u for u in isear if u.register == "grief"
                                                and tone_bar <= u.score < standing_bar),
                  "by_emotion": {emotion: report_split([u for u in isear if u.label == emotion], tone_bar,
                                                       standing_bar, intense_from=4, top=4)["by_rating"]
                                 for emotion in sorted({u.label for u in isear})}},
    }


def render(report: dict[str, Any]) -> str:
    chosen = report["chosen"]
    lines = [
        f"tone thresholds for classifier {report['classifier']} (negative readings: valence <= "
        f"{report['max_valence']:+g})",
        f"  tone bar     ({report['rules']['tone_bar']}): {chosen['tone_bar']} (raw {chosen['tone_bar_raw']})",
        f"  standing bar ({report['rules']['standing_bar']}): {chosen['standing_bar']} "
        f"(raw {chosen['standing_bar_raw']}"
        + ("" if chosen["standing_precision_reached"] else "; the precision was not reached: best share instead") + ")",
        "",
        f"  set ToneParams.min_intensity = {chosen['tone_bar']}, ToneParams.standing_min_intensity = "
        f"{chosen['standing_bar']}",
    ]
    for name, title in (("esconv_valid", "ESConv valid (chooses)"), ("esconv_test", "ESConv test (reports)"),
                        ("isear", "ISEAR (reports; INTS 1-4, intense = 4, top = 4)")):
        split = report[name]
        tone, standing = split["tone_bar"], split["standing_bar"]
        lines += [
            "",
            f"{title}: {split['n']} units, ratings {split['ratings']}",
            f"  AUC intense vs rest {split['auc_intense']}, AUC top vs rest {split['auc_top']}",
            f"  tone bar {tone['threshold']}: TPR {tone['tpr']} FPR {tone['fpr']} J {tone['youden_j']} "
            f"(flags {tone['flagged']} of {split['n']})",
            f"  standing bar {standing['threshold']}: flags {standing['flagged']}, of which top-rated "
            f"{standing['share_top_over_bar']}; top recall {standing['tpr']}",
            "  rating  n     median  >=tone  >=standing",
        ]
        lines += [f"  {row['rating']:<7} {row['n']:<5} {row['median_score']:<7} {row['over_tone_bar']:<7} "
                  f"{row['over_standing_bar']}" for row in split["by_rating"]]
        lines.append(f"  registers over the tone bar: {split['registers_over_tone_bar']}")
        lines.append(f"  registers over the standing bar: {split['registers_over_standing_bar']}")
    between = report["isear"].get("grief_between_bars") or {}
    lines += ["", f"ISEAR reports read as grief between the bars ({sum(between.values())}), by their ISEAR emotion: "
              f"{between}"]
    if "by_emotion" in report["isear"]:
        lines += ["", "ISEAR by emotion: share over the standing bar per INTS (1..4)"]
        for emotion, rows in report["isear"]["by_emotion"].items():
            lines.append(f"  {emotion:<8} " + "  ".join(f"{r['rating']}:{r['over_standing_bar']:.2f}" for r in rows)
                         + "   over tone bar: " + "  ".join(f"{r['rating']}:{r['over_tone_bar']:.2f}" for r in rows))
    return "\n".join(lines)
