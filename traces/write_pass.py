"""The write-time pass over one closed session: a trace beside every memory.

At write time the whole conversation is available, plus behaviour; at read time only a query. So this pass
does the work ranking depends on (seed 004, "Memory quality is a writing problem"):
1. the classifier gives each memory a register, valence and intensity: those of its most intense sentence, so
   "Hey Ava. Sorry I've been quiet. My dog Luna died last week." is grief, not the apology it opens with;
2. anchors are extracted over the whole session, with pronoun references resolved to the names they follow;
3. engagement is computed from behaviour (length trend, latency, questions back);
4. episodes are smoothed: a memory that shares an anchor with a more intense memory of the same session carries
   that feeling (``WriteParams.episode_carry``), so "Thanks. I just miss her so much." is grief about Luna too,
   not a neutral thank-you;
5. durable facts are extracted ("I moved to Lisbon" -> "The user lives in Lisbon.");
6. each trace is typed emotional or factual (``WriteParams.emotional_min_intensity``), which picks its decay;
7. a memory that reads as resolution ("the scan came back clear", ``traces.resolution``) gets its cue, and keeps
   its own feeling: the episode it settles does not colour it (the writer then finds what it resolves).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import datetime

import numpy as np
from numpy.typing import NDArray

from engine.domain.models import Memory, MemoryKind, Trace, TraceStatus, Turn
from engine.domain.ports import Classifier, TraceClassification
from engine.domain.tuning import WriteParams
from traces.anchors import instruction_like, memory_anchors
from traces.engagement import engagement
from traces.facts import extract_facts
from traces.resolution import reads_as_resolution

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
Embed = Callable[[Sequence[str]], NDArray[np.float32]]


def sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_END.split(text) if part.strip()]


def classify_memories(
    memories: Sequence[Memory], embeddings: NDArray[np.float32], classifier: Classifier, embed: Embed | None
) -> list[TraceClassification]:
    """Each memory's classification: the most intense of the whole turn and (with ``embed``) its sentences."""
    texts = [m.text for m in memories]
    whole = classifier.classify(texts, embeddings)
    if len(whole) != len(memories):
        raise ValueError(f"classifier returned {len(whole)} results for {len(memories)} memories")
    if embed is None:
        return list(whole)
    owners: list[int] = []
    parts: list[str] = []
    for i, text in enumerate(texts):
        split = sentences(text)
        if len(split) > 1:
            owners.extend([i] * len(split))
            parts.extend(split)
    best = list(whole)
    if parts:
        for owner, result in zip(owners, classifier.classify(parts, embed(parts)), strict=True):
            if result.intensity > best[owner].intensity:
                best[owner] = result
    return best


def build_traces(
    memories: Sequence[Memory],
    turns: Sequence[Turn],
    embeddings: NDArray[np.float32],
    classifier: Classifier,
    params: WriteParams,
    *,
    written_at: datetime,
    attempts: int = 1,
    embed: Embed | None = None,
    earlier: Sequence[str] = (),
) -> list[Trace]:
    """Complete traces for ``memories`` (one session's, in order). Raises whatever the classifier raises.

    ``embed`` (the engine's embedder) lets the pass classify sentence by sentence; without it, whole turns.
    ``earlier`` are the same user's turns of earlier sessions that share words with this one: they confirm names
    and make a thing said once there and once here an anchor (``traces.anchors.memory_anchors``).
    """
    if not memories:
        return []
    classified = classify_memories(memories, embeddings, classifier, embed if classifier.per_sentence else None)
    character = memories[0].character_id
    extracted = memory_anchors([m.text for m in memories], exclude=[character], earlier=earlier)
    # Anchors a model found join the extracted ones (a model reads coreference and paraphrase better), through
    # the same filter: a model that read an injection must not turn "Ignore" or "System" into an anchor.
    anchors = [
        tuple(dict.fromkeys([*own, *(a for a in c.anchors
                                     if a.lower() != character.lower()
                                     and not any(instruction_like(w) for w in a.split()))]))
        for own, c in zip(extracted, classified, strict=True)
    ]
    engaged = engagement(turns)

    registers: list[str] = [c.register for c in classified]
    valences = [float(c.valence) for c in classified]
    intensities = [float(c.intensity) for c in classified]
    cues = [reads_as_resolution(m.text, float(c.valence), min_valence=params.resolution_min_valence,
                                model_kind=getattr(c, "resolution", None))
            for m, c in zip(memories, classified, strict=True)]
    for i in range(len(memories)):
        for j in range(len(memories)):
            carried = float(classified[j].intensity) * params.episode_carry
            if i == j or cues[i] or carried <= intensities[i] or not set(anchors[i]) & set(anchors[j]):
                continue
            if classified[j].register == "neutral":
                continue
            # The episode's feeling colours this memory; use the source's own values, not the ones it carried.
            intensities[i] = carried
            registers[i] = classified[j].register
            valences[i] = float(classified[j].valence) * params.episode_carry

    traces = []
    for i, memory in enumerate(memories):
        intensity = float(np.clip(intensities[i], 0.0, 1.0))
        emotional = registers[i] != "neutral" and intensity >= params.emotional_min_intensity
        traces.append(
            Trace(
                memory_id=memory.memory_id,
                status=TraceStatus.COMPLETE,
                register=registers[i],
                valence=float(np.clip(valences[i], -1.0, 1.0)),
                intensity=intensity,
                engagement=engaged.get(memory.turn_id, 0.0),
                anchors=anchors[i],
                facts=tuple(dict.fromkeys([*extract_facts(memory.text), *classified[i].facts])),
                extracted=tuple(classified[i].extracted),
                kind=MemoryKind.EMOTIONAL if emotional else MemoryKind.FACTUAL,
                written_at=written_at,
                classifier=classifier.name,
                attempts=attempts,
                resolution_cue=cues[i],
                # Earlier memories of this session a model said this one resolves (the writer checks them).
                resolves=tuple(memories[k - 1].memory_id for k in getattr(classified[i], "resolves", ())
                               if 1 <= k <= i) if cues[i] else (),
            )
        )
    return traces
