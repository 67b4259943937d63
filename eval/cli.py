"""The ``feltsense`` console script.

Each subcommand is a pair: an ``_add_<name>`` function that declares its arguments and sets ``handler``, and
the handler, ``handler(args, runtime) -> exit status``. To add one (``serve``, ``bench scorer``, ...), write
the pair and call the ``_add_`` function from ``build_parser``. Heavy imports (models, servers) go inside the
handler, so ``feltsense --help`` and argument errors stay instant.

    feltsense eval run PATH... [--json FILE]     replay tester transcripts (../shared/transcripts/FORMAT.md)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from eval.transcripts import EngineFactory

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INVALID = 2


@dataclass(frozen=True)
class Runtime:
    """What ``main`` hands every handler: where to write, and the seams tests replace."""

    stdout: TextIO
    stderr: TextIO
    engine_factory: EngineFactory | None = None
    """For ``eval run``; None builds the real engines (loading the models) once the transcripts are valid."""


Handler = Callable[[argparse.Namespace, Runtime], int]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="feltsense",
        description="Conversation memory for companion characters: it remembers how conversations felt.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_eval(commands)
    return parser


def _add_eval(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    evaluate = commands.add_parser("eval", help="evaluate the engine", description="Evaluate the engine.")
    eval_commands = evaluate.add_subparsers(dest="eval_command", required=True, metavar="COMMAND")

    run = eval_commands.add_parser(
        "run",
        help="replay tester transcripts and check their probes",
        description=(
            "Replay tester transcripts (format 1, see ../shared/transcripts/FORMAT.md), each into a fresh, "
            "empty memory, and check every probe. Exit status: 0 all probes passed, 1 some failed, 2 a "
            "transcript is invalid (nothing runs)."
        ),
    )
    run.add_argument(
        "paths",
        nargs="+",
        type=Path,
        metavar="PATH",
        help="a transcript file, or a directory of *.yaml, *.yml and *.json transcripts",
    )
    run.add_argument(
        "--json", type=Path, metavar="FILE", dest="json_path", help="also write the results as JSON"
    )
    run.set_defaults(handler=handle_eval_run)


def handle_eval_run(args: argparse.Namespace, runtime: Runtime) -> int:
    from eval.transcripts import (
        TranscriptInvalid,
        default_engine_factory,
        load_transcripts,
        run_transcripts,
    )

    try:
        transcripts = load_transcripts(args.paths)
    except TranscriptInvalid as exc:
        for issue in exc.issues:
            print(issue, file=runtime.stderr)
        count = len(exc.issues)
        print(f"{count} problem{'s' if count != 1 else ''} found; nothing was run", file=runtime.stderr)
        return EXIT_INVALID

    factory = runtime.engine_factory
    if factory is None:
        print("loading the embedder and classifier...", file=runtime.stderr)
        factory = default_engine_factory()

    report = run_transcripts(transcripts, engine_factory=factory, out=runtime.stdout)
    print(report.summary_line, file=runtime.stdout)

    if args.json_path is not None:
        try:
            args.json_path.write_text(json.dumps(report.to_json(), indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            print(f"cannot write {args.json_path}: {exc}", file=runtime.stderr)
            return EXIT_INVALID
    return EXIT_OK if report.failed == 0 else EXIT_FAILED


def main(argv: Sequence[str] | None = None, *, engine_factory: EngineFactory | None = None) -> int:
    """Run the ``feltsense`` command line and return its exit status; tests pass a fake ``engine_factory``."""
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    return handler(args, Runtime(stdout=sys.stdout, stderr=sys.stderr, engine_factory=engine_factory))


if __name__ == "__main__":
    raise SystemExit(main())
