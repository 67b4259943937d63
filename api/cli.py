"""The service's commands: ``feltsense serve``, ``feltsense worker``, ``feltsense keys create|list|revoke``.

    feltsense serve [--host H] [--port N]         serve the API (settings from FELTSENSE_* variables)
                    [--data-dir DIR] [--dev]      ... with a development key, made once (DATA_DIR/dev-key)
    feltsense worker [--burst]                    run the arq worker (write-time jobs; needs FELTSENSE_REDIS_URL)
    feltsense mcp [--data-dir DIR]                the MCP server over stdio (key: FELTSENSE_API_KEY)
    feltsense import FILE --org O [--merge]       load a user's export (GET /v1/users/{id}/export) here
    feltsense keys create --org O --role R        make a key and print it (the only time it is shown)
    feltsense keys list | revoke KEY_ID           list the keys, or revoke one ([--data-dir DIR] on each)

``add_commands`` declares them on the ``feltsense`` parser, whose entry point (``eval.cli.main``) also holds the
evaluation commands: the entry point imports this module, never the other way round (nothing imports eval).
``python -m api.cli`` runs these commands alone. Each handler is ``handler(args, runtime) -> exit status``, with
``runtime`` carrying the output streams and the one ``Settings`` of the run, built by ``settings_for`` from the
environment and the command's flags. Heavy imports (models, servers) go inside the handlers, so ``--help`` and
argument errors stay instant.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TextIO, TypeAlias

if TYPE_CHECKING:
    from api.auth import KeyStore
    from engine.settings import Settings

EXIT_OK = 0
EXIT_INVALID = 2
"""Bad arguments or settings: nothing was started."""

SETTINGS_FLAGS = ("host", "port", "data_dir")
"""Flags that override the FELTSENSE_* variable of the same name (``--data-dir`` over ``FELTSENSE_DATA_DIR``)."""


class CommandRuntime(Protocol):
    """What a handler is given besides its arguments (``eval.cli.Runtime`` is one)."""

    @property
    def stdout(self) -> TextIO: ...

    @property
    def stderr(self) -> TextIO: ...

    @property
    def settings(self) -> Settings: ...


@dataclass(frozen=True)
class Runtime:
    """The runtime of ``python -m api.cli``."""

    stdout: TextIO
    stderr: TextIO
    settings: Settings


Handler = Callable[[argparse.Namespace, CommandRuntime], int]
Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def settings_for(args: argparse.Namespace) -> Settings:
    """The one ``Settings`` of a run: the FELTSENSE_* environment, with the command's flags over it. Raises
    pydantic's ValidationError (a ValueError) when a variable does not parse."""
    from engine.settings import Settings

    return Settings(**{name: value for name in SETTINGS_FLAGS if (value := getattr(args, name, None)) is not None})


def add_commands(commands: Subcommands) -> None:
    """Add ``serve``, ``worker`` and ``keys`` to a parser's subcommands."""
    _add_serve(commands)
    _add_worker(commands)
    _add_mcp(commands)
    _add_import(commands)
    _add_keys(commands)


def _add_serve(commands: Subcommands) -> None:
    serve = commands.add_parser(
        "serve", help="serve the API", description="Serve the feltsense API (settings from FELTSENSE_* variables)."
    )
    serve.add_argument("--host", help="interface to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default 8000)")
    serve.add_argument("--data-dir", type=Path, help="where the embedded store keeps its files (default ./data)")
    serve.add_argument("--dev", action="store_true",
                       help="make a development key (org dev, role runtime) the first time and keep it in "
                            "DATA_DIR/dev-key (printed only to a terminal); a revoked one is never made again")
    serve.set_defaults(handler=handle_serve)


def handle_serve(args: argparse.Namespace, runtime: CommandRuntime) -> int:
    from api.server import serve

    return _run_service("serve", lambda: serve(runtime.settings, dev=args.dev), runtime)


def _run_service(command: str, run: Callable[[], None], runtime: CommandRuntime) -> int:
    """Run a long-lived command; settings that cannot work are an exit 2 with what to change, not a traceback."""
    from engine.domain.errors import ConfigurationError

    try:
        run()
    except ConfigurationError as exc:
        print(f"feltsense {command}: {exc}", file=runtime.stderr)
        return EXIT_INVALID
    return EXIT_OK


def _add_worker(commands: Subcommands) -> None:
    worker = commands.add_parser(
        "worker", help="run the arq worker for the write-time jobs",
        description="Run the arq worker: the write-time jobs the API queues in Redis, and the nightly maintenance "
        "(settings from FELTSENSE_* variables, as for serve; FELTSENSE_REDIS_URL is required).",
    )
    worker.add_argument("--burst", action="store_true", help="run the queued jobs, then exit")
    worker.set_defaults(handler=handle_worker)


def handle_worker(args: argparse.Namespace, runtime: CommandRuntime) -> int:
    from api.worker import run

    return _run_service("worker", lambda: run(runtime.settings, burst=args.burst), runtime)


def _add_mcp(commands: Subcommands) -> None:
    mcp = commands.add_parser(
        "mcp", help="the MCP server over stdio",
        description="Serve feltsense's tools and resources to an MCP client over stdin and stdout, in this process "
        "over the settings' store (as `serve` would open it). The API key to act with comes from FELTSENSE_API_KEY: "
        "the tools see what that key sees over HTTP. Over HTTP, `serve` mounts the same server at /mcp.",
    )
    mcp.add_argument("--data-dir", type=Path, help="where the embedded store keeps its files (default ./data)")
    mcp.set_defaults(handler=handle_mcp)


def handle_mcp(args: argparse.Namespace, runtime: CommandRuntime) -> int:
    import os

    from api.server import serve_mcp_stdio

    key = os.environ.get("FELTSENSE_API_KEY", "").strip()
    if not key:
        print("feltsense mcp: set FELTSENSE_API_KEY to the API key the tools act with "
              "(`feltsense keys create --org ORG --role runtime` makes one)", file=runtime.stderr)
        return EXIT_INVALID
    return _run_service("mcp", lambda: serve_mcp_stdio(runtime.settings, key), runtime)


def _add_import(commands: Subcommands) -> None:
    load = commands.add_parser(
        "import", help="load a user's export into this deployment",
        description="Load a user's export (GET /v1/users/{user_id}/export, JSON or NDJSON) into the store and ledger "
        "the settings name, as the organisation ORG's: turns, memories with traces and states (embedded again), "
        "resolutions, review items and the audit trail, ids and times kept. A partition that already holds "
        "memories is refused unless --merge, which adds only what is not there yet. Stop `serve` on an embedded "
        "data directory first: one process owns it.",
    )
    load.add_argument("file", type=Path, help="the export file (- for standard input)")
    load.add_argument("--org", required=True, help="the organisation the user belongs to here")
    load.add_argument("--merge", action="store_true", help="merge into a partition that already holds memories")
    load.add_argument("--data-dir", type=Path, help="the embedded store's directory (default ./data)")
    load.set_defaults(handler=handle_import)


def handle_import(args: argparse.Namespace, runtime: CommandRuntime) -> int:
    import json

    from api.export import read_document, scoped_document
    from engine import build_engine, build_profile_store, check_settings
    from engine.domain.errors import Conflict, InvalidInput

    source = "standard input" if str(args.file) == "-" else str(args.file)
    try:
        text = sys.stdin.read() if str(args.file) == "-" else args.file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"feltsense import: cannot read {source}: {exc}", file=runtime.stderr)
        return EXIT_INVALID
    try:
        exported = read_document(text, source=source)
        document = scoped_document(args.org, exported)
    except InvalidInput as exc:
        print(f"feltsense import: {exc}; nothing was loaded", file=runtime.stderr)
        return EXIT_INVALID

    def load() -> None:
        check_settings(runtime.settings)
        tuning = build_profile_store(runtime.settings)
        engine = build_engine(runtime.settings, profiles=tuning)
        try:
            added = engine.import_partition(document, merge=args.merge)
        finally:
            engine.close()
            tuning.close()
        print(json.dumps({"org": args.org, "character_id": exported.character_id, "user_id": exported.user_id,
                          "added": added}), file=runtime.stdout)

    try:
        return _run_service("import", load, runtime)
    except (Conflict, InvalidInput) as exc:
        print(f"feltsense import: {exc}; nothing was loaded", file=runtime.stderr)
        return EXIT_INVALID


def _add_keys(commands: Subcommands) -> None:
    from api.auth import ROLES  # the standard library only: the parser stays instant

    keys = commands.add_parser("keys", help="API keys")
    key_commands = keys.add_subparsers(dest="keys_command", required=True, metavar="COMMAND")
    create = key_commands.add_parser("create", help="create a key and print it (the only time it is shown)")
    create.add_argument("--org", required=True, help="the organisation the key belongs to")
    create.add_argument("--role", required=True, choices=ROLES,
                        help="operator: only the sweep, over every organisation (see the README's roles)")
    create.add_argument("--label", default="", help="a note kept with the key")
    create.add_argument("--data-dir", type=Path, help="the service's data directory (default ./data)")
    create.set_defaults(handler=handle_keys_create)
    listing = key_commands.add_parser("list", help="list keys: id, organisation, role, label, created, revoked")
    listing.add_argument("--data-dir", type=Path, help="the service's data directory (default ./data)")
    listing.set_defaults(handler=handle_keys_list)
    revoke = key_commands.add_parser("revoke", help="revoke a key by its id (the 16 hex digits after 'fs_')")
    revoke.add_argument("key_id")
    revoke.add_argument("--data-dir", type=Path, help="the service's data directory (default ./data)")
    revoke.set_defaults(handler=handle_keys_revoke)


def _key_store(runtime: CommandRuntime) -> KeyStore:
    from api.server import key_store

    return key_store(runtime.settings)


def handle_keys_list(args: argparse.Namespace, runtime: CommandRuntime) -> int:
    store = _key_store(runtime)
    try:
        keys = store.list()
    finally:
        store.close()
    for key in keys:
        state = f"revoked {key.revoked_at}" if key.revoked_at else "active"
        print(f"{key.key_id}  org={key.org}  role={key.role}  created={key.created_at}  {state}  {key.label}".rstrip(),
              file=runtime.stdout)
    return EXIT_OK


def handle_keys_revoke(args: argparse.Namespace, runtime: CommandRuntime) -> int:
    store = _key_store(runtime)
    try:
        key = store.revoke(args.key_id)
    except KeyError:
        print(f"feltsense keys revoke: no key with id {args.key_id!r} (see `feltsense keys list`)",
              file=runtime.stderr)
        return EXIT_INVALID
    finally:
        store.close()
    print(f"revoked {key.key_id} (org {key.org}, role {key.role}) at {key.revoked_at}; it authenticates nothing now",
          file=runtime.stdout)
    return EXIT_OK


def handle_keys_create(args: argparse.Namespace, runtime: CommandRuntime) -> int:
    store = _key_store(runtime)
    try:
        token = store.create(args.org, args.role, label=args.label)
    except ValueError as exc:
        print(f"feltsense keys create: {exc}", file=runtime.stderr)
        return EXIT_INVALID
    finally:
        store.close()
    print(token, file=runtime.stdout)
    print(f"(org {args.org}, role {args.role}; stored hashed: this is the only time it is shown)",
          file=runtime.stderr)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m api.cli serve|worker|keys ...``: the service's commands without the evaluation ones."""
    parser = argparse.ArgumentParser(prog="feltsense", description="The feltsense service's commands.")
    add_commands(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    args = parser.parse_args(argv)
    try:
        settings = settings_for(args)
    except ValueError as exc:
        print(f"feltsense {args.command}: invalid settings: {exc}", file=sys.stderr)
        return EXIT_INVALID
    handler: Handler = args.handler
    return handler(args, Runtime(stdout=sys.stdout, stderr=sys.stderr, settings=settings))


if __name__ == "__main__":
    raise SystemExit(main())
