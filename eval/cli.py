"""The ``feltsense`` console script.

Each subcommand is a pair: an ``_add_<name>`` function that declares its arguments and sets ``handler``, and
the handler, ``handler(args, runtime) -> exit status``. To add one (``serve``, ``bench scorer``, ...), write
the pair and call the ``_add_`` function from ``build_parser``. Heavy imports (models, servers) go inside the
handler, so ``feltsense --help`` and argument errors stay instant.

    feltsense serve [--port N] [--data-dir DIR]   serve the API on the embedded default
                    [--dev]                       ... with a development key, made once (DATA_DIR/dev-key)
    feltsense worker [--burst]                    run the arq worker (write-time jobs; needs FELTSENSE_REDIS_URL)
    feltsense eval run PATH... [--json FILE]     replay tester transcripts (../shared/transcripts/FORMAT.md)
    feltsense bench scorer [--json]              stage two, 40 -> 6, against a plain-Python reference
    feltsense bench recall --memories N [--json] recall latency at N memories in one partition
    feltsense bench serve [--url U] [--json]     the HTTP service on loopback under concurrent recalls
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from api.auth import KeyStore
    from eval.transcripts import EngineFactory

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INVALID = 2
EXIT_ERROR = 3
"""The run broke off (an engine or model error, or the JSON could not be written). Python's own status for a
crash is 1, which reads as "some probes failed", so a crash gets a status of its own."""


@dataclass(frozen=True)
class Runtime:
    """What ``main`` hands every handler: where to write, and the seams tests replace."""

    stdout: TextIO
    stderr: TextIO
    engine_factory: EngineFactory | None = None
    """For ``eval run``; None builds the real engines (loading the models) once the transcripts are valid."""


Handler = Callable[[argparse.Namespace, Runtime], int]


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
    _add_serve(commands)
    _add_worker(commands)
    _add_eval(commands)
    _add_bench(commands)
    _add_keys(commands)
    return parser


def _add_keys(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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


def _key_store_for(args: argparse.Namespace) -> KeyStore:
    from api.server import key_store
    from engine.settings import Settings

    return key_store(Settings() if args.data_dir is None else Settings(data_dir=args.data_dir))


def handle_keys_list(args: argparse.Namespace, runtime: Runtime) -> int:
    store = _key_store_for(args)
    try:
        keys = store.list()
    finally:
        store.close()
    for key in keys:
        state = f"revoked {key.revoked_at}" if key.revoked_at else "active"
        print(f"{key.key_id}  org={key.org}  role={key.role}  created={key.created_at}  {state}  {key.label}".rstrip(),
              file=runtime.stdout)
    return EXIT_OK


def handle_keys_revoke(args: argparse.Namespace, runtime: Runtime) -> int:
    store = _key_store_for(args)
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


def handle_keys_create(args: argparse.Namespace, runtime: Runtime) -> int:
    store = _key_store_for(args)
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


def _add_serve(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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


def handle_serve(args: argparse.Namespace, runtime: Runtime) -> int:
    from api.server import serve
    from engine.settings import Settings

    overrides = {k: v for k, v in (("host", args.host), ("port", args.port), ("data_dir", args.data_dir))
                 if v is not None}
    serve(Settings(**overrides), dev=args.dev)
    return EXIT_OK


def _add_worker(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    worker = commands.add_parser(
        "worker", help="run the arq worker for the write-time jobs",
        description="Run the arq worker: the write-time jobs the API queues in Redis, and the nightly maintenance "
        "(settings from FELTSENSE_* variables, as for serve; FELTSENSE_REDIS_URL is required).",
    )
    worker.add_argument("--burst", action="store_true", help="run the queued jobs, then exit")
    worker.set_defaults(handler=handle_worker)


def handle_worker(args: argparse.Namespace, runtime: Runtime) -> int:
    from api.worker import run
    from engine.errors import ConfigurationError
    from engine.settings import Settings

    try:
        run(Settings(), burst=args.burst)
    except ConfigurationError as exc:
        print(f"feltsense worker: {exc}", file=runtime.stderr)
        return EXIT_INVALID
    return EXIT_OK


def _add_bench(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bench = commands.add_parser("bench", help="benchmarks (medians and p99s, beside a baseline)")
    bench_commands = bench.add_subparsers(dest="bench_command", required=True, metavar="COMMAND")
    scorer = bench_commands.add_parser("scorer", help="stage two, 40 -> 6, against the plain-Python reference")
    scorer.add_argument("--iterations", type=int, default=5000)
    scorer.add_argument("--json", action="store_true", help="end with one JSON object on the last line")
    scorer.set_defaults(handler=handle_bench_scorer)
    recall = bench_commands.add_parser("recall", help="recall latency, the query embedding included")
    recall.add_argument("--memories", type=int, nargs="+", default=[10_000], metavar="N",
                        help="memories in the one partition (several values run one after another)")
    recall.add_argument("--queries", type=int, default=200)
    recall.add_argument("--store", nargs="+", choices=["embedded", "weaviate"], default=["embedded"],
                        help="stores to measure side by side in one run")
    recall.add_argument("--weaviate-url", help="a running Weaviate server's HTTP address")
    recall.add_argument("--weaviate-grpc-port", type=int, default=50051)
    recall.add_argument("--json", action="store_true", help="end with one JSON object per size, the last line last")
    recall.set_defaults(handler=handle_bench_recall)
    _add_bench_serve(bench_commands)


def _add_bench_serve(bench_commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = bench_commands.add_parser(
        "serve", help="the HTTP service under concurrent recalls: throughput and latency percentiles",
        description=(
            "Start the service on a free loopback port with a temporary data directory (or use the one at --url), "
            "load it through the API, then send a bounded, seeded number of concurrent recalls across many users: "
            "first with --concurrency always in flight (saturation throughput), then on a fixed schedule of --rate "
            "per second with at most --concurrency in flight (latency percentiles). Exit status 1 when any recall "
            "failed."
        ),
    )
    serve.add_argument("--users", type=int, default=100)
    serve.add_argument("--memories-per-user", type=int, default=1000)
    serve.add_argument("--concurrency", type=int, default=16, help="recalls in flight at once")
    serve.add_argument("--requests", type=int, default=2000,
                       help="recalls per drive (saturation, then paced); the run then stops")
    serve.add_argument("--rate", type=float, default=150.0,
                       help="recalls per second offered by the paced drive (latency is measured there)")
    serve.add_argument("--duration", type=float, metavar="SECONDS",
                       help="soak: the paced drive for this long, with percentiles, errors and memory per window")
    serve.add_argument("--window", type=float, default=60.0, metavar="SECONDS", help="the soak's reporting window")
    serve.add_argument("--max-growth-mb", type=float, default=64.0,
                       help="the soak fails when the service's memory grows more than this from first to last window")
    serve.add_argument("--seed", type=int, default=13)
    serve.add_argument("--url", help="drive the service already running here instead of starting one")
    serve.add_argument("--key", help="the API key for --url (a self-started service's development key is found)")
    serve.add_argument("--json", action="store_true", help="end with one JSON object on the last line")
    serve.set_defaults(handler=handle_bench_serve)


def handle_bench_scorer(args: argparse.Namespace, runtime: Runtime) -> int:
    from eval.bench import bench_scorer, print_result

    print_result("stage two, 40 -> 6 (microseconds)", bench_scorer(iterations=args.iterations), as_json=args.json)
    return EXIT_OK


def handle_bench_serve(args: argparse.Namespace, runtime: Runtime) -> int:
    from eval.bench import print_result
    from eval.serve_bench import ServeBenchConfig, bench_serve

    try:
        config = ServeBenchConfig(users=args.users, memories_per_user=args.memories_per_user,
                                  concurrency=args.concurrency, requests=args.requests, rate=args.rate,
                                  seed=args.seed, url=args.url, key=args.key, duration_s=args.duration,
                                  window_s=args.window, max_growth_mb=args.max_growth_mb)
    except ValueError as exc:
        print(f"feltsense bench serve: {exc}", file=runtime.stderr)
        return EXIT_INVALID
    try:
        result = bench_serve(config, progress=lambda msg: print(msg, file=runtime.stderr, flush=True))
    except KeyboardInterrupt:
        print("interrupted; the service it started was stopped", file=runtime.stderr)
        return 130
    except Exception:
        traceback.print_exc(file=runtime.stderr)
        print(f"the run broke off; exit status {EXIT_ERROR}", file=runtime.stderr)
        return EXIT_ERROR
    print_result("the service over loopback, concurrent recalls (milliseconds)", result, as_json=args.json)
    return EXIT_OK if result["errors"] == 0 and result.get("within_bound", True) else EXIT_FAILED


def handle_bench_recall(args: argparse.Namespace, runtime: Runtime) -> int:
    from eval.bench import print_result, run_recall_benchmarks

    server = None
    if "weaviate" in args.store:
        if args.weaviate_url is None:
            print("bench recall --store weaviate needs --weaviate-url and --weaviate-grpc-port", file=runtime.stderr)
            return EXIT_INVALID
        server = (args.weaviate_url, args.weaviate_grpc_port)
    def show(result: dict[str, Any]) -> None:
        print_result(f"recall on {result['store']} at {result['memories']} memories (milliseconds)", result,
                     as_json=False)
        runtime.stdout.flush()

    results = run_recall_benchmarks(
        args.memories, args.store, queries=args.queries, weaviate=server,
        progress=lambda msg: print(msg, file=runtime.stderr, flush=True), on_result=show,
    )
    if len(results) > 1:
        print("side by side (median / p99 ms):")
        for size in args.memories:
            row = [r for r in results if r["memories"] == size]
            print(f"  {size:>8}  " + "   ".join(f"{r['store']}: {r['median_ms']:.2f} / {r['p99_ms']:.2f}" for r in row))
    if args.json:
        for result in results:
            print(json.dumps(result))
    return EXIT_OK


def _add_eval(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    evaluate = commands.add_parser("eval", help="evaluate the engine", description="Evaluate the engine.")
    eval_commands = evaluate.add_subparsers(dest="eval_command", required=True, metavar="COMMAND")

    run = eval_commands.add_parser(
        "run",
        help="replay tester transcripts and check their probes",
        description=(
            "Replay tester transcripts (format 1, see ../shared/transcripts/FORMAT.md), each into a fresh, "
            "empty memory, and check every probe. Exit status: 0 all probes passed, 1 some failed, 2 a "
            "transcript is invalid (nothing runs), 3 the run broke off (an engine error)."
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
    run.add_argument(
        "--html", type=Path, metavar="FILE", dest="html_path",
        help="also write a self-contained HTML page: every probe, its memories' score components, salience plots",
    )
    run.set_defaults(handler=handle_eval_run)
    _add_locomo(eval_commands)
    _add_classifier_eval(eval_commands)


def _add_classifier_eval(eval_commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    classifier = eval_commands.add_parser(
        "classifier", help="the offline classifier's held-out scores beside VADER",
        description=(
            "Score the shipped offline classifier on GoEmotions' and EmoBank's test splits, with VADER as the "
            "lexicon baseline in the same run. Exit status 2 when the data is missing."
        ),
    )
    classifier.add_argument("--data", type=Path, default=Path("../shared/data"), metavar="PATH",
                            help="the folder holding goemotions/ and emobank/")
    classifier.add_argument("--cache", type=Path, default=Path(".cache/classifier"), metavar="DIR",
                            help="embedding cache (shared with training)")
    classifier.add_argument("--json", type=Path, metavar="FILE", dest="json_path", help="also write JSON")
    classifier.set_defaults(handler=handle_eval_classifier)


def handle_eval_classifier(args: argparse.Namespace, runtime: Runtime) -> int:
    if not (args.data / "goemotions").is_dir() or not (args.data / "emobank").is_dir():
        print(f"feltsense eval classifier: {args.data} does not hold goemotions/ and emobank/", file=runtime.stderr)
        return EXIT_INVALID
    from eval.classifier_eval import evaluate_shipped, render

    report = evaluate_shipped(args.data, args.cache)
    print(render(report), file=runtime.stdout)
    if args.json_path is not None:
        args.json_path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return EXIT_OK


def _add_locomo(eval_commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    locomo = eval_commands.add_parser(
        "locomo", help="evidence recall@k on LoCoMo: dense, BM25, stage one, full recall",
        description=(
            "Ingest each LoCoMo conversation into a fresh engine and measure evidence recall@1/5/6/10, overall "
            "(categories 1-4), per category and on the audit-corrected evidence, for four methods in one run: "
            "dense, bm25, stage1 (hybrid search) and stage2 (full recall). Exit status 2 when the data is missing."
        ),
    )
    locomo.add_argument("--data", type=Path, required=True, metavar="PATH",
                        help="the LoCoMo folder (locomo10.json, audit/errors.json) or its locomo10.json")
    locomo.add_argument("--json", type=Path, metavar="FILE", dest="json_path", help="also write the results as JSON")
    locomo.add_argument("--limit-conversations", type=int, metavar="N", help="only the first N conversations")
    locomo.set_defaults(handler=handle_eval_locomo)


def handle_eval_locomo(args: argparse.Namespace, runtime: Runtime) -> int:
    from eval.locomo import LocomoDataError, measure

    if not args.data.exists():
        print(f"feltsense eval locomo: no LoCoMo data at {args.data}; skipped", file=runtime.stderr)
        return EXIT_INVALID
    if args.limit_conversations is not None and args.limit_conversations < 1:
        print("feltsense eval locomo: --limit-conversations must be at least 1", file=runtime.stderr)
        return EXIT_INVALID
    try:
        result = measure(args.data, limit=args.limit_conversations, out=runtime.stdout, err=runtime.stderr)
    except LocomoDataError as exc:
        print(f"feltsense eval locomo: {exc}", file=runtime.stderr)
        return EXIT_INVALID
    except Exception:
        traceback.print_exc(file=runtime.stderr)
        print(f"the run broke off; exit status {EXIT_ERROR}", file=runtime.stderr)
        return EXIT_ERROR
    if args.json_path is not None:
        try:
            args.json_path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            print(f"cannot write {args.json_path}: {exc}", file=runtime.stderr)
            return EXIT_ERROR
    return EXIT_OK


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

    try:
        factory = runtime.engine_factory
        if factory is None:
            print("loading the embedder and classifier...", file=runtime.stderr)
            factory = default_engine_factory()
        report = run_transcripts(transcripts, engine_factory=factory, out=runtime.stdout)
    except Exception:
        traceback.print_exc(file=runtime.stderr)
        print(f"the run broke off; exit status {EXIT_ERROR}", file=runtime.stderr)
        return EXIT_ERROR
    print(report.summary_line, file=runtime.stdout)

    if args.json_path is not None:
        try:
            args.json_path.write_text(json.dumps(report.to_json(), indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            print(f"cannot write {args.json_path}: {exc}", file=runtime.stderr)
            return EXIT_ERROR
    if args.html_path is not None:
        from eval.report import write_html

        try:
            write_html(report, args.html_path)
        except OSError as exc:
            print(f"cannot write {args.html_path}: {exc}", file=runtime.stderr)
            return EXIT_ERROR
    return EXIT_OK if report.failed == 0 else EXIT_FAILED


def main(argv: Sequence[str] | None = None, *, engine_factory: EngineFactory | None = None) -> int:
    """Run the ``feltsense`` command line and return its exit status; tests pass a fake ``engine_factory``."""
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    return handler(args, Runtime(stdout=sys.stdout, stderr=sys.stderr, engine_factory=engine_factory))


if __name__ == "__main__":
    raise SystemExit(main())
