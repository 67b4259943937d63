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

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from eval.emotion_data import OTHER, SAMPLE_SEED, EmotionDataError, EmotionSet, Gold, Session
from eval.emotion_readers import (
    detokenize,
    read_crowdflower,
    read_dailydialog,
    read_emobank,
    read_emocontext,
    read_emorynlp,
    read_empatheticdialogues,
    read_esconv,
    read_goemotions,
    read_grief_check,
    read_isear,
    read_meld,
    read_xed,
)

__all__ = [  # the set types (eval.emotion_data) and the readers (eval.emotion_readers) are read from here too
    "DEFAULT_CAPS", "OTHER", "SAMPLE_SEED", "SETS", "SKIPPED", "EmotionDataError", "EmotionSet", "Gold", "Reader",
    "Session", "SetSpec", "detokenize", "load_set", "missing_sets", "read_crowdflower", "read_dailydialog",
    "read_emobank", "read_emocontext", "read_emorynlp", "read_empatheticdialogues", "read_esconv", "read_goemotions",
    "read_grief_check", "read_isear", "read_meld", "read_xed", "sample_sessions",
]


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
