"""``feltsense eval classifier``: write-time classifiers side by side on every emotion-labelled evaluation set.

One run scores several classifiers on the same sets, over the same embeddings (``shipped_classifiers``: the
engine's default, the frozen v1 and VADER). The sets, their readers and their label mappings are in
``eval.emotion_sets``; per set this reports

- register: macro-F1 over the registers the set's gold holds (listed in the output), and accuracy;
- valence: Pearson r with the human valence, where the set has one (EmoBank; MELD's sentiment, -1/0/+1);
- intensity: Pearson r with the human intensity, where the set has one (ESConv, ISEAR).

How a classifier is called: exactly as the engine calls ``engine.domain.ports.Classifier.classify`` at write time, once
per session with that session's turns in order and their embeddings, so a classifier that reads context sees it.
Sentence sets are sessions of one turn. A label on a whole session (ESConv, EmpatheticDialogues) is scored on the
session's most intense turn (ties: the first), the memory that conversation's feeling will be recalled through.
What is scored is the classifier's own reading of each turn: the write-time pass's sentence split (for
``per_sentence`` classifiers) and its episode smoothing are not applied.

VADER, the lexicon baseline, reads a turn as: valence = compound, intensity = |compound|, register joy when
compound >= 0.05, sadness when <= -0.05, neutral otherwise (the register rule a lexicon can offer).

Embeddings are cached under ``.cache/classifier`` by ``eval.train_classifier.FeatureBuilder`` (keyed by model, set
and a hash of the texts), so only the first run embeds.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

import numpy as np
from numpy.typing import NDArray

from engine.domain.models import REGISTERS
from engine.domain.ports import TraceClassification
from eval.emotion_sets import OTHER, SETS, SKIPPED, EmotionSet, Gold, load_set
from traces.classifier import DEFAULT_WEIGHTS_PATH as V1_DEFAULT_WEIGHTS
from traces.classifier import VaderFeatures

if TYPE_CHECKING:
    from engine.settings import Settings

SET_NAMES = tuple(SETS)
V1_WEIGHTS = V1_DEFAULT_WEIGHTS
"""The v1 weights (``feltsense-local@1.7300d06770``): they still ship, as ``FELTSENSE_CLASSIFIER=local-v1``, so v1
stays comparable after v2 became the default."""


Reading: TypeAlias = "TraceClassification | VaderReading"
"""One turn's classification, of which scoring reads the register, valence and intensity: the port's
(``engine.domain.ports.TraceClassification``) or the VADER baseline's."""


class ClassifierLike(Protocol):
    """Anything with the port's ``classify``: one session's turns in order, their embeddings, one reading each."""

    def classify(self, texts: Sequence[str], embeddings: NDArray[np.float32]) -> Sequence[Reading]: ...


Embed = Callable[[str, Sequence[str]], NDArray[np.float32]]
"""(cache key, texts) -> one L2-normalised row per text."""


@dataclass(frozen=True)
class VaderReading:
    register: str
    valence: float
    intensity: float


def vader_register(compound: NDArray[np.float32]) -> NDArray[np.int64]:
    joy, sadness, neutral = REGISTERS.index("joy"), REGISTERS.index("sadness"), REGISTERS.index("neutral")
    found: NDArray[np.int64] = np.where(compound >= 0.05, joy, np.where(compound <= -0.05, sadness, neutral))
    return found


class VaderBaseline:
    """VADER's compound score as a classifier: the lexicon baseline."""

    name = "vader-compound"
    per_sentence = False

    def __init__(self) -> None:
        self._vader = VaderFeatures()

    def classify(self, texts: Sequence[str], embeddings: NDArray[np.float32]) -> list[VaderReading]:
        compound = self._vader(texts)[:, 3]
        return [VaderReading(REGISTERS[int(r)], float(c), abs(float(c)))
                for r, c in zip(vader_register(compound), compound, strict=True)]


def engine_default_classifier(settings: Settings) -> ClassifierLike:
    """The classifier the engine ships by default: the "v2" column.

    The hook for v2: this is whatever ``engine.factory.build_classifier`` builds for ``classifier="local"``
    (today ``LocalClassifier.load()``, i.e. v1 itself). When the factory (or ``traces``' default loader) returns
    v2, this column is v2 with no change here; to score a v2 that is not wired yet, return it from this function.
    """
    from engine.factory import build_classifier

    return build_classifier(settings.model_copy(update={"classifier": "local"}))


def v1_classifier() -> ClassifierLike:
    from traces.classifier import LocalClassifier

    return LocalClassifier.load(V1_WEIGHTS)


def shipped_classifiers(settings: Settings) -> dict[str, ClassifierLike]:
    """The columns of ``feltsense eval classifier``, in order."""
    return {"v2": engine_default_classifier(settings), "v1": v1_classifier(), "VADER": VaderBaseline()}


def classifier_name(classifier: ClassifierLike) -> str:
    return str(getattr(classifier, "name", type(classifier).__name__))


def _cached_embedder(cache_dir: Path) -> Embed:
    from eval.train_classifier import FeatureBuilder

    builder: FeatureBuilder | None = None

    def embed(key: str, texts: Sequence[str]) -> NDArray[np.float32]:
        nonlocal builder
        builder = builder or FeatureBuilder(cache_dir)
        return builder.embed(key, texts)

    return embed


# --- running ------------------------------------------------------------------------------------------------------

def classify_sessions(
    classifier: ClassifierLike, emotion_set: EmotionSet, vectors: NDArray[np.float32]
) -> list[list[Reading]]:
    """One ``classify`` call per session, with the whole session; the readings per session, per turn."""
    out: list[list[Reading]] = []
    offset = 0
    for session in emotion_set.sessions:
        n = len(session.texts)
        readings = list(classifier.classify(list(session.texts), vectors[offset:offset + n]))
        if len(readings) != n:
            raise ValueError(f"{classifier_name(classifier)} returned {len(readings)} readings for {n} turns")
        for reading in readings:
            if reading.register not in REGISTERS:
                raise ValueError(f"{classifier_name(classifier)} returned the unknown register {reading.register!r}")
        out.append(readings)
        offset += n
    return out


def scored_pairs(emotion_set: EmotionSet, readings: Sequence[Sequence[Reading]]) -> list[tuple[Gold, Reading]]:
    """(gold, prediction) for every label: turn labels on their turn, session labels on the most intense turn."""
    pairs: list[tuple[Gold, Reading]] = []
    for session, session_readings in zip(emotion_set.sessions, readings, strict=True):
        pairs.extend((gold, r) for gold, r in zip(session.turn_gold, session_readings, strict=True) if gold)
        if session.session_gold is not None:
            strongest = max(range(len(session_readings)), key=lambda i: session_readings[i].intensity)
            pairs.append((session.session_gold, session_readings[strongest]))
    return pairs


def pearson_r(gold: Sequence[float], predicted: Sequence[float]) -> float | None:
    """Pearson r, rounded; None when it is undefined (fewer than 3 pairs, or either side constant)."""
    a, b = np.asarray(gold, dtype=np.float64), np.asarray(predicted, dtype=np.float64)
    if len(a) < 3 or a.std() == 0 or b.std() == 0:
        return None
    return round(float(np.corrcoef(a, b)[0, 1]), 4)


def register_scores(gold: Sequence[str], predicted: Sequence[str], registers: Sequence[str]) -> dict[str, Any]:
    """Macro-F1 over ``registers`` (a prediction outside them is a miss for the gold register), with accuracy over
    the items whose gold is a register, and per-register F1, precision, recall and support. ``OTHER`` gold is
    right unless a scored register is predicted."""
    g, p = np.asarray(gold, dtype=object), np.asarray(predicted, dtype=object)
    per_register: dict[str, dict[str, float | int]] = {}
    for register in registers:
        tp = int(np.sum((g == register) & (p == register)))
        fp = int(np.sum((g != register) & (p == register)))
        fn = int(np.sum((g == register) & (p != register)))
        per_register[register] = {
            "f1": round(2 * tp / (2 * tp + fp + fn), 4) if tp else 0.0,
            "precision": round(tp / (tp + fp), 4) if tp else 0.0,
            "recall": round(tp / (tp + fn), 4) if tp else 0.0,
            "support": tp + fn,
        }
    labelled = g != OTHER
    return {
        "n": len(g),
        "macro_f1": round(float(np.mean([float(v["f1"]) for v in per_register.values()])), 4),
        "accuracy": round(float(np.mean(g[labelled] == p[labelled])), 4) if labelled.any() else None,
        "per_register": per_register,
    }


def score_set(emotion_set: EmotionSet, readings: Sequence[Sequence[Reading]]) -> dict[str, Any]:
    pairs = scored_pairs(emotion_set, readings)
    with_register = [(g.register, r.register) for g, r in pairs if g.register is not None]
    registers = registers_scored(emotion_set)
    out: dict[str, Any] = {"register": None, "valence": None, "intensity": None}
    if with_register and registers:
        out["register"] = register_scores([g for g, _ in with_register], [p for _, p in with_register], registers)
    for measure in ("valence", "intensity"):
        values = [(getattr(g, measure), getattr(r, measure)) for g, r in pairs if getattr(g, measure) is not None]
        if values:
            out[measure] = {"n": len(values), "pearson_r": pearson_r([a for a, _ in values], [b for _, b in values])}
    return out


def registers_scored(emotion_set: EmotionSet) -> list[str]:
    """The registers the set's gold holds (a subset of what its mapping can produce), in REGISTERS order."""
    present = {g.register for s in emotion_set.sessions for g in (*s.turn_gold, s.session_gold) if g is not None}
    return [r for r in REGISTERS if r in present]


def evaluate_sets(
    classifiers: Mapping[str, ClassifierLike],
    sets: Sequence[str] = SET_NAMES,
    *,
    data_dir: Path,
    cache_dir: Path,
    limit: int | None = None,
    embed: Embed | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Every classifier on every set in ``sets``, over the same embeddings; the JSON report.

    ``limit`` samples at most that many sessions per set (fixed seed); ``embed`` replaces the cached MiniLM
    embedder (tests).
    """
    unknown = [name for name in sets if name not in SETS]
    if unknown:
        raise ValueError(f"unknown set(s) {', '.join(unknown)}; known: {', '.join(SETS)}")
    embed = embed or _cached_embedder(cache_dir)
    say = progress or (lambda _message: None)
    started = time.perf_counter()
    report: dict[str, Any] = {
        "classifiers": {label: classifier_name(c) for label, c in classifiers.items()},
        "sets": {},
        "skipped": dict(SKIPPED),
        "limit": limit,
    }
    for name in sets:
        set_started = time.perf_counter()
        emotion_set = load_set(name, data_dir, limit=limit)
        say(f"{name}: {len(emotion_set.sessions)} sessions, {emotion_set.n_texts} turns")
        texts = [text for session in emotion_set.sessions for text in session.texts]
        vectors = embed(f"eval-{name}", texts)
        seconds: dict[str, float] = {"embedding": round(time.perf_counter() - set_started, 1)}
        results = {}
        for label, classifier in classifiers.items():
            classified_at = time.perf_counter()
            results[label] = score_set(emotion_set, classify_sessions(classifier, emotion_set, vectors))
            seconds[label] = round(time.perf_counter() - classified_at, 1)
        say(f"{name}: done in {time.perf_counter() - set_started:.0f}s")
        report["sets"][name] = {
            "title": emotion_set.title,
            "use": emotion_set.use,
            "license": emotion_set.license,
            "unit": emotion_set.unit,
            "sessions": len(emotion_set.sessions),
            "texts": emotion_set.n_texts,
            "sample": emotion_set.sample,
            "registers_scored": registers_scored(emotion_set),
            "registers_mappable": list(emotion_set.mappable_registers),
            "mapping": dict(emotion_set.mapping),
            "valence_gold": emotion_set.valence,
            "intensity_gold": emotion_set.intensity,
            "notes": list(emotion_set.notes),
            "results": results,
            "seconds": seconds,
        }
    report["summary"] = summary(report)
    report["seconds"] = round(time.perf_counter() - started, 1)
    return report


def summary(report: Mapping[str, Any]) -> dict[str, Any]:
    """Per classifier, the unweighted mean over sets of each figure (macro-F1 only over sets scoring >= 2
    registers: with one register it is a recall, not a macro-F1)."""
    out: dict[str, Any] = {}
    for label in report["classifiers"]:
        means: dict[str, Any] = {}
        for measure, key in (("register", "macro_f1"), ("valence", "pearson_r"), ("intensity", "pearson_r")):
            values = [
                entry["results"][label][measure][key]
                for entry in report["sets"].values()
                if entry["results"][label][measure] is not None
                and entry["results"][label][measure][key] is not None
                and (measure != "register" or len(entry["registers_scored"]) >= 2)
            ]
            means[measure] = {"mean": round(float(np.mean(values)), 4) if values else None, "sets": len(values)}
        out[label] = means
    return out


# --- rendering ----------------------------------------------------------------------------------------------------

def _figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _cell(entry: Mapping[str, Any], label: str, measure: str, key: str) -> str:
    block = entry["results"][label][measure]
    return "-" if block is None else _figure(block[key])


def _one_register(entry: Mapping[str, Any]) -> bool:
    """A set whose gold is one register (the grief check): its macro-F1 would be 2R / (1 + R), so recall is shown."""
    return len(entry["registers_scored"]) == 1


def _register_cell(entry: Mapping[str, Any], label: str) -> str:
    return _cell(entry, label, "register", "accuracy" if _one_register(entry) else "macro_f1")


def render(report: Mapping[str, Any]) -> str:
    labels = list(report["classifiers"])
    header = "| measure | " + " | ".join(labels) + " |"
    rule = "|---|" + "---|" * len(labels)
    lines = ["classifiers: " + ", ".join(f"{label} = `{name}`" for label, name in report["classifiers"].items())]
    if report.get("limit") is not None:
        lines.append(f"at most {report['limit']} sessions per set (fixed-seed sample)")
    for name, entry in report["sets"].items():
        first = entry["results"][labels[0]]
        lines += ["", f"### {name}: {entry['title']}", ""]
        sample = f" (sample: {entry['sample']})" if entry["sample"] else ""
        lines.append(f"{entry['sessions']} sessions, {entry['texts']} turns{sample}; {entry['use']}, "
                     f"{entry['license']}; scored unit: {entry['unit']}")
        if entry["registers_scored"]:
            excluded = [label for label, register in entry["mapping"].items() if register is None]
            lines.append(f"registers scored ({len(entry['registers_scored'])}): {', '.join(entry['registers_scored'])}"
                         + (f"; labels not scored: {', '.join(excluded)}" if excluded else ""))
        lines += ["", header, rule]
        if first["register"] is not None:
            n = first["register"]["n"]
            name_of = f"{entry['registers_scored'][0]} recall" if _one_register(entry) else "register macro-F1"
            lines.append(f"| {name_of} ({n}) | " + " | ".join(_register_cell(entry, label) for label in labels) + " |")
            if not _one_register(entry):
                lines.append("| register accuracy | "
                             + " | ".join(_cell(entry, label, "register", "accuracy") for label in labels) + " |")
        for measure, gold in (("valence", "valence_gold"), ("intensity", "intensity_gold")):
            if first[measure] is not None:
                lines.append(f"| {measure} Pearson r ({first[measure]['n']}; {entry[gold]}) | "
                             + " | ".join(_cell(entry, label, measure, "pearson_r") for label in labels) + " |")
    lines += ["", "### summary", "",
              "| set | n | registers | " + " | ".join(f"{m} ({' / '.join(labels)})" for m in
                                                     ("macro-F1", "valence r", "intensity r")) + " |",
              "|---|---|---|---|---|---|"]
    for name, entry in report["sets"].items():
        first = entry["results"][labels[0]]
        n = next((first[m]["n"] for m in ("register", "valence", "intensity") if first[m] is not None), 0)
        cells = []
        for measure, key in (("register", "macro_f1"), ("valence", "pearson_r"), ("intensity", "pearson_r")):
            if first[measure] is None:
                cells.append("")
            elif measure == "register" and _one_register(entry):
                cells.append(" / ".join(_register_cell(entry, label) for label in labels)
                             + f" ({entry['registers_scored'][0]} recall)")
            else:
                cells.append(" / ".join(_cell(entry, label, measure, key) for label in labels))
        lines.append(f"| {name} | {n} | {len(entry['registers_scored']) or ''} | " + " | ".join(cells) + " |")
    means = report["summary"]
    cells = []
    for measure in ("register", "valence", "intensity"):
        count = means[labels[0]][measure]["sets"]
        cells.append(" / ".join(_figure(means[label][measure]["mean"]) for label in labels) + f" ({count} sets)"
                     if count else "")
    lines.append("| mean over sets | | | " + " | ".join(cells) + " |")
    if report["skipped"]:
        lines += ["", "not scored: " + "; ".join(f"{name} ({why})" for name, why in report["skipped"].items())]
    return "\n".join(lines)


def log(message: str) -> None:
    print(f"[eval classifier] {message}", file=sys.stderr, flush=True)


def check_set_scores(classifiers: Mapping[str, ClassifierLike], cache_dir: Path) -> dict[str, Any]:
    """The hand-written check set (``eval/data/handwritten_emotion_check.yaml``, a development set written here and
    never trained on) per classifier: how many cases get an allowed register, and an intensity in their band (low:
    below 0.4, high: 0.6 or above). Each case is one session: its context turns, then the case."""
    from eval.train_sets import read_handwritten_check

    cases = read_handwritten_check()
    embed = _cached_embedder(cache_dir)
    out: dict[str, Any] = {"n": len(cases), "by_class": {}}
    for label, classifier in classifiers.items():
        register_ok = band_ok = 0
        for case in cases:
            turns = [*case.context, case.text]
            reading = classifier.classify(turns, embed("handwritten-check", turns))[-1]
            right = reading.register in case.registers
            in_band = reading.intensity < 0.4 if case.band == "low" else reading.intensity >= 0.6
            register_ok += right
            band_ok += in_band
            entry = out["by_class"].setdefault(case.label, {}).setdefault(label, [0, 0, 0])
            entry[0] += right
            entry[1] += in_band
            entry[2] += 1
        out[label] = {"register_ok": register_ok, "intensity_in_band": band_ok}
    return out


def render_check(scores: Mapping[str, Any]) -> str:
    labels = [k for k in scores if k not in ("n", "by_class")]
    lines = [
        f"### hand-written check set (development set: written here, never trained on; {scores['n']} cases)",
        "",
        "| class | " + " | ".join(f"{label} register / intensity band" for label in labels) + " |",
        "|---|" + "---|" * len(labels),
    ]
    for name, per in scores["by_class"].items():
        cells = [f"{per[label][0]}/{per[label][2]} / {per[label][1]}/{per[label][2]}" for label in labels]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    totals = [f"{scores[label]['register_ok']}/{scores['n']} / {scores[label]['intensity_in_band']}/{scores['n']}"
              for label in labels]
    lines.append("| all | " + " | ".join(totals) + " |")
    return "\n".join(lines)
