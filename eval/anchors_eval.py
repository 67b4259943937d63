"""``feltsense eval anchors``: anchor extraction scored on hand-labelled user turns, v2 beside the frozen v1.

The labelled set (``eval/data/anchors_labelled.jsonl``, described in ``eval/data/anchors_labelled.md``) holds
user turns drawn from the public evaluation data sets (ESConv, EmpatheticDialogues, DailyDialog, LoCoMo). Those
sets are evaluation only and may not be copied into the project's history beyond a few quoted lines, so a line
names its turn (``source``: file, line, turn) and the text is read from ``../shared/data`` at run time, checked
against the line's ``sha1``; a line written for the project may carry its ``text`` itself.

For each line, the extractor reads the user's earlier turns of that conversation (``context``, at most two) and
the turn, as one session, and its anchors are the ones it gives the turn itself (an anchor a turn inherits
through a pronoun is not counted, since the gold lists what the user wrote). Scores are micro precision, recall
and F1 over anchors, matched whole and case-insensitively, on the ``dev`` lines (the rules were tuned on them)
and the ``test`` lines (scored only).

    python -m eval.anchors_eval draw [--data ../shared/data]   the seeded draws, with text (for labelling only)
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache, partial
from pathlib import Path
from typing import Any

LABELLED = Path(__file__).parent / "data" / "anchors_labelled.jsonl"
DEFAULT_DATA = Path("../shared/data")
MAX_CHARS = 200
CONTEXT_TURNS = 2
SPLITS = ("dev", "test")

Extractor = Callable[[Sequence[str], Sequence[str]], list[str]]
"""(the session's user turns, the character's names to exclude) -> the last turn's anchors."""


class LabelledDataError(ValueError):
    """The labelled file is malformed, or a turn it names cannot be read from the data folder."""


@dataclass(frozen=True)
class Turn:
    """One user turn of a conversation in a public data set, with the user's earlier turns before it."""

    source: dict[str, Any]
    text: str
    context: tuple[str, ...] = ()
    character: str = ""


@dataclass(frozen=True)
class Example:
    line: int
    split: str
    text: str
    context: tuple[str, ...]
    anchors: tuple[str, ...]
    character: str = ""


@dataclass
class Counts:
    true_positive: int = 0
    predicted: int = 0
    gold: int = 0
    errors: list[tuple[int, list[str], list[str]]] = field(default_factory=list)

    def add(self, line: int, predicted: Sequence[str], gold: Sequence[str]) -> None:
        found = {p.casefold() for p in predicted}
        wanted = {g.casefold() for g in gold}
        self.true_positive += len(found & wanted)
        self.predicted += len(found)
        self.gold += len(wanted)
        if found != wanted:
            self.errors.append((line, sorted(p for p in predicted if p.casefold() not in wanted),
                                sorted(g for g in gold if g.casefold() not in found)))

    def scores(self) -> dict[str, float]:
        precision = self.true_positive / self.predicted if self.predicted else 1.0
        recall = self.true_positive / self.gold if self.gold else 1.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return {"precision": round(precision, 3), "recall": round(recall, 3), "f1": round(f1, 3),
                "true_positive": self.true_positive, "predicted": self.predicted, "gold": self.gold}


# -- reading turns from the data sets ------------------------------------------------------------------------


def sentence_cut(text: str, limit: int = MAX_CHARS) -> str | None:
    """``text`` whole if it is short enough, else cut after the last sentence end within ``limit`` characters
    (None when its first sentence is already longer)."""
    text = text.strip()
    if len(text) <= limit:
        return text
    ends = [m.end() for m in re.finditer(r"[.!?]+(?=\s|$)", text[: limit + 1]) if m.end() <= limit]
    return text[: ends[-1]].strip() if ends else None


def brief(texts: Iterable[str]) -> tuple[str, ...]:
    """Earlier turns as context: each cut at a sentence end (or at a word within the limit)."""
    out = []
    for text in texts:
        cut = sentence_cut(text)
        if cut is None:
            cut = text[:MAX_CHARS].rsplit(" ", 1)[0]
        out.append(cut)
    return tuple(out)


def _detokenize(text: str, *, any_case: bool = True) -> str:
    """DailyDialog's tokenised text ("I ’ ll go , then .") as it was typed ("I’ll go, then.")."""
    text = re.sub(r"\s+([,.!?;:%)])", r"\1", text)
    text = re.sub(r"([($])\s+", r"\1", text)
    text = re.sub(r"\s*([’'])\s*(s|t|ll|re|ve|d|m)\b", lambda m: m.group(1) + m.group(2).lower(), text,
                  flags=re.IGNORECASE if any_case else 0)
    return re.sub(r"\s{2,}", " ", text).strip()


@cache
def _lines(path: Path) -> tuple[str, ...]:
    return tuple(path.read_text(encoding="utf-8").splitlines())


@cache
def _locomo(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def esconv_turns(data: Path, file: str = "esconv/test.jsonl") -> Iterable[Turn]:
    for number, raw in enumerate(_lines(data / file), start=1):
        dialog = json.loads(raw)["dialog"]
        earlier: list[str] = []
        for index, turn in enumerate(dialog):
            if turn["speaker"] != "usr":
                continue
            text = turn["text"].strip()
            yield Turn({"set": "esconv", "file": file, "line": number, "turn": index}, text,
                       brief(earlier[-CONTEXT_TURNS:]))
            earlier.append(text)


def empathetic_turns(data: Path, file: str = "empatheticdialogues/moel_contexts/moel_test_contexts.jsonl"
                     ) -> Iterable[Turn]:
    """The speaker's turns (even positions) of each dialogue context, each at the line that ends with it."""
    for number, raw in enumerate(_lines(data / file), start=1):
        context = json.loads(raw)["context"]
        index = len(context) - 1
        if index % 2:
            continue
        earlier = [context[i].strip() for i in range(0, index, 2)]
        yield Turn({"set": "empatheticdialogues", "file": file, "line": number, "turn": index},
                   context[index].strip(), brief(earlier[-CONTEXT_TURNS:]))


def dailydialog_turns(data: Path, file: str = "dailydialog/compm_dev_test/dailydialog_test.txt", *,
                      as_drawn: bool = False) -> Iterable[Turn]:
    """``as_drawn``: the text as the draws read it, before "I ’ Ve" was joined in any case (so they repeat)."""
    earlier: dict[str, list[str]] = {}
    for number, raw in enumerate(_lines(data / file), start=1):
        if not raw.strip():
            earlier = {}
            continue
        speaker, utterance, _emotion = raw.split("\t")
        text = _detokenize(utterance, any_case=not as_drawn)
        mine = earlier.setdefault(speaker, [])
        yield Turn({"set": "dailydialog", "file": file, "line": number}, text, brief(mine[-CONTEXT_TURNS:]))
        mine.append(text)


def locomo_turns(data: Path, file: str = "locomo/locomo10.json") -> Iterable[Turn]:
    """Every turn, its speaker as the user and the other speaker as the character."""
    for index, sample in enumerate(_locomo(data / file)):
        conversation = sample["conversation"]
        speakers = (conversation["speaker_a"], conversation["speaker_b"])
        number = 1
        while f"session_{number}" in conversation:
            earlier: dict[str, list[str]] = {}
            for turn in conversation[f"session_{number}"]:
                speaker, text = turn["speaker"], turn["text"].strip()
                mine = earlier.setdefault(speaker, [])
                other = speakers[1] if speaker == speakers[0] else speakers[0]
                yield Turn({"set": "locomo", "file": file, "conversation": index, "dia_id": turn["dia_id"]},
                           text, brief(mine[-CONTEXT_TURNS:]), character=other)
                mine.append(text)
            number += 1


READERS: dict[str, Callable[[Path, str], Iterable[Turn]]] = {
    "esconv": esconv_turns,
    "empatheticdialogues": empathetic_turns,
    "dailydialog": dailydialog_turns,
    "locomo": locomo_turns,
}


@cache
def _index(data: Path, set_name: str, file: str) -> dict[str, Turn]:
    return {_key(t.source): t for t in READERS[set_name](data, file)}


def _key(source: dict[str, Any]) -> str:
    return json.dumps(source, sort_keys=True)


def resolve(data: Path, source: dict[str, Any]) -> Turn:
    """The turn a labelled line names, read from the data folder."""
    set_name, file = source.get("set"), source.get("file")
    if set_name not in READERS or not isinstance(file, str):
        raise LabelledDataError(f"unknown source {source!r}")
    if not (data / file).is_file():
        raise LabelledDataError(f"{data / file} not found (the turns are read from the data folder)")
    turn = _index(data, set_name, file).get(_key(source))
    if turn is None:
        raise LabelledDataError(f"no turn at {source!r}")
    return turn


def digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]


# -- scoring ------------------------------------------------------------------------------------------------


def load(path: Path = LABELLED, data: Path = DEFAULT_DATA) -> list[Example]:
    """The labelled lines, with each turn's text and context read from ``data`` (or from the line itself)."""
    examples = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
            split, anchors = line["split"], line["anchors"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise LabelledDataError(f"{path}:{number}: {exc}") from exc
        if split not in SPLITS or not isinstance(anchors, list) or not all(isinstance(a, str) for a in anchors):
            raise LabelledDataError(f"{path}:{number}: split must be one of {SPLITS}, anchors a list of strings")
        if "text" in line:
            text, context = str(line["text"]), tuple(str(c) for c in line.get("context", ()))
        else:
            turn = resolve(data, line.get("source", {}))
            text = turn.text[: line["chars"]].strip() if "chars" in line else turn.text
            context = turn.context
            if "sha1" in line and digest(text) != line["sha1"]:
                raise LabelledDataError(f"{path}:{number}: the turn at {line['source']} is not the one labelled")
        examples.append(Example(number, split, text, context, tuple(anchors), str(line.get("character", ""))))
    return examples


def own_anchors_v1(texts: Sequence[str], exclude: Sequence[str]) -> list[str]:
    """What v1 gives the last turn of a session before pronoun inheritance (its ``memory_anchors``, less that)."""
    from engine.domain.text import stem, words
    from eval.baselines import anchors_v1

    present = set(words(texts[-1]))
    stems = {stem(w) for w in present}
    return [a for a in anchors_v1.session_anchors(list(texts), exclude=list(exclude))
            if a.lower() in present or stem(a.lower()) in stems]


def own_anchors_v2(texts: Sequence[str], exclude: Sequence[str]) -> list[str]:
    from traces.anchors import memory_anchors

    return list(memory_anchors(list(texts), exclude=list(exclude), inherit=False)[-1])


def score(examples: Sequence[Example], extractor: Extractor) -> dict[str, Counts]:
    counts = {split: Counts() for split in SPLITS}
    for example in examples:
        exclude = [example.character] if example.character else []
        predicted = extractor([*example.context, example.text], exclude)
        counts[example.split].add(example.line, predicted, example.anchors)
    return counts


def extractors() -> dict[str, Extractor]:
    return {"v1": own_anchors_v1, "v2": own_anchors_v2}


def evaluate(path: Path = LABELLED, data: Path = DEFAULT_DATA) -> dict[str, Any]:
    examples = load(path, data)
    report: dict[str, Any] = {"labelled": str(path), "lines": {s: sum(e.split == s for e in examples) for s in SPLITS},
                              "scores": {}, "errors": {}}
    for name, extractor in extractors().items():
        counts = score(examples, extractor)
        report["scores"][name] = {split: counts[split].scores() for split in SPLITS}
        report["errors"][name] = {split: counts[split].errors for split in SPLITS}
    report["texts"] = {e.line: e.text for e in examples}
    return report


def render(report: dict[str, Any], *, show: str | None = None) -> str:
    """The figures as a table; with ``show`` (a split), that split's errors too (extra anchors, missed ones)."""
    lines = [f"anchors: {report['labelled']} ({report['lines']['dev']} dev, {report['lines']['test']} test lines; "
             "micro over anchors, whole and case-insensitive)",
             f"{'':4}{'split':6}{'precision':>10}{'recall':>8}{'f1':>7}{'tp':>5}{'pred':>6}{'gold':>6}"]
    for name, by_split in report["scores"].items():
        for split, s in by_split.items():
            lines.append(f"{name:4}{split:6}{s['precision']:>10.3f}{s['recall']:>8.3f}{s['f1']:>7.3f}"
                         f"{s['true_positive']:>5}{s['predicted']:>6}{s['gold']:>6}")
    if show is not None:
        for name, by_split in report["errors"].items():
            lines.append(f"{name} errors on {show} (line: extra | missed):")
            for line, extra, missed in by_split[show]:
                lines.append(f"  {line:>3}: {extra} | {missed}    {report['texts'][line]}")
    return "\n".join(lines)


# -- the draw ------------------------------------------------------------------------------------------------

RELATION_HINT = re.compile(
    r"\b(?:mom|mum|mother|dad|father|sister|brother|wife|husband|son|daughter|boyfriend|girlfriend|bf|gf|ex|"
    r"partner|fiance|fiancee|grandma|grandpa|grandmother|grandfather|aunt|uncle|cousin|friend|boss|dog|cat|"
    r"puppy|kitten)s?\b", re.IGNORECASE)
CAPITAL_HINT_A = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+")
CAPITAL_HINT_B = re.compile(r"(?<![.!?]\s)(?<!^)(?<![,!]\s)\b[A-Z][a-z]+\b(?![,!?])")
CALENDAR = frozenset("monday tuesday wednesday thursday friday saturday sunday january february march april may june "
                     "july august september october november december".split())
DRAW = {"esconv": 60, "empatheticdialogues": 50, "dailydialog": 40, "locomo": 50}
DRAW_SEED = 14


def hinted_a(text: str, character: str = "") -> bool:
    """Draw A's hint: a relation noun, or any capitalised word not at a sentence start."""
    return bool(RELATION_HINT.search(text) or CAPITAL_HINT_A.search(text))


def hinted_b(text: str, character: str = "") -> bool:
    """Draw B's hint: a relation noun, or a capitalised word inside a sentence that is not a day, a month, the
    character's name or a word set off by commas (an address: "Thanks, Nate!")."""
    if RELATION_HINT.search(text):
        return True
    name = character.lower()
    return any(w.lower() not in CALENDAR and not (name and name.startswith(w.lower()))
               for w in CAPITAL_HINT_B.findall(text))


DRAWS: dict[str, tuple[Callable[[str, str], bool], float, int, float]] = {
    "A": (hinted_a, 0.25, DRAW_SEED, 1.0), "B": (hinted_b, 0.2, DRAW_SEED, 1.0), "C": (hinted_b, 0.2, 15, 0.5)}
"""Each draw's hint, the share of turns drawn without one, its seed and its size (of ``DRAW``). A came first;
more than half of its turns held no anchor, so B asks more of a hint. All of A is dev; B's first half is dev, its
second half test. C (B's hint, another seed, half the size) was added to dev after the test half's figures fell
short of dev's, to find more of the errors the rules make without looking at the test half."""


def _drawn(data: Path, variant: str, taken: set[str]) -> list[Turn]:
    hint, plain_share, seed, size = DRAWS[variant]
    rng = random.Random(seed)
    drawn: list[Turn] = []
    for set_name, count in DRAW.items():
        count = round(count * size)
        reader = partial(dailydialog_turns, as_drawn=True) if set_name == "dailydialog" else READERS[set_name]
        turns = []
        for turn in reader(data, _default_file(set_name)):
            cut = sentence_cut(turn.text)
            if cut is not None and len(cut) >= 20 and _key(turn.source) not in taken:
                turns.append((turn, cut))
        with_hint = [t for t, cut in turns if hint(cut, t.character)]
        without = [t for t, cut in turns if not hint(cut, t.character)]
        plain = round(count * plain_share)
        drawn.extend([*rng.sample(with_hint, count - plain), *rng.sample(without, plain)])
    rng.shuffle(drawn)
    return drawn


def draw(data: Path) -> list[dict[str, Any]]:
    """The seeded draws, in the labelled file's order: A (dev; less the turns B drew too), C (dev; none that A or
    B drew), then B's first half (dev) and its second half (test). Per set, three in four (A) or four in five (B,
    C) turns with a hint of a name and the rest without; turns under 20 characters, or whose first sentence is
    over 200, are left out; long turns are cut at a sentence end. Each line carries the turn's text and context,
    for labelling."""
    b = _drawn(data, "B", set())
    in_b = {_key(t.source) for t in b}
    a = [t for t in _drawn(data, "A", set()) if _key(t.source) not in in_b]
    c = _drawn(data, "C", in_b | {_key(t.source) for t in a})
    half = len(b) // 2
    lines = []
    for turn, split in [*((t, "dev") for t in [*a, *c, *b[:half]]), *((t, "test") for t in b[half:])]:
        turn = resolve(data, turn.source)  # the text as the evaluation reads it
        cut = sentence_cut(turn.text) or turn.text
        line: dict[str, Any] = {"source": turn.source, "split": split}
        if cut != turn.text:
            line["chars"] = len(cut)
        if turn.character:
            line["character"] = turn.character
        line["sha1"] = digest(cut)
        line["text"], line["context"] = cut, list(turn.context)
        lines.append(line)
    return lines


def _default_file(set_name: str) -> str:
    default = READERS[set_name].__defaults__
    assert default is not None
    return str(default[0])


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] != "draw":
        print(__doc__, file=sys.stderr)
        return 2
    data = Path(args[args.index("--data") + 1]) if "--data" in args else DEFAULT_DATA
    for line in draw(data):
        print(json.dumps(line, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
