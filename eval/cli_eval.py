"""The ``feltsense eval`` subcommands: each an ``_add_<name>`` function declaring its arguments, and its handler.

The handlers import the evaluation modules (and through them the engine and its models) only when they run.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from eval.cli_support import (
    EXIT_ERROR,
    EXIT_FAILED,
    EXIT_INVALID,
    EXIT_OK,
    Commands,
    Runtime,
    add_cache,
    add_command,
    add_data,
    add_json_file,
    add_limit_conversations,
    broke_off,
    invalid,
    printer,
    run_guarded,
    wrote_json,
)

_LOCOMO_DATA = "the LoCoMo folder (locomo10.json, audit/errors.json) or its locomo10.json"


def add_eval(commands: Commands) -> None:
    evaluate = commands.add_parser("eval", help="evaluate the engine", description="Evaluate the engine.")
    eval_commands = evaluate.add_subparsers(dest="eval_command", required=True, metavar="COMMAND")
    _add_run(eval_commands)
    _add_locomo(eval_commands)
    _add_standing_rules(eval_commands)
    _add_tone_thresholds(eval_commands)
    _add_classifier_eval(eval_commands)
    _add_facts_eval(eval_commands)
    _add_anchors_eval(eval_commands)
    _add_window_eval(eval_commands)
    _add_consolidation(eval_commands)


def _add_run(eval_commands: Commands) -> None:
    run = add_command(
        eval_commands, "run", "replay tester transcripts and check their probes",
        "Replay tester transcripts (format 1, see ../shared/transcripts/FORMAT.md), each into a fresh, "
        "empty memory, and check every probe. Nothing is written unless --json or --html names a file (a bare "
        "name is in the working directory). Exit status: 0 all probes passed, 1 some failed, 2 a transcript is "
        "invalid (nothing runs), 3 the run broke off (an engine error, or a report could not be written).",
        handle_eval_run,
    )
    run.add_argument(
        "paths",
        nargs="+",
        type=Path,
        metavar="PATH",
        help="a transcript file, or a directory of *.yaml, *.yml and *.json transcripts",
    )
    add_json_file(run, "also write the results as JSON")
    run.add_argument(
        "--html", type=Path, metavar="FILE", dest="html_path",
        help="also write a self-contained HTML page: every probe, its memories' score components, salience plots",
    )


def _add_window_eval(eval_commands: Commands) -> None:
    window = add_command(
        eval_commands, "window", "window recall: the message alone, the conversation window, two cosine baselines",
        "Ingest each user's memories into a fresh embedded engine and ask every probe four ways in one run: "
        "recall with the message alone (window=[]), recall with the conversation window, and plain cosine "
        "over the memories with the message, or the last three lines, as query. Reports hit@1/3/6 and MRR "
        "(overall and per group), the top tier of probes expecting no memory, and per tier the share of "
        "results that were expected. --set dev (eval/data/recall_dev.yaml) is the development set the window "
        "constants are chosen on (--sweep); --set esconv builds probes from ESConv (evaluation only: report "
        "it, choose nothing on it). Exit status 2 when the data is missing or malformed.",
        handle_eval_window,
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
    add_json_file(window, "also write the results as JSON")


def handle_eval_window(args: argparse.Namespace, runtime: Runtime) -> int:
    command = "eval window"
    for flag, what in (("calibrate", "fits constants"), ("sweep", "chooses constants")):
        if getattr(args, flag) and args.source != "dev":
            return invalid(runtime, command, f"--{flag} {what}, so it runs on the development set only (--set dev); "
                                             "ESConv is evaluation only")
    if args.limit is not None and args.limit < 1:
        return invalid(runtime, command, "--limit must be at least 1")
    from eval.window_eval import DEV_SET, ESCONV_DIR, WindowDataError, measure

    data = args.data if args.data is not None else (DEV_SET if args.source == "dev" else ESCONV_DIR)
    if not data.exists():
        return invalid(runtime, command, f"no data at {data}")
    return run_guarded(
        args, runtime, command,
        lambda: measure(args.source, settings=runtime.settings, data=args.data, split=args.split, limit=args.limit,
                        sweep=args.sweep, calibrate=args.calibrate, out=runtime.stdout, err=runtime.stderr),
        data_errors=(WindowDataError,),
    )


def _add_classifier_eval(eval_commands: Commands) -> None:
    classifier = add_command(
        eval_commands, "classifier",
        "the write-time classifiers (default, v1, VADER) on every emotion evaluation set",
        "Score the engine's default classifier, the frozen v1 and VADER in one run on every emotion-labelled "
        "set in the data folder (register macro-F1, valence and intensity Pearson r where a set has them); "
        "each classifier is called once per session, as at write time. Sets (eval/emotion_sets.py): "
        "goemotions, emobank, grief-check, xed, emorynlp, meld, dailydialog, emocontext, esconv, "
        "empatheticdialogues, isear, crowdflower. Exit status 2 when the data is missing.",
        handle_eval_classifier,
    )
    add_data(classifier, "the folder holding goemotions/, emobank/, esconv/, ...", "../shared/data")
    add_cache(classifier, "embedding cache (shared with training)")
    classifier.add_argument("--sets", metavar="A,B,C", help="only these sets (default: every set the data holds)")
    classifier.add_argument("--limit", type=int, metavar="N",
                            help="at most N sessions per set, a fixed-seed sample (for a quick run)")
    add_json_file(classifier)


def handle_eval_classifier(args: argparse.Namespace, runtime: Runtime) -> int:
    from eval.emotion_sets import SETS, EmotionDataError, missing_sets

    command = "eval classifier"
    if args.limit is not None and args.limit < 1:
        return invalid(runtime, command, "--limit must be at least 1")
    if args.sets is not None:
        names = [name.strip() for name in args.sets.split(",") if name.strip()]
        unknown = [name for name in names if name not in SETS]
        if unknown or not names:
            return invalid(runtime, command,
                           f"unknown set(s) {', '.join(unknown) or '(none given)'}; known: {', '.join(SETS)}")
        missing = missing_sets(names, args.data)
        if missing:
            return invalid(runtime, command, f"{args.data} does not hold {', '.join(f'{m}/' for m in missing)}")
    else:
        absent = set(missing_sets(SETS, args.data))
        if absent >= {name for name, spec in SETS.items() if spec.folder is not None}:
            return invalid(runtime, command, f"{args.data} does not hold any evaluation set "
                                             f"({', '.join(f'{m}/' for m in sorted(absent))})")
        if absent:
            print(f"feltsense eval classifier: {args.data} does not hold {', '.join(sorted(absent))}; "
                  "scoring the other sets", file=runtime.stderr)
        names = [name for name in SETS if name not in absent]

    from eval.classifier_eval import evaluate_sets, log, render, shipped_classifiers

    def work() -> dict[str, Any]:
        log("loading the classifiers...")
        return evaluate_sets(shipped_classifiers(runtime.settings), names, data_dir=args.data, cache_dir=args.cache,
                             limit=args.limit, progress=log)

    def show(report: dict[str, Any]) -> None:
        print(render(report), file=runtime.stdout)
        if args.sets is None:
            from eval.classifier_eval import check_set_scores, render_check

            report["handwritten_check"] = check_set_scores(shipped_classifiers(runtime.settings), args.cache)
            print("\n" + render_check(report["handwritten_check"]), file=runtime.stdout)

    return run_guarded(args, runtime, command, work, data_errors=(EmotionDataError,), show=show)


def _add_facts_eval(eval_commands: Commands) -> None:
    # eval.facts_eval imports the engine: its defaults are resolved in the handler, so the parser stays instant.
    facts = add_command(
        eval_commands, "facts",
        "the fact extractor on LoCoMo: recall of its observations, sample precision",
        "Run the current fact extractor (v2) over every LoCoMo turn and report recall of LoCoMo's own "
        "observations (all, and those of the kinds facts are for) on conversations 0-4 (tuned on) and 5-9 "
        "(held out), and precision on the hand-checked sample (v2's own rows, and the retired v1's). Exit "
        "status 2 when the data is missing.",
        handle_eval_facts,
    )
    add_data(facts, "the LoCoMo folder or its locomo10.json", "../shared/data/locomo")
    facts.add_argument("--sample", type=Path, metavar="FILE",
                       help="the hand-checked precision sample (JSON lines; default "
                            "eval/data/facts_precision_sample.jsonl)")
    facts.add_argument("--draw-sample", type=int, metavar="N",
                       help="draw N facts of v2's (eval.facts_eval.SAMPLE_SEED) into --sample for judging by hand, "
                            "keeping the judgements already there and v1's rows; then report")
    add_json_file(facts)


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

    def work() -> dict[str, Any]:
        if args.draw_sample is not None:
            conversations = load(args.data)
            found = {name: extractions(conversations, extract) for name, extract in EXTRACTORS.items()}
            sizes = dict.fromkeys(EXTRACTORS, args.draw_sample)
            write_sample(draw_sample(found, sizes, read_sample(sample)), sample)
        return evaluate(args.data, sample)

    return run_guarded(args, runtime, "eval facts", work, data_errors=(FactsDataError,), broke_off_on_error=False,
                       show=printer(runtime, render))


def _add_anchors_eval(eval_commands: Commands) -> None:
    anchors = add_command(
        eval_commands, "anchors",
        "anchor extraction on hand-labelled user turns: precision, recall, F1 of v2 beside v1",
        "Score the shipped anchor extractor (traces.anchors, v2) and the frozen v1 in one run on the "
        "hand-labelled user turns of eval/data/anchors_labelled.jsonl (see anchors_labelled.md): micro "
        "precision, recall and F1 over anchors, matched whole and case-insensitively, on the dev lines (tuned "
        "on) and the test lines (scored only). The turns are read from the evaluation sets in the data folder. "
        "Exit status 2 when the data or the labelled file is missing.",
        handle_eval_anchors,
    )
    add_data(anchors, "the folder holding esconv/, empatheticdialogues/, dailydialog/ and locomo/", "../shared/data")
    anchors.add_argument("--labelled", type=Path, metavar="FILE",
                         help="the labelled turns (default: eval/data/anchors_labelled.jsonl)")
    anchors.add_argument("--show", choices=["dev", "test"],
                         help="also list each extractor's errors on that split, with the turns")
    add_json_file(anchors, "also write the figures and errors as JSON (without the turns' text)")


def handle_eval_anchors(args: argparse.Namespace, runtime: Runtime) -> int:
    from eval.anchors_eval import LABELLED, LabelledDataError, evaluate, render

    labelled = args.labelled if args.labelled is not None else LABELLED
    if not labelled.is_file():
        return invalid(runtime, "eval anchors", f"no labelled file at {labelled}")
    return run_guarded(args, runtime, "eval anchors", lambda: evaluate(labelled, args.data),
                       data_errors=(LabelledDataError,), broke_off_on_error=False,
                       show=printer(runtime, lambda report: render(report, show=args.show)),
                       document=lambda report: {k: v for k, v in report.items() if k != "texts"})


def _add_locomo(eval_commands: Commands) -> None:
    locomo = add_command(
        eval_commands, "locomo", "evidence recall@k on LoCoMo: dense, BM25, stage one, full recall",
        "Ingest each LoCoMo conversation into a fresh engine and measure evidence recall@1/5/6/10, overall "
        "(categories 1-4), per category and on the audit-corrected evidence, for four methods in one run: "
        "dense, bm25, stage1 (hybrid search) and stage2 (full recall). Exit status 2 when the data is missing.",
        handle_eval_locomo,
    )
    add_data(locomo, _LOCOMO_DATA)
    add_json_file(locomo, "also write the results as JSON")
    add_limit_conversations(locomo)


def handle_eval_locomo(args: argparse.Namespace, runtime: Runtime) -> int:
    from eval.locomo import measure

    return _run_locomo(args, runtime, "locomo", measure, missing="; skipped")


def _run_locomo(args: argparse.Namespace, runtime: Runtime, command: str,
                measure: Callable[..., dict[str, Any]], *, missing: str = "") -> int:
    """One LoCoMo-reading command: check the arguments, run ``measure``, and write its JSON if asked."""
    from eval.locomo import LocomoDataError

    command = f"eval {command}"
    if not args.data.exists():
        return invalid(runtime, command, f"no LoCoMo data at {args.data}{missing}")
    if args.limit_conversations is not None and args.limit_conversations < 1:
        return invalid(runtime, command, "--limit-conversations must be at least 1")
    return run_guarded(
        args, runtime, command,
        lambda: measure(args.data, settings=runtime.settings, limit=args.limit_conversations, out=runtime.stdout,
                        err=runtime.stderr),
        data_errors=(LocomoDataError,),
    )


def _add_consolidation(eval_commands: Commands) -> None:
    # eval.consolidation_sweep imports the engine: its defaults are resolved in the handler, so the parser stays
    # instant.
    consolidation = add_command(
        eval_commands, "consolidation",
        "choose the consolidation gate's defaults on the dev conversations; score them on LoCoMo",
        "Replay each conversation into a fresh embedded engine with a recall on every turn, take the facts left "
        "as the gate's candidates (keep: a turn they came from is cited as evidence by a question of categories "
        "1-4), sweep the blended and k-of-n gates and each signal alone for F1 on the development conversations, "
        "and score the chosen configurations unchanged on LoCoMo (evaluation only: nothing is chosen on it). "
        "Writes the markdown report to --out. Exit status 2 when the data is missing.",
        handle_eval_consolidation,
    )
    consolidation.add_argument("--dev", type=Path, metavar="PATH", action="append",
                               help="development conversations the defaults are chosen on, LoCoMo's format; "
                                    "repeat for several (default eval/data/dev_conversations and "
                                    "eval/data/consolidation_dev)")
    add_data(consolidation, _LOCOMO_DATA + ", scored only", "../shared/data/locomo")
    consolidation.add_argument("--limit", type=int, metavar="N",
                               help="only the first N conversations of each set, for a quick run")
    consolidation.add_argument("--out", type=Path, metavar="FILE",
                               help="the markdown report (default eval/data/consolidation_sweep.md)")
    add_json_file(consolidation, "also write the figures, the chosen defaults and the candidates' signals as JSON")


def handle_eval_consolidation(args: argparse.Namespace, runtime: Runtime) -> int:
    command = "eval consolidation"
    if args.limit is not None and args.limit < 1:
        return invalid(runtime, command, "--limit must be at least 1")
    from eval.consolidation_sweep import DEV_SETS, REPORT, measure
    from eval.locomo import LocomoDataError

    dev = tuple(args.dev) if args.dev else DEV_SETS
    for path, what in (*((d, "development conversations") for d in dev), (args.data, "LoCoMo data")):
        if not path.exists():
            return invalid(runtime, command, f"no {what} at {path}")
    report = args.out if args.out is not None else REPORT
    return run_guarded(
        args, runtime, command,
        lambda: measure(dev, args.data, settings=runtime.settings, limit=args.limit, report=report,
                        command=_invocation(args), out=runtime.stdout, err=runtime.stderr),
        data_errors=(LocomoDataError,),
    )


def _invocation(args: argparse.Namespace) -> str:
    """The command line that made a report, for the report: ``feltsense eval consolidation`` and its options."""
    from eval.consolidation_sweep import COMMAND

    parts = [COMMAND]
    options = (*(("--dev", d) for d in args.dev or ()), ("--data", args.data), ("--limit", args.limit),
               ("--out", args.out), ("--json", args.json_path))
    for flag, value in options:
        if value is not None:
            parts.append(f"{flag} {value}")
    return " ".join(parts)


def _add_standing_rules(eval_commands: Commands) -> None:
    standing = add_command(
        eval_commands, "standing-rules", "the standing tone rules in force at the end of each LoCoMo conversation",
        "Ingest each LoCoMo conversation into a fresh engine with the default profile and list, per "
        "conversation, the standing tone rules in force a day after its last turn (count, register, intensity, "
        "anchors, the leading memory's words) and the resolutions the write-time pass recorded. Exit status 2 "
        "when the data is missing.",
        handle_eval_standing_rules,
    )
    add_data(standing, _LOCOMO_DATA, "../shared/data/locomo")
    add_json_file(standing)
    add_limit_conversations(standing)


def handle_eval_standing_rules(args: argparse.Namespace, runtime: Runtime) -> int:
    from eval.standing_rules import measure

    return _run_locomo(args, runtime, "standing-rules", measure)


def _add_tone_thresholds(eval_commands: Commands) -> None:
    thresholds = add_command(
        eval_commands, "tone-thresholds",
        "choose the tone bar and the standing bar on ESConv valid; score on test and ISEAR",
        "Run the shipped classifier over ESConv (the seeker's turns of each session, in one call) and ISEAR, "
        "choose ToneParams.min_intensity (Youden's J, intense 4-5 vs 1-3) and ToneParams.standing_min_intensity "
        "(>= 90%% of sessions above it rated 5) on ESConv valid, and print them with their scores on ESConv test "
        "and ISEAR. The classifier is the one the default settings build (FELTSENSE_CLASSIFIER=local-v1 scores "
        "the previous one). Evaluation data only: nothing but these two numbers is chosen on it. Exit status 2 "
        "when the data is missing.",
        handle_eval_tone_thresholds,
    )
    add_data(thresholds, "the folder holding esconv/ and isear/", "../shared/data")
    add_cache(thresholds, "embedding cache (shared with training and eval classifier)")
    add_json_file(thresholds)


def handle_eval_tone_thresholds(args: argparse.Namespace, runtime: Runtime) -> int:
    needed = [args.data / "esconv" / f"{split}.jsonl" for split in ("valid", "test")] + [args.data / "isear" /
                                                                                        "isear.csv"]
    missing = [str(path) for path in needed if not path.is_file()]
    if missing:
        return invalid(runtime, "eval tone-thresholds", f"missing {', '.join(missing)}")
    from eval.tone_thresholds import evaluate, render

    return run_guarded(args, runtime, "eval tone-thresholds",
                       lambda: evaluate(args.data, args.cache, settings=runtime.settings),
                       show=printer(runtime, render))


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
        return broke_off(runtime)
    print(report.summary_line, file=runtime.stdout)

    # Reports go only where --json / --html say (relative to the working directory); the full path goes to
    # stderr, so stdout still ends on the summary line.
    if args.json_path is not None:
        if not wrote_json(args.json_path, report.to_json(), runtime):
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
