"""The fact extractor on LoCoMo (``feltsense eval facts``): recall of LoCoMo's own observations, and precision on a
hand-checked sample, for the current extractor (``traces.facts``, v2).

The frozen v1 extractor it used to be printed beside is retired; its figures, in the README, were measured by this
command at the commit the README cites. Its hand-judged rows stay in the sample (``extractor: "v1"``), and v2 is
still scored on them ("v2 on v1's sample"), which needs only the rows.

LoCoMo (snap-research/LoCoMo, ``locomo10.json``) is evaluation only: nothing here is fitted on it. Each sample's
``observation`` lists, per session and per speaker, what that speaker said about themselves, each with the ids of
the turns it comes from (``[text, "D3:5"]``). ``session_summary`` says the same in prose without evidence ids, so
it cannot be matched to turns and is not scored.

What is measured:

- **Extraction.** The extractor runs over the text of every turn (a shared image's caption is not text the user
  said, so it is left out), as if its speaker were the user: every fact it returns is a fact about that speaker.
- **Recall.** An observation counts when it has at least one valid evidence id (split and checked as
  ``eval.locomo.split_evidence`` does). It is *recalled* when some fact extracted from one of its evidence turns
  *spoken by the observation's speaker* matches it (``matches``): at least half (and at least one) of the fact's
  key words, stemmed, are among the observation's content words. A fact's key words are the words of what it is
  about and of its value, without the server's own vocabulary: for "The user loves "jazz"." they are {jazz}; for
  "The user's dog is called "Luna"." {dog, luna}; for "The user works at "Orbit Foods"." {orbit, foods}; for "The
  user is married." {married}. This is a lenient match (one word of a two-word fact will do), the same one v1 was
  measured with; precision is measured separately, by hand.
- **Kinds.** Recall is reported over every observation, and over the observations of the kinds facts are for
  (``FACT_KINDS``: work, school, home, relationships and family, pets, likes and dislikes, food and drink, habits
  and routines, birthdays), chosen by a fixed keyword list over the observation's text, written before the
  extractor was tuned and never changed to suit it.
- **Halves.** Conversations 0-4 are where v2's misses were looked at and its rules tuned (``TUNE``); conversations
  5-9 were never looked at while tuning (``HELD_OUT``). Both halves are reported, labelled.
- **Precision.** ``eval/data/facts_precision_sample.jsonl`` holds facts drawn with a fixed seed from each
  extractor's extractions over all ten conversations, each judged by hand against its turn (``correct``, with a
  short reason). An extractor's precision is the share judged correct among the sampled facts of its own that it
  still produces: a fact it no longer extracts is reported as gone, not counted. ``--draw-sample`` draws a new
  sample of v2's facts (keeping the judgements already made, and v1's rows) for a person to judge.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.domain.models import ExtractedFact
from engine.domain.vocabulary import (
    ALLERGY_KINDS,
    OPINION_STANCES,
    PREFERENCE_SUBJECT_TEMPLATES,
    TASTE_STANCES,
    ended_value,
)
from eval.locomo import LOCOMO_FILE, split_evidence
from traces import facts as facts_v2

Extractor = Callable[[str], Sequence[ExtractedFact]]
EXTRACTORS: dict[str, Extractor] = {"v2": facts_v2.extract}
RETIRED = "v1"
"""The retired extractor, whose judged rows the sample still holds: v2 is scored on them too."""
TUNE = range(0, 5)
HELD_OUT = range(5, 10)
HALVES = {"tune (conversations 0-4)": TUNE, "held out (conversations 5-9)": HELD_OUT}
SAMPLE_SEED = 14
DEFAULT_SAMPLE = Path(__file__).parent / "data" / "facts_precision_sample.jsonl"

# The kinds of observation facts are for, by keyword, case-insensitive, whole words. Written from the list
# of kinds before the extractor was tuned, and not changed since.
FACT_KINDS = re.compile(
    r"\b(?:"
    # work and school
    r"work|works|worked|working|job|jobs|career|employ\w*|company|business|promot\w*|colleagues?|boss|office|"
    r"intern\w*|hired|quit|fired|laid\s+off|retire\w*|profession\w*|occupation|school|college|university|uni|"
    r"degree|student|studies|study|studying|graduat\w*|class|classes|course|major|teacher|"
    # home
    r"lives?|lived|living|moved?|moving|home|house|apartment|flat|hometown|grew\s+up|born|neighbou?rhood|"
    # relationships and family
    r"married|marry|marriage|wedding|husband|wife|partner|boyfriend|girlfriend|fianc\w*|divorc\w*|broke\s+up|"
    r"break-?up|dating|single|engaged|relationship|family|kids?|children|child|sons?|daughters?|mother|mom|mum|"
    r"father|dad|parents?|sisters?|brothers?|siblings?|grand\w+|aunt|uncle|cousins?|nieces?|nephews?|baby|"
    r"pregnan\w*|"
    # pets
    r"pets?|dogs?|puppy|puppies|cats?|kittens?|turtles?|birds?|fish|hamsters?|rabbits?|horses?|snakes?|named|"
    # likes, dislikes, preferences
    r"loves?|loved|likes?|liked|enjoys?|enjoyed|prefers?|preferred|favou?rites?|fan|hates?|hated|dislikes?|"
    r"passion\w*|interest\w*|hobby|hobbies|fond|into|"
    # food and drink
    r"food|foods|eat|eats|eating|cook\w*|bak\w+|recipes?|desserts?|coffee|tea|drinks?|drinking|beer|wine|vegan|"
    r"vegetarian|diet|allerg\w*|intoleran\w*|dairy|meals?|dinner|lunch|breakfast|snacks?|"
    # habits and routines
    r"every|daily|weekly|routine|regularly|usually|always|often|habit|"
    # birthdays
    r"birthday"
    r")\b",
    re.I,
)

# Words that carry no content in an observation or a fact's key words.
STOP_WORDS = frozenset("""
    a an the and or but of to in on at for with by from as is are was were be been being am has have had having do
    does did doing this that these those it its it's he she they them his her their theirs him we us our you your i
    me my mine not no nor so than too very can could will would should may might must just also about into over
    after before during while when where who whom which what why how all any both each few more most other some such
    only own same then there here out up down off again further once user user's s t don now new one two three
    four five six seven eight nine ten lot lots really much many well
""".split())


# ------------------------------------------------------------------------------------------------------------
# Data


class FactsDataError(ValueError):
    """The data is missing or not shaped like LoCoMo; the message names the path."""


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str


@dataclass(frozen=True)
class Observation:
    conversation: int
    speaker: str
    text: str
    evidence: tuple[str, ...]

    @property
    def kind_of_fact(self) -> bool:
        return FACT_KINDS.search(self.text) is not None


@dataclass(frozen=True)
class Conversation:
    index: int
    speakers: tuple[str, ...]
    turns: dict[str, Turn]
    observations: tuple[Observation, ...]


def locomo_file(path: Path) -> Path:
    found = path / LOCOMO_FILE if path.is_dir() else path
    if not found.is_file():
        raise FactsDataError(f"{found} not found (expected LoCoMo's {LOCOMO_FILE})")
    return found


def parse(index: int, raw: Mapping[str, Any]) -> Conversation:
    body = raw["conversation"]
    turns: dict[str, Turn] = {}
    for key, value in body.items():
        if re.fullmatch(r"session_\d+", key) and isinstance(value, list):
            for turn in value:
                dia_id = str(turn["dia_id"])
                turns[dia_id] = Turn(dia_id, str(turn["speaker"]), str(turn.get("text", "")))
    observations: list[Observation] = []
    for session in (raw.get("observation") or {}).values():
        for speaker, items in (session or {}).items():
            for item in items:
                text, evidence = item[0], item[1] if len(item) > 1 else ()
                raw_ids = [evidence] if isinstance(evidence, str) else [str(e) for e in evidence]
                ids = split_evidence(raw_ids, turns)
                if ids:
                    observations.append(Observation(index, str(speaker), str(text), ids))
    speakers = tuple(str(body[k]) for k in ("speaker_a", "speaker_b") if k in body)
    return Conversation(index, speakers, turns, tuple(observations))


def load(path: Path) -> list[Conversation]:
    source = locomo_file(path)
    try:
        samples = json.loads(source.read_text(encoding="utf-8"))
        return [parse(i, sample) for i, sample in enumerate(samples)]
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        raise FactsDataError(f"cannot read LoCoMo from {source}: {type(exc).__name__}: {exc}") from exc


# ------------------------------------------------------------------------------------------------------------
# Matching


def stem(word: str) -> str:
    """A light suffix-stripping stemmer, enough for "running"/"runs", "painted"/"painting", "dogs"/"dog"."""
    word = word.lower().removesuffix("'s").strip("'")
    stripped = False
    for suffix in ("ingly", "ings", "ing", "edly", "ed", "ies", "es", "s", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word, stripped = word[: -len(suffix)] + ("y" if suffix == "ies" else ""), True
            break
    if stripped and len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]  # "runn" -> "run"
    return word.rstrip("e") if len(word) > 3 else word


def content_words(text: str, *, also_stop: Iterable[str] = ()) -> set[str]:
    stop = STOP_WORDS | {w.lower() for w in also_stop}
    return {stem(w) for w in re.findall(r"[a-z0-9]+(?:'[a-z]+)?", text.lower()) if w not in stop}


_CLOSED_VALUES = frozenset({*OPINION_STANCES, *TASTE_STANCES, *ALLERGY_KINDS})


def key_words(fact: ExtractedFact) -> set[str]:
    """What a fact is about: its subject (the user's role, or the thing) and its value, less the server's own
    words (a stance, "no longer", "usual order")."""
    subject = "" if fact.subject == "user" else fact.subject.removeprefix("user's ")
    if fact.relation == "preference" and fact.subject in PREFERENCE_SUBJECT_TEMPLATES and \
            fact.subject.startswith("usual"):
        subject = ""
    value = fact.value
    ended = ended_value(fact.relation, value)
    if ended is not None:
        value = ended[1] + (" graduated" if value.lower().startswith("graduated") else "")
    elif value.lower() in _CLOSED_VALUES:
        value = ""  # "loves", "allergic": the stance, not the thing
    else:
        value = _CLOSED_KEYS.get(value.lower(), value)
    return content_words(f"{subject} {value}")


# The server's closed values, as the words an observation would use for them.
_CLOSED_KEYS = {"left their job": "job", "broken up": "broke up", "in a relationship": "relationship"}


def matches(fact: ExtractedFact, observation: Observation, speakers: Sequence[str] = ()) -> bool:
    """At least half (and at least one) of the fact's key words are among the observation's content words."""
    keys = key_words(fact)
    if not keys:
        return False
    found = keys & content_words(observation.text, also_stop=speakers)
    return len(found) >= max(1, math.ceil(len(keys) / 2))


# ------------------------------------------------------------------------------------------------------------
# Measuring


@dataclass
class Tally:
    observations: int = 0
    recalled: int = 0

    def percent(self) -> float:
        return round(100.0 * self.recalled / self.observations, 1) if self.observations else 0.0

    def as_json(self) -> dict[str, Any]:
        return {"observations": self.observations, "recalled": self.recalled, "recall": self.percent()}


@dataclass
class Half:
    facts: Counter[str] = field(default_factory=Counter)
    """Facts extracted, by relation."""
    all_kinds: Tally = field(default_factory=Tally)
    fact_kinds: Tally = field(default_factory=Tally)

    def as_json(self) -> dict[str, Any]:
        return {"facts": sum(self.facts.values()), "facts_by_relation": dict(sorted(self.facts.items())),
                "recall_all": self.all_kinds.as_json(), "recall_fact_kinds": self.fact_kinds.as_json()}


def extractions(conversations: Sequence[Conversation],
                extract: Extractor) -> dict[tuple[int, str], list[ExtractedFact]]:
    """The facts of every turn, by (conversation, turn id)."""
    return {(c.index, t.dia_id): list(extract(t.text)) for c in conversations for t in c.turns.values()}


def measure_recall(conversations: Sequence[Conversation],
                   found: Mapping[tuple[int, str], Sequence[ExtractedFact]]) -> dict[str, Half]:
    halves = {name: Half() for name in HALVES}
    for conversation in conversations:
        half = next((halves[name] for name, span in HALVES.items() if conversation.index in span), None)
        if half is None:
            continue
        for dia_id in conversation.turns:
            for fact in found.get((conversation.index, dia_id), ()):
                half.facts[fact.relation] += 1
        for observation in conversation.observations:
            candidates = [fact for dia_id in observation.evidence
                          if conversation.turns[dia_id].speaker == observation.speaker
                          for fact in found.get((conversation.index, dia_id), ())]
            recalled = any(matches(f, observation, conversation.speakers) for f in candidates)
            for tally, counted in ((half.all_kinds, True), (half.fact_kinds, observation.kind_of_fact)):
                if counted:
                    tally.observations += 1
                    tally.recalled += recalled
    return halves


# ------------------------------------------------------------------------------------------------------------
# Precision: the hand-checked sample


def sample_key(row: Mapping[str, Any]) -> tuple[str, int, str, str, str, str]:
    return (str(row["extractor"]), int(row["conversation"]), str(row["turn"]), str(row["subject"]),
            str(row["relation"]), str(row["value"]))


def read_sample(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def draw_sample(found: Mapping[str, Mapping[tuple[int, str], Sequence[ExtractedFact]]], sizes: Mapping[str, int],
                existing: Sequence[Mapping[str, Any]], seed: int = SAMPLE_SEED) -> list[dict[str, Any]]:
    """``sizes[extractor]`` facts drawn from each extractor's own extractions with a fixed seed, judged rows kept
    (a row already in ``existing`` keeps its judgement); new rows have ``correct: null`` for a person to fill.
    The rows of an extractor not drawn (the retired v1's) are kept as they are, first."""
    judged = {sample_key(row): row for row in existing}
    rows: list[dict[str, Any]] = [dict(row) for row in existing if row["extractor"] not in sizes]
    for name, size in sizes.items():
        pool = sorted(((c, t, f) for (c, t), facts in found[name].items() for f in facts),
                      key=lambda x: (x[0], _turn_order(x[1]), x[2].subject, x[2].relation, x[2].value))
        drawn = random.Random(f"{seed}:{name}").sample(pool, min(size, len(pool)))
        for conversation, turn, fact in sorted(drawn, key=lambda x: (x[0], _turn_order(x[1]))):
            row = {"extractor": name, "conversation": conversation, "turn": turn, "subject": fact.subject,
                   "relation": fact.relation, "value": fact.value, "fact": fact.sentence, "correct": None,
                   "reason": ""}
            rows.append(dict(judged.get(sample_key(row), row)))
    return rows


def _turn_order(dia_id: str) -> tuple[int, int]:
    found = re.fullmatch(r"D(\d+):(\d+)", dia_id)
    return (int(found[1]), int(found[2])) if found else (0, 0)


def measure_precision(rows: Sequence[Mapping[str, Any]],
                      found: Mapping[str, Mapping[tuple[int, str], Sequence[ExtractedFact]]]) -> dict[str, Any]:
    """Per extractor, over its own sampled rows that are judged: how many it still produces, and of those how
    many are correct, overall and by half. ``v2_on_v1_sample``: the same for v2 over the retired v1's rows."""
    def score(name: str, sampled: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        produced = [r for r in sampled if any((f.subject, f.relation, f.value) == (r["subject"], r["relation"],
                                                                                    r["value"])
                                              for f in found[name].get((int(r["conversation"]), str(r["turn"])), ()))]
        out: dict[str, Any] = {"sampled": len(sampled), "produced": len(produced)}
        for label, span in (("all", range(0, 10**6)), *HALVES.items()):
            part = [r for r in produced if int(r["conversation"]) in span]
            correct = sum(1 for r in part if r["correct"])
            out[label] = {"produced": len(part), "correct": correct,
                          "precision": round(correct / len(part), 3) if part else None}
        return out

    judged = [r for r in rows if r.get("correct") is not None]
    result: dict[str, Any] = {name: score(name, [r for r in judged if r["extractor"] == name]) for name in found}
    retired = [r for r in judged if r["extractor"] == RETIRED]
    if "v2" in found and retired:
        result["v2_on_v1_sample"] = score("v2", retired)
    result["unjudged"] = sum(1 for r in rows if r.get("correct") is None)
    return result


# ------------------------------------------------------------------------------------------------------------
# The run


def evaluate(data: Path, sample: Path = DEFAULT_SAMPLE,
             extractors: Mapping[str, Extractor] = EXTRACTORS) -> dict[str, Any]:
    conversations = load(data)
    found = {name: extractions(conversations, extract) for name, extract in extractors.items()}
    recall = {name: {half: block.as_json() for half, block in measure_recall(conversations, facts).items()}
              for name, facts in found.items()}
    rows = read_sample(sample)
    return {
        "conversations": len(conversations),
        "turns": sum(len(c.turns) for c in conversations),
        "observations": sum(len(c.observations) for c in conversations),
        "recall": recall,
        "precision": measure_precision(rows, found),
        "sample": str(sample),
    }


def render(report: Mapping[str, Any]) -> str:
    recall: Mapping[str, Any] = report["recall"]
    names = list(recall)
    lines = [
        f"LoCoMo facts: {report['turns']} turns, {report['conversations']} conversations, "
        f"{report['observations']} observations with evidence",
        "recall: an observation is recalled when a fact extracted from one of its evidence turns (its speaker's) "
        "shares at least half of the fact's key words",
        "",
    ]
    for half in HALVES:
        lines.append(half)
        lines.append(f"  {'':<34}" + "".join(f"{name:>16}" for name in names))
        cells: dict[str, list[str]] = {"facts extracted": [], "recall, observations of fact kinds": [],
                                       "recall, all observations": []}
        for name in names:
            block = recall[name][half]
            cells["facts extracted"].append(str(block["facts"]))
            cells["recall, observations of fact kinds"].append(_tally(block["recall_fact_kinds"]))
            cells["recall, all observations"].append(_tally(block["recall_all"]))
        for label, values in cells.items():
            lines.append(f"  {label:<34}" + "".join(f"{value:>16}" for value in values))
        lines.append("")
    precision: Mapping[str, Any] = report["precision"]
    lines.append(f"precision on the hand-checked sample ({report['sample']}):")
    for name in names:
        block = precision.get(name)
        if not block:
            continue
        lines.append(f"  {name}: {_precision(block['all'])} of the {block['produced']} sampled facts it still "
                     f"produces ({block['sampled']} sampled); by half: "
                     + ", ".join(f"{half.split(' (')[0]} {_precision(block[half])}" for half in HALVES))
    if "v2_on_v1_sample" in precision:
        block = precision["v2_on_v1_sample"]
        lines.append(f"  v2 on v1's sample: {_precision(block['all'])} of the {block['produced']} it still produces "
                     f"({block['sampled']} sampled)")
    if precision.get("unjudged"):
        lines.append(f"  ({precision['unjudged']} sampled facts not judged yet)")
    return "\n".join(lines)


def _tally(block: Mapping[str, Any]) -> str:
    return f"{block['recall']:.1f}% ({block['recalled']}/{block['observations']})"


def _precision(block: Mapping[str, Any]) -> str:
    if block["precision"] is None:
        return "n/a"
    return f"{block['precision']:.3f} ({block['correct']}/{block['produced']})"


def write_sample(rows: Sequence[Mapping[str, Any]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
