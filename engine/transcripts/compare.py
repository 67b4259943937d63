"""Compare two tuning profiles: replay one transcript under each, in fresh temporary memories, and pair the probes
up, so the tuning page shows what a change does before it is saved."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from engine.adapters.sqlite_ledger import SqliteLedger
from engine.domain.errors import InvalidInput
from engine.domain.ports import Classifier, Embedder
from engine.domain.tuning import ProfileSource, TuningProfile
from engine.service import Engine
from engine.transcripts.checks import constraint_label
from engine.transcripts.model import Transcript
from engine.transcripts.replay import ProbeResult, replay

MAX_REPLAY_TURNS = 400
"""Most turns one comparison replays (twice): a replay runs the write-time pass in the request, so it is bounded."""


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RankedMemory(_Out):
    text: str
    score: float
    session_id: str


class ProbeOutcome(_Out):
    """What one probe saw under one profile."""

    passed: bool
    failures: tuple[str, ...]
    memories: tuple[RankedMemory, ...] = ()
    tone: tuple[str, ...] = ()
    """The tone constraints in force, as ``register [anchors]`` (``(standing)`` for a standing rule)."""


class ProbeComparison(_Out):
    session: int
    turn: int
    line: int
    message: str
    current: ProbeOutcome
    proposed: ProbeOutcome
    verdict_changed: bool
    ranking_changed: bool
    """The recalled texts or their order differ (scores alone moving does not count)."""


class ReplayComparison(_Out):
    transcript: str
    character: str
    probes: tuple[ProbeComparison, ...]


def _outcome(result: ProbeResult) -> ProbeOutcome:
    return ProbeOutcome(
        passed=result.passed,
        failures=result.failures,
        memories=tuple(
            RankedMemory(text=m.text, score=m.components.score, session_id=m.session_id)
            for m in result.recall.memories
        ),
        tone=tuple(constraint_label(c) for c in result.recall.tone_in_force),
    )


def replay_with_profile(
    transcript: Transcript, profile: TuningProfile, *, embedder: Embedder, classifier: Classifier
) -> list[ProbeResult]:
    """Replay into a fresh engine under ``profile``: an embedded store in a temporary directory, removed after.

    The embedder and classifier are shared (the service's own, already loaded); nothing else is, so a replay
    never touches stored memories.
    """
    from engine.adapters.embedded_store import EmbeddedStore

    data_dir = Path(tempfile.mkdtemp(prefix="feltsense-replay-"))
    try:
        store = EmbeddedStore(data_dir, embedding_model=embedder.model_id, dimension=embedder.dimension)
        engine = Engine(store=store, embedder=embedder, classifier=classifier,
                        profiles=ProfileSource(default=profile), ledger=SqliteLedger.in_memory())
        try:
            return replay(transcript, engine)
        finally:
            engine.close()
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def compare_profiles(
    transcript: Transcript, current: TuningProfile, proposed: TuningProfile, *, embedder: Embedder,
    classifier: Classifier,
) -> ReplayComparison:
    """Replay ``transcript`` under each profile and pair the probes up, so a change is seen before it is saved."""
    turns = sum(len(session.turns) for session in transcript.sessions)
    if turns > MAX_REPLAY_TURNS:
        raise InvalidInput(f"the transcript has {turns} turns; a replay takes at most {MAX_REPLAY_TURNS}",
                           field="transcript")
    before = replay_with_profile(transcript, current, embedder=embedder, classifier=classifier)
    after = replay_with_profile(transcript, proposed, embedder=embedder, classifier=classifier)
    probes = []
    for old, new in zip(before, after, strict=True):
        was, now = _outcome(old), _outcome(new)
        probes.append(ProbeComparison(
            session=old.session, turn=old.turn, line=old.line, message=old.query.message, current=was,
            proposed=now, verdict_changed=was.passed != now.passed,
            ranking_changed=[m.text for m in was.memories] != [m.text for m in now.memories],
        ))
    return ReplayComparison(transcript=transcript.id, character=transcript.character, probes=tuple(probes))
