"""What the ``feltsense`` command's handlers share: the exit statuses, ``Runtime``, and the steps every handler
repeats (declare a subcommand and its common flags, report a bad argument, run the work guarded, print and write
the JSON).

``eval/cli.py`` is the entry point and builds the parser; the ``eval`` subcommands live in ``eval/cli_eval.py``
and the ``bench`` ones in ``eval/cli_bench.py``. Nothing here imports a model or a server, so ``feltsense --help``
stays instant.
"""

from __future__ import annotations

import argparse
import json
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from api.cli import Runtime as ServiceRuntime

if TYPE_CHECKING:
    from eval.transcripts import EngineFactory

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INVALID = 2
EXIT_ERROR = 3
"""The run broke off (an engine or model error, or the JSON could not be written). Python's own status for a
crash is 1, which reads as "some probes failed", so a crash gets a status of its own."""

T = TypeVar("T")
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


@dataclass(frozen=True)
class Runtime(ServiceRuntime):
    """What ``main`` hands every handler: where to write (``stdout``, ``stderr``), the run's one ``settings``
    (handlers pass it, or a ``model_copy`` of it, down), and the seams tests replace."""

    engine_factory: EngineFactory | None = None
    """For ``eval run``; None builds the real engines (loading the models) once the transcripts are valid."""


Handler = Callable[[argparse.Namespace, Runtime], int]


def add_command(commands: Commands, name: str, help: str, description: str, handler: Handler,
                ) -> argparse.ArgumentParser:
    """Declare the subcommand ``name`` with its help and description, handled by ``handler``."""
    parser = commands.add_parser(name, help=help, description=description)
    parser.set_defaults(handler=handler)
    return parser


def add_data(parser: argparse.ArgumentParser, help: str, default: str | None = None) -> None:
    """``--data PATH``: where the command's data set is; required when it has no ``default``."""
    if default is None:
        parser.add_argument("--data", type=Path, required=True, metavar="PATH", help=help)
    else:
        parser.add_argument("--data", type=Path, default=Path(default), metavar="PATH", help=help)


def add_json_file(parser: argparse.ArgumentParser, help: str = "also write JSON") -> None:
    """``--json FILE``: also write the command's result as JSON to FILE (``args.json_path``)."""
    parser.add_argument("--json", type=Path, metavar="FILE", dest="json_path", help=help)


def add_json_flag(parser: argparse.ArgumentParser,
                  help: str = "end with one JSON object on the last line") -> None:
    """``--json``: a benchmark ends with its result as JSON on stdout."""
    parser.add_argument("--json", action="store_true", help=help)


def add_cache(parser: argparse.ArgumentParser, help: str) -> None:
    """``--cache DIR``: the embedding cache the classifier commands share with training."""
    parser.add_argument("--cache", type=Path, default=Path(".cache/classifier"), metavar="DIR", help=help)


def add_limit_conversations(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--limit-conversations", type=int, metavar="N", help="only the first N conversations")


def invalid(runtime: Runtime, command: str, message: str) -> int:
    """Say on stderr what is wrong with ``feltsense <command>``'s arguments or data; the status for it."""
    print(f"feltsense {command}: {message}", file=runtime.stderr)
    return EXIT_INVALID


def broke_off(runtime: Runtime) -> int:
    """The traceback of the exception being handled and the status for a run that broke off."""
    traceback.print_exc(file=runtime.stderr)
    print(f"the run broke off; exit status {EXIT_ERROR}", file=runtime.stderr)
    return EXIT_ERROR


def wrote_json(path: Path, document: object, runtime: Runtime) -> bool:
    """Write ``document`` as indented JSON to ``path``; False (and the reason on stderr) when it cannot be written."""
    try:
        path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        print(f"cannot write {path}: {exc}", file=runtime.stderr)
        return False
    return True


def run_guarded(args: argparse.Namespace, runtime: Runtime, command: str, work: Callable[[], T], *,
                data_errors: tuple[type[Exception], ...] = (), broke_off_on_error: bool = True,
                show: Callable[[T], None] | None = None, document: Callable[[T], object] | None = None) -> int:
    """Run ``work``, then ``show`` its result and write it (or ``document(result)``) to ``--json`` if asked.

    ``data_errors`` raised by ``work`` are reported as ``feltsense <command>: ...`` with exit
    status 2; any other exception prints its traceback with status 3 (or propagates when not
    ``broke_off_on_error``).
    """
    try:
        result = work()
    except data_errors as exc:
        return invalid(runtime, command, str(exc))
    except Exception:
        if not broke_off_on_error:
            raise
        return broke_off(runtime)
    if show is not None:
        show(result)
    shown = result if document is None else document(result)
    if args.json_path is not None and not wrote_json(args.json_path, shown, runtime):
        return EXIT_ERROR
    return EXIT_OK


def printer(runtime: Runtime, render: Callable[[Any], str]) -> Callable[[Any], None]:
    """A ``show`` for ``run_guarded``: print ``render(result)`` on stdout."""
    return lambda result: print(render(result), file=runtime.stdout)


def progress_to(runtime: Runtime) -> Callable[[str], None]:
    """Progress messages on stderr, flushed as they come."""
    return lambda message: print(message, file=runtime.stderr, flush=True)
