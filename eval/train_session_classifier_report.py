"""The session classifier's (v2) held-out report: scored through the exported weights, rendered as Markdown."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from engine.domain.models import REGISTERS
from eval.classifier_training import macro_f1, pearson
from eval.session_training import Block, Builder, single
from eval.train_classifier_data import INTENSITY_EXAMPLES, SYNTHETIC_GRIEF_CHECK
from eval.train_sets import Labelled, read_handwritten_check
from traces.session_classifier import SessionClassifier


def evaluate(classifier: SessionClassifier, data_dir: Path, builder: Builder, blocks: dict[str, Block],
             go: dict[str, Labelled], emory: dict[str, tuple[Labelled, list[list[int]]]],
             emobank: dict[str, tuple[list[str], NDArray[np.float64], NDArray[np.float64]]],
             emobank_blocks: dict[str, Block]) -> dict[str, Any]:
    """Held-out scores of the exported weights: GoEmotions test, EmoryNLP test sessions, EmoBank test, the
    hand-written check set and v1's grief check."""
    from sklearn.metrics import precision_recall_fscore_support

    out: dict[str, Any] = {}
    rows, targets = single(go["test"])
    test = blocks["go-test"]
    predicted = np.argmax(classifier.predict([test.texts[i] for i in rows], test.embeddings[rows],
                                             context=False).register_probabilities, axis=1)
    precision, recall, f1, support = precision_recall_fscore_support(
        targets, predicted, labels=list(range(len(REGISTERS))), zero_division=0)
    out["goemotions_test"] = {
        "n": len(rows), "macro_f1": round(macro_f1(targets, predicted), 4),
        "accuracy": round(float(np.mean(predicted == targets)), 4),
        "per_register": {r: {"f1": round(float(f1[i]), 4), "precision": round(float(precision[i]), 4),
                             "recall": round(float(recall[i]), 4), "support": int(support[i])}
                         for i, r in enumerate(REGISTERS)},
    }
    emory_test, sessions = emory["test"]
    vectors = blocks["emory-test"].embeddings
    for use_context in (False, True):
        predicted_rows: list[int] = []
        gold: list[int] = []
        for session in sessions:
            p = classifier.predict([emory_test.texts[i] for i in session], vectors[session], context=use_context)
            predicted_rows.extend(np.argmax(p.register_probabilities, axis=1).tolist())
            gold.extend(REGISTERS.index(emory_test.registers[i][0]) for i in session)
        out[f"emorynlp_test{'_context' if use_context else ''}"] = {
            "n": len(gold), "macro_f1": round(macro_f1(np.array(gold), np.array(predicted_rows)), 4)}
    texts, valence, arousal = emobank["test"]
    eb = classifier.predict(texts, emobank_blocks["test"].embeddings, context=False)
    out["emobank_test"] = {"n": len(texts), "valence_r": round(pearson(eb.valence, valence), 4),
                           "arousal_r": round(pearson(eb.arousal_1to5, arousal), 4)}

    cases = read_handwritten_check()
    results = []
    for case in cases:
        turns = [*case.context, case.text]
        reading = classifier.classify(turns, builder.features.embed("adhoc", turns))[-1]
        ok_register = reading.register in case.registers
        ok_band = reading.intensity < 0.4 if case.band == "low" else reading.intensity >= 0.6
        results.append({"class": case.label, "text": case.text, "register": reading.register,
                        "intensity": round(reading.intensity, 3), "valence": round(reading.valence, 3),
                        "register_ok": ok_register, "intensity_ok": ok_band})
    by_class: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        by_class.setdefault(str(r["class"]), []).append(r)
    out["handwritten_check"] = {
        "n": len(results),
        "register_ok": round(float(np.mean([r["register_ok"] for r in results])), 4),
        "intensity_ok": round(float(np.mean([r["intensity_ok"] for r in results])), 4),
        "by_class": {k: {"n": len(v), "register_ok": sum(r["register_ok"] for r in v),
                         "intensity_ok": sum(r["intensity_ok"] for r in v)} for k, v in by_class.items()},
        "cases": results,
    }
    check_vectors = builder.features.embed("synthetic-grief-check", list(SYNTHETIC_GRIEF_CHECK))
    check = classifier.predict(list(SYNTHETIC_GRIEF_CHECK), check_vectors, context=False)
    out["grief_check"] = {
        "n": len(SYNTHETIC_GRIEF_CHECK),
        "grief_recall": round(float(np.mean(np.argmax(check.register_probabilities, axis=1)
                                            == REGISTERS.index("grief"))), 4),
        "mean_intensity": round(float(np.mean(check.intensity)), 4),
    }
    example_vectors = builder.features.embed("adhoc", list(INTENSITY_EXAMPLES))
    out["examples"] = [
        {"text": t, "register": c.register, "valence": round(c.valence, 3), "intensity": round(c.intensity, 3)}
        for t, c in zip(INTENSITY_EXAMPLES, classifier.classify(list(INTENSITY_EXAMPLES), example_vectors,),
                        strict=True)
    ]
    timing = [f"turn {i}: {t}" for i, t in enumerate((list(INTENSITY_EXAMPLES) * 2)[:20])]
    timing_vectors = builder.features.embed("adhoc", timing)
    classifier.classify(timing, timing_vectors)
    started = time.perf_counter()
    for _ in range(20):
        classifier.classify(timing, timing_vectors)
    out["classify_20_turn_session_ms"] = round((time.perf_counter() - started) / 20 * 1000, 2)
    return out


def render_markdown(report: dict[str, Any]) -> str:
    go, eb, check = report["goemotions_test"], report["emobank_test"], report["handwritten_check"]
    lines = [
        f"# Session classifier (v2) report: `{report['classifier']}`",
        "",
        f"Trained {report['date']} by `python -m eval.train_session_classifier` in {report['training_seconds']} s "
        f"(seed {report['seed']}, {report['platform']}); weights {report['weights_bytes'] / 1e6:.2f} MB. "
        "Scores below are on held-out test splits of the *train* sets and on the hand-written check set, "
        "through the exported weights. The evaluation-only sets are scored by `feltsense eval classifier`.",
        "",
        "| measure | value |",
        "|---|---|",
        f"| GoEmotions test register macro-F1 ({go['n']} comments) | {go['macro_f1']} |",
        f"| EmoryNLP test macro-F1, turns alone ({report['emorynlp_test']['n']}) | "
        f"{report['emorynlp_test']['macro_f1']} |",
        f"| EmoryNLP test macro-F1, turns in their session | {report['emorynlp_test_context']['macro_f1']} |",
        f"| EmoBank test valence r ({eb['n']}) | {eb['valence_r']} |",
        f"| EmoBank test arousal r | {eb['arousal_r']} |",
        f"| hand-written check: register right ({check['n']}) | {check['register_ok']} |",
        f"| hand-written check: intensity in band | {check['intensity_ok']} |",
        f"| v1 grief check: grief recall ({report['grief_check']['n']}) | {report['grief_check']['grief_recall']} |",
        f"| classify a 20-turn session | {report['classify_20_turn_session_ms']} ms |",
        "",
        "## Hand-written check set, by class",
        "",
        "| class | n | register right | intensity in band |",
        "|---|---|---|---|",
        *(f"| {k} | {v['n']} | {v['register_ok']} | {v['intensity_ok']} |" for k, v in check["by_class"].items()),
        "",
        "| text | register | intensity | valence | ok |",
        "|---|---|---|---|---|",
        *(f"| {c['text']} | {c['register']} | {c['intensity']} | {c['valence']} | "
          f"{'yes' if c['register_ok'] and c['intensity_ok'] else 'no'} |" for c in check["cases"]),
        "",
        "## GoEmotions test, per register",
        "",
        "| register | F1 | precision | recall | support |",
        "|---|---|---|---|---|",
        *(f"| {r} | {v['f1']} | {v['precision']} | {v['recall']} | {v['support']} |"
          for r, v in go["per_register"].items()),
        "",
        "## Examples",
        "",
        "| sentence | register | valence | intensity |",
        "|---|---|---|---|",
        *(f"| {e['text']} | {e['register']} | {e['valence']} | {e['intensity']} |" for e in report["examples"]),
        "",
        "## Settings",
        "",
        "```json",
        json.dumps(report["settings"], indent=2),
        "```",
        "",
    ]
    return "\n".join(lines)
