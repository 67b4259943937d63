"""Recall, per turn: stage one (hybrid retrieval, up to 40), stage two (deterministic rerank to 6), tone rules.

Degradation is recorded, never silent: if the embedder fails, stage one runs lexical only; if that finds
nothing, plain substring matching answers. The result's trace says which mode answered.

A memory a later one resolved (``traces.resolution``; the ledger's resolutions in force at the turn's time) is
not toned: no tone constraint, no standing rule, and it ranks as an ordinary memory. Recall says so on the
memory (``RecalledMemory.resolution``) and in ``RecallResult.resolutions``.

One module per step: ``stage_one`` (the window, the query, the levels merged), ``path_a`` (fact currency and the
prefix's records), ``stage_two`` (arrays, the kernel, diversity), ``tone`` (episodes, standing rules,
anniversaries) and ``recaller`` (the use case). The profile's kernel parameters and live strength are
``engine.strength``'s.
"""

from engine.recall.recaller import Recaller
from engine.recall.tone import standing_bar

__all__ = ["Recaller", "standing_bar"]
