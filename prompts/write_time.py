"""The write-time prompt: one closed session's memories in, a register, valence, intensity, anchors, durable
facts and resolutions per memory out. Facts come back structured, (subject, relation, value) plus a sentence, on
the relations of ``traces.facts.RELATIONS``, so a model's facts fill the same slots as the extractor's and can
supersede them.

A chat model reads the whole session at once, so it can do what a sentence classifier cannot: "Thanks. I just
miss her so much." two turns after "My dog Luna died last week." is grief about Luna, not a neutral thank-you.

It also says which memories settle an earlier worry or conflict ("the scan came back clear", "she apologised"):
the kind of resolution, and which earlier memories of the same conversation it settles. The writer uses both:
the kind marks the memory as a resolution (``traces.resolution``; the rule list still applies on top), and its
links, with the rule pass's anchor and meaning links across sessions, say what it resolves.

The response model is the contract with the model: its JSON schema is sent as the structured-output format, and
the answer is validated against it. Ranges are enforced, never clamped: an out-of-range answer is a bad answer.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from engine.domain.models import REGISTERS, ExtractedFact, Register
from engine.domain.vocabulary import RELATIONS, RESOLUTION_KINDS, Relation, ResolutionKind

PROMPT_VERSION = "4"
"""Bump when the wording, the schema or the scales change: it is written into every trace the prompt classifies."""

MAX_ANCHORS = 12
MAX_FACTS = 8
MAX_RESOLVES = 20

Anchor = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=80)]
Fact = Annotated[str, StringConstraints(strip_whitespace=True, min_length=3, max_length=300)]
# The bounds of engine.domain.models.ExtractedFact, so a valid answer always makes a valid fact.
Subject = Annotated[str, StringConstraints(strip_whitespace=True, to_lower=True, min_length=1, max_length=120)]
Value = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]


@dataclass(frozen=True)
class ModelClassification:
    """One memory's classification as the engine takes it (``engine.domain.ports.TraceClassification``): the facts as
    sentences, which the trace keeps, and as structured facts in ``extracted``, which fill slots."""

    register: str
    valence: float
    intensity: float
    anchors: tuple[str, ...]
    facts: tuple[str, ...]
    extracted: tuple[ExtractedFact, ...]
    resolution: str = "none"
    resolves: tuple[int, ...] = ()
    """The numbers (from 1, in session order) of the earlier memories this one resolves."""


# Docstrings and field descriptions go into the JSON schema the model is sent: they are written for the model.
class FactItem(BaseModel):
    """One durable fact about the user, or about a person or animal in their life."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    subject: Subject = Field(
        description='lower case: "user", or "user\'s <role>" for a person or animal in their life ("user\'s dog"), '
                    "or, for opinion, allergy and routine, the thing itself (\"jazz\", \"peanut\", \"coffee\")"
    )
    relation: Relation = Field(description="the kind of fact, exactly one of the listed relations")
    value: Value = Field(description='the value as the user said it ("Lisbon", "Luna", "loves", "every morning")')
    sentence: Fact = Field(description='the fact as one self-contained sentence ("The user lives in Lisbon.")')

    def extracted(self) -> ExtractedFact:
        return ExtractedFact(subject=self.subject, relation=self.relation, value=self.value, sentence=self.sentence)


# "register" is the domain's word; it only shadows ABCMeta.register, which nothing here calls. The filter is scoped
# to the definition: a module-level one set at import would not survive a caller's warnings.catch_warnings().
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message='Field name "register"', category=UserWarning)

    class MemoryClassification(BaseModel):
        """How one memory felt and what it was about."""

        model_config = ConfigDict(extra="forbid", frozen=True)

        index: int = Field(ge=1, description="the memory's number, as listed in the request")
        register: Register = Field(description="the emotional register of the memory")
        valence: float = Field(ge=-1.0, le=1.0, description="-1 (very negative) .. 1 (very positive)")
        intensity: float = Field(ge=0.0, le=1.0, description="0 (flat) .. 1 (overwhelming)")
        anchors: tuple[Anchor, ...] = Field(
            max_length=MAX_ANCHORS, description="the people, animals, places or things the feeling is about"
        )
        facts: tuple[FactItem, ...] = Field(
            max_length=MAX_FACTS,
            description="durable facts the memory states about the user and the people and animals in their life",
        )
        resolution: ResolutionKind = Field(
            description="whether the memory reports that an earlier worry, fear or conflict has been settled, and how"
        )
        resolves: tuple[Annotated[int, Field(ge=1)], ...] = Field(
            max_length=MAX_RESOLVES,
            description="the numbers of earlier memories of this conversation whose worry or conflict it settles",
        )

        @model_validator(mode="after")
        def _consistent(self) -> MemoryClassification:
            if self.resolves and self.resolution == "none":
                raise ValueError("resolves names earlier memories but resolution is none")
            if any(number >= self.index for number in self.resolves):
                raise ValueError(f"memory {self.index} can only resolve earlier memories, not {list(self.resolves)}")
            return self

        def classification(self) -> ModelClassification:
            """What the engine takes: the facts both as sentences and as structured facts."""
            return ModelClassification(
                register=self.register, valence=self.valence, intensity=self.intensity, anchors=self.anchors,
                facts=tuple(dict.fromkeys(fact.sentence for fact in self.facts)),
                extracted=tuple(fact.extracted() for fact in self.facts),
                resolution=self.resolution, resolves=tuple(dict.fromkeys(self.resolves)),
            )


class SessionClassification(BaseModel):
    """The annotation of one session: exactly one item per memory."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    memories: list[MemoryClassification]

    def in_order(self, count: int) -> list[MemoryClassification]:
        """The items for memories 1..count in order. Raises ValueError unless each is answered exactly once."""
        by_index: dict[int, MemoryClassification] = {}
        for item in self.memories:
            if item.index in by_index:
                raise ValueError(f"memory {item.index} was classified twice")
            by_index[item.index] = item
        expected = set(range(1, count + 1))
        if set(by_index) != expected:
            missing = sorted(expected - set(by_index))
            unknown = sorted(set(by_index) - expected)
            raise ValueError(
                f"expected one classification for each of memories 1..{count}; missing {missing}, unknown {unknown}"
            )
        return [by_index[i] for i in range(1, count + 1)]


class ChatMessage(TypedDict):
    role: Literal["system", "user"]
    content: str


_REGISTER_MEANINGS: dict[str, str] = {
    "grief": "loss of someone or something loved: a death, a pet put down, an ending that cannot be undone",
    "sadness": "feeling low, lonely, disappointed or hurt, without a loss at its centre",
    "anxiety": "worry, nervousness, dread about something ahead",
    "anger": "frustration, irritation, resentment, outrage",
    "shame": "embarrassment, guilt, feeling foolish or unworthy",
    "joy": "happiness, relief, excitement, good news",
    "affection": "love, warmth or gratitude towards someone",
    "pride": "satisfaction in an achievement, the user's own or someone's they care about",
    "curiosity": "questions, interest, wanting to learn or explore",
    "neutral": "small talk, logistics, plain information with no feeling to speak of",
}

_RESOLUTION_MEANINGS: dict[str, str] = {
    "test_result": "a test, scan or result came back fine",
    "false_alarm": "what they feared turned out to be a false alarm",
    "apology": "someone they were upset with apologised",
    "reconciliation": "they made up with someone after a conflict",
    "good_outcome": "something they were worried about worked out after all (the job, the exam, the visa)",
    "problem_solved": "a problem that worried or angered them is sorted",
    "found_safe": "someone or a pet that was missing or in danger is safe",
    "no_longer_worried": "they say they are no longer worried or angry about it",
    "relief": "they express relief that a fear did not come true",
}

SYSTEM_PROMPT = f"""\
You annotate the memories of a companion character. Each memory is one message a user wrote during one \
conversation, listed in order. Read the whole conversation first: a short message takes its feeling and its \
subject from what came before it ("Thanks. I just miss her so much." after "My dog Luna died last week." is \
grief about Luna).

For every memory give:
- index: the memory's number, as listed.
- register: exactly one of these emotional registers:
{chr(10).join(f"  - {name}: {_REGISTER_MEANINGS[name]}" for name in REGISTERS)}
- valence: how negative or positive the memory feels, from -1.0 (very negative) through 0.0 (neutral) to \
1.0 (very positive).
- intensity: how strongly it is felt, from 0.0 (flat small talk) through 0.3 (mild), 0.6 (clearly emotional) to \
1.0 (overwhelming: a death, a crisis). Use the whole scale; never leave the range.
- anchors: the specific people, animals, places or things the feeling is about, written as the user named them \
("Luna", "the park", "my sister"); a pronoun takes the name it refers to. At most {MAX_ANCHORS}; an empty list \
when there are none.
- facts: durable facts that this memory states about the user, or about the people and animals in their life, \
and that would still be true next month. Each is an object with:
  - subject: lower case; "user" for the user, "user's <role>" for a person or animal in their life ("user's \
dog", "user's sister"), and for opinion, allergy and routine the thing itself ("jazz", "peanut", "coffee");
  - relation: exactly one of these:
{chr(10).join(f"    - {name}: {meaning}" for name, meaning in RELATIONS.items())}
  - value: the value as the user said it ("Lisbon", "Luna", "loves", "every morning");
  - sentence: the fact as one self-contained sentence in the third person ("The user lives in Lisbon.", "The \
user's dog is called Luna.").
  Only what is true now, as the user states it: not hypotheticals ("I might move to Berlin"), not what is no \
longer true ("I don't live in Paris anymore"), not questions, not passing moods, not what the character said. \
Never give another person's fact the subject "user" ("my sister lives in Leeds" is about "user's sister"). At \
most {MAX_FACTS}; an empty list when there are none.
- resolution: whether this memory reports, as something that has happened, that a worry, fear or conflict the \
user had before (in this conversation or an earlier one) is settled. Exactly one of:
  - none: it does not (also for hopes, questions and what might still happen, and always for a loss: a death \
is never settled by later news)
{chr(10).join(f"  - {kind}: {_RESOLUTION_MEANINGS[kind]}" for kind in RESOLUTION_KINDS)}
- resolves: the numbers of the earlier memories of this conversation whose worry or conflict this memory \
settles ("The biopsy came back clear!" settles "I'm terrified about the biopsy"); an empty list when it \
settles none of them, or when resolution is none.

Answer with JSON only, no prose and no code fences: an object {{"memories": [...]}} holding exactly one item per \
memory, each with the keys index, register, valence, intensity, anchors, facts, resolution and resolves, and \
each fact with the keys subject, relation, value and sentence."""


def session_classification_messages(memory_texts: Sequence[str]) -> list[ChatMessage]:
    """The chat messages that ask for a ``SessionClassification`` of one session's memories (in order).

    The memories go in as JSON, numbered from 1, so quoting and line breaks in them cannot blur their boundaries.
    """
    if isinstance(memory_texts, str):
        raise TypeError("memory_texts must be a sequence of strings, not a single string")
    listed = [{"index": i, "text": text} for i, text in enumerate(memory_texts, start=1)]
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": json.dumps({"memories": listed}, ensure_ascii=False)},
    ]
