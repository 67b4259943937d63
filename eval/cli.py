"""The ``feltsense`` console script: the entry point, and the evaluation and benchmark commands.

The service's commands (``serve``, ``worker``, ``keys``) live with the service, in ``api/cli.py``; this parser
adds them (eval may import the API; nothing imports eval). ``main`` builds the run's one ``Settings`` (the
FELTSENSE_* environment under the command's flags, ``api.cli.settings_for``) once the arguments parse, and hands
it to every handler in ``Runtime``; a command that needs a variant derives it with ``model_copy(update=...)``.

Each subcommand is a pair: an ``_add_<name>`` function that declares its arguments and sets ``handler``, and
the handler, ``handler(args, runtime) -> exit status``. To add one (``serve``, ``bench scorer``, ...), write
the pair and call the ``_add_`` function from ``build_parser``. Heavy imports (models, servers) go inside the
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
import json
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from api.cli import add_commands, settings_for

if TYPE_CHECKING:
    from engine.settings import Settings
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
    settings: Settings
    """The run's one settings object; handlers pass it (or a ``model_copy`` of it) down."""
    engine_factory: EngineFactory | None = None
    """For ``eval run``; None builds the real engines (loading the models) once the transcripts are valid."""


Handler = Callable[[argparse.Namespace, Runtime], int]


def _wrote_json(path: Path, document: object, runtime: Runtime) -> bool:
    """Write ``document`` as indented JSON to ``path``; False (and the reason on stderr) when it cannot be written."""
    try:
        path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        print(f"cannot write {path}: {exc}", file=runtime.stderr)
        return False
    return True


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
    _add_eval(commands)
    _add_bench(commands)
    return parser


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
    recall.add_argument("--window", type=int, nargs="+", default=[0, 6], metavar="LINES",
                        help="lines of conversation passed with each recall (several values run side by side)")
    recall.add_argument("--store", nargs="+", choices=["embedded", "weaviate"], default=["embedded"],
                        help="stores to measure side by side in one run")
    recall.add_argument("--weaviate-url", help="a running Weaviate server's HTTP address")
    recall.add_argument("--weaviate-grpc-port", type=int, default=50051)
    recall.add_argument("--json", action="store_true", help="end with one JSON object per size, the last line last")
    recall.set_defaults(handler=handle_bench_recall)
    _add_bench_serve(bench_commands)
    classifier = bench_commands.add_parser(
        "classifier", help="write-time classification of a 20-turn session: the session classifier beside v1")
    classifier.add_argument("--iterations", type=int, default=50)
    classifier.add_argument("--json", action="store_true", help="end with one JSON object on the last line")
    classifier.set_defaults(handler=handle_bench_classifier)


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


def handle_bench_classifier(args: argparse.Namespace, runtime: Runtime) -> int:
    from eval.bench import bench_classifier, print_result

    print_result("classifier", bench_classifier(iterations=args.iterations), as_json=args.json)
    return 0


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
        print_result(f"recall on {result['store']} at {result['memories']} memories, {result['window']}-line window "
                     "(milliseconds)", result,
                     as_json=False)
        runtime.stdout.flush()

    results = run_recall_benchmarks(
        args.memories, args.store, queries=args.queries, settings=runtime.settings, weaviate=server,
        windows=args.window, progress=lambda msg: print(msg, file=runtime.stderr, flush=True), on_result=show,
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


def _add_eval(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    evaluate = commands.add_parser("eval", help="evaluate the engine", description="Evaluate the engine.")
    eval_commands = evaluate.add_subparsers(dest="eval_command", required=True, metavar="COMMAND")

    run = eval_commands.add_parser(
        "run",
        help="replay tester transcripts and check their probes",
        description=(
            "Replay tester transcripts (format 1, see ../shared/transcripts/FORMAT.md), each into a fresh, "
            "empty memory, and check every probe. Nothing is written unless --json or --html names a file (a bare "
            "name is in the working directory). Exit status: 0 all probes passed, 1 some failed, 2 a transcript is "
            "invalid (nothing runs), 3 the run broke off (an engine error, or a report could not be written)."
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
    _add_standing_rules(eval_commands)
    _add_tone_thresholds(eval_commands)
    _add_classifier_eval(eval_commands)
    _add_facts_eval(eval_commands)
    _add_anchors_eval(eval_commands)
    _add_window_eval(eval_commands)


def _add_window_eval(eval_commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    window = eval_commands.add_parser(
        "window", help="window recall: the message alone, the conversation window, two cosine baselines",
        description=(
            "Ingest each user's memories into a fresh embedded engine and ask every probe four ways in one run: "
            "recall with the message alone (window=[]), recall with the conversation window, and plain cosine "
            "over the memories with the message, or the last three lines, as query. Reports hit@1/3/6 and MRR "
            "(overall and per group), the top tier of probes expecting no memory, and per tier the share of "
            "results that were expected. --set dev (eval/data/recall_dev.yaml) is the development set the window "
            "constants are chosen on (--sweep); --set esconv builds probes from ESConv (evaluation only: report "
            "it, choose nothing on it). Exit status 2 when the data is missing or malformed."
        ),
    )
    window.add_argument("--set", choices=["dev", "esconv"], default="dev", dest="source",
                        help="the hand-written development set (default) or ESConv")
    window.add_argument("--split", choices=["test", "valid"], default="test", help="ESConv's split (default test)")
    window.add_argument("--data", type=Path, metavar="PATH",
                        help="the dev set's YAML (default eval/data/recall_dev.yaml) or the folder holding "
                             "ESConv's {test,valid}.jsonl (default ../shared/data/esconv)")
    window.add_argument("--limit", type=int, metavar="N",
                        help="only the first N users (dev) or dialogues (ESConv), for a quick run")
    window.add_argument("--sweep", action="store_true",
                        help="dev set only: also score the window method over a grid of window_vector_weight, "
                             "window_lexical_weight and window_turns")
    window.add_argument("--calibrate", action="store_true",
                        help="dev set only: also fit the relevance tiers' calibration (tier_intercept, "
                             "tier_fused_weight, tier_lead_weight) on what the window method returns")
    window.add_argument("--json", type=Path, metavar="FILE", dest="json_path", help="also write the results as JSON")
    window.set_defaults(handler=handle_eval_window)


def handle_eval_window(args: argparse.Namespace, runtime: Runtime) -> int:
    def fail(message: str) -> int:
        print(f"feltsense eval window: {message}", file=runtime.stderr)
        return EXIT_INVALID

    if args.calibrate and args.source != "dev":
        return fail("--calibrate fits constants, so it runs on the development set only (--set dev); ESConv is "
                    "evaluation only")
    if args.sweep and args.source != "dev":
        return fail("--sweep chooses constants, so it runs on the development set only (--set dev); ESConv is "
                    "evaluation only")
    if args.limit is not None and args.limit < 1:
        return fail("--limit must be at least 1")
    from eval.window_eval import DEV_SET, ESCONV_DIR, WindowDataError, measure

    data = args.data if args.data is not None else (DEV_SET if args.source == "dev" else ESCONV_DIR)
    if not data.exists():
        return fail(f"no data at {data}")
    try:
        result = measure(args.source, settings=runtime.settings, data=args.data, split=args.split, limit=args.limit,
                         sweep=args.sweep, calibrate=args.calibrate, out=runtime.stdout, err=runtime.stderr)
    except WindowDataError as exc:
        return fail(str(exc))
    except Exception:
        traceback.print_exc(file=runtime.stderr)
        print(f"the run broke off; exit status {EXIT_ERROR}", file=runtime.stderr)
        return EXIT_ERROR
    if args.json_path is not None and not _wrote_json(args.json_path, result, runtime):
        return EXIT_ERROR
    return EXIT_OK


def _add_classifier_eval(eval_commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    classifier = eval_commands.add_parser(
        "classifier", help="the write-time classifiers (default, v1, VADER) on every emotion evaluation set",
        description=(
            "Score the engine's default classifier, the frozen v1 and VADER in one run on every emotion-labelled "
            "set in the data folder (register macro-F1, valence and intensity Pearson r where a set has them); "
            "each classifier is called once per session, as at write time. Sets (eval/emotion_sets.py): "
            "goemotions, emobank, grief-check, xed, emorynlp, meld, dailydialog, emocontext, esconv, "
            "empatheticdialogues, isear, crowdflower. Exit status 2 when the data is missing."
        ),
    )
    classifier.add_argument("--data", type=Path, default=Path("../shared/data"), metavar="PATH",
                            help="the folder holding goemotions/, emobank/, esconv/, ...")
    classifier.add_argument("--cache", type=Path, default=Path(".cache/classifier"), metavar="DIR",
                            help="embedding cache (shared with training)")
    classifier.add_argument("--sets", metavar="A,B,C", help="only these sets (default: every set the data holds)")
    classifier.add_argument("--limit", type=int, metavar="N",
                            help="at most N sessions per set, a fixed-seed sample (for a quick run)")
    classifier.add_argument("--json", type=Path, metavar="FILE", dest="json_path", help="also write JSON")
    classifier.set_defaults(handler=handle_eval_classifier)


def handle_eval_classifier(args: argparse.Namespace, runtime: Runtime) -> int:
    from eval.emotion_sets import SETS, EmotionDataError, missing_sets

    def fail(message: str) -> int:
        print(f"feltsense eval classifier: {message}", file=runtime.stderr)
        return EXIT_INVALID

    if args.limit is not None and args.limit < 1:
        return fail("--limit must be at least 1")
    if args.sets is not None:
        names = [name.strip() for name in args.sets.split(",") if name.strip()]
        unknown = [name for name in names if name not in SETS]
        if unknown or not names:
            return fail(f"unknown set(s) {', '.join(unknown) or '(none given)'}; known: {', '.join(SETS)}")
        missing = missing_sets(names, args.data)
        if missing:
            return fail(f"{args.data} does not hold {', '.join(f'{m}/' for m in missing)}")
    else:
        absent = set(missing_sets(SETS, args.data))
        if absent >= {name for name, spec in SETS.items() if spec.folder is not None}:
            return fail(f"{args.data} does not hold any evaluation set ({', '.join(f'{m}/' for m in sorted(absent))})")
        if absent:
            print(f"feltsense eval classifier: {args.data} does not hold {', '.join(sorted(absent))}; "
                  "scoring the other sets", file=runtime.stderr)
        names = [name for name in SETS if name not in absent]

    from eval.classifier_eval import evaluate_sets, log, render, shipped_classifiers

    try:
        log("loading the classifiers...")
        report = evaluate_sets(shipped_classifiers(runtime.settings), names, data_dir=args.data, cache_dir=args.cache,
                               limit=args.limit, progress=log)
    except EmotionDataError as exc:
        return fail(str(exc))
    except Exception:
        traceback.print_exc(file=runtime.stderr)
        print(f"the run broke off; exit status {EXIT_ERROR}", file=runtime.stderr)
        return EXIT_ERROR
    print(render(report), file=runtime.stdout)
    if args.sets is None:
        from eval.classifier_eval import check_set_scores, render_check

        report["handwritten_check"] = check_set_scores(shipped_classifiers(runtime.settings), args.cache)
        print("\n" + render_check(report["handwritten_check"]), file=runtime.stdout)
    if args.json_path is not None and not _wrote_json(args.json_path, report, runtime):
        return EXIT_ERROR
    return EXIT_OK


def _add_facts_eval(eval_commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    # eval.facts_eval imports the engine: its defaults are resolved in the handler, so the parser stays instant.
    facts = eval_commands.add_parser(
        "facts", help="the fact extractor on LoCoMo: v1 and v2 recall of its observations, sample precision",
        description=(
            "Run the frozen v1 fact extractor and the current one over every LoCoMo turn and report, for each, "
            "recall of LoCoMo's own observations (all, and those of the kinds facts are for) on conversations 0-4 "
            "(tuned on) and 5-9 (held out), and precision on the hand-checked sample. Exit status 2 when the data "
            "is missing."
        ),
    )
    facts.add_argument("--data", type=Path, default=Path("../shared/data/locomo"), metavar="PATH",
                       help="the LoCoMo folder or its locomo10.json")
    facts.add_argument("--sample", type=Path, metavar="FILE",
                       help="the hand-checked precision sample (JSON lines; default "
                            "eval/data/facts_precision_sample.jsonl)")
    facts.add_argument("--draw-sample", type=int, nargs=2, metavar=("V1", "V2"),
                       help="draw this many facts of v1's and of v2's (eval.facts_eval.SAMPLE_SEED) into --sample for "
                            "judging by hand, keeping the judgements already there; then report")
    facts.add_argument("--json", type=Path, metavar="FILE", dest="json_path", help="also write JSON")
    facts.set_defaults(handler=handle_eval_facts)


def handle_eval_facts(args: argparse.Namespace, runtime: Runtime) -> int:
    from eval.facts_eval import (
        DEFAULT_SAMPLE,
        EXTRACTORS,
        FactsDataError,
        draw_sample,
        evaluate,
        extractions,
        load,
        read_sample,
        render,
        write_sample,
    )

    sample = args.sample if args.sample is not None else DEFAULT_SAMPLE
    try:
        if args.draw_sample is not None:
            conversations = load(args.data)
            found = {name: extractions(conversations, extract) for name, extract in EXTRACTORS.items()}
            sizes = dict(zip(EXTRACTORS, args.draw_sample, strict=True))
            write_sample(draw_sample(found, sizes, read_sample(sample)), sample)
        report = evaluate(args.data, sample)
    except FactsDataError as exc:
        print(f"feltsense eval facts: {exc}", file=runtime.stderr)
        return EXIT_INVALID
    print(render(report), file=runtime.stdout)
    if args.json_path is not None and not _wrote_json(args.json_path, report, runtime):
        return EXIT_ERROR
    return EXIT_OK


def _add_anchors_eval(eval_commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    anchors = eval_commands.add_parser(
        "anchors", help="anchor extraction on hand-labelled user turns: precision, recall, F1 of v2 beside v1",
        description=(
            "Score the shipped anchor extractor (traces.anchors, v2) and the frozen v1 in one run on the "
            "hand-labelled user turns of eval/data/anchors_labelled.jsonl (see anchors_labelled.md): micro "
            "precision, recall and F1 over anchors, matched whole and case-insensitively, on the dev lines (tuned "
            "on) and the test lines (scored only). The turns are read from the evaluation sets in the data folder. "
            "Exit status 2 when the data or the labelled file is missing."
        ),
    )
    anchors.add_argument("--data", type=Path, default=Path("../shared/data"), metavar="PATH",
                         help="the folder holding esconv/, empatheticdialogues/, dailydialog/ and locomo/")
    anchors.add_argument("--labelled", type=Path, metavar="FILE",
                         help="the labelled turns (default: eval/data/anchors_labelled.jsonl)")
    anchors.add_argument("--show", choices=["dev", "test"],
                         help="also list each extractor's errors on that split, with the turns")
    anchors.add_argument("--json", type=Path, metavar="FILE", dest="json_path",
                         help="also write the figures and errors as JSON (without the turns' text)")
    anchors.set_defaults(handler=handle_eval_anchors)


def handle_eval_anchors(args: argparse.Namespace, runtime: Runtime) -> int:
    from eval.anchors_eval import LABELLED, LabelledDataError, evaluate, render

    labelled = args.labelled if args.labelled is not None else LABELLED
    if not labelled.is_file():
        print(f"feltsense eval anchors: no labelled file at {labelled}", file=runtime.stderr)
        return EXIT_INVALID
    try:
        report = evaluate(labelled, args.data)
    except LabelledDataError as exc:
        print(f"feltsense eval anchors: {exc}", file=runtime.stderr)
        return EXIT_INVALID
    print(render(report, show=args.show), file=runtime.stdout)
    shown = {k: v for k, v in report.items() if k != "texts"}
    if args.json_path is not None and not _wrote_json(args.json_path, shown, runtime):
        return EXIT_ERROR
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
    from eval.locomo import measure

    return _run_locomo(args, runtime, "locomo", measure, missing="; skipped")


def _run_locomo(args: argparse.Namespace, runtime: Runtime, command: str,
                measure: Callable[..., dict[str, Any]], *, missing: str = "") -> int:
    """One LoCoMo-reading command: check the arguments, run ``measure``, and write its JSON if asked."""
    from eval.locomo import LocomoDataError

    if not args.data.exists():
        print(f"feltsense eval {command}: no LoCoMo data at {args.data}{missing}", file=runtime.stderr)
        return EXIT_INVALID
    if args.limit_conversations is not None and args.limit_conversations < 1:
        print(f"feltsense eval {command}: --limit-conversations must be at least 1", file=runtime.stderr)
        return EXIT_INVALID
    try:
        result = measure(args.data, settings=runtime.settings, limit=args.limit_conversations, out=runtime.stdout,
                         err=runtime.stderr)
    except LocomoDataError as exc:
        print(f"feltsense eval {command}: {exc}", file=runtime.stderr)
        return EXIT_INVALID
    except Exception:
        traceback.print_exc(file=runtime.stderr)
        print(f"the run broke off; exit status {EXIT_ERROR}", file=runtime.stderr)
        return EXIT_ERROR
    if args.json_path is not None and not _wrote_json(args.json_path, result, runtime):
        return EXIT_ERROR
    return EXIT_OK


def _add_standing_rules(eval_commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    standing = eval_commands.add_parser(
        "standing-rules", help="the standing tone rules in force at the end of each LoCoMo conversation",
        description=(
            "Ingest each LoCoMo conversation into a fresh engine with the default profile and list, per "
            "conversation, the standing tone rules in force a day after its last turn (count, register, intensity, "
            "anchors, the leading memory's words) and the resolutions the write-time pass recorded. Exit status 2 "
            "when the data is missing."
        ),
    )
    standing.add_argument("--data", type=Path, default=Path("../shared/data/locomo"), metavar="PATH",
                          help="the LoCoMo folder (locomo10.json, audit/errors.json) or its locomo10.json")
    standing.add_argument("--json", type=Path, metavar="FILE", dest="json_path", help="also write JSON")
    standing.add_argument("--limit-conversations", type=int, metavar="N", help="only the first N conversations")
    standing.set_defaults(handler=handle_eval_standing_rules)


def handle_eval_standing_rules(args: argparse.Namespace, runtime: Runtime) -> int:
    from eval.standing_rules import measure

    return _run_locomo(args, runtime, "standing-rules", measure)


def _add_tone_thresholds(eval_commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    thresholds = eval_commands.add_parser(
        "tone-thresholds", help="choose the tone bar and the standing bar on ESConv valid; score on test and ISEAR",
        description=(
            "Run the shipped classifier over ESConv (the seeker's turns of each session, in one call) and ISEAR, "
            "choose ToneParams.min_intensity (Youden's J, intense 4-5 vs 1-3) and ToneParams.standing_min_intensity "
            "(>= 90%% of sessions above it rated 5) on ESConv valid, and print them with their scores on ESConv test "
            "and ISEAR. The classifier is the one the default settings build (FELTSENSE_CLASSIFIER=local-v1 scores "
            "the previous one). Evaluation data only: nothing but these two numbers is chosen on it. Exit status 2 "
            "when the data is missing."
        ),
    )
    thresholds.add_argument("--data", type=Path, default=Path("../shared/data"), metavar="PATH",
                            help="the folder holding esconv/ and isear/")
    thresholds.add_argument("--cache", type=Path, default=Path(".cache/classifier"), metavar="DIR",
                            help="embedding cache (shared with training and eval classifier)")
    thresholds.add_argument("--json", type=Path, metavar="FILE", dest="json_path", help="also write JSON")
    thresholds.set_defaults(handler=handle_eval_tone_thresholds)


def handle_eval_tone_thresholds(args: argparse.Namespace, runtime: Runtime) -> int:
    needed = [args.data / "esconv" / f"{split}.jsonl" for split in ("valid", "test")] + [args.data / "isear" /
                                                                                        "isear.csv"]
    missing = [str(path) for path in needed if not path.is_file()]
    if missing:
        print(f"feltsense eval tone-thresholds: missing {', '.join(missing)}", file=runtime.stderr)
        return EXIT_INVALID
    from eval.tone_thresholds import evaluate, render

    try:
        report = evaluate(args.data, args.cache, settings=runtime.settings)
    except Exception:
        traceback.print_exc(file=runtime.stderr)
        print(f"the run broke off; exit status {EXIT_ERROR}", file=runtime.stderr)
        return EXIT_ERROR
    print(render(report), file=runtime.stdout)
    if args.json_path is not None and not _wrote_json(args.json_path, report, runtime):
        return EXIT_ERROR
    return EXIT_OK


def handle_eval_run(args: argparse.Namespace, runtime: Runtime) -> int:
    from engine.transcripts.format import TranscriptInvalid
    from eval.transcripts import default_engine_factory, load_transcripts, run_transcripts

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
            factory = default_engine_factory(runtime.settings)
        report = run_transcripts(transcripts, engine_factory=factory, out=runtime.stdout)
    except Exception:
        traceback.print_exc(file=runtime.stderr)
        print(f"the run broke off; exit status {EXIT_ERROR}", file=runtime.stderr)
        return EXIT_ERROR
    print(report.summary_line, file=runtime.stdout)

    # Reports go only where --json / --html say (relative to the working directory); the full path goes to
    # stderr, so stdout still ends on the summary line.
    if args.json_path is not None:
        if not _wrote_json(args.json_path, report.to_json(), runtime):
            return EXIT_ERROR
        print(f"wrote the JSON report to {args.json_path.resolve()}", file=runtime.stderr)
    if args.html_path is not None:
        from eval.report import write_html

        try:
            write_html(report, args.html_path)
        except OSError as exc:
            print(f"cannot write {args.html_path}: {exc}", file=runtime.stderr)
            return EXIT_ERROR
        print(f"wrote the HTML report to {args.html_path.resolve()}", file=runtime.stderr)
    return EXIT_OK if report.failed == 0 else EXIT_FAILED


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
