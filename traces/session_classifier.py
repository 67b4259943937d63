"""The offline default write-time classifier, v2: each turn read in its session. Numpy only at runtime.

v1 (``traces.classifier.LocalClassifier``, still available as ``classifier: local-v1``) read each text alone,
with linear heads over frozen MiniLM. On conversations it never saw it read jokes literally ("that clip killed me,
I'm dead 😂": anxiety), plain-worded losses as neutral ("Marco took his things this morning. It's over."), relief as
sadness, and a rained-off beach day as intense sadness. v2 changes five things;
``eval/train_session_classifier.py`` trains it and its report (``traces/data/session_classifier_report.md``) holds
the held-out figures.

1. **Features.** Beside the MiniLM embedding, VADER's four scores and hashed tf-idf word unigrams and bigrams
   (now with emoji as tokens), a small block of conversational cues: a laugh marker ("lol", "haha", 😂, 💀),
   exclamation, shouting, a question, length, "RIP", and hand-written event patterns (``_PATTERNS``).
2. **Register head**: a logistic regression over every block, averaged with small one-hidden-layer networks over
   the dense blocks, trained on GoEmotions, XED and EmoryNLP (the *train* sets) plus hand-written examples of the
   cases those sets miss (``eval/data/handwritten_emotion.yaml``, each group with its reason).
3. **Severity.** Intensity is a noisy-OR of *affect* (predicted arousal and valence extremity, as in v1, scaled
   by ``affect_weight``) and *severity*: how heavily a companion should treat the moment, a ridge regression whose
   targets are a per-register product prior on public text (a death 0.9, distress 0.5-0.55, thanks 0.2) and the
   hand-written severities, so a death weighs 0.9 and a lost beach day 0.25 although both are sadness.
4. **Event rules.** Where a hand-written pattern recognises the event (a breakup, a job lost, a rejection, a bad
   row, laughter told in death words, an object that "died", "killed it", relief), severity and valence get a floor
   or a cap (``EVENT_RULES``), and a diminished remark ("a bit sad") half its severity. Registers stay the heads'
   reading.
5. **Context.** ``classify`` receives one session's user turns in order (the engine calls it once per closed
   session). Every turn after the first is also read together with the turn before it (the texts joined, the
   embedding the normalised sum of both), and the two readings are mixed: a short turn ("It's over.", "I'm dead")
   leans on its context, a long one mostly speaks for itself. The mix weights were chosen on EmoryNLP dev.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from engine.domain.models import REGISTERS
from traces.classifier import (
    AFFECT_EXPONENT,
    AFFECT_RANKS,
    EMBEDDING_DIMENSION,
    LINEAR_RANKS,
    Predictions,
    TrainedClassifier,
    VaderFeatures,
    WeightsFile,
    float32_arrays,
    softmax,
    tfidf_values,
    validated_embeddings,
)
from traces.classifier import (
    hashed_token_counts as hashed_word_counts,
)

DEFAULT_WEIGHTS_PATH = Path(__file__).parent / "data" / "session_classifier.npz"
FORMAT = "feltsense-classifier-v2"
VADER_FEATURES = 4
CUE_NAMES = ("laugh", "exclamation", "shouting", "question", "length", "rip", "death-idiom", "object-death",
             "body-hyperbole", "success-idiom", "relief", "breakup", "job-loss", "setback", "conflict",
             "diminisher")
DENSE_WIDTH = EMBEDDING_DIMENSION + VADER_FEATURES + len(CUE_NAMES)

_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[\U0001F300-\U0001FAFF\u2600-\u27BF]")
_LAUGH = re.compile(r"\b(?:l+o+l+|lmf?ao+|rofl|a?(?:ha){2,}h?|(?:he){2,}|hah)\b|[😂🤣💀😹😆😅]", re.IGNORECASE)
_RIP = re.compile(r"\brip\b", re.IGNORECASE)
_THINGS = (r"(?:phone|laptop|battery|batteries|charger|kettle|printer|tv|telly|remote|headphones|earbuds|car|computer"
           r"|pc|mac|screen|wi-?fi|internet|router|plant|plants|basil|tomatoes|tomato plants|starter|mug|trainers"
           r"|shoes|tablet|ipad|console|fridge|toaster|bulb|hoover|vacuum|mouse|keyboard|watch|engine|bike)")
# Idiom and event patterns (hand-written, in English): features the heads learn from the hand-written examples,
# where the public sets read the words literally or not at all.
_PATTERNS = {
    "death-idiom": re.compile(
        r"\b(?:kill(?:ed|ing|s)? me|(?:i'?m|i am|literally|actually|im) (?:dead|deceased|dying|screaming)"
        r"|had me (?:dying|dead|crying|in tears|on the floor)|(?:the )?death of me|(?:died|dying|crying|dead) laughing"
        r"|laughed (?:so hard|till|until)|me dead)\b", re.IGNORECASE),
    "object-death": re.compile(
        rf"(?:^\s*|\b(?:my|the|our|this|that|their|his|her) )(?:\w+ )?{_THINGS}(?:'s \w+)? (?:\w+ ){{0,2}}?"
        rf"(?:has |had |just |finally |has finally |is |'s )?(?:died|dies|dead|gave up|gave out|packed in"
        rf"|broke|giving up)\b"
        rf"|\brip\b (?:to )?(?:my|the|our) (?:\w+ )?{_THINGS}\b", re.IGNORECASE),
    "body-hyperbole": re.compile(
        r"\bmy (?:legs|arms|back|feet|calves|shoulders|brain|stomach|body|muscles|thighs|knees|head|eyes|liver)\b"
        r"[^.!?]{0,30}\b(?:hate|hates|furious|angry|screaming|kill(?:ing)?|dead|fried|mush|complain\w*|revenge"
        r"|plotting|protest\w*|filing)\b", re.IGNORECASE),
    "success-idiom": re.compile(
        r"\b(?:killed|smashed|nailed|crushed|aced|slayed|murdered|destroyed|owned|rocked) (?:it|that|the (?:interview"
        r"|exam|test|presentation|pitch|audition|quiz|race|game|match)|my (?:exam|test|pb|time|presentation|"
        r"interview|deadline))\b", re.IGNORECASE),
    "relief": re.compile(
        r"\b(?:reliev\w*|relief|all clear|(?:came|come|coming) back (?:clear|fine|negative|normal|benign|ok|okay|good)"
        r"|(?:was|were|is|are|it'?s) (?:clear|benign|negative|harmless|normal|nothing serious)|no cancer|not cancer"
        r"|nothing (?:serious|to worry about)|i passed|we passed|got (?:the job|in)|came through|safe and sound"
        r"|(?:he'?s|she'?s|they'?re) (?:safe|okay|ok|fine|awake|home)|can (?:finally )?breathe)\b", re.IGNORECASE),
    "breakup": re.compile(
        r"\b(?:broke up|break ?up|split up|we'?re (?:done|over|finished|through)|it'?s over|(?:that'?s|so) us done"
        r"|ended (?:it|things)|(?:left|dumped|cheated on) me|moved out|divorce\w*|separat(?:e|ed|ing|ion)"
        r"|took (?:his|her|their) (?:things|stuff)|packed (?:up )?(?:his|her|their) (?:things|stuff|bag|half)"
        r"|engagement is off|seeing someone else|not together any ?more|wants out of (?:the|our) marriage"
        r"|gave (?:the|back the) ring)\b", re.IGNORECASE),
    "job-loss": re.compile(
        r"\b(?:laid off|let (?:me|us|them|everyone|\w+ \w+|the whole \w+(?: \w+)?) go|been let go|let go"
        r"|made redundant|redundan\w+|(?:got|been|was|were|am) fired|fired me|lost (?:my|our|his|her) jobs?"
        r"|out of (?:a )?(?:job|work)|(?:position|role|job) (?:has been |was |is )?(?:eliminated|cut|axed)"
        r"|cut \w+ jobs|(?:contract|visa) (?:isn'?t|wasn'?t|won'?t be|not) (?:being )?renewed|went bust"
        r"|shutting down for good|closing down)\b", re.IGNORECASE),
    "setback": re.compile(
        r"\b(?:didn'?t|did not|never) (?:get|make|pass|win) (?:the|my|that|a|into|it|through)\b"
        r"|\b(?:failed|flunked) (?:my|the|our|a|it)\b|\b(?:got |been |was |were )?(?:rejected|turned down)\b"
        r"|\bdidn'?t get (?:in|picked|chosen|selected)\b|\bno (?:offer|luck)\b(?= [^.!?]*\b(?:job|role|interview))",
        re.IGNORECASE),
    "conflict": re.compile(
        r"\b(?:massive|huge|big|awful|horrible|nasty|blazing|another) (?:row|fight|argument|bust-up)\b"
        r"|\b(?:had|got into) (?:a|another) (?:row|fight|argument)\b"
        r"|\b(?:screamed|yelled|shouted) at (?:me|each other)\b"
        r"|\b(?:walked|stormed) out\b|\bhung up on me\b|\b(?:isn'?t|not) (?:speaking|talking) to (?:me|each other)\b",
        re.IGNORECASE),
    "diminisher": re.compile(
        r"\b(?:a bit|a little|slightly|kind of|kinda|bit of a|mildly|oh well|never mind|minor|a tad|somewhat"
        r"|bit gutted|bit sad|bit down|bit annoyed)\b", re.IGNORECASE),
}
if tuple(_PATTERNS) != CUE_NAMES[len(CUE_NAMES) - len(_PATTERNS):]:  # the weights are indexed by this order
    raise RuntimeError("the pattern cues must come last in CUE_NAMES, in the order of _PATTERNS")

EVENT_RULES: dict[str, tuple[float, float, float, float]] = {
    # cue: (severity floor, severity cap, valence floor, valence cap). Product rules, not fitted: the end of a
    # relationship and the loss of a job are heavy and negative, a rejection or a bad row is a real blow; laughter
    # told in death words, objects that "die", tired muscles and "killed it" are light; relief is positive.
    "breakup": (0.75, 1.0, -1.0, -0.5),
    "job-loss": (0.7, 1.0, -1.0, -0.45),
    "death-idiom": (0.0, 0.25, 0.2, 1.0),
    "object-death": (0.0, 0.2, -0.35, 1.0),
    "body-hyperbole": (0.0, 0.2, -0.2, 1.0),
    "success-idiom": (0.0, 0.4, 0.3, 1.0),
    "relief": (0.0, 1.0, 0.35, 1.0),
    "setback": (0.45, 1.0, -1.0, -0.3),
    "conflict": (0.55, 1.0, -1.0, -0.35),
}
DIMINISHER_FACTOR = 0.5
""""A bit sad", "slightly gutted": the severity of a diminished remark is halved."""
_WORD = re.compile(r"[A-Za-z]+")

_ARRAYS: dict[str, int] = {
    **LINEAR_RANKS,
    "register_mlp_w1": 3, "register_mlp_b1": 2, "register_mlp_w2": 3, "register_mlp_b2": 2, "register_mix": 0,
    **AFFECT_RANKS,
    "valence_stretch": 0, "intensity_calibration": 1, "context_mix": 1, "context_short_words": 0, "affect_weight": 0,
}


def hashed_token_counts(text: str, n_buckets: int) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
    """Bucket ids and counts of a text's lower-cased word (and emoji) unigrams and bigrams (crc32 buckets)."""
    return hashed_word_counts(text, n_buckets, _TOKEN)


def word_count(text: str) -> int:
    """Words as the context mix counts them: whitespace-separated tokens with a letter or digit in them."""
    return sum(1 for token in text.split() if any(ch.isalnum() for ch in token))


def cue_features(texts: Sequence[str]) -> NDArray[np.float32]:
    """The conversational cues, each in [0, 1], in the order of ``CUE_NAMES``."""
    out = np.zeros((len(texts), len(CUE_NAMES)), dtype=np.float32)
    for row, text in enumerate(texts):
        words = _WORD.findall(text)
        long_words = [w for w in words if len(w) >= 2]
        shouted = sum(1 for w in long_words if w.isupper())
        out[row] = (
            1.0 if _LAUGH.search(text) else 0.0,
            min(text.count("!"), 3) / 3.0,
            shouted / len(long_words) if len(long_words) >= 2 else 0.0,
            1.0 if "?" in text else 0.0,
            min(math.log1p(len(words)) / math.log(50.0), 1.0),
            1.0 if _RIP.search(text) else 0.0,
            *(1.0 if _PATTERNS[name].search(text) else 0.0 for name in CUE_NAMES[len(CUE_NAMES) - len(_PATTERNS):]),
        )
    return out


def context_views(texts: Sequence[str], embeddings: NDArray[np.float32]) -> tuple[list[str], NDArray[np.float32]]:
    """Each turn after the first joined with the one before it: the texts, and the normalised sum of embeddings."""
    joined = [f"{before} {text}" for before, text in itertools.pairwise(texts)]
    summed = embeddings[:-1] + embeddings[1:]
    norms = np.maximum(np.linalg.norm(summed, axis=1, keepdims=True), 1e-12)
    return joined, (summed / norms).astype(np.float32)


@dataclass(frozen=True)
class _Reading:
    register_probabilities: NDArray[np.float32]
    valence_1to5: NDArray[np.float32]
    arousal_1to5: NDArray[np.float32]
    severity: NDArray[np.float32]


class SessionClassifier(TrainedClassifier):
    """Classifies one session's turns in order, each read alone and with the turn before it. Stateless."""

    weights = WeightsFile(DEFAULT_WEIGHTS_PATH, _ARRAYS, FORMAT, "eval.train_session_classifier", "feltsense-session")

    def __init__(self, arrays: dict[str, NDArray[np.generic]], *, source: str) -> None:
        super().__init__(arrays, source=source)
        f32 = float32_arrays(arrays)
        self._mlp_w1, self._mlp_b1 = f32("register_mlp_w1"), f32("register_mlp_b1")
        self._mlp_w2, self._mlp_b2 = f32("register_mlp_w2"), f32("register_mlp_b2")
        self._register_mix = float(arrays["register_mix"])
        self._context_short, self._context_long = (float(x) for x in f32("context_mix"))
        self._context_short_words = int(arrays["context_short_words"])
        self._affect_weight = float(arrays["affect_weight"])
        self._check_shapes()
        self._vader = VaderFeatures()

    def _check_shapes(self) -> None:
        n_registers = len(REGISTERS)
        n_models, _, hidden = self._mlp_w1.shape
        self._check(DENSE_WIDTH, 3, {
            "register_mlp_w1": ((n_models, DENSE_WIDTH, hidden), self._mlp_w1.shape),
            "register_mlp_b1": ((n_models, hidden), self._mlp_b1.shape),
            "register_mlp_w2": ((n_models, hidden, n_registers), self._mlp_w2.shape),
            "register_mlp_b2": ((n_models, n_registers), self._mlp_b2.shape),
        })

    @property
    def per_sentence(self) -> bool:
        """The write-time pass also classifies each sentence (in order, so each has its context) and keeps the
        most intense reading of a memory."""
        return True

    def predict(self, texts: Sequence[str], embeddings: NDArray[np.float32], *,
                context: bool = True) -> Predictions:
        """Every turn's reading; with ``context`` (the default) each turn after the first is mixed with its
        reading beside the turn before it."""
        embeddings = validated_embeddings(texts, embeddings)
        own = self._read(texts, embeddings)
        register, valence_1to5, arousal, severity = (
            own.register_probabilities, own.valence_1to5, own.arousal_1to5, own.severity)
        if context and len(texts) > 1:
            joined, joined_vectors = context_views(texts, embeddings)
            ctx = self._read(joined, joined_vectors)
            short = np.array([word_count(t) <= self._context_short_words for t in texts[1:]])
            weight = np.where(short, self._context_short, self._context_long).astype(np.float32)[:, None]
            register = register.copy()
            valence_1to5, arousal, severity = valence_1to5.copy(), arousal.copy(), severity.copy()
            register[1:] = (1 - weight) * register[1:] + weight * ctx.register_probabilities
            w = weight[:, 0]
            valence_1to5[1:] = (1 - w) * valence_1to5[1:] + w * ctx.valence_1to5
            arousal[1:] = (1 - w) * arousal[1:] + w * ctx.arousal_1to5
            severity[1:] = (1 - w) * severity[1:] + w * ctx.severity
        valence = np.clip(self._valence_stretch * (valence_1to5 - 3.0) / 2.0, -1.0, 1.0).astype(np.float32)
        return Predictions(
            register_probabilities=register.astype(np.float32),
            valence_1to5=valence_1to5.astype(np.float32),
            arousal_1to5=arousal.astype(np.float32),
            valence=valence,
            intensity=self._intensity(valence, arousal, severity),
        )

    def dense(self, texts: Sequence[str], embeddings: NDArray[np.float32]) -> NDArray[np.float32]:
        """The dense feature block (embedding, VADER, cues) the heads read."""
        return np.hstack([embeddings, self._vader(texts), cue_features(texts)]).astype(np.float32)

    def _read(self, texts: Sequence[str], embeddings: NDArray[np.float32]) -> _Reading:
        n_registers = len(REGISTERS)
        dense = self.dense(texts, embeddings)
        hashed = self._hashed_contributions(texts)
        linear = softmax(dense @ self._register_dense + hashed[:, :n_registers] + self._register_bias)
        hidden = np.maximum(np.einsum("nd,mdh->mnh", dense, self._mlp_w1) + self._mlp_b1[:, None, :], 0.0)
        mlp = softmax_3d(np.einsum("mnh,mhr->mnr", hidden, self._mlp_w2) + self._mlp_b2[:, None, :]).mean(axis=0)
        register = ((1.0 - self._register_mix) * linear + self._register_mix * mlp).astype(np.float32)
        emotion28 = softmax(dense @ self._emotion28_weights + self._emotion28_bias)
        affect_in = np.hstack([dense, register, emotion28])
        affect = affect_in @ self._affect_dense + hashed[:, n_registers:] + self._affect_bias
        valence_1to5 = affect[:, 0].astype(np.float32)
        severity = np.clip(affect[:, 2], 0.0, 1.0).astype(np.float32)
        valence_1to5, severity = self._event_rules(dense[:, EMBEDDING_DIMENSION + VADER_FEATURES:],
                                                   valence_1to5, severity)
        return _Reading(register.astype(np.float32), valence_1to5.astype(np.float32),
                        affect[:, 1].astype(np.float32), severity.astype(np.float32))

    def _event_rules(self, cues: NDArray[np.float32], valence_1to5: NDArray[np.float32],
                     severity: NDArray[np.float32]) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
        """Bounds on severity and valence where a hand-written pattern recognises the event (``EVENT_RULES``): the
        heads learn registers from these patterns, but a few hundred examples cannot move a ridge regression over
        80,000 public rows far enough. Each rule is a floor or a cap, never a replacement."""
        valence = self._valence_stretch * (valence_1to5 - 3.0) / 2.0
        severity = severity.copy()
        for cue, (severity_floor, severity_cap, valence_floor, valence_cap) in EVENT_RULES.items():
            hit = cues[:, CUE_NAMES.index(cue)] > 0
            laughing = cues[:, CUE_NAMES.index("laugh")] > 0
            if cue == "death-idiom":
                hit &= laughing  # "killed me" with a laugh, not "it killed me"
            elif cue in ("setback", "conflict"):
                hit &= ~laughing  # "I never win anything lol" is no blow
            if not hit.any():
                continue
            severity[hit] = np.clip(severity[hit], severity_floor, severity_cap)
            valence[hit] = np.clip(valence[hit], valence_floor, valence_cap)
        diminished = cues[:, CUE_NAMES.index("diminisher")] > 0
        severity[diminished] *= DIMINISHER_FACTOR
        return (3.0 + 2.0 * valence / self._valence_stretch).astype(np.float32), severity.astype(np.float32)

    def _intensity(self, valence: NDArray[np.float32], arousal_1to5: NDArray[np.float32],
                   severity: NDArray[np.float32]) -> NDArray[np.float32]:
        affect = self._affect_weight * self._affect(valence, arousal_1to5) ** AFFECT_EXPONENT
        intensity: NDArray[np.float32] = np.clip(
            1.0 - (1.0 - affect) * (1.0 - np.clip(severity, 0.0, 1.0)), 0.0, 1.0
        ).astype(np.float32)
        return intensity

    def _hashed_contributions(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """The hashed-feature part of every linear head, without building the (n, n_buckets) matrix."""
        n_buckets, n_outputs = self._hashed_weights.shape
        out = np.zeros((len(texts), n_outputs), dtype=np.float32)
        for row, text in enumerate(texts):
            ids, counts = hashed_token_counts(text, n_buckets)
            if len(ids):
                out[row] = tfidf_values(counts, self._idf[ids]) @ self._hashed_weights[ids]
        return out


def softmax_3d(logits: NDArray[np.float32]) -> NDArray[np.float32]:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    exp = np.exp(shifted)
    probabilities: NDArray[np.float32] = (exp / exp.sum(axis=-1, keepdims=True)).astype(np.float32)
    return probabilities
