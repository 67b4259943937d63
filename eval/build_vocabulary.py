"""Write ``traces/data/vocabulary.tsv``: how often each word is written in lower case, and capitalised inside a
sentence, in ordinary English text. The anchor pass (``traces.anchors``) reads it to tell names from common words.

    python -m eval.build_vocabulary [--data ../shared/data] [--out traces/data/vocabulary.tsv]

The text is the train-licensed sets of ``../shared/data`` only (commercial use allowed; see its README):
GoEmotions (Apache-2.0; names are masked as [NAME] there), XED (CC BY 4.0), EmoryNLP (Apache-2.0), iSarcasmEval
(MIT) and MUStARD (MIT). The file holds counts, not text. Words seen fewer than three times are left out.
"""

from __future__ import annotations

import argparse
import csv
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from traces.anchors import VOCABULARY_PATH, tokenize

MIN_COUNT = 3


def texts(data: Path) -> Iterator[str]:
    for split in ("train", "dev", "test"):
        with (data / "goemotions" / f"original_{split}.tsv").open(encoding="utf-8") as lines:
            for line in lines:
                yield line.split("\t")[0]
    with (data / "xed" / "en-annotated.tsv").open(encoding="utf-8") as lines:
        for line in lines:
            yield line.split("\t")[0]
    with (data / "xed" / "neu_en.txt").open(encoding="utf-8") as lines:
        for line in lines:
            yield line.rstrip("\n").split("\t", 1)[-1]
    for split in ("train", "dev", "test"):
        with (data / "emorynlp" / f"emorynlp_{split}_final.csv").open(encoding="utf-8") as rows:
            for row in csv.DictReader(rows):
                yield row["Utterance"]
    with (data / "isarcasmeval" / "train.En.csv").open(encoding="utf-8") as rows:
        for row in csv.DictReader(rows):
            yield row["tweet"] or ""
            yield row["rephrase"] or ""
    with (data / "isarcasmeval" / "task_A_En_test.csv").open(encoding="utf-8") as rows:
        for row in csv.DictReader(rows):
            yield row["text"] or ""
    for item in json.loads((data / "mustard" / "sarcasm_data.json").read_text(encoding="utf-8")).values():
        yield item["utterance"]
        yield from item["context"]


def count(data: Path) -> tuple[Counter[str], Counter[str]]:
    lower: Counter[str] = Counter()
    capital: Counter[str] = Counter()
    for text in texts(data):
        for sentence in tokenize(text):
            for token in sentence:
                if token.text.islower():
                    lower[token.bare] += 1
                elif token.capitalised and not token.initial and not token.text.isupper():
                    capital[token.bare] += 1
    return lower, capital


def write(lower: Counter[str], capital: Counter[str], out: Path) -> int:
    kept = sorted((w for w in lower.keys() | capital.keys() if lower[w] + capital[w] >= MIN_COUNT),
                  key=lambda w: (-lower[w], -capital[w], w))
    header = ("# word<TAB>times written in lower case<TAB>times capitalised inside a sentence; written by "
              "python -m eval.build_vocabulary from the train-licensed sets (GoEmotions, XED, EmoryNLP, "
              "iSarcasmEval, MUStARD)\n")
    out.write_text(header + "".join(f"{w}\t{lower[w]}\t{capital[w]}\n" for w in kept), encoding="utf-8")
    return len(kept)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--out", type=Path, default=VOCABULARY_PATH)
    args = parser.parse_args()
    lower, capital = count(args.data)
    print(f"{write(lower, capital, args.out)} words -> {args.out}")


if __name__ == "__main__":
    main()
