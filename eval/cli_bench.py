"""The ``feltsense bench`` subcommands: each an ``_add_<name>`` function declaring its arguments, and its handler.

The handlers import the benchmarks (and through them the engine, its models and the service) only when they run.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from eval.cli_support import (
    EXIT_FAILED,
    EXIT_INVALID,
    EXIT_OK,
    Commands,
    Runtime,
    add_json_flag,
    broke_off,
    invalid,
    progress_to,
)


def add_bench(commands: Commands) -> None:
    bench = commands.add_parser("bench", help="benchmarks (medians and p99s, beside a baseline)")
    bench_commands = bench.add_subparsers(dest="bench_command", required=True, metavar="COMMAND")
    scorer = bench_commands.add_parser("scorer", help="stage two, 40 -> 6, against the plain-Python reference")
    scorer.add_argument("--iterations", type=int, default=5000)
    add_json_flag(scorer)
    scorer.set_defaults(handler=handle_bench_scorer)
    recall = bench_commands.add_parser("recall", help="recall latency, the query embedding included")
    recall.add_argument("--memories", type=int, nargs="+", default=[10_000], metavar="N",
                        help="memories in the one partition (several values run one after another)")
    recall.add_argument("--queries", type=int, default=200)
    recall.add_argument("--window", type=int, nargs="+", default=[0, 6], metavar="LINES",
                        help="lines of conversation passed with each recall (several values run side by side)")
    recall.add_argument("--store", nargs="+", choices=["embedded", "weaviate"], default=["embedded"],
                        help="stores to measure side by side in one run")
    recall.add_argument("--weaviate-url", help="a running Weaviate server's HTTP address")
    recall.add_argument("--weaviate-grpc-port", type=int, default=50051)
    add_json_flag(recall, "end with one JSON object per size, the last line last")
    recall.set_defaults(handler=handle_bench_recall)
    _add_bench_serve(bench_commands)
    classifier = bench_commands.add_parser(
        "classifier", help="write-time classification of a 20-turn session: the session classifier beside v1")
    classifier.add_argument("--iterations", type=int, default=50)
    add_json_flag(classifier)
    classifier.set_defaults(handler=handle_bench_classifier)


def _add_bench_serve(bench_commands: Commands) -> None:
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
    serve.add_argument("--rate", type=float, default=100.0,
                       help="recalls per second offered by the paced drive (latency is measured there)")
    serve.add_argument("--duration", type=float, metavar="SECONDS",
                       help="soak: the paced drive for this long, with percentiles, errors and memory per window")
    serve.add_argument("--window", type=float, default=60.0, metavar="SECONDS", help="the soak's reporting window")
    serve.add_argument("--max-growth-mb", type=float, default=64.0,
                       help="the soak fails when the service's memory grows more than this from first to last window")
    serve.add_argument("--seed", type=int, default=13)
    serve.add_argument("--url", help="drive the service already running here instead of starting one")
    serve.add_argument("--key", help="the API key for --url (a self-started service's development key is found)")
    serve.add_argument("--pid", type=int,
                       help="with --url: the service's process id, so the CPU it uses per recall is reported")
    serve.add_argument("--loaded", action="store_true",
                       help="with --url: the service already holds this run's users (the same --users, "
                            "--memories-per-user and --seed, from an earlier run's data directory); skip the load")
    add_json_flag(serve)
    serve.set_defaults(handler=handle_bench_serve)


def handle_bench_classifier(args: argparse.Namespace, runtime: Runtime) -> int:
    from eval.bench import bench_classifier, print_result

    print_result("classifier", bench_classifier(iterations=args.iterations), as_json=args.json)
    return EXIT_OK


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
                                  window_s=args.window, max_growth_mb=args.max_growth_mb,
                                  loaded=args.loaded, pid=args.pid)
    except ValueError as exc:
        return invalid(runtime, "bench serve", str(exc))
    try:
        result = bench_serve(config, progress=progress_to(runtime))
    except KeyboardInterrupt:
        print("interrupted; the service it started was stopped", file=runtime.stderr)
        return 130
    except Exception:
        return broke_off(runtime)
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
        print_result(f"recall on {result['store']} at {result['memories']} memories, {result['window']}-line window "
                     "(milliseconds)", result,
                     as_json=False)
        runtime.stdout.flush()

    results = run_recall_benchmarks(
        args.memories, args.store, queries=args.queries, settings=runtime.settings, weaviate=server,
        windows=args.window, progress=progress_to(runtime), on_result=show,
    )
    if len(results) > 1:
        print("side by side (median / p99 ms):")
        for size in args.memories:
            row = [r for r in results if r["memories"] == size]
            print(f"  {size:>8}  " + "   ".join(f"{r['store']} w{r['window']}: {r['median_ms']:.2f} / {r['p99_ms']:.2f}"
                                           for r in row))
    if args.json:
        for result in results:
            print(json.dumps(result))
    return EXIT_OK



