"""The ``feltsense`` console script: the entry point, and the evaluation and benchmark commands.

The service's commands (``serve``, ``worker``, ``keys``) live with the service, in ``api/cli.py``; this parser
adds them (eval may import the API; nothing imports eval). ``main`` builds the run's one ``Settings`` (the
FELTSENSE_* environment under the command's flags, ``api.cli.settings_for``) once the arguments parse, and hands
it to every handler in ``Runtime``; a command that needs a variant derives it with ``model_copy(update=...)``.

Each subcommand is a pair: an ``_add_<name>`` function that declares its arguments and sets ``handler``, and
the handler, ``handler(args, runtime) -> exit status``. The ``eval`` pairs live in ``eval/cli_eval.py``, the
``bench`` pairs in ``eval/cli_bench.py``, and what they share (``Runtime``, the exit statuses, the guarded run)
in ``eval/cli_support.py``. To add one, write the pair and call the ``_add_`` function from ``add_eval`` or
``add_bench``. Heavy imports (models, servers) go inside the
handler, so ``feltsense --help`` and argument errors stay instant.

    feltsense serve | worker | keys ...           the service's commands (api/cli.py)
    feltsense eval run PATH... [--json FILE]     replay tester transcripts (../shared/transcripts/FORMAT.md)
                               [--html FILE]     ... and write the results as JSON / an HTML page
    feltsense eval facts [--data PATH]           fact extraction on LoCoMo: v1 and v2 recall, sample precision
    feltsense eval anchors [--data PATH]         anchor extraction on labelled user turns: v1 and v2 P/R/F1
    feltsense eval standing-rules [--data PATH]  the standing tone rules at the end of each LoCoMo conversation
    feltsense eval tone-thresholds [--data PATH] choose the tone and standing bars on ESConv valid, score on test
    feltsense eval window [--set dev|esconv]     window recall: message vs window vs cosine, hit@k, MRR, tiers
                          [--sweep] [--calibrate] ... and, on the dev set, the window constants' grid and the
                                                 relevance tiers' calibration
    feltsense bench scorer [--json]              stage two, 40 -> 6, against a plain-Python reference
    feltsense bench recall --memories N [--json] recall latency at N memories in one partition
    feltsense bench serve [--url U] [--json]     the HTTP service on loopback under concurrent recalls
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from api.cli import add_commands, settings_for
from eval.cli_bench import add_bench
from eval.cli_eval import add_eval
from eval.cli_support import EXIT_ERROR, EXIT_FAILED, EXIT_INVALID, EXIT_OK, Handler, Runtime

if TYPE_CHECKING:
    from eval.transcripts import EngineFactory

__all__ = ["EXIT_ERROR", "EXIT_FAILED", "EXIT_INVALID", "EXIT_OK", "Handler", "Runtime", "build_parser", "main"]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("feltsense")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="feltsense",
        description="Conversation memory for companion characters: it remembers how conversations felt.",
    )
    parser.add_argument("--version", action="version", version=f"feltsense {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_commands(commands)  # serve, worker, keys
    add_eval(commands)
    add_bench(commands)
    return parser


def main(argv: Sequence[str] | None = None, *, engine_factory: EngineFactory | None = None) -> int:
    """Run the ``feltsense`` command line and return its exit status; tests pass a fake ``engine_factory``."""
    args = build_parser().parse_args(argv)
    try:
        settings = settings_for(args)
    except ValueError as exc:  # pydantic's ValidationError: a FELTSENSE_* variable that does not parse
        print(f"feltsense {args.command}: invalid settings: {exc}", file=sys.stderr)
        return EXIT_INVALID
    handler: Handler = args.handler
    return handler(args, Runtime(stdout=sys.stdout, stderr=sys.stderr, settings=settings,
                                 engine_factory=engine_factory))


if __name__ == "__main__":
    raise SystemExit(main())
