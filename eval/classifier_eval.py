"""``feltsense eval classifier``: the shipped offline classifier's held-out scores, beside a lexicon baseline.

Scores the classifier that ships in ``traces/data`` (not a retrained one) on GoEmotions' test split (register:
macro-F1 over single-register comments) and EmoBank's test split (valence: Pearson r), and computes VADER in
the same run as the baseline for both: its compound score for valence, and for register the rule a lexicon
can offer (compound >= 0.05: joy, <= -0.05: sadness, else neutral). Embeddings are cached under
``.cache/classifier`` (the same cache training uses), so a second run is fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from engine.models import REGISTERS
from eval.train_classifier import (
    SYNTHETIC_GRIEF_CHECK,
    FeatureBuilder,
    evaluate,
    macro_f1,
    pearson,
    read_emobank,
    read_goemotions,
)
from traces.classifier import EMBEDDING_DIMENSION, LocalClassifier

VADER_COMPOUND = EMBEDDING_DIMENSION + 3
"""Where VADER's compound score sits in the dense feature block (embedding, then VADER's four scores)."""


def vader_register(compound: NDArray[np.float32]) -> NDArray[np.int64]:
    joy, sadness, neutral = REGISTERS.index("joy"), REGISTERS.index("sadness"), REGISTERS.index("neutral")
    found: NDArray[np.int64] = np.where(compound >= 0.05, joy, np.where(compound <= -0.05, sadness, neutral))
    return found


def evaluate_shipped(data_dir: Path, cache_dir: Path) -> dict[str, Any]:
    builder = FeatureBuilder(cache_dir)
    go = {split: read_goemotions(data_dir, split, builder) for split in ("dev", "test")}
    emobank = read_emobank(data_dir, builder, splits=("test",))
    grief_check = builder.build("synthetic-grief-check", SYNTHETIC_GRIEF_CHECK)
    classifier = LocalClassifier.load()
    report = evaluate(classifier, go, emobank, grief_check, builder)

    test = go["test"]
    rows, targets = test.single_register()
    baseline = vader_register(test.features.dense[rows, VADER_COMPOUND])
    emo = emobank["test"]
    return {
        "classifier": classifier.name,
        "register": {
            "n": report["register_test"]["n"],
            "macro_f1": report["register_test"]["macro_f1"],
            "macro_f1_without_grief": report["register_test"]["macro_f1_without_grief"],
            "vader_macro_f1": round(macro_f1(targets, baseline), 4),
            "per_register": report["register_test"]["per_register"],
        },
        "valence": {
            "n": report["valence_test"]["n"],
            "pearson_r": report["valence_test"]["pearson_r"],
            "vader_pearson_r": round(pearson(emo.features.dense[:, VADER_COMPOUND], emo.valence), 4),
        },
        "grief_check": {k: v for k, v in report["grief_check"].items() if k != "misses"},
    }


def render(report: dict[str, Any]) -> str:
    reg, val = report["register"], report["valence"]
    lines = [
        f"classifier {report['classifier']}, held-out test splits",
        "",
        "| measure | feltsense | VADER (same run) |",
        "|---|---|---|",
        f"| GoEmotions register macro-F1 ({reg['n']} single-register comments) | {reg['macro_f1']} "
        f"| {reg['vader_macro_f1']} |",
        f"| EmoBank valence Pearson r ({val['n']} sentences) | {val['pearson_r']} | {val['vader_pearson_r']} |",
        f"| synthetic grief check: grief recall ({report['grief_check']['n']}) "
        f"| {report['grief_check']['grief_recall']} | - |",
    ]
    return "\n".join(lines)
