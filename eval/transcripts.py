"""Tester transcripts, format version 1: find and load the files, run them (each into a fresh engine), report.

The format, its validation, the probe checks and the replay itself are ``engine.transcripts``, which the tuning
page's replay uses too; import them from there. The contract is ../shared/transcripts/FORMAT.md.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TextIO, runtime_checkable

from engine.domain.models import Memory, Partition, Trace
from engine.transcripts.checks import clip, constraint_label
from engine.transcripts.format import Issue, TranscriptInvalid, parse_transcript
from engine.transcripts.model import Transcript
from engine.transcripts.replay import ProbeResult, TranscriptEngine, replay

if TYPE_CHECKING:
    from engine.domain.tuning import ProfileSource, TuningProfile
    from engine.settings import Settings

TRANSCRIPT_SUFFIXES = (".yaml", ".yml", ".json")


def expand_paths(paths: Iterable[str | Path]) -> tuple[list[Path], list[Issue]]:
    """Files as given; a directory becomes its *.yaml, *.yml and *.json files, sorted. Repeats are dropped."""
    files: list[Path] = []
    issues: list[Issue] = []
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(
                child for child in path.iterdir() if child.suffix in TRANSCRIPT_SUFFIXES and child.is_file()
            )
            if not found:
                issues.append(
                    Issue(
                        str(path), None, None, f"no {', '.join('*' + s for s in TRANSCRIPT_SUFFIXES)} files"
                    )
                )
        elif path.exists():
            found = [path]
        else:
            issues.append(Issue(str(path), None, None, "no such file or directory"))
            found = []
        for file in found:
            if file.resolve() not in seen:
                seen.add(file.resolve())
                files.append(file)
    return files, issues


def load_transcripts(paths: Iterable[str | Path]) -> list[Transcript]:
    """Every transcript under ``paths``, validated; TranscriptInvalid lists the problems of all of them."""
    files, issues = expand_paths(paths)
    transcripts: list[Transcript] = []
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            issues.append(Issue(str(file), None, None, f"cannot read: {exc}"))
            continue
        try:
            transcripts.append(parse_transcript(text, file=str(file)))
        except TranscriptInvalid as exc:
            issues.extend(exc.issues)
    first_seen: dict[str, Transcript] = {}
    for transcript in transcripts:
        if transcript.id in first_seen:
            other = first_seen[transcript.id]
            issues.append(
                Issue(
                    transcript.file,
                    transcript.id_line,
                    "id",
                    f"duplicate transcript id {transcript.id!r} (also in {other.file})",
                )
            )
        else:
            first_seen[transcript.id] = transcript
    if issues:
        raise TranscriptInvalid(issues)
    return transcripts


# ------------------------------------------------------------------------------------------------------------
# Replay


EngineFactory = Callable[[Path], TranscriptEngine]
"""Builds a fresh, empty engine whose store lives in the given (new, empty) directory."""


@runtime_checkable
class InspectableEngine(Protocol):
    """What the HTML report reads from an engine after a replay; ``engine.service.Engine`` offers it, fakes need not."""

    profiles: ProfileSource

    def memories(self, partition: Partition, *, offset: int, limit: int) -> list[tuple[Memory, Trace | None]]: ...


@dataclass(frozen=True)
class TranscriptRun:
    """One transcript's replay as the HTML report needs it: its probes, and the engine's state once it ended.

    ``memories`` (with their traces) and ``profile`` are None when the engine does not offer them (a test's fake).
    """

    transcript: Transcript
    results: tuple[ProbeResult, ...]
    memories: tuple[tuple[Memory, Trace | None], ...] | None = None
    profile: TuningProfile | None = None

    @property
    def passed(self) -> bool:
        return all(result.passed for result in self.results)


def snapshot(transcript: Transcript, engine: TranscriptEngine, results: Sequence[ProbeResult]) -> TranscriptRun:
    """The transcript's partition as the engine holds it after the replay, read before the engine closes."""
    if not isinstance(engine, InspectableEngine):
        return TranscriptRun(transcript, tuple(results))
    partition = Partition(character_id=transcript.character, user_id=transcript.user)
    memories: list[tuple[Memory, Trace | None]] = []
    while page := engine.memories(partition, offset=len(memories), limit=500):
        memories.extend(page)
    return TranscriptRun(transcript, tuple(results), tuple(memories), engine.profiles.profile_for(transcript.character))


@dataclass
class RunReport:
    transcripts: int = 0
    results: list[ProbeResult] = field(default_factory=list)
    runs: list[TranscriptRun] = field(default_factory=list)
    """Per transcript, for the HTML report; the JSON report and the probe lines do not use it."""

    @property
    def passed(self) -> int:
        return sum(result.passed for result in self.results)

    @property
    def failed(self) -> int:
        return len(self.results) - self.passed

    @property
    def summary_line(self) -> str:
        return f"{self.passed} passed, {self.failed} failed"

    def to_json(self) -> dict[str, Any]:
        return {
            "transcripts": self.transcripts,
            "probes": len(self.results),
            "passed": self.passed,
            "failed": self.failed,
            "results": [result.to_json() for result in self.results],
        }


def run_transcripts(
    transcripts: Sequence[Transcript],
    *,
    engine_factory: EngineFactory,
    out: TextIO | None = None,
) -> RunReport:
    """Replay each transcript into a fresh engine in a temporary directory; a line per probe to ``out``."""
    report = RunReport()

    def emit(result: ProbeResult) -> None:
        report.results.append(result)
        if out is not None:
            out.write(format_result(result) + "\n")
            out.flush()

    for transcript in transcripts:
        data_dir = Path(tempfile.mkdtemp(prefix=f"feltsense-eval-{transcript.id[:40]}-"))
        try:
            engine = engine_factory(data_dir)
            try:
                results = replay(transcript, engine, on_result=emit)
                report.runs.append(snapshot(transcript, engine, results))
            finally:
                engine.close()
        finally:
            shutil.rmtree(data_dir, ignore_errors=True)
        report.transcripts += 1
    return report


def default_engine_factory(settings: Settings) -> EngineFactory:
    """Engines as ``settings`` configure them, sharing one embedder and classifier.

    Loading the ONNX models is the slow part, so it happens once here rather than once per transcript.
    """
    from engine.factory import build_classifier, build_embedder, build_engine

    base = settings
    embedder = build_embedder(base)
    classifier = build_classifier(base)

    def factory(data_dir: Path) -> TranscriptEngine:
        # Every transcript starts from an empty memory: its own data directory, or on Weaviate its own
        # collections (a fresh prefix per transcript).
        weaviate = base.weaviate.model_copy(
            update={"collection_prefix": f"{base.weaviate.collection_prefix}Eval{uuid.uuid4().hex[:12]}"}
        )
        return build_engine(
            base.model_copy(update={"data_dir": data_dir, "weaviate": weaviate}),
            embedder=embedder, classifier=classifier,
        )

    return factory


# ------------------------------------------------------------------------------------------------------------
# Reporting


def _format_number(value: float) -> str:
    return f"{value:.3f}"


def format_result(result: ProbeResult) -> str:
    """One line per probe; a failure adds what was expected and what recall returned, indented beneath it."""
    head = (
        f"{'PASS' if result.passed else 'FAIL'} {result.transcript} "
        f"sessions[{result.session}].turns[{result.turn}]: {clip(result.query.message)!r}"
    )
    if result.passed:
        return head
    recall = result.recall
    lines = [head, f"    at {result.file}:{result.line}"]
    lines.extend(f"    expected {failure}" for failure in result.failures)
    lines.append(f"    recall returned {len(recall.memories)} memories (mode {recall.trace.mode}):")
    for rank, memory in enumerate(recall.memories, start=1):
        legs = "+".join(leg.value for leg in memory.legs) or "no legs"
        lines.append(f"      {rank}. {clip(memory.text, 120)!r} [{memory.session_id}, {legs}]")
        components = memory.components.model_dump()
        lines.append(
            "         " + " ".join(f"{name}={_format_number(value)}" for name, value in components.items())
        )
        if memory.trace is not None:
            trace = memory.trace
            anchors = ", ".join(trace.anchors) or "none"
            lines.append(
                f"         trace: {trace.status.value} {trace.register} "
                f"intensity={_format_number(trace.intensity)} valence={_format_number(trace.valence)} "
                f"anchors: {anchors}"
            )
        if memory.matched_anchors:
            lines.append(f"         matched anchors: {', '.join(memory.matched_anchors)}")
    in_force = recall.tone_in_force
    lines.append(f"    tone constraints in force ({len(in_force)}):")
    for constraint in in_force:
        lines.append(f"      - {constraint_label(constraint)}: {clip(constraint.instruction, 160)!r}")
    if recall.resolutions:
        lines.append(f"    resolved, out of tone force ({len(recall.resolutions)}):")
        lines.extend(f"      - {r.register} {r.memory_id}: {r.note} ({r.link})" for r in recall.resolutions)
    return "\n".join(lines)
