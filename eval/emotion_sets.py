"""Readers for the emotion-labelled evaluation sets in ``../shared/data``, as *sessions* the classifier is called on.

The write-time classifier (``engine.domain.ports.Classifier``) is called once per closed session with that session's
user
turns in order, so a classifier may read the earlier turns as context. Every reader here returns its set in that
shape: a list of ``Session``, each the ordered turns of *one* speaker, with gold labels on the turns (or on the
session) they apply to. ``eval.classifier_eval`` scores them.

- Sentence sets (GoEmotions, EmoBank, XED, ISEAR, CrowdFlower, the synthetic grief check) are sessions of one turn.
- Dialogue sets pass the labelled speaker's own turns, in order, as one session: DailyDialog, MELD and EmoryNLP
  give every speaker of a dialogue (or scene) a session of their own; in EmoContext turns 1 and 3 are the same
  user and the label is on turn 3; in ESConv the seeker's turns form the session, with one label for all of it;
  in EmpatheticDialogues the speaker who lived the situation does, likewise with one label.
- Session-level labels (ESConv, EmpatheticDialogues) are scored on the session's *most intense* turn: the strongest
  memory of the conversation is what recall and the tone rules will carry, so that is the reading that must be
  right.

Labels are mapped to ``engine.domain.models.REGISTERS`` by one table per set (below, following the hints in
``../shared/data/README.md``). A label maps to a register; to ``OTHER`` (EmoContext's *others*: explicitly "none of
the scored registers", so a classifier that reads joy, sadness or anger into such a turn is wrong, and anything
else is right); or to ``None``: ambiguous, the turn stays in its session as context but is not scored.
Where the choice is not in the hints it is noted beside the table.

Human valence and intensity stay on each set's own scale where only Pearson r is computed on them (r does not
change under a linear rescale): EmoBank's valence is given as (V - 3) / 2, ESConv's intensity is 1-5, ISEAR's 1-4.

The sarcasm sets (``isarcasmeval/``, ``mustard/``) carry no emotion, valence or intensity labels: they are left
out (``SKIPPED``). The evaluation-only sets (README) are read here and never copied into the project.
"""

from __future__ import annotations

import ast
import csv
import html
import json
import random
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from engine.domain.models import REGISTERS
from eval.train_classifier import GOEMOTIONS_TO_REGISTER, SYNTHETIC_GRIEF_CHECK

OTHER = "other"
"""A gold label meaning "none of the registers this set scores" (EmoContext's *others*)."""

SAMPLE_SEED = 20241201
"""The seed of every sample drawn from a set (``--limit`` and ``DEFAULT_CAPS``), so runs are comparable."""


@dataclass(frozen=True)
class Gold:
    """Human labels for one turn or one session; None where the set has no such label."""

    register: str | None = None  # a REGISTERS name or OTHER
    valence: float | None = None
    intensity: float | None = None


@dataclass(frozen=True)
class Session:
    """One speaker's turns in order: the unit ``classify`` is called on."""

    texts: tuple[str, ...]
    turn_gold: tuple[Gold | None, ...]  # one per text
    session_gold: Gold | None = None  # scored on the session's most intense turn

    def __post_init__(self) -> None:
        if len(self.turn_gold) != len(self.texts):
            raise ValueError(f"{len(self.texts)} texts but {len(self.turn_gold)} turn labels")
        if not self.texts:
            raise ValueError("a session needs at least one turn")


@dataclass(frozen=True)
class EmotionSet:
    name: str
    title: str
    use: str  # "train" or "evaluation only", as the data README marks it
    license: str
    unit: str  # what one scored item is
    sessions: list[Session]
    mapping: Mapping[str, str | None]  # label -> register, OTHER or None (not scored)
    valence: str | None = None  # what the valence gold is, when the set has one
    intensity: str | None = None  # likewise for intensity
    notes: tuple[str, ...] = ()
    sample: str | None = None  # how the sessions were sampled, when they were

    @property
    def n_texts(self) -> int:
        return sum(len(s.texts) for s in self.sessions)

    @property
    def mappable_registers(self) -> tuple[str, ...]:
        """The registers the mapping can produce, in REGISTERS order."""
        produced = set(self.mapping.values())
        return tuple(r for r in REGISTERS if r in produced)

    @property
    def excluded_labels(self) -> tuple[str, ...]:
        return tuple(label for label, register in self.mapping.items() if register is None)


class EmotionDataError(ValueError):
    """A set's files are absent or not in the layout its reader expects."""


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _sentence_sessions(items: Iterable[tuple[str, Gold]]) -> list[Session]:
    return [Session((text,), (gold,)) for text, gold in ((_clean(t), g) for t, g in items) if text]


def _speaker_sessions(
    dialogues: Iterable[Sequence[tuple[str, str, Gold | None]]],
) -> list[Session]:
    """Each speaker's own turns of each dialogue, in order, as a session; dialogue order, then first appearance."""
    out = []
    for dialogue in dialogues:
        by_speaker: dict[str, list[tuple[str, Gold | None]]] = {}
        for speaker, text, gold in dialogue:
            text = _clean(text)
            if text:
                by_speaker.setdefault(speaker, []).append((text, gold))
        for turns in by_speaker.values():
            out.append(Session(tuple(t for t, _ in turns), tuple(g for _, g in turns)))
    return out


def _register(mapping: Mapping[str, str | None], label: str, set_name: str) -> str | None:
    if label not in mapping:
        raise EmotionDataError(f"{set_name}: label {label!r} is not in the mapping table")
    return mapping[label]


def _read_csv(path: Path, *, delimiter: str = ",", quoted: bool = True) -> list[dict[str, str]]:
    if not path.is_file():
        raise EmotionDataError(f"{path} not found")
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter=delimiter,
                                   quoting=csv.QUOTE_MINIMAL if quoted else csv.QUOTE_NONE))


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise EmotionDataError(f"{path} not found")
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


# --- GoEmotions (train) ------------------------------------------------------------------------------------------

def read_goemotions(data_dir: Path) -> EmotionSet:
    """The test split, comments left with exactly one register: the evaluation training uses (4,824 comments).

    The mapping is the one v1 was trained with (``eval.train_classifier.GOEMOTIONS_TO_REGISTER``), including its
    rule that grief absorbs sadness on multi-label comments.
    """
    folder = data_dir / "goemotions"
    names_path, test_path = folder / "original_labels.txt", folder / "original_test.tsv"
    for path in (names_path, test_path):
        if not path.is_file():
            raise EmotionDataError(f"{path} not found")
    names = names_path.read_text(encoding="utf-8").split()
    items = []
    with test_path.open(encoding="utf-8", newline="") as handle:
        for line in handle:
            line = line.rstrip("\n")
            if not line:
                continue
            text, label_ids, _comment_id = line.split("\t")
            registers = {GOEMOTIONS_TO_REGISTER[names[int(i)]] for i in label_ids.split(",")}
            if "grief" in registers:
                registers.discard("sadness")
            if len(registers) == 1:
                items.append((text, Gold(register=next(iter(registers)))))
    return EmotionSet(
        "goemotions", "GoEmotions test split (Reddit comments)", "train", "Apache-2.0", "comment",
        _sentence_sessions(items), dict(GOEMOTIONS_TO_REGISTER),
        notes=("single-register comments only; grief absorbs sadness (as in training)",),
    )


# --- EmoBank (train) ---------------------------------------------------------------------------------------------

def read_emobank(data_dir: Path) -> EmotionSet:
    rows = _read_csv(data_dir / "emobank" / "emobank.csv")
    items = [(row["text"], Gold(valence=(float(row["V"]) - 3.0) / 2.0)) for row in rows if row["split"] == "test"]
    return EmotionSet(
        "emobank", "EmoBank test split (news, essays, fiction, blogs)", "train", "CC BY-SA 4.0", "sentence",
        _sentence_sessions(items), {}, valence="(V - 3) / 2, V the mean human valence 1-5",
    )


# --- the synthetic grief check (hand-written for the project) ----------------------------------------------------

def read_grief_check(_data_dir: Path) -> EmotionSet:
    return EmotionSet(
        "grief-check", "synthetic grief check (eval/train_classifier.py, never trained on)", "hand-written",
        "the project's", "sentence",
        _sentence_sessions((text, Gold(register="grief")) for text in SYNTHETIC_GRIEF_CHECK),
        {"grief": "grief"}, notes=("one register: grief recall is reported, not macro-F1",),
    )


# --- XED (train) -------------------------------------------------------------------------------------------------

XED_LABELS = {1: "anger", 2: "anticipation", 3: "disgust", 4: "fear", 5: "joy", 6: "sadness", 7: "surprise",
              8: "trust"}
XED_TO_REGISTER: dict[str, str | None] = {
    "anger": "anger", "disgust": "anger",
    "anticipation": "curiosity",
    "fear": "anxiety",
    "joy": "joy",
    "sadness": "sadness",
    "trust": "affection",
    "surprise": None,  # Plutchik's surprise is as often alarm as wonder: ambiguous
    "neutral": "neutral",
}


def read_xed(data_dir: Path) -> EmotionSet:
    """Every annotated English line (XED has no split) plus the neutral lines.

    Multi-label lines: each label maps to its register, unscored labels (surprise) are dropped, and lines left with
    exactly one register are scored (as GoEmotions is); the others are left out.
    """
    folder = data_dir / "xed"
    annotated, neutral = folder / "en-annotated.tsv", folder / "neu_en.txt"
    for path in (annotated, neutral):
        if not path.is_file():
            raise EmotionDataError(f"{path} not found")
    items: list[tuple[str, Gold]] = []
    with annotated.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            text, labels = line.rstrip("\n").split("\t")
            mapped = {XED_TO_REGISTER[XED_LABELS[int(x)]] for x in labels.split(",")} - {None}
            if len(mapped) == 1:
                register = next(iter(mapped))
                assert register is not None
                items.append((text, Gold(register=register)))
    with neutral.open(encoding="utf-8") as handle:
        for line in handle:
            fields = line.rstrip("\n").split("\t")
            if len(fields) >= 2 and fields[0].strip() == "9":  # neutral lines are labelled 9 in this file
                items.append((fields[1], Gold(register="neutral")))
    return EmotionSet(
        "xed", "XED English movie subtitles (whole set: it has no split)", "train", "CC BY 4.0", "subtitle line",
        _sentence_sessions(items), XED_TO_REGISTER,
        notes=("multi-label lines scored only when their labels map to one register",
               "XED is marked train: a classifier trained on it is not held out here"),
    )


# --- EmoryNLP (train) --------------------------------------------------------------------------------------------

EMORYNLP_TO_REGISTER: dict[str, str | None] = {
    "Joyful": "joy",
    "Sad": "sadness",
    "Scared": "anxiety",
    "Mad": "anger",
    "Powerful": "pride",
    "Neutral": "neutral",
    "Peaceful": None,  # the Feeling Wheel's Peaceful spans content, relaxed, thankful, loving: joy or affection
}


def read_emorynlp(data_dir: Path) -> EmotionSet:
    """The test split: each character's utterances in a scene (season, episode, scene), in utterance order.

    Utterances spoken by several characters at once (a handful) are left out: no one speaker owns them.
    """
    rows = _read_csv(data_dir / "emorynlp" / "emorynlp_test_final.csv")
    scenes: dict[tuple[str, str, str], list[tuple[int, str, str, Gold | None]]] = defaultdict(list)
    for row in rows:
        speakers = ast.literal_eval(row["Speaker"])
        if len(speakers) != 1:
            continue
        register = _register(EMORYNLP_TO_REGISTER, row["Emotion"], "emorynlp")
        gold = None if register is None else Gold(register=register)
        key = (row["Season"], row["Episode"], row["Scene_ID"])
        scenes[key].append((int(row["Utterance_ID"]), str(speakers[0]), row["Utterance"], gold))
    dialogues = [[(s, t, g) for _, s, t, g in sorted(turns, key=lambda x: x[0])] for turns in scenes.values()]
    return EmotionSet(
        "emorynlp", "EmoryNLP test split (Friends scenes)", "train", "Apache-2.0", "utterance",
        _speaker_sessions(dialogues), EMORYNLP_TO_REGISTER,
        notes=("a session: one character's utterances in one scene",),
    )


# --- MELD (evaluation only) --------------------------------------------------------------------------------------

EKMAN_TO_REGISTER: dict[str, str | None] = {
    "joy": "joy", "happiness": "joy",
    "sadness": "sadness",
    "fear": "anxiety",
    "anger": "anger", "disgust": "anger",
    "neutral": "neutral",
    "surprise": None,  # Ekman's surprise: in MELD test 162 of 281 are negative, 119 positive; ambiguous
}
SENTIMENT_VALENCE = {"negative": -1.0, "neutral": 0.0, "positive": 1.0}


def read_meld(data_dir: Path) -> EmotionSet:
    """The test split: each character's utterances in a dialogue, in utterance order; sentiment as valence."""
    rows = _read_csv(data_dir / "meld" / "test_sent_emo.csv")
    dialogues: dict[str, list[tuple[int, str, str, Gold | None]]] = defaultdict(list)
    for row in rows:
        register = _register(EKMAN_TO_REGISTER, row["Emotion"], "meld")
        gold = Gold(register=register, valence=SENTIMENT_VALENCE[row["Sentiment"]])
        dialogues[row["Dialogue_ID"]].append((int(row["Utterance_ID"]), row["Speaker"], row["Utterance"], gold))
    ordered = [[(s, t, g) for _, s, t, g in sorted(turns, key=lambda x: x[0])] for turns in dialogues.values()]
    return EmotionSet(
        "meld", "MELD test split (Friends dialogues)", "evaluation only", "GPL-3.0", "utterance",
        _speaker_sessions(ordered), {k: v for k, v in EKMAN_TO_REGISTER.items() if k != "happiness"},
        valence="the utterance's sentiment: negative -1, neutral 0, positive 1",
        notes=("a session: one character's utterances in one dialogue",),
    )


# --- DailyDialog (evaluation only) -------------------------------------------------------------------------------

_SPACED_PUNCTUATION = re.compile(r"\s+([,.!?;:%])")
_SPACED_CONTRACTION = re.compile(r"\s*[’']\s*(s|t|m|ll|re|ve|d)\b")


def detokenize(text: str) -> str:
    """Undo DailyDialog's tokenisation ("I ’ ll go , then ." -> "I'll go, then."), as a user would type it."""
    return _SPACED_PUNCTUATION.sub(r"\1", _SPACED_CONTRACTION.sub(r"'\1", text))


def read_dailydialog(data_dir: Path) -> EmotionSet:
    """The test part of ``compm_dev_test`` (1,000 dialogues): each of the two speakers' turns, in order."""
    path = data_dir / "dailydialog" / "compm_dev_test" / "dailydialog_test.txt"
    if not path.is_file():
        raise EmotionDataError(f"{path} not found")
    dialogues: list[list[tuple[str, str, Gold | None]]] = [[]]
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            line = line.rstrip("\n")
            if not line.strip():
                if dialogues[-1]:
                    dialogues.append([])
                continue
            speaker, text, label = line.split("\t")
            register = _register(EKMAN_TO_REGISTER, label, "dailydialog")
            dialogues[-1].append((speaker, detokenize(text), None if register is None else Gold(register=register)))
    return EmotionSet(
        "dailydialog", "DailyDialog test split (everyday two-person dialogues)", "evaluation only",
        "CC BY-NC-SA 4.0", "utterance", _speaker_sessions(d for d in dialogues if d),
        {k: v for k, v in EKMAN_TO_REGISTER.items() if k != "joy"},
        notes=("a session: one speaker's turns in one dialogue",
               "the corpus is tokenised (\"I ’ ll go , then .\"); turns are detokenised first"),
    )


# --- EmoContext (evaluation only) --------------------------------------------------------------------------------

EMOCONTEXT_TO_REGISTER: dict[str, str | None] = {
    "happy": "joy", "sad": "sadness", "angry": "anger",
    "others": OTHER,  # "none of the three", not "neutral": it holds worry, surprise, ... as well as small talk
}


def read_emocontext(data_dir: Path) -> EmotionSet:
    """The test file (Test2, 5,509 exchanges): the user's turns 1 and 3 as one session, the label on turn 3.

    *others* turns are scored as SemEval-2019 Task 3 scores them: reading joy, sadness or anger into one is a false
    positive for that register; any other register is right (macro-F1 is over joy, sadness, anger).
    """
    rows = _read_csv(data_dir / "emocontext" / "test.txt", delimiter="\t", quoted=False)
    sessions = []
    for row in rows:
        first, third = _clean(row["turn1"]), _clean(row["turn3"])
        register = _register(EMOCONTEXT_TO_REGISTER, row["label"], "emocontext")
        gold = Gold(register=register)
        if not third:
            continue
        sessions.append(Session((first, third), (None, gold)) if first else Session((third,), (gold,)))
    return EmotionSet(
        "emocontext", "EmoContext test split (user-chatbot exchanges)", "evaluation only", "none stated",
        "third turn", sessions, EMOCONTEXT_TO_REGISTER,
        notes=("a session: the user's turns 1 and 3 (turn 2 is the chatbot's); turn 3 is scored",
               "'others' scored as the negative class (SemEval-2019 Task 3)"),
    )


# --- ESConv (evaluation only) ------------------------------------------------------------------------------------

ESCONV_TO_REGISTER: dict[str, str | None] = {
    "sadness": "sadness", "depression": "sadness", "pain": "sadness",
    "anxiety": "anxiety", "fear": "anxiety", "nervousness": "anxiety",
    "anger": "anger", "disgust": "anger", "jealousy": "anger",
    "shame": "shame", "guilt": "shame",
}


def read_esconv(data_dir: Path) -> EmotionSet:
    """``test.jsonl`` (195 conversations): the seeker's turns; the session's emotion and initial intensity (1-5).

    The session is scored on its most intense turn.
    """
    sessions = []
    for record in _read_jsonl(data_dir / "esconv" / "test.jsonl"):
        seeker = [str(turn["text"]) for turn in record["dialog"] if turn["speaker"] == "usr"]
        texts = tuple(t for t in (_clean(x) for x in seeker) if t)
        if not texts:
            continue
        register = _register(ESCONV_TO_REGISTER, str(record["emotion_type"]), "esconv")
        raw = ((record.get("survey_score") or {}).get("seeker") or {}).get("initial_emotion_intensity")
        intensity = float(raw) if raw not in (None, "") else None
        sessions.append(Session(texts, (None,) * len(texts), Gold(register=register, intensity=intensity)))
    return EmotionSet(
        "esconv", "ESConv test split (emotional-support conversations, the seeker's turns)", "evaluation only",
        "CC BY-NC 4.0", "conversation (its most intense turn)", sessions, ESCONV_TO_REGISTER,
        intensity="the seeker's own emotion intensity before the conversation, 1-5",
        notes=("one label per conversation, scored on the prediction of its most intense turn",),
    )


# --- EmpatheticDialogues (evaluation only) -----------------------------------------------------------------------

ED_TO_REGISTER: dict[str, str | None] = {
    "devastated": "grief",
    "sad": "sadness", "lonely": "sadness", "disappointed": "sadness",
    "afraid": "anxiety", "anxious": "anxiety", "terrified": "anxiety", "apprehensive": "anxiety",
    "angry": "anger", "annoyed": "anger", "furious": "anger", "disgusted": "anger", "jealous": "anger",
    "ashamed": "shame", "embarrassed": "shame", "guilty": "shame",
    "joyful": "joy", "excited": "joy", "content": "joy",
    "hopeful": "joy",  # as GoEmotions' optimism, which v1's training maps to joy
    "caring": "affection", "trusting": "affection", "sentimental": "affection",
    "grateful": "affection",  # as GoEmotions' gratitude
    "proud": "pride", "confident": "pride",  # confident as EmoryNLP's Powerful
    "surprised": "curiosity", "anticipating": "curiosity",
    "nostalgic": None,  # wistful: sadness, affection or joy
    "impressed": None,  # admiring someone else: affection or pride
    "faithful": None,  # loyalty: no register
    "prepared": None,  # readiness: no register
}


def read_empatheticdialogues(data_dir: Path) -> EmotionSet:
    """The MoEL test contexts: the speaker's turns (even positions) of each dialogue, one label per dialogue.

    The file lists each dialogue several times, its context growing by two turns each time; a line whose context
    extends the previous line's is the same dialogue, and the longest is kept. The session is scored on its most
    intense turn.
    """
    records = _read_jsonl(data_dir / "empatheticdialogues" / "moel_contexts" / "moel_test_contexts.jsonl")
    dialogues: list[tuple[list[str], str]] = []
    for record in records:
        context = [str(t) for t in record["context"]]
        emotion = str(record["emotion"])
        if dialogues:
            previous, previous_emotion = dialogues[-1]
            if emotion == previous_emotion and len(context) > len(previous) and context[:len(previous)] == previous:
                dialogues[-1] = (context, emotion)
                continue
        dialogues.append((context, emotion))
    sessions = []
    for context, emotion in dialogues:
        texts = tuple(t for t in (_clean(x) for x in context[0::2]) if t)
        if texts:
            register = _register(ED_TO_REGISTER, emotion, "empatheticdialogues")
            gold = None if register is None else Gold(register=register)
            sessions.append(Session(texts, (None,) * len(texts), gold))
    return EmotionSet(
        "empatheticdialogues", "EmpatheticDialogues test contexts (MoEL), the speaker's turns", "evaluation only",
        "CC BY-NC 4.0", "dialogue (its most intense turn)", sessions, ED_TO_REGISTER,
        notes=("one label per dialogue (the situation's emotion), scored on its most intense turn",),
    )


# --- ISEAR (evaluation only) -------------------------------------------------------------------------------------

ISEAR_TO_REGISTER: dict[str, str | None] = {
    "joy": "joy", "sadness": "sadness", "fear": "anxiety", "anger": "anger", "disgust": "anger",
    "shame": "shame", "guilt": "shame",
}
_ISEAR_NON_ANSWER = re.compile(
    r"^(no re?s?ponse|no description|doesn'?t apply|not applicable|none|nothing|do not know|never experienced"
    r"|(i )?(have )?never (felt|experienced)\b.*|i have not felt\b.*|(i )?(do not|can ?not) (remember|recall|think)\b.*"
    r"|(the )?same as\b.*|normally i do not feel\b.*)\.?$",
    re.IGNORECASE,
)
_ISEAR_BRACKETS = re.compile(r"^\[\s*(.*?)\s*\]$")
_ISEAR_SOFT_BREAK = re.compile(r"\s+á(?=\s|$)")


def read_isear(data_dir: Path) -> EmotionSet:
    """Every report (ISEAR has no split): SIT as the text, Field1 the emotion, INTS the intensity 1-4.

    Cleaning: the file's soft line breaks (" á ") become spaces; quotes escaped as \\" are unescaped; a report
    split over several ``|`` fields is joined; the square brackets round some reports are dropped. Non-answers
    ("[ No response.]", "NO RESPONSE.", "[ Never experienced.]", "[ Same as in anger.]") are left out. INTS 0
    (not given) leaves the report without an intensity label.
    """
    path = data_dir / "isear" / "isear.csv"
    if not path.is_file():
        raise EmotionDataError(f"{path} not found")
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle, delimiter="|", quoting=csv.QUOTE_NONE))
    header = rows[0]
    emotion_at, intensity_at, text_at = header.index("Field1"), header.index("INTS"), header.index("SIT")
    trailing = len(header) - text_at - 1  # STATE and the empty field after the last '|'
    items = []
    for row in rows[1:]:
        if len(row) < len(header):
            continue
        text = " ".join(row[text_at:len(row) - trailing])
        text = _clean(_ISEAR_SOFT_BREAK.sub(" ", text.replace('\\"', '"').replace("\\", '"')))
        text = _ISEAR_BRACKETS.sub(r"\1", text)  # an editor's brackets round some reports
        if not text or _ISEAR_NON_ANSWER.match(text):
            continue
        register = _register(ISEAR_TO_REGISTER, row[emotion_at], "isear")
        intensity = int(row[intensity_at])
        items.append((text, Gold(register=register, intensity=float(intensity) if intensity > 0 else None)))
    return EmotionSet(
        "isear", "ISEAR first-person event reports (whole set: it has no split)", "evaluation only",
        "CC BY-NC-SA 3.0 (reported)", "report", _sentence_sessions(items), ISEAR_TO_REGISTER,
        intensity="the reporter's own intensity, INTS 1-4",
        notes=("non-answers ('[ No response.]', ...) left out; INTS 0 has no intensity",),
    )


# --- CrowdFlower (evaluation only) -------------------------------------------------------------------------------

CROWDFLOWER_TO_REGISTER: dict[str, str | None] = {
    "sadness": "sadness",
    "worry": "anxiety",
    "anger": "anger", "hate": "anger",
    "happiness": "joy", "fun": "joy", "enthusiasm": "joy", "relief": "joy",
    "love": "affection",
    "neutral": "neutral",
    "surprise": None,  # ambiguous, as in MELD
    "empty": None,  # emptiness: sadness or numbness; ambiguous
    "boredom": None,  # no register
}


def read_crowdflower(data_dir: Path) -> EmotionSet:
    """Every tweet (no split). HTML entities are unescaped; the file's lost characters ("ï¿½") become spaces."""
    rows = _read_csv(data_dir / "crowdflower" / "text_emotion.csv")
    items = []
    for row in rows:
        register = _register(CROWDFLOWER_TO_REGISTER, row["sentiment"], "crowdflower")
        if register is not None:
            items.append((html.unescape(row["content"]).replace("ï¿½", " "), Gold(register=register)))
    return EmotionSet(
        "crowdflower", "CrowdFlower 'Emotion in Text' tweets (whole set: no split; noisy labels)", "evaluation only",
        "not stated", "tweet", _sentence_sessions(items), CROWDFLOWER_TO_REGISTER,
        notes=("tweets with unscored labels (surprise, empty, boredom) are left out",),
    )


# --- the registry ------------------------------------------------------------------------------------------------

Reader = Callable[[Path], EmotionSet]


@dataclass(frozen=True)
class SetSpec:
    reader: Reader
    folder: str | None  # under the data folder; None: built into the project


SETS: dict[str, SetSpec] = {
    "goemotions": SetSpec(read_goemotions, "goemotions"),
    "emobank": SetSpec(read_emobank, "emobank"),
    "grief-check": SetSpec(read_grief_check, None),
    "xed": SetSpec(read_xed, "xed"),
    "emorynlp": SetSpec(read_emorynlp, "emorynlp"),
    "meld": SetSpec(read_meld, "meld"),
    "dailydialog": SetSpec(read_dailydialog, "dailydialog"),
    "emocontext": SetSpec(read_emocontext, "emocontext"),
    "esconv": SetSpec(read_esconv, "esconv"),
    "empatheticdialogues": SetSpec(read_empatheticdialogues, "empatheticdialogues"),
    "isear": SetSpec(read_isear, "isear"),
    "crowdflower": SetSpec(read_crowdflower, "crowdflower"),
}
"""Every set, in report order: the ones marked train first, then the evaluation-only ones."""

SKIPPED = {
    "isarcasmeval": "sarcastic vs sincere tweets: no emotion, valence or intensity labels",
    "mustard": "sarcastic vs sincere sitcom lines: no emotion, valence or intensity labels",
}

DEFAULT_CAPS: dict[str, int] = {"xed": 10_000, "crowdflower": 10_000}
"""Sessions per set when ``--limit`` is not given (a fixed-seed sample of the sets above the cap). The two largest
sets (23,000 and 36,800 one-turn sessions) are sampled: 10,000 keeps a macro-F1's sampling error near 0.005 and the
whole run near 58,000 turns (under 3 minutes of embedding at 350 texts/s on 2 cores, cached after); every other
set is scored whole."""


def sample_sessions(sessions: Sequence[Session], n: int, seed: int = SAMPLE_SEED) -> list[Session]:
    """At most ``n`` sessions, a fixed-seed sample kept in the set's order."""
    if n >= len(sessions):
        return list(sessions)
    chosen = sorted(random.Random(seed).sample(range(len(sessions)), n))
    return [sessions[i] for i in chosen]


def missing_sets(names: Iterable[str], data_dir: Path) -> list[str]:
    """The sets among ``names`` whose folder is not under ``data_dir``."""
    return [name for name in names if (folder := SETS[name].folder) is not None and not (data_dir / folder).is_dir()]


def load_set(name: str, data_dir: Path, *, limit: int | None = None) -> EmotionSet:
    """Read one set, sampled to ``limit`` sessions (or its ``DEFAULT_CAPS`` entry) with ``SAMPLE_SEED``."""
    emotion_set = SETS[name].reader(data_dir)
    cap = limit if limit is not None else DEFAULT_CAPS.get(name)
    if cap is None or cap >= len(emotion_set.sessions):
        return emotion_set
    total = len(emotion_set.sessions)
    return replace(emotion_set, sessions=sample_sessions(emotion_set.sessions, cap),
                   sample=f"{cap} of {total} sessions, seed {SAMPLE_SEED}")
