"""One reader per emotion-labelled set in ``../shared/data``, each returning its set as sessions (``EmotionSet``).

The shape of a session, the label mapping and the scales are described in ``eval.emotion_sets``, which keeps the
registry of these readers.
"""

from __future__ import annotations

import ast
import csv
import html
import re
from collections import defaultdict
from pathlib import Path

from eval.classifier_training import goemotions_registers, read_goemotions_rows
from eval.emotion_data import (
    OTHER,
    EmotionDataError,
    EmotionSet,
    Gold,
    Session,
    clean,
    read_csv,
    read_jsonl,
    register_of,
    sentence_sessions,
    speaker_sessions,
)
from eval.train_classifier_data import GOEMOTIONS_TO_REGISTER, SYNTHETIC_GRIEF_CHECK

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
    items = []
    for text, labels in zip(*read_goemotions_rows(data_dir, "test"), strict=True):
        registers = goemotions_registers(labels)
        if len(registers) == 1:
            items.append((text, Gold(register=next(iter(registers)))))
    return EmotionSet(
        "goemotions", "GoEmotions test split (Reddit comments)", "train", "Apache-2.0", "comment",
        sentence_sessions(items), dict(GOEMOTIONS_TO_REGISTER),
        notes=("single-register comments only; grief absorbs sadness (as in training)",),
    )


# --- EmoBank (train) ---------------------------------------------------------------------------------------------

def read_emobank(data_dir: Path) -> EmotionSet:
    rows = read_csv(data_dir / "emobank" / "emobank.csv")
    items = [(row["text"], Gold(valence=(float(row["V"]) - 3.0) / 2.0)) for row in rows if row["split"] == "test"]
    return EmotionSet(
        "emobank", "EmoBank test split (news, essays, fiction, blogs)", "train", "CC BY-SA 4.0", "sentence",
        sentence_sessions(items), {}, valence="(V - 3) / 2, V the mean human valence 1-5",
    )


# --- the synthetic grief check (hand-written for the project) ----------------------------------------------------

def read_grief_check(_data_dir: Path) -> EmotionSet:
    return EmotionSet(
        "grief-check", "synthetic grief check (eval/train_classifier.py, never trained on)", "hand-written",
        "the project's", "sentence",
        sentence_sessions((text, Gold(register="grief")) for text in SYNTHETIC_GRIEF_CHECK),
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
        sentence_sessions(items), XED_TO_REGISTER,
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
    rows = read_csv(data_dir / "emorynlp" / "emorynlp_test_final.csv")
    scenes: dict[tuple[str, str, str], list[tuple[int, str, str, Gold | None]]] = defaultdict(list)
    for row in rows:
        speakers = ast.literal_eval(row["Speaker"])
        if len(speakers) != 1:
            continue
        register = register_of(EMORYNLP_TO_REGISTER, row["Emotion"], "emorynlp")
        gold = None if register is None else Gold(register=register)
        key = (row["Season"], row["Episode"], row["Scene_ID"])
        scenes[key].append((int(row["Utterance_ID"]), str(speakers[0]), row["Utterance"], gold))
    dialogues = [[(s, t, g) for _, s, t, g in sorted(turns, key=lambda x: x[0])] for turns in scenes.values()]
    return EmotionSet(
        "emorynlp", "EmoryNLP test split (Friends scenes)", "train", "Apache-2.0", "utterance",
        speaker_sessions(dialogues), EMORYNLP_TO_REGISTER,
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
    rows = read_csv(data_dir / "meld" / "test_sent_emo.csv")
    dialogues: dict[str, list[tuple[int, str, str, Gold | None]]] = defaultdict(list)
    for row in rows:
        register = register_of(EKMAN_TO_REGISTER, row["Emotion"], "meld")
        gold = Gold(register=register, valence=SENTIMENT_VALENCE[row["Sentiment"]])
        dialogues[row["Dialogue_ID"]].append((int(row["Utterance_ID"]), row["Speaker"], row["Utterance"], gold))
    ordered = [[(s, t, g) for _, s, t, g in sorted(turns, key=lambda x: x[0])] for turns in dialogues.values()]
    return EmotionSet(
        "meld", "MELD test split (Friends dialogues)", "evaluation only", "GPL-3.0", "utterance",
        speaker_sessions(ordered), {k: v for k, v in EKMAN_TO_REGISTER.items() if k != "happiness"},
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
            register = register_of(EKMAN_TO_REGISTER, label, "dailydialog")
            dialogues[-1].append((speaker, detokenize(text), None if register is None else Gold(register=register)))
    return EmotionSet(
        "dailydialog", "DailyDialog test split (everyday two-person dialogues)", "evaluation only",
        "CC BY-NC-SA 4.0", "utterance", speaker_sessions(d for d in dialogues if d),
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
    rows = read_csv(data_dir / "emocontext" / "test.txt", delimiter="\t", quoted=False)
    sessions = []
    for row in rows:
        first, third = clean(row["turn1"]), clean(row["turn3"])
        register = register_of(EMOCONTEXT_TO_REGISTER, row["label"], "emocontext")
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
    for record in read_jsonl(data_dir / "esconv" / "test.jsonl"):
        seeker = [str(turn["text"]) for turn in record["dialog"] if turn["speaker"] == "usr"]
        texts = tuple(t for t in (clean(x) for x in seeker) if t)
        if not texts:
            continue
        register = register_of(ESCONV_TO_REGISTER, str(record["emotion_type"]), "esconv")
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
    records = read_jsonl(data_dir / "empatheticdialogues" / "moel_contexts" / "moel_test_contexts.jsonl")
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
        texts = tuple(t for t in (clean(x) for x in context[0::2]) if t)
        if texts:
            register = register_of(ED_TO_REGISTER, emotion, "empatheticdialogues")
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
        text = clean(_ISEAR_SOFT_BREAK.sub(" ", text.replace('\\"', '"').replace("\\", '"')))
        text = _ISEAR_BRACKETS.sub(r"\1", text)  # an editor's brackets round some reports
        if not text or _ISEAR_NON_ANSWER.match(text):
            continue
        register = register_of(ISEAR_TO_REGISTER, row[emotion_at], "isear")
        intensity = int(row[intensity_at])
        items.append((text, Gold(register=register, intensity=float(intensity) if intensity > 0 else None)))
    return EmotionSet(
        "isear", "ISEAR first-person event reports (whole set: it has no split)", "evaluation only",
        "CC BY-NC-SA 3.0 (reported)", "report", sentence_sessions(items), ISEAR_TO_REGISTER,
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
    rows = read_csv(data_dir / "crowdflower" / "text_emotion.csv")
    items = []
    for row in rows:
        register = register_of(CROWDFLOWER_TO_REGISTER, row["sentiment"], "crowdflower")
        if register is not None:
            items.append((html.unescape(row["content"]).replace("ï¿½", " "), Gold(register=register)))
    return EmotionSet(
        "crowdflower", "CrowdFlower 'Emotion in Text' tweets (whole set: no split; noisy labels)", "evaluation only",
        "not stated", "tweet", sentence_sessions(items), CROWDFLOWER_TO_REGISTER,
        notes=("tweets with unscored labels (surprise, empty, boredom) are left out",),
    )
