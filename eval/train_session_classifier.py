"""Train the session classifier (v2, ``traces.session_classifier``) and write its weights and held-out report.

    python -m eval.train_session_classifier [--data ../shared/data] [--out traces/data]

Writes ``session_classifier.npz`` (plain arrays, ``allow_pickle=False``), ``session_classifier_report.json`` and
``session_classifier_report.md``. Training needs scikit-learn (the ``dev`` extra); the runtime does not.

Data (only sets ``../shared/data/README.md`` marks *train*; mappings in ``eval/train_sets.py``)
- Register: GoEmotions train (mapping and multi-label rule of v1, ``eval.train_classifier``), XED (90% of it),
  EmoryNLP train, v1's hand-written bereavement sentences and the hand-written examples of
  ``eval/data/handwritten_emotion.yaml`` (``HANDWRITTEN_WEIGHT`` each: a few hundred sentences against 80,000).
  Examples with a context are trained in their context reading (the turn before, joined), as the runtime reads
  them.
- Valence and arousal: EmoBank train. Severity: the v1 register prior on GoEmotions train (a death 0.9, sadness
  0.6, curiosity 0.15, neutral 0), overridden where the hand-written examples say how heavy a moment is.
- Choices on dev splits only: the logistic/network mix and register offsets on GoEmotions dev + EmoryNLP dev +
  the XED tenth held back; ridge strengths on EmoBank dev; the context mix on EmoryNLP dev sessions (each
  speaker's turns of a scene, in order). Test splits and the hand-written check set are scored once, through the
  exported weights.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp  # type: ignore[import-untyped]
from numpy.typing import NDArray

from engine.domain.models import REGISTERS
from eval.classifier_training import (
    affect_columns,
    export_weights,
    logger,
    macro_f1,
    pearson,
    register_arrays,
    run_details,
    tune_register_bias,
)
from eval.session_training import (
    HASH_BITS,
    Block,
    Builder,
    read_emobank,
    read_goemotions,
    read_goemotions_labels,
    rows_of,
    single,
)
from eval.train_classifier import GRIEF_WEIGHT, SEED
from eval.train_classifier_data import (
    GOEMOTIONS_TO_REGISTER,
    SYNTHETIC_GRIEF_TRAIN,
)
from eval.train_session_classifier_report import evaluate, render_markdown
from eval.train_sets import (
    Labelled,
    read_emorynlp,
    read_handwritten,
    read_xed,
)
from traces.classifier import softmax
from traces.session_classifier import (
    DENSE_WIDTH,
    FORMAT,
    SessionClassifier,
    context_views,
    word_count,
)

REGISTER_C = 3.0
XED_WEIGHT = 0.5
EMORYNLP_WEIGHT = 0.7
HANDWRITTEN_WEIGHT = 20.0
AFFECT_WEIGHT = 0.25
"""How far arousal and valence extremity alone can raise intensity (a product prior, not fitted): feeling words
count, but how heavy the moment is comes from severity, so a loud joke stays light and a calm loss stays heavy."""
SEVERITY_PRIOR = {
    # The severity target of a public-set text, by its register: how heavily a companion should treat it when
    # nothing more specific is known. A product prior, not fitted: distress outweighs thanks and questions, so a
    # conversation's heaviest memory is the distress, not the closing "thank you so much".
    "grief": 0.9, "sadness": 0.55, "anxiety": 0.55, "anger": 0.5, "shame": 0.55,
    "joy": 0.3, "affection": 0.2, "pride": 0.3, "curiosity": 0.05, "neutral": 0.0,
}
MLP_HIDDEN = 256
MLP_ALPHA = 1e-3
MLP_SEEDS = 3
EMOTION28_C = 0.5
AFFECT_ALPHA_GRID = (1.0, 4.0, 16.0)
SEVERITY_ALPHA = 4.0
SEVERITY_HANDWRITTEN_WEIGHT = 30.0
AFFECT_PROBABILITY_SCALE = 3.0
MIX_GRID = (0.0, 0.25, 0.5, 0.75, 1.0)
CONTEXT_GRID = (0.0, 0.15, 0.3, 0.45, 0.6)
CONTEXT_SHORT_WORDS_GRID = (3, 6, 10)

__all__ = [  # the readers, blocks and report moved to eval.session_training and its report module stay here
    "HASH_BITS", "Block", "Builder", "evaluate", "main", "read_emobank", "read_goemotions", "read_goemotions_labels",
    "render_markdown", "rows_of", "single", "train",
]


log = logger("train_session_classifier")


def train(data_dir: Path, out_dir: Path, cache_dir: Path) -> dict[str, Any]:
    from joblib import Parallel, delayed  # type: ignore[import-untyped]
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.neural_network import MLPClassifier

    started = time.perf_counter()
    builder = Builder(cache_dir)
    go = {s: read_goemotions(data_dir, s) for s in ("train", "dev", "test")}
    xed = read_xed(data_dir, SEED)
    emory = {s: read_emorynlp(data_dir, s) for s in ("train", "dev", "test")}
    handwritten = read_handwritten()
    grief = Labelled(list(SYNTHETIC_GRIEF_TRAIN), [["grief"]] * len(SYNTHETIC_GRIEF_TRAIN),
                     [None] * len(SYNTHETIC_GRIEF_TRAIN), [0.9] * len(SYNTHETIC_GRIEF_TRAIN))
    blocks = {
        "go-train": builder.labelled("goemotions-train", go["train"]),
        "go-dev": builder.labelled("goemotions-dev", go["dev"]),
        "go-test": builder.labelled("goemotions-test", go["test"]),
        "xed-train": builder.labelled("xed-train", xed["train"]),
        "xed-dev": builder.labelled("xed-dev", xed["dev"]),
        "emory-train": builder.labelled("emorynlp-train", emory["train"][0]),
        "emory-dev": builder.labelled("emorynlp-dev", emory["dev"][0]),
        "emory-test": builder.labelled("emorynlp-test", emory["test"][0]),
        "handwritten": builder.labelled("handwritten-train", handwritten),
        "grief": builder.labelled("synthetic-grief-train", grief),
    }
    emobank = {s: read_emobank(data_dir, s) for s in ("train", "dev", "test")}
    emobank_blocks = {s: builder.texts(f"emobank-{s}", emobank[s][0]) for s in emobank}
    n_buckets = 1 << HASH_BITS
    document_frequency = np.zeros(n_buckets)
    n_documents = 0
    for name in ("go-train", "xed-train", "emory-train", "handwritten", "grief"):
        for ids in blocks[name].bucket_ids:
            document_frequency[ids] += 1
        n_documents += len(blocks[name].texts)
    for ids in emobank_blocks["train"].bucket_ids:
        document_frequency[ids] += 1
    n_documents += len(emobank_blocks["train"].texts)
    idf = (np.log((1 + n_documents) / (1 + document_frequency)) + 1.0).astype(np.float16).astype(np.float32)
    log(f"features ready in {time.perf_counter() - started:.0f}s")

    # Register training rows.
    parts = [
        ("go-train", go["train"], 1.0),
        ("xed-train", xed["train"], XED_WEIGHT),
        ("emory-train", emory["train"][0], EMORYNLP_WEIGHT),
        ("handwritten", handwritten, HANDWRITTEN_WEIGHT),
        ("grief", grief, GRIEF_WEIGHT),
    ]
    dense_rows, hashed_rows, targets, weights = [], [], [], []
    for name, data, weight in parts:
        part_rows, part_t, part_w = rows_of(data, weight)
        dense_rows.append(blocks[name].dense[part_rows])
        hashed_rows.append(blocks[name].hashed(idf)[part_rows])
        targets.extend(part_t)
        weights.extend(part_w)
    y = np.array(targets)
    w = np.array(weights)
    grief_index = REGISTERS.index("grief")
    w = w * np.where(y == grief_index, GRIEF_WEIGHT, 1.0)
    x_dense = np.vstack(dense_rows)
    x_sparse = sp.vstack([sp.hstack([sp.csr_matrix(d), h]) for d, h in zip(dense_rows, hashed_rows, strict=True)])
    x_sparse = x_sparse.tocsr()
    log(f"register rows: {len(y)}")

    def fit_mlp(seed: int) -> Any:
        return MLPClassifier(hidden_layer_sizes=(MLP_HIDDEN,), alpha=MLP_ALPHA, early_stopping=True,
                             max_iter=60, n_iter_no_change=4, random_state=SEED + seed).fit(x_dense, y, w)

    def fit_linear() -> Any:
        return LogisticRegression(C=REGISTER_C, max_iter=2000, tol=1e-4).fit(x_sparse, y, sample_weight=w)

    # The register heads take most of the training time; they are cached (training only, never shipped) under a
    # key of everything they depend on, so changing a later head does not refit them.
    import joblib

    key = hashlib.sha256(json.dumps([REGISTER_C, XED_WEIGHT, EMORYNLP_WEIGHT, HANDWRITTEN_WEIGHT, GRIEF_WEIGHT,
                                     MLP_HIDDEN, MLP_ALPHA, MLP_SEEDS, HASH_BITS, SEED]).encode())
    key.update(y.tobytes())
    key.update(w.tobytes())
    key.update(np.ascontiguousarray(x_dense[:: max(1, len(y) // 500)]).tobytes())
    heads_path = cache_dir / f"session-register-heads-{key.hexdigest()[:16]}.joblib"
    if heads_path.is_file():
        fitted = joblib.load(heads_path)
    else:
        fitted = Parallel(n_jobs=2)([delayed(fit_linear)(), *(delayed(fit_mlp)(s) for s in range(MLP_SEEDS))])
        joblib.dump(fitted, heads_path)
    linear, mlps = fitted[0], fitted[1:]
    log(f"register heads fitted ({time.perf_counter() - started:.0f}s)")

    def linear_probabilities(block: Block) -> NDArray[np.float64]:
        x = sp.hstack([sp.csr_matrix(block.dense), block.hashed(idf)]).tocsr()
        return np.asarray(linear.predict_proba(x))

    def mlp_probabilities(block: Block) -> NDArray[np.float64]:
        return np.asarray(np.mean([m.predict_proba(block.dense) for m in mlps], axis=0))

    dev_parts = [("go-dev", go["dev"]), ("emory-dev", emory["dev"][0]), ("xed-dev", xed["dev"])]
    dev_linear, dev_mlp, dev_targets, dev_source = [], [], [], []
    for name, data in dev_parts:
        dev_rows, t = single(data)
        dev_linear.append(linear_probabilities(blocks[name])[dev_rows])
        dev_mlp.append(mlp_probabilities(blocks[name])[dev_rows])
        dev_targets.append(t)
        dev_source.extend([name] * len(dev_rows))
    lin_dev, mlp_dev, t_dev = np.vstack(dev_linear), np.vstack(dev_mlp), np.concatenate(dev_targets)
    source = np.array(dev_source)

    def dev_score(probabilities: NDArray[np.float64]) -> float:
        # Each dev set counts equally, whatever its size.
        predicted = np.argmax(probabilities, axis=1)
        return float(np.mean([macro_f1(t_dev[source == s], predicted[source == s]) for s, _ in dev_parts]))

    mix_scores = {m: dev_score((1 - m) * lin_dev + m * mlp_dev) for m in MIX_GRID}
    register_mix = max(mix_scores, key=lambda m: mix_scores[m])
    mixed_dev = (1 - register_mix) * lin_dev + register_mix * mlp_dev
    # Offsets are tuned on all three dev sets pooled.
    offsets = tune_register_bias(np.log(np.maximum(mixed_dev, 1e-9)), t_dev, rounds=2)
    log(f"register mix by dev score {mix_scores} -> {register_mix}; offsets {np.round(offsets, 2).tolist()}")

    # The offsets were tuned on the log of the mixed distribution; the runtime adds them to each part's logits
    # before mixing, which is close but not identical. The exported weights are what the report scores.
    emotion_names = list(GOEMOTIONS_TO_REGISTER)
    go_labels = read_goemotions_labels(data_dir, "train")
    label_rows, label_targets, label_weights = [], [], []
    for row, labels in enumerate(go_labels):
        for label in labels:
            label_rows.append(row)
            label_targets.append(emotion_names.index(label))
            label_weights.append(1.0 / len(labels))
    emotion_model = LogisticRegression(C=EMOTION28_C, max_iter=2000).fit(
        blocks["go-train"].dense[label_rows], np.array(label_targets), sample_weight=np.array(label_weights))
    log(f"emotion28 head fitted ({time.perf_counter() - started:.0f}s)")

    dense_width = DENSE_WIDTH
    register_coef = linear.coef_.astype(np.float64)
    register_bias = linear.intercept_ + offsets
    mlp_b2 = np.stack([m.intercepts_[1] for m in mlps]) + offsets[None, :]

    def register_probabilities(block: Block) -> NDArray[np.float32]:
        x = sp.hstack([sp.csr_matrix(block.dense), block.hashed(idf)]).tocsr()
        lin = softmax(np.asarray(x @ register_coef.T + register_bias, dtype=np.float32))
        net = []
        for m, b2 in zip(mlps, mlp_b2, strict=True):
            hidden = np.maximum(block.dense @ m.coefs_[0] + m.intercepts_[0], 0.0)
            net.append(softmax((hidden @ m.coefs_[1] + b2).astype(np.float32)))
        mixed: NDArray[np.float32] = np.asarray((1 - register_mix) * lin + register_mix * np.mean(net, axis=0),
                                                dtype=np.float32)
        return mixed

    n_affect_dense = dense_width + len(REGISTERS) + len(emotion_names)
    block_scale = np.ones(n_affect_dense)
    block_scale[dense_width:] = AFFECT_PROBABILITY_SCALE

    def affect_x(block: Block) -> Any:
        emotions = softmax(np.asarray(emotion_model.decision_function(block.dense), dtype=np.float32))
        inputs = np.hstack([block.dense, register_probabilities(block), emotions]) * block_scale
        return sp.hstack([sp.csr_matrix(inputs), block.hashed(idf)]).tocsr()

    eb_x = {s: affect_x(emobank_blocks[s]) for s in emobank_blocks}
    affect_models, affect_alpha = [], []
    for column in (1, 2):
        train_y, dev_y = emobank["train"][column], emobank["dev"][column]
        assert isinstance(train_y, np.ndarray) and isinstance(dev_y, np.ndarray)
        by_alpha = {a: Ridge(alpha=a).fit(eb_x["train"], train_y) for a in AFFECT_ALPHA_GRID}
        scores = {a: pearson(m.predict(eb_x["dev"]), dev_y) for a, m in by_alpha.items()}
        best = max(scores, key=lambda a: scores[a])
        affect_models.append(by_alpha[best])
        affect_alpha.append(best)
    log(f"valence/arousal ridge alpha {affect_alpha} ({time.perf_counter() - started:.0f}s)")

    # Severity: the v1 prior of each GoEmotions train comment's register, and the hand-written severities.
    prior = np.array([SEVERITY_PRIOR[r] for r in REGISTERS])
    go_rows, go_t, go_w = rows_of(go["train"], 1.0)
    severity_x = sp.vstack([
        affect_x(blocks["go-train"])[go_rows],
        affect_x(blocks["handwritten"]),
        affect_x(blocks["grief"]),
    ]).tocsr()
    severity_y = np.concatenate([prior[go_t], np.array(handwritten.intensity, dtype=float),
                                 np.full(len(grief.texts), 0.9)])
    severity_w = np.concatenate([np.array(go_w), np.full(len(handwritten.texts), SEVERITY_HANDWRITTEN_WEIGHT),
                                 np.full(len(grief.texts), SEVERITY_HANDWRITTEN_WEIGHT)])
    severity_model = Ridge(alpha=SEVERITY_ALPHA).fit(severity_x, severity_y, sample_weight=severity_w)
    log(f"severity head fitted ({time.perf_counter() - started:.0f}s)")

    hashed_weights = np.zeros((n_buckets, len(REGISTERS) + 3))
    hashed_weights[:, : len(REGISTERS)] = register_coef[:, dense_width:].T
    affect_dense, affect_bias = affect_columns([*affect_models, severity_model], hashed_weights, n_affect_dense,
                                               block_scale)
    valence_stretch = 1.0 / float(np.quantile(np.abs(emobank["train"][1] - 3.0) / 2.0, 0.99))
    arrays: dict[str, NDArray[Any]] = {
        **register_arrays(FORMAT, emotion_names, idf, hashed_weights, register_coef, dense_width, register_bias),
        "register_mlp_w1": np.stack([m.coefs_[0] for m in mlps]).astype(np.float16),
        "register_mlp_b1": np.stack([m.intercepts_[0] for m in mlps]).astype(np.float32),
        "register_mlp_w2": np.stack([m.coefs_[1] for m in mlps]).astype(np.float32),
        "register_mlp_b2": mlp_b2.astype(np.float32),
        "register_mix": np.array(register_mix, dtype=np.float32),
        "emotion28_weights": emotion_model.coef_.T.astype(np.float32),
        "emotion28_bias": emotion_model.intercept_.astype(np.float32),
        "affect_dense_weights": affect_dense.astype(np.float32),
        "affect_bias": affect_bias.astype(np.float32),
        "valence_stretch": np.array(valence_stretch, dtype=np.float32),
        "intensity_calibration": np.array([3.0, 4.0, 0.0, 1.0], dtype=np.float32),
        "context_mix": np.array([0.0, 0.0], dtype=np.float32),
        "context_short_words": np.array(6, dtype=np.int64),
        "affect_weight": np.array(AFFECT_WEIGHT, dtype=np.float32),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    weights_path = out_dir / "session_classifier.npz"

    def export() -> SessionClassifier:
        return export_weights(arrays, weights_path, 2, SessionClassifier.load)

    classifier = export()
    neutral_rows = [i for i, r in enumerate(go["dev"].registers) if r == ["neutral"]]
    dev_block = blocks["go-dev"]
    neutral = classifier.predict([dev_block.texts[i] for i in neutral_rows], dev_block.embeddings[neutral_rows],
                                 context=False)
    arrays["intensity_calibration"] = np.array([
        np.median(neutral.arousal_1to5), np.quantile(emobank["train"][2], 0.99),
        np.median(np.abs(neutral.valence)), 1.0], dtype=np.float32)
    classifier = export()

    # The context mix, on EmoryNLP dev sessions (each speaker's turns of a scene, in order).
    emory_dev, sessions = emory["dev"]
    dev_vectors = blocks["emory-dev"].embeddings
    context_scores: dict[str, float] = {}
    best_key, best_score = (0.0, 0.0, 6), -1.0
    cached: dict[int, tuple[NDArray[np.float32], NDArray[np.float32]]] = {}
    for s_index, rows in enumerate(sessions):
        texts = [emory_dev.texts[i] for i in rows]
        own = classifier.predict(texts, dev_vectors[rows], context=False).register_probabilities
        if len(rows) > 1:
            joined, summed = context_views(texts, dev_vectors[rows])
            ctx = classifier.predict(joined, summed, context=False).register_probabilities
        else:
            ctx = np.zeros((0, len(REGISTERS)), dtype=np.float32)
        cached[s_index] = (own, ctx)
    gold = np.array([REGISTERS.index(emory_dev.registers[i][0]) for rows in sessions for i in rows])
    for short_words in CONTEXT_SHORT_WORDS_GRID:
        for short in CONTEXT_GRID:
            for long in CONTEXT_GRID:
                if long > short:
                    continue
                predicted = []
                for s_index, rows in enumerate(sessions):
                    own, ctx = cached[s_index]
                    mixed = own.copy()
                    for k in range(1, len(rows)):
                        n_words = word_count(emory_dev.texts[rows[k]])
                        lam = short if n_words <= short_words else long
                        mixed[k] = (1 - lam) * own[k] + lam * ctx[k - 1]
                    predicted.extend(np.argmax(mixed, axis=1).tolist())
                score = macro_f1(gold, np.array(predicted))
                context_scores[f"short<={short_words}:{short}/long:{long}"] = round(score, 4)
                if score > best_score + 1e-9:
                    best_key, best_score = (short, long, short_words), score
    arrays["context_mix"] = np.array(best_key[:2], dtype=np.float32)
    arrays["context_short_words"] = np.array(best_key[2], dtype=np.int64)
    classifier = export()
    training_seconds = time.perf_counter() - started
    log(f"context mix {best_key} (dev macro-F1 {best_score:.4f}); weights {weights_path} "
        f"({weights_path.stat().st_size / 1e6:.2f} MB, {training_seconds:.0f}s)")

    report = evaluate(classifier, data_dir, builder, blocks, go, emory, emobank, emobank_blocks)
    report.update({
        **run_details(classifier.name, SEED, training_seconds, weights_path),
        "data_sizes": {name: len(block.texts) for name, block in blocks.items()},
        "settings": {
            "affect_weight": AFFECT_WEIGHT, "severity_prior": SEVERITY_PRIOR,
            "register_C": REGISTER_C, "xed_weight": XED_WEIGHT, "emorynlp_weight": EMORYNLP_WEIGHT,
            "handwritten_weight": HANDWRITTEN_WEIGHT, "mlp": {"hidden": MLP_HIDDEN, "alpha": MLP_ALPHA,
                                                              "seeds": MLP_SEEDS},
            "register_mix": register_mix, "register_mix_dev": {str(k): round(v, 4) for k, v in mix_scores.items()},
            "register_offsets": dict(zip(REGISTERS, np.round(offsets, 2).tolist(), strict=True)),
            "affect_alpha": {"valence": affect_alpha[0], "arousal": affect_alpha[1], "severity": SEVERITY_ALPHA},
            "valence_stretch": round(valence_stretch, 4),
            "intensity_calibration": np.round(arrays["intensity_calibration"].astype(float), 4).tolist(),
            "context_mix": {"short": best_key[0], "long": best_key[1], "short_words": best_key[2],
                            "dev_macro_f1": round(best_score, 4)},
            "context_grid_dev_macro_f1": context_scores,
        },
    })
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.train_session_classifier", description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "traces" / "data")
    parser.add_argument("--cache", type=Path, default=Path(".cache/classifier"))
    args = parser.parse_args(argv)
    report = train(args.data, args.out, args.cache)
    (args.out / "session_classifier_report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (args.out / "session_classifier_report.md").write_text(render_markdown(report), encoding="utf-8")
    print(render_markdown(report).split("## Hand-written")[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
