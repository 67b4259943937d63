"""The window evaluation's scores (``eval.window_eval``): hit@k and MRR per probe, their means per method and
group, the tiers' tables, and the report's text."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from eval.window_cases import Probe

KS = (1, 3, 6)
LIMIT = max(KS)
METHODS = ("message", "window", "cosine", "cosine-tail3")
TIERS = ("high", "standard", "low")


# ------------------------------------------------------------------------------------------------------------
# Metrics


@dataclass(frozen=True)
class Ranked:
    """One probe under one method: what each of the first results credits, and its tier (None for cosine)."""

    credits: tuple[frozenset[str], ...]
    tiers: tuple[str | None, ...] = ()


@dataclass(frozen=True)
class ProbeScore:
    probe_id: str
    group: str
    expect: tuple[str, ...]
    rank: int | None
    """1-based rank of the first expected memory within the first ``LIMIT``; None when absent (or nothing expected)."""
    top: str | None
    """What the first result credits (a memory key, or ``"-"`` for a result crediting nothing), None if empty."""
    top_tier: str | None
    tiers: tuple[tuple[str, bool], ...] = field(default=())
    """(tier, expected?) for every tiered result."""


def score_probe(probe: Probe, ranked: Ranked) -> ProbeScore:
    expected = set(probe.expect)
    rank = next((i + 1 for i, credits in enumerate(ranked.credits[:LIMIT]) if credits & expected), None)
    top = None
    if ranked.credits:
        first = ranked.credits[0]
        top = ",".join(sorted(first)) if first else "-"
    tiers = tuple((tier, bool(credits & expected)) for credits, tier in zip(ranked.credits, ranked.tiers, strict=False)
                  if tier is not None)
    return ProbeScore(probe_id=probe.probe_id, group=probe.group, expect=probe.expect, rank=rank, top=top,
                      top_tier=ranked.tiers[0] if ranked.tiers else None, tiers=tiers)


def means(scores: Sequence[ProbeScore]) -> dict[str, float | int]:
    n = len(scores)
    out: dict[str, float | int] = {"probes": n}
    for k in KS:
        out[f"hit@{k}"] = round(sum(1 for s in scores if s.rank is not None and s.rank <= k) / n, 4) if n else 0.0
    out["mrr"] = round(sum(1.0 / s.rank for s in scores if s.rank is not None) / n, 4) if n else 0.0
    return out


def method_report(scores: Sequence[ProbeScore], *, tiered: bool) -> dict[str, Any]:
    """Means over the probes that expect something (overall and per group), the top tier of those that expect
    nothing, and the tier table (for recall's methods)."""
    expecting = [s for s in scores if s.expect]
    groups: dict[str, list[ProbeScore]] = {}
    for s in expecting:
        groups.setdefault(s.group, []).append(s)
    report: dict[str, Any] = {"overall": means(expecting),
                              "by_group": {g: means(rows) for g, rows in sorted(groups.items(), key=_group_order)}}
    nothing = [s for s in scores if not s.expect]
    if tiered:
        top: dict[str, int] = dict.fromkeys((*TIERS, "empty"), 0)
        for s in nothing:
            top[s.top_tier or "empty"] += 1
        report["nothing_expected_top_tier"] = top
        table: dict[str, dict[str, float | int]] = {}
        for tier in TIERS:
            rows = [hit for s in scores for t, hit in s.tiers if t == tier]
            table[tier] = {"results": len(rows), "expected": sum(rows),
                           "share_expected": round(sum(rows) / len(rows), 4) if rows else 0.0}
        report["tiers"] = table
        hits = [s for s in expecting if s.rank == 1]
        report["top_tier_when_top_is_expected"] = {t: sum(1 for s in hits if s.top_tier == t) for t in TIERS}
        misses = [s for s in expecting if s.rank != 1 and s.top_tier is not None]
        report["top_tier_when_top_is_not_expected"] = {t: sum(1 for s in misses if s.top_tier == t) for t in TIERS}
    else:
        report["nothing_expected_probes"] = len(nothing)
    return report


def _group_order(item: tuple[str, Any]) -> tuple[int, str]:
    match = re.fullmatch(r"cut (\d+)", item[0])
    return (int(match[1]), "") if match else (10**6, item[0])


# ------------------------------------------------------------------------------------------------------------
# Text


def pct(value: float | int) -> str:
    return f"{100.0 * float(value):6.1f}"


def format_report(result: Mapping[str, Any], *, title: str) -> str:
    methods: Mapping[str, Any] = result["methods"]
    expecting = result["probes"] - result["probes_expecting_nothing"]
    lines = [f"{title}: {result['users']} users, {result['memories']} memories, {result['probes']} probes "
             f"({expecting} expecting a memory, {result['probes_expecting_nothing']} expecting none)",
             "", f"  {'method':<14}{'hit@1':>7}{'hit@3':>7}{'hit@6':>7}{'MRR':>7}   (% of probes expecting a memory)"]
    for method, block in methods.items():
        o = block["overall"]
        lines.append(f"  {method:<14}{pct(o['hit@1'])} {pct(o['hit@3'])} {pct(o['hit@6'])} {pct(o['mrr'])}")
    groups = list(next(iter(methods.values()))["by_group"]) if methods else []
    if len(groups) > 1:
        lines += ["", "  hit@6 / MRR by group (probes)"]
        lines.append(f"  {'group':<14}{'n':>5}" + "".join(f"{m:>20}" for m in methods))
        for group in groups:
            n = next(iter(methods.values()))["by_group"][group]["probes"]
            cells = "".join(f"{100 * b['by_group'][group]['hit@6']:>12.1f} / {100 * b['by_group'][group]['mrr']:4.1f}"
                            .rjust(20) for b in methods.values())
            lines.append(f"  {group:<14}{n:>5}{cells}")
    tiered = [m for m in methods if "tiers" in methods[m]]
    if tiered:
        lines += ["", "  tiers: results returned, and the share that were expected memories"]
        lines.append(f"  {'method':<14}" + "".join(f"{t:>18}" for t in TIERS))
        for method in tiered:
            t = methods[method]["tiers"]
            lines.append(f"  {method:<14}" + "".join(
                f"{t[tier]['results']:>8} {pct(t[tier]['share_expected'])}%".rjust(18) for tier in TIERS))
        lines += ["", "  top result's tier: when it is expected / when it is not / probes expecting nothing"]
        for method in tiered:
            b = methods[method]
            parts = [" ".join(f"{tier[0]}{d[tier]}" for tier in TIERS) for d in
                     (b["top_tier_when_top_is_expected"], b["top_tier_when_top_is_not_expected"])]
            none = b["nothing_expected_top_tier"]
            parts.append(" ".join(f"{tier[0]}{none[tier]}" for tier in TIERS) + f" empty{none['empty']}")
            lines.append(f"  {method:<14}" + "   |   ".join(parts))
    c = result.get("constants") or {}
    if c:
        lines += ["", "  constants: " + ", ".join(f"{k}={v}" for k, v in c.items())]
    return "\n".join(lines)
