"""The emotion evaluation sets: readers on tiny made-up files laid out like the real ones, the label mappings,
the scoring, and that a classifier is called once per session with the whole session.

Every text here is made up for the test (none is copied from a corpus); only the file layouts are the real ones.
No model loads: the embedder is a stub and the classifiers are fakes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from eval.classifier_eval import (
    VaderBaseline,
    classify_sessions,
    evaluate_sets,
    register_scores,
    render,
    scored_pairs,
)
from eval.cli import main
from eval.emotion_sets import (
    OTHER,
    SETS,
    EmotionDataError,
    Gold,
    Session,
    detokenize,
    load_set,
    missing_sets,
    read_dailydialog,
    read_emocontext,
    read_empatheticdialogues,
    read_esconv,
    read_goemotions,
    read_isear,
    read_meld,
    sample_sessions,
)

ISEAR_HEADER = (
    "ID|CITY|COUN|SUBJ|SEX|AGE|RELI|PRAC|FOCC|MOCC|FIEL|EMOT|WHEN|LONG|INTS|ERGO|TROPHO|TEMPER|EXPRES|MOVE|EXP1|EXP2|"
    "EXP10|PARAL|CON|EXPC|PLEA|PLAN|FAIR|CAUS|COPING|MORL|SELF|RELA|VERBAL|NEUTRO|Field1|Field3|Field2|MYKEY|SIT|STATE|"
)


def isear_row(emotion: str, intensity: int, *text_fields: str) -> str:
    numbers = ["1"] * 36
    numbers[14] = str(intensity)  # INTS
    return "|".join([*numbers, emotion, "3", "2", "0110011", *text_fields, "1", ""])


@pytest.fixture
def data(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    go = root / "goemotions"
    go.mkdir(parents=True)
    (go / "original_labels.txt").write_text("\n".join(
        ["admiration", "amusement", "anger", "annoyance", "approval", "caring", "confusion", "curiosity", "desire",
         "disappointment", "disapproval", "disgust", "embarrassment", "excitement", "fear", "gratitude", "grief",
         "joy", "love", "nervousness", "optimism", "pride", "realization", "relief", "remorse", "sadness",
         "surprise", "neutral"]) + "\n", encoding="utf-8")
    (go / "original_test.tsv").write_text(
        "my cat died this morning\t16,25\tc1\n"  # grief + sadness: grief absorbs sadness -> grief
        "so angry and so happy\t2,17\tc2\n"  # two registers: not scored
        "what time is it\t27\tc3\n", encoding="utf-8")

    meld = root / "meld"
    meld.mkdir()
    (meld / "test_sent_emo.csv").write_text(
        "Sr No.,Utterance,Speaker,Emotion,Sentiment,Dialogue_ID,Utterance_ID,Season,Episode,StartTime,EndTime\n"
        '2,"Oh no, I lost it!",Ann,sadness,negative,0,1,1,1,"00:00:01,000","00:00:02,000"\n'
        '1,Hi Bob.,Ann,neutral,neutral,0,0,1,1,"00:00:00,000","00:00:01,000"\n'
        '3,What?!,Bob,surprise,negative,0,2,1,1,"00:00:02,000","00:00:03,000"\n'
        '4,Great news!,Bob,joy,positive,1,0,1,1,"00:00:04,000","00:00:05,000"\n', encoding="utf-8")

    esconv = root / "esconv"
    esconv.mkdir()
    record = {
        "emotion_type": "depression", "problem_type": "job crisis", "situation": "made up",
        "survey_score": {"seeker": {"initial_emotion_intensity": "4", "final_emotion_intensity": "2"}},
        "dialog": [
            {"text": "Hello, how can I help?", "speaker": "sys", "strategy": "Question"},
            {"text": "hi", "speaker": "usr"},
            {"text": "I lost my job and I feel hopeless", "speaker": "usr"},
            {"text": "That sounds hard.", "speaker": "sys", "strategy": "Reflection of feelings"},
            {"text": "thanks", "speaker": "usr"},
        ],
    }
    (esconv / "test.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")

    emocontext = root / "emocontext"
    emocontext.mkdir()
    (emocontext / "test.txt").write_text(
        "id\tturn1\tturn2\tturn3\tlabel\n"
        '0\tmy day was "fine"\tWhy?\tI hate everything today\tangry\n'
        "1\tsup\tnothing much\tok cool\tothers\n", encoding="utf-8")

    dailydialog = root / "dailydialog" / "compm_dev_test"
    dailydialog.mkdir(parents=True)
    (dailydialog / "dailydialog_test.txt").write_text(
        "0\tI ’ m off to the beach , finally !\thappiness\n"
        "1\tLucky you .\tneutral\n"
        "0\tDon ' t be jealous .\tneutral\n"
        "\n"
        "0\tWhat ?\tsurprise\n", encoding="utf-8")

    ed = root / "empatheticdialogues" / "moel_contexts"
    ed.mkdir(parents=True)
    lines = [
        {"context": ["My dog died last week."], "emotion": "devastated"},
        {"context": ["My dog died last week.", "I'm so sorry.", "Thanks, I miss him a lot."], "emotion": "devastated"},
        {"context": ["I got a new job!"], "emotion": "proud"},
        {"context": ["I found an old photo album."], "emotion": "nostalgic"},
    ]
    (ed / "moel_test_contexts.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")

    isear = root / "isear"
    isear.mkdir()
    (isear / "isear.csv").write_text("\n".join([
        ISEAR_HEADER,
        isear_row("guilt", 3, "When I forgot my á friend's birthday."),
        isear_row("joy", 0, 'We were speaking \\the same language\\" á', 'at last."'),  # split over two fields
        isear_row("fear", 2, "[ No response.]"),
    ]) + "\n", encoding="utf-8")
    return root


def test_goemotions_keeps_single_register_comments_with_the_training_mapping(data: Path) -> None:
    found = read_goemotions(data)
    assert [s.texts for s in found.sessions] == [("my cat died this morning",), ("what time is it",)]
    assert [s.turn_gold[0].register for s in found.sessions if s.turn_gold[0]] == ["grief", "neutral"]
    assert found.mappable_registers[0] == "grief" and len(found.mappable_registers) == 10


def test_meld_gives_each_speaker_of_a_dialogue_their_own_session_in_order(data: Path) -> None:
    found = read_meld(data)
    assert [s.texts for s in found.sessions] == [("Hi Bob.", "Oh no, I lost it!"), ("What?!",), ("Great news!",)]
    ann = found.sessions[0]
    assert [g.register if g else None for g in ann.turn_gold] == ["neutral", "sadness"]
    assert [g.valence if g else None for g in ann.turn_gold] == [0.0, -1.0]
    surprise = found.sessions[1].turn_gold[0]
    assert surprise is not None and surprise.register is None and surprise.valence == -1.0  # context, valence only
    assert "surprise" in found.excluded_labels


def test_esconv_is_the_seekers_turns_with_one_label_for_the_session(data: Path) -> None:
    (session,) = read_esconv(data).sessions
    assert session.texts == ("hi", "I lost my job and I feel hopeless", "thanks")
    assert session.turn_gold == (None, None, None)
    assert session.session_gold == Gold(register="sadness", intensity=4.0)


def test_emocontext_pairs_the_users_turns_and_scores_turn_three(data: Path) -> None:
    found = read_emocontext(data)
    assert [s.texts for s in found.sessions] == [('my day was "fine"', "I hate everything today"), ("sup", "ok cool")]
    assert [s.turn_gold for s in found.sessions] == [(None, Gold(register="anger")), (None, Gold(register=OTHER))]
    assert found.mappable_registers == ("sadness", "anger", "joy")


def test_dailydialog_is_detokenised_and_split_by_speaker(data: Path) -> None:
    found = read_dailydialog(data)
    assert [s.texts for s in found.sessions] == [
        ("I'm off to the beach, finally!", "Don't be jealous."), ("Lucky you.",), ("What?",)]
    assert found.sessions[0].turn_gold[0] == Gold(register="joy")
    assert found.sessions[2].turn_gold == (None,)  # surprise: not scored
    assert detokenize("It ’ s late , isn ' t it ?") == "It's late, isn't it?"


def test_empatheticdialogues_keeps_the_longest_context_and_the_speakers_turns(data: Path) -> None:
    found = read_empatheticdialogues(data)
    assert [s.texts for s in found.sessions] == [
        ("My dog died last week.", "Thanks, I miss him a lot."), ("I got a new job!",),
        ("I found an old photo album.",)]
    assert [s.session_gold for s in found.sessions] == [Gold(register="grief"), Gold(register="pride"), None]


def test_isear_joins_split_reports_cleans_them_and_drops_non_answers(data: Path) -> None:
    found = read_isear(data)
    assert [s.texts[0] for s in found.sessions] == [
        "When I forgot my friend's birthday.", 'We were speaking "the same language" at last."']
    assert [s.turn_gold[0] for s in found.sessions] == [
        Gold(register="shame", intensity=3.0), Gold(register="joy", intensity=None)]  # INTS 0: no intensity


def test_missing_files_name_the_path(tmp_path: Path) -> None:
    with pytest.raises(EmotionDataError, match=r"test_sent_emo\.csv"):
        read_meld(tmp_path)
    assert missing_sets(["meld", "grief-check"], tmp_path) == ["meld"]


def test_sampling_is_fixed_and_keeps_the_order() -> None:
    sessions = [Session((f"turn {i}",), (None,)) for i in range(50)]
    first, again = sample_sessions(sessions, 10), sample_sessions(sessions, 10)
    assert first == again and len(first) == 10
    assert [int(s.texts[0].split()[1]) for s in first] == sorted(int(s.texts[0].split()[1]) for s in first)
    assert sample_sessions(sessions, 80) == sessions


def test_a_limit_samples_and_says_so(data: Path) -> None:
    limited = load_set("meld", data, limit=2)
    assert len(limited.sessions) == 2 and limited.sample is not None and "2 of 3 sessions" in limited.sample


# --- scoring ------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Read:
    register: str
    valence: float
    intensity: float


KEYWORDS = {"died": ("grief", -0.9, 0.9), "lost": ("sadness", -0.6, 0.7), "hate": ("anger", -0.7, 0.8),
            "great": ("joy", 0.8, 0.5), "job!": ("pride", 0.7, 0.5)}


class Recording:
    """Reads a turn by keyword and records every call, to check the calling convention."""

    def __init__(self) -> None:
        self.calls: list[tuple[tuple[str, ...], tuple[int, ...]]] = []

    def classify(self, texts: Sequence[str], embeddings: NDArray[np.float32]) -> list[Read]:
        self.calls.append((tuple(texts), embeddings.shape))
        out = []
        for text in texts:
            hit = next((v for k, v in KEYWORDS.items() if k in text.lower()), ("neutral", 0.0, 0.1))
            out.append(Read(*hit))
        return out


def stub_embed(_key: str, texts: Sequence[str]) -> NDArray[np.float32]:
    return np.zeros((len(texts), 384), dtype=np.float32)


def test_classify_is_called_once_per_session_with_the_whole_session(data: Path) -> None:
    meld = read_meld(data)
    fake = Recording()
    readings = classify_sessions(fake, meld, stub_embed("k", [t for s in meld.sessions for t in s.texts]))
    assert [texts for texts, _ in fake.calls] == [s.texts for s in meld.sessions]
    assert [shape for _, shape in fake.calls] == [(2, 384), (1, 384), (1, 384)]
    assert [len(r) for r in readings] == [2, 1, 1]


def test_a_session_label_is_scored_on_the_most_intense_turn(data: Path) -> None:
    esconv = read_esconv(data)
    readings = classify_sessions(Recording(), esconv, stub_embed("k", esconv.sessions[0].texts))
    ((gold, predicted),) = scored_pairs(esconv, readings)
    assert gold.register == "sadness" and predicted == Read("sadness", -0.6, 0.7)  # "I lost my job...", not "hi"


def test_register_scores_count_other_as_the_negative_class() -> None:
    scores = register_scores(
        ["anger", "anger", OTHER, OTHER, "joy"], ["anger", "neutral", "joy", "curiosity", "joy"], ["anger", "joy"])
    # anger: tp 1, fn 1 -> F1 2/3; joy: tp 1, fp 1 (read into an "others" turn) -> F1 2/3; curiosity on OTHER: right
    assert scores["per_register"]["anger"]["f1"] == pytest.approx(0.6667)
    assert scores["per_register"]["joy"] == {"f1": 0.6667, "precision": 0.5, "recall": 1.0, "support": 1}
    assert scores["macro_f1"] == pytest.approx(0.6667)
    assert scores["accuracy"] == 0.6667  # over the three turns with a register


def test_evaluate_sets_reports_every_classifier_on_every_set(data: Path, tmp_path: Path) -> None:
    fake = Recording()
    report = evaluate_sets({"fake": fake, "VADER": VaderBaseline()}, ["meld", "esconv", "empatheticdialogues"],
                           data_dir=data, cache_dir=tmp_path / "cache", embed=stub_embed)
    assert list(report["sets"]) == ["meld", "esconv", "empatheticdialogues"]
    meld = report["sets"]["meld"]
    assert meld["registers_scored"] == ["sadness", "joy", "neutral"]
    assert meld["results"]["fake"]["register"]["n"] == 3  # "What?!" (surprise) is context only
    assert meld["results"]["fake"]["register"]["macro_f1"] == 1.0
    assert meld["results"]["fake"]["valence"]["n"] == 4 and meld["results"]["fake"]["intensity"] is None
    esconv = report["sets"]["esconv"]["results"]["fake"]
    assert esconv["register"]["accuracy"] == 1.0 and esconv["intensity"] == {"n": 1, "pearson_r": None}
    assert report["sets"]["empatheticdialogues"]["results"]["fake"]["register"]["macro_f1"] == 1.0
    assert len(fake.calls) == 3 + 1 + 3  # one call per session, nothing else
    table = render(report)
    assert "| register macro-F1 (3) | 1.000 |" in table and "### summary" in table
    assert "registers scored (3): sadness, joy, neutral; labels not scored: surprise" in table


def test_every_set_has_a_reader_and_the_sarcasm_sets_are_skipped_on_purpose() -> None:
    from eval.emotion_sets import SKIPPED

    folders = {spec.folder for spec in SETS.values()}
    assert {"goemotions", "emobank", "xed", "emorynlp", "meld", "dailydialog", "emocontext", "esconv",
            "empatheticdialogues", "isear", "crowdflower"} <= folders
    assert set(SKIPPED) == {"isarcasmeval", "mustard"}


# --- the command's argument errors (no model loads) ---------------------------------------------------------------

def test_an_unknown_set_is_an_argument_error(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "classifier", "--data", str(data), "--sets", "meld,nosuch"]) == 2
    assert "unknown set(s) nosuch" in capsys.readouterr().err


def test_a_requested_set_missing_from_the_data_is_an_error(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "classifier", "--data", str(data), "--sets", "meld,crowdflower"]) == 2
    assert "does not hold crowdflower/" in capsys.readouterr().err


def test_a_limit_below_one_is_an_error(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "classifier", "--data", str(data), "--limit", "0"]) == 2
    assert "--limit must be at least 1" in capsys.readouterr().err


def test_the_help_names_every_set(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["eval", "classifier", "--help"])
    text = " ".join(capsys.readouterr().out.split()).replace("- ", "-")  # textwrap may break at a hyphen
    assert all(name in text for name in SETS)
