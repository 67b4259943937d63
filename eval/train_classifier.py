"""Train the offline default write-time classifier and write its weights and held-out report.

    python -m eval.train_classifier [--data ../shared/data] [--out traces/data]

Writes ``classifier.npz`` (plain arrays, loadable with ``allow_pickle=False``), ``classifier_report.json`` and
``classifier_report.md``. The architecture and the meaning of every output are documented in
``traces/classifier.py``; this module documents the data decisions.

Data
----
Only the train splits are fitted, dev splits choose hyperparameters and calibrate, test splits are scored once,
through the exported weights (``LocalClassifier``), so the report describes exactly what ships.

- GoEmotions -> register, with the mapping in ``GOEMOTIONS_TO_REGISTER``. Multi-label comments: each label is
  mapped to its register, and ``sadness`` is dropped when ``grief`` is present (grief is the bereavement-specific
  form of sadness; a quarter of the grief comments in train, and four of the six in test, also carry sadness,
  and discarding them would leave almost no grief to evaluate). *Evaluation* (dev and test) keeps the comments
  left with exactly one register. *Training* uses every comment: one row per register, weighted
  1 / (number of registers), so ambiguous comments still teach without outvoting clear ones.
- Grief: GoEmotions train has 77 comments labelled grief among 43,410. Three measures, all reported: grief rows
  weigh ``GRIEF_WEIGHT`` times more; ``SYNTHETIC_GRIEF_TRAIN`` (hand-written for this project, clearly synthetic)
  is added to training; ``SYNTHETIC_GRIEF_CHECK`` (hand-written separately, never trained on) measures grief
  recall. The dev-tuned register bias offsets leave grief at 0, since seven dev comments cannot tune it.
- EmoBank -> valence and arousal (1-5 scale), its own train/dev/test split.

Embeddings are cached under ``.cache/classifier/`` (gitignored), keyed by model, data set, split and a hash of
the texts, so reruns skip the ~5 minutes of embedding.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp  # type: ignore[import-untyped]
from numpy.typing import NDArray

from engine.domain.models import REGISTERS
from eval.classifier_training import (
    HASH_BITS,
    EmoBankSplit,
    FeatureBuilder,
    Features,
    GoEmotionsSplit,
    affect_columns,
    document_frequency_idf,
    export_weights,
    fit_logistic,
    log,
    macro_f1,
    pearson,
    read_emobank,
    read_goemotions,
    register_arrays,
    run_details,
    tune_register_bias,
)
from eval.train_classifier_data import (
    GOEMOTIONS_TO_REGISTER,
    INTENSITY_EXAMPLES,
    REGISTER_INTENSITY,
    SYNTHETIC_GRIEF_CHECK,
    SYNTHETIC_GRIEF_TRAIN,
)
from eval.train_classifier_report import evaluate, predict, register_scores, render_markdown
from traces.classifier import EMBEDDING_DIMENSION, FORMAT, LocalClassifier, softmax

__all__ = [  # the names moved to eval.classifier_training, eval.train_classifier_data and the report stay here
    "GOEMOTIONS_TO_REGISTER", "GRIEF_WEIGHT", "HASH_BITS", "INTENSITY_EXAMPLES", "REGISTER_INTENSITY", "SEED",
    "SYNTHETIC_GRIEF_CHECK", "SYNTHETIC_GRIEF_TRAIN", "EmoBankSplit", "FeatureBuilder", "Features", "GoEmotionsSplit",
    "evaluate", "log", "macro_f1", "main", "pearson", "predict", "read_emobank", "read_goemotions", "register_scores",
    "render_markdown", "train", "tune_register_bias",
]

REPO_ROOT = Path(__file__).resolve().parents[1]
SEED = 20240611
GRIEF_WEIGHT = 3.0
REGISTER_C_GRID = (2.0, 4.0)  # inverse L2 strength; exploration on dev found the optimum between these
EMOTION28_C = 4.0
AFFECT_ALPHA_GRID = (1.0, 2.0, 4.0, 8.0)
AFFECT_PROBABILITY_SCALE = 3.0  # puts the register / emotion probabilities on the embedding block's footing
MLP_HIDDEN = 128
MLP_ALPHA = 1e-2
MLP_SEEDS = 4
MLP_MIX_GRID = (0.0, 0.25, 0.5, 0.75)


def train(data_dir: Path, out_dir: Path, cache_dir: Path) -> dict[str, Any]:
    from joblib import Parallel, delayed  # type: ignore[import-untyped]
    from sklearn.linear_model import Ridge
    from sklearn.neural_network import MLPRegressor

    started = time.perf_counter()
    builder = FeatureBuilder(cache_dir)
    go = {split: read_goemotions(data_dir, split, builder) for split in ("train", "dev", "test")}
    emobank = read_emobank(data_dir, builder)
    grief_train = builder.build("synthetic-grief-train", SYNTHETIC_GRIEF_TRAIN)
    grief_check = builder.build("synthetic-grief-check", SYNTHETIC_GRIEF_CHECK)
    n_buckets = 1 << HASH_BITS
    idf = document_frequency_idf([go["train"].features, emobank["train"].features, grief_train], n_buckets)
    idf = idf.astype(np.float16).astype(np.float32)  # train on exactly the idf that ships
    log(f"features ready in {time.perf_counter() - started:.0f}s")

    # Register head: every training comment, one row per register it carries, plus the synthetic grief rows.
    go_train_hashed = go["train"].features.hashed(idf)
    rows, targets, weights = [], [], []
    for row, registers in enumerate(go["train"].registers()):
        for register in sorted(registers):
            rows.append(row)
            targets.append(REGISTERS.index(register))
            weights.append(1.0 / len(registers))
    grief = REGISTERS.index("grief")
    register_x = sp.vstack([
        sp.hstack([sp.csr_matrix(go["train"].features.dense[rows]), go_train_hashed[rows]]),
        sp.hstack([sp.csr_matrix(grief_train.dense), grief_train.hashed(idf)]),
    ]).tocsr()
    register_y = np.concatenate([np.array(targets), np.full(len(grief_train), grief)])
    register_w = np.concatenate([np.array(weights), np.ones(len(grief_train))])
    register_w = register_w * np.where(register_y == grief, GRIEF_WEIGHT, 1.0)

    def stacked(features: Features) -> Any:
        return sp.hstack([sp.csr_matrix(features.dense), features.hashed(idf)]).tocsr()

    dev_rows, dev_targets = go["dev"].single_register()
    dev_x = stacked(go["dev"].features)[dev_rows]
    fitted = Parallel(n_jobs=2)(
        delayed(fit_logistic)(register_x, register_y, register_w, c) for c in REGISTER_C_GRID
    )
    dev_scores = [macro_f1(dev_targets, model.predict(dev_x)) for model in fitted]
    best = int(np.argmax(dev_scores))
    register_model, register_c = fitted[best], REGISTER_C_GRID[best]
    log(f"register head: dev macro-F1 {dict(zip(REGISTER_C_GRID, [round(x, 4) for x in dev_scores], strict=True))}, "
        f"C={register_c} ({time.perf_counter() - started:.0f}s)")
    register_offsets = tune_register_bias(register_model.decision_function(dev_x), dev_targets)
    dense_width = go["train"].features.dense.shape[1]
    register_coef = register_model.coef_.astype(np.float64)
    register_bias = register_model.intercept_ + register_offsets

    def register_probabilities(features: Features) -> NDArray[np.float32]:
        logits = stacked(features) @ register_coef.T + register_bias
        return softmax(np.asarray(logits, dtype=np.float32))

    # The 28-emotion head: all training comments, one row per label, on the dense block only (it is small).
    from sklearn.linear_model import LogisticRegression

    emotion_names = list(GOEMOTIONS_TO_REGISTER)
    label_rows, label_targets, label_weights = [], [], []
    for row, labels in enumerate(go["train"].label_sets):
        for label in labels:
            label_rows.append(row)
            label_targets.append(emotion_names.index(label))
            label_weights.append(1.0 / len(labels))
    emotion_model = LogisticRegression(C=EMOTION28_C, max_iter=3000).fit(
        go["train"].features.dense[label_rows], np.array(label_targets), sample_weight=np.array(label_weights)
    )
    if list(emotion_model.classes_) != list(range(len(emotion_names))):
        raise RuntimeError("some GoEmotions label has no training example")
    log(f"emotion28 head fitted ({time.perf_counter() - started:.0f}s)")

    def affect_inputs(features: Features) -> NDArray[np.float32]:
        emotions = softmax(np.asarray(emotion_model.decision_function(features.dense), dtype=np.float32))
        return np.hstack([features.dense, register_probabilities(features), emotions]).astype(np.float32)

    n_dense_affect = dense_width + len(REGISTERS) + len(emotion_names)
    block_scale = np.ones(n_dense_affect)
    block_scale[dense_width:] = AFFECT_PROBABILITY_SCALE

    def ridge_x(features: Features, inputs: NDArray[np.float32]) -> Any:
        return sp.hstack([sp.csr_matrix(inputs * block_scale), features.hashed(idf)]).tocsr()

    affect_train_in = affect_inputs(emobank["train"].features)
    affect_dev_in = affect_inputs(emobank["dev"].features)
    train_targets = np.column_stack([emobank["train"].valence, emobank["train"].arousal])
    dev_targets_va = np.column_stack([emobank["dev"].valence, emobank["dev"].arousal])
    x_train = ridge_x(emobank["train"].features, affect_train_in)
    x_dev = ridge_x(emobank["dev"].features, affect_dev_in)
    ridge_models, ridge_alpha = [], []
    for column in range(2):
        by_alpha = {a: Ridge(alpha=a).fit(x_train, train_targets[:, column]) for a in AFFECT_ALPHA_GRID}
        scores = {a: pearson(m.predict(x_dev), dev_targets_va[:, column]) for a, m in by_alpha.items()}
        alpha = max(scores, key=lambda a: scores[a])
        ridge_models.append(by_alpha[alpha])
        ridge_alpha.append(alpha)
    ridge_dev = np.column_stack([m.predict(x_dev) for m in ridge_models])

    target_mean, target_scale = train_targets.mean(axis=0), train_targets.std(axis=0)
    mlps = [
        MLPRegressor(hidden_layer_sizes=(MLP_HIDDEN,), alpha=MLP_ALPHA, early_stopping=True, max_iter=300,
                     n_iter_no_change=10, random_state=SEED + seed).fit(
            affect_train_in, (train_targets - target_mean) / target_scale)
        for seed in range(MLP_SEEDS)
    ]
    mlp_dev = np.mean([m.predict(affect_dev_in) for m in mlps], axis=0) * target_scale + target_mean
    mix_scores = {mix: pearson((1 - mix) * ridge_dev[:, 0] + mix * mlp_dev[:, 0], dev_targets_va[:, 0])
                  for mix in MLP_MIX_GRID}
    mlp_mix = max(mix_scores, key=lambda m: mix_scores[m])
    log(f"affect heads: ridge alpha {ridge_alpha}, dev valence r by MLP mix "
        f"{ {mix: round(r, 4) for mix, r in mix_scores.items()} } "
        f"({time.perf_counter() - started:.0f}s)")
    valence_stretch = 1.0 / float(np.quantile(np.abs(emobank["train"].valence - 3.0) / 2.0, 0.99))

    hashed_weights = np.zeros((n_buckets, len(REGISTERS) + 2))
    hashed_weights[:, : len(REGISTERS)] = register_coef[:, dense_width:].T
    affect_dense, affect_bias = affect_columns(ridge_models, hashed_weights, n_dense_affect, block_scale)
    arrays: dict[str, NDArray[Any]] = {
        **register_arrays(FORMAT, emotion_names, idf, hashed_weights, register_coef, dense_width, register_bias),
        "emotion28_weights": emotion_model.coef_.T.astype(np.float32),
        "emotion28_bias": emotion_model.intercept_.astype(np.float32),
        "affect_dense_weights": affect_dense.astype(np.float32),
        "affect_bias": affect_bias.astype(np.float32),
        "mlp_hidden_weights": np.stack([m.coefs_[0] for m in mlps]).astype(np.float16),
        "mlp_hidden_bias": np.stack([m.intercepts_[0] for m in mlps]).astype(np.float32),
        "mlp_output_weights": np.stack([m.coefs_[1] for m in mlps]).astype(np.float32),
        "mlp_output_bias": np.stack([m.intercepts_[1] for m in mlps]).astype(np.float32),
        "mlp_target_mean": target_mean.astype(np.float32),
        "mlp_target_scale": target_scale.astype(np.float32),
        "mlp_mix": np.array(mlp_mix, dtype=np.float32),
        "valence_stretch": np.array(valence_stretch, dtype=np.float32),
        "register_intensity": np.array([REGISTER_INTENSITY[r] for r in REGISTERS], dtype=np.float32),
        # Placeholder until calibrated below from the exported model's own dev predictions.
        "intensity_calibration": np.array([3.0, 4.0, 0.0, 1.0], dtype=np.float32),
    }
    weights_path = out_dir / "classifier.npz"
    out_dir.mkdir(parents=True, exist_ok=True)

    def export() -> LocalClassifier:
        return export_weights(arrays, weights_path, 1, LocalClassifier.load)

    # Intensity calibration: flat text (GoEmotions dev, labelled neutral) at the floors, the most extreme 1% of
    # human ratings at the ceilings. The floors come from the exported model, so the shipped arithmetic is the
    # calibrated one.
    classifier = export()
    neutral_rows = [i for i, regs in enumerate(go["dev"].registers()) if regs == {"neutral"}]
    neutral_dev = classifier.predict([go["dev"].features.texts[i] for i in neutral_rows],
                                     go["dev"].features.dense[neutral_rows, :EMBEDDING_DIMENSION])
    arrays["intensity_calibration"] = np.array([
        np.median(neutral_dev.arousal_1to5), np.quantile(emobank["train"].arousal, 0.99),
        np.median(np.abs(neutral_dev.valence)), 1.0,
    ], dtype=np.float32)
    classifier = export()
    training_seconds = time.perf_counter() - started
    log(f"weights written to {weights_path} ({weights_path.stat().st_size / 1e6:.2f} MB, {training_seconds:.0f}s)")

    settings = {
        "hash_buckets": n_buckets,
        "grief_weight": GRIEF_WEIGHT,
        "register_C": register_c,
        "register_C_dev_macro_f1": dict(zip(map(str, REGISTER_C_GRID), np.round(dev_scores, 4).tolist(), strict=True)),
        "register_bias_offsets": dict(zip(REGISTERS, np.round(register_offsets, 2).tolist(), strict=True)),
        "emotion28_C": EMOTION28_C,
        "ridge_alpha": {"valence": ridge_alpha[0], "arousal": ridge_alpha[1]},
        "mlp": {"hidden": MLP_HIDDEN, "alpha": MLP_ALPHA, "seeds": MLP_SEEDS, "mix": mlp_mix,
                "dev_valence_r_by_mix": {str(k): round(v, 4) for k, v in mix_scores.items()}},
        "valence_stretch": round(valence_stretch, 4),
        "intensity_calibration": dict(zip(
            ("arousal_floor", "arousal_ceiling", "extremity_floor", "extremity_ceiling"),
            np.round(arrays["intensity_calibration"].astype(float), 4).tolist(), strict=True)),
        "register_intensity": REGISTER_INTENSITY,
    }
    report = evaluate(classifier, go, emobank, grief_check, builder)
    report.update({
        **run_details(classifier.name, SEED, training_seconds, weights_path),
        "data_sizes": {
            "goemotions_train_comments": len(go["train"].features),
            "goemotions_train_rows": len(rows),
            "synthetic_grief_train": len(SYNTHETIC_GRIEF_TRAIN),
            "synthetic_grief_check": len(SYNTHETIC_GRIEF_CHECK),
            "goemotions_dev_single_register": len(dev_rows),
            "goemotions_test_single_register": len(go["test"].single_register()[0]),
            "emobank_train": len(emobank["train"].features),
            "emobank_dev": len(emobank["dev"].features),
            "emobank_test": len(emobank["test"].features),
        },
        "settings": settings,
    })
    return report


def resolve(path: str) -> Path:
    candidate = Path(path)
    return candidate if candidate.is_absolute() else REPO_ROOT / candidate


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--data", default="../shared/data", help="data folder (relative paths: to the repo root)")
    parser.add_argument("--out", default="traces/data", help="output folder (relative paths: to the repo root)")
    parser.add_argument("--cache", default=".cache/classifier", help="embedding cache (relative: to the repo root)")
    args = parser.parse_args(argv)
    data_dir, out_dir = resolve(args.data), resolve(args.out)
    if not (data_dir / "goemotions").is_dir() or not (data_dir / "emobank").is_dir():
        parser.error(f"{data_dir} does not hold goemotions/ and emobank/")
    report = train(data_dir, out_dir, resolve(args.cache))
    (out_dir / "classifier_report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (out_dir / "classifier_report.md").write_text(render_markdown(report), encoding="utf-8")
    log(f"report written to {out_dir / 'classifier_report.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
