"""Readers for the *train* data sets the session classifier (v2) learns from, by ``../shared/data/README.md``:
GoEmotions, EmoBank, XED and EmoryNLP (commercial use allowed), plus the hand-written examples in ``eval/data``.

Each reader returns plain lists (texts, registers); features are built by the training script. Register
mappings follow the data README's hints:

- XED (Plutchik 8): anger, disgust -> anger; fear -> anxiety; joy -> joy; sadness -> sadness; trust -> affection;
  anticipation, surprise -> curiosity; the neutral lines -> neutral.
- EmoryNLP: Joyful -> joy, Powerful -> pride, Scared -> anxiety, Mad -> anger, Sad -> sadness, Neutral -> neutral;
  Peaceful is left out (calm contentment has no register of its own, and "joy" would overstate it).
"""

from __future__ import annotations

import csv
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
HANDWRITTEN = REPO_ROOT / "eval" / "data" / "handwritten_emotion.yaml"
HANDWRITTEN_CHECK = REPO_ROOT / "eval" / "data" / "handwritten_emotion_check.yaml"

XED_TO_REGISTER = {1: "anger", 2: "curiosity", 3: "anger", 4: "anxiety", 5: "joy", 6: "sadness", 7: "curiosity",
                   8: "affection"}
EMORYNLP_TO_REGISTER = {"Joyful": "joy", "Powerful": "pride", "Scared": "anxiety", "Mad": "anger", "Sad": "sadness",
                        "Neutral": "neutral"}
XED_NEUTRAL_SAMPLE = 6000
XED_DEV_SHARE = 0.1


@dataclass(frozen=True)
class Labelled:
    """Texts with one or more registers each; ``context`` is the user's turn before it, when it matters."""

    texts: list[str]
    registers: list[list[str]]
    context: list[str | None]
    intensity: list[float | None]
    valence: list[float | None] | None = None


def read_xed(data_dir: Path, seed: int) -> dict[str, Labelled]:
    """XED's annotated English lines (multi-label) and a sample of its neutral lines, split 90/10 by a seed."""
    rows: list[tuple[str, list[str]]] = []
    with (data_dir / "xed" / "en-annotated.tsv").open(encoding="utf-8") as handle:
        for line in handle:
            text, _, labels = line.rstrip("\n").rpartition("\t")
            if not text.strip() or not labels.strip():
                continue
            registers = sorted({XED_TO_REGISTER[int(x)] for x in labels.split(",") if x.strip()})
            rows.append((text.strip(), registers))
    neutral: list[str] = []
    with (data_dir / "xed" / "neu_en.txt").open(encoding="utf-8") as handle:
        for line in handle:
            _, _, text = line.rstrip("\n").partition("\t")
            if text.strip():
                neutral.append(text.strip())
    rng = random.Random(seed)
    rows.extend((text, ["neutral"]) for text in rng.sample(neutral, min(XED_NEUTRAL_SAMPLE, len(neutral))))
    rng.shuffle(rows)
    cut = int(len(rows) * XED_DEV_SHARE)
    split = {"dev": rows[:cut], "train": rows[cut:]}
    return {name: Labelled([t for t, _ in part], [r for _, r in part], [None] * len(part), [None] * len(part))
            for name, part in split.items()}


def read_emorynlp(data_dir: Path, split: str) -> tuple[Labelled, list[list[int]]]:
    """EmoryNLP utterances of one split (Peaceful left out), and per scene and speaker the row indices in order:
    the sessions a context-reading classifier is evaluated on."""
    texts: list[str] = []
    registers: list[list[str]] = []
    sessions: dict[tuple[str, str], list[int]] = {}
    with (data_dir / "emorynlp" / f"emorynlp_{split}_final.csv").open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            register = EMORYNLP_TO_REGISTER.get(row["Emotion"])
            if register is None:
                continue
            key = (f"{row['Season']}-{row['Episode']}-{row['Scene_ID']}", row["Speaker"])
            sessions.setdefault(key, []).append(len(texts))
            texts.append(row["Utterance"].strip())
            registers.append([register])
    return Labelled(texts, registers, [None] * len(texts), [None] * len(texts)), list(sessions.values())


def read_handwritten(path: Path = HANDWRITTEN) -> Labelled:
    """The hand-written training examples: every group's texts, and the examples that need their context."""
    document: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    texts: list[str] = []
    registers: list[list[str]] = []
    context: list[str | None] = []
    intensity: list[float | None] = []
    valence: list[float | None] = []
    for group in document["groups"]:
        for text in group["texts"]:
            texts.append(text)
            registers.append([group["register"]])
            context.append(None)
            intensity.append(float(group["intensity"]))
            valence.append(float(group["valence"]))
    for item in document["contexts"]:
        texts.append(item["text"])
        registers.append([item["register"]])
        context.append(" ".join(item["context"]))
        intensity.append(float(item["intensity"]))
        valence.append(float(item["valence"]))
    return Labelled(texts, registers, context, intensity, valence)


@dataclass(frozen=True)
class CheckCase:
    label: str
    text: str
    context: list[str]
    registers: list[str]
    band: str  # "low" (< 0.4) or "high" (>= 0.6)


def read_handwritten_check(path: Path = HANDWRITTEN_CHECK) -> list[CheckCase]:
    document: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return [CheckCase(case["class"], case["text"], list(case.get("context", [])), list(case["register"]),
                      case["intensity"]) for case in document["cases"]]
