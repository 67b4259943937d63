"""The bottom layer: what every other part of feltsense speaks in, importing nothing else of ours.

The models (turns, memories, traces, recall results), the errors, the ports the services call (stores, embedder,
classifier), the tuning profile (the only place the engine's constants are validated), the text helpers and the
closed vocabularies (fact relations, resolution kinds) with the sentences a fact is worded in. ``scoring`` is pure
numpy beside it; ``traces`` and ``prompts`` build on it; the engine's services above them; ``api`` and ``eval``
on top (the import-linter layers contract in pyproject.toml).
"""
