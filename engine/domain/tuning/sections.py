"""The profile's sections, one model each, with every constant: stage one (``RetrievalParams``: the vector and
lexical legs, their fusion, the relevance tiers and the conversation window), stage two (``ScoringParams``: relevance,
salience and its decay, the anchor boost), the tone rules (``ToneParams``), the write-time pass (``WriteParams``),
strength and forgetting (``StrengthParams``), the memory levels and variety (``ScopeParams``), and what the
character is told (``ContextParams``). Each constant is one ``tunable`` declaration: default, label and help, bounds,
and the engineer's note."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import field_validator, model_validator

from engine.domain.models import Register, Tier
from engine.domain.tuning.calibration import STANDING_BAR, THRESHOLDS_CLASSIFIER, TIER_CALIBRATION, TONE_BAR
from engine.domain.tuning.shown import (
    CALIBRATED,
    EMBEDDER,
    OPERATIONS,
    SEARCH,
    TONE_EVAL,
    WINDOW_EVAL,
    _Params,
    tunable,
)


class RetrievalParams(_Params):
    """Stage one: two legs (vector and lexical) fused into one ranked list (seed 000, "Two legs, one ranked list")."""

    candidates: int = tunable(
        40, "Candidates looked at",
        ("How many possible memories the search hands on to ranking. More can find a rarer match, and costs time on "
         "every turn."),
        unit="memories", engineering=SEARCH, ge=1, le=200, description="how many fused candidates stage one returns",
    )
    vector_min_similarity: float = tunable(
        0.2, "Weakest match by meaning",
        "How close in meaning to the message a memory must be to be considered at all.",
        engineering=EMBEDDER, ge=-1.0, lt=1.0, description="cosine below which a vector hit never enters the pool",
    )
    vector_full_similarity: float = tunable(
        0.8, "Full match by meaning", "How close in meaning counts as a perfect match.",
        engineering=EMBEDDER, gt=-1.0, le=1.0,
        description="cosine at which the vector leg's normalised score reaches 1",
    )
    vector_weight: float = tunable(
        0.5, "Weight of meaning",
        ("How much finding a memory depends on what the message means rather than the words it uses. Meaning and "
         "wording add up to 1."),
        ge=0.0, le=1.0, description="share of the vector leg in fusion",
    )
    lexical_weight: float = tunable(
        0.5, "Weight of wording",
        ("How much finding a memory depends on sharing words with the message, such as names and places. Meaning and "
         "wording add up to 1."),
        ge=0.0, le=1.0, description="share of the lexical leg in fusion",
    )
    fused_floor: float = tunable(
        0.02, "Relevance floor", "A memory less relevant than this is left out, unless it is the best there is.",
        engineering=SEARCH, ge=0.0, le=1.0,
        description=(
            "fused relevance below which a hit drops, unless it is the query's best (the floor is then the best)"
        ),
    )
    lexical_only_cap: float = tunable(
        0.3, "Cap for word-only matches",
        ("The most a memory found only by shared words can score, so repeating a keyword cannot push a memory to the "
         "top."),
        engineering=SEARCH, ge=0.0, le=1.0,
        description="most a hit found only by the lexical leg can score, so keyword stuffing cannot win",
    )
    bm25_k1: float = tunable(
        1.2, "Repeated words (BM25 k1)", "How quickly a word said many times stops counting for more.",
        engineering=SEARCH, ge=0.0, le=3.0, description="BM25 term-frequency saturation, both stores",
    )
    bm25_b: float = tunable(
        0.75, "Long memories (BM25 b)", "How much a long memory is discounted for simply containing more words.",
        engineering=SEARCH, ge=0.0, le=1.0, description="BM25 length normalisation, both stores",
    )
    vector_zero_margin: float = tunable(
        0.05, "Margin below the weakest match",
        "How far below the weakest match by meaning a memory still counts a little.",
        engineering=EMBEDDER, ge=0.0, le=1.0,
        description=(
            "the vector leg's normalised score is 0 this much cosine below the query's vector threshold (so a hit "
            "right at the threshold still counts a little) and 1 at vector_full_similarity"
        ),
    )
    vector_relative_margin: float = tunable(
        0.1, "Margin from the best match",
        ("A memory this close in meaning to the best match is considered even when it is weak, so a character who "
         "knows little still recalls the best of it."),
        engineering=EMBEDDER, ge=0.0, le=2.0,
        description=(
            "the vector threshold adapts: a hit within this much cosine of the query's best match enters even below "
            "vector_min_similarity, so a partition where every match is weak still returns its best"
        ),
    )
    fused_relative_floor: float = tunable(
        0.5, "Floor relative to the best match",
        ("A memory less relevant than this share of the best match is left out, so a strong match is not padded with "
         "noise."),
        engineering=SEARCH, ge=0.0, le=1.0,
        description=(
            "the fused floor is relative too: a hit below this fraction of the query's best fused relevance drops, "
            "so a strong match is not padded with noise and a weak partition still returns its best few"
        ),
    )
    tier_high: float = tunable(
        0.6, "Sure-match bar", "How likely to be the right memory a match must be to count as a sure match (0 to 1).",
        ge=0.0, le=1.0,
        description="calibrated relevance (a probability) at or above which a memory is a high-tier match",
    )
    tier_low: float = tunable(
        0.3, "Weak-match bar",
        ("Below this likelihood a match is weak. The character is told weak matches only when “Least sure match told” "
         "is low."),
        ge=0.0, le=1.0, description="calibrated relevance below which a memory is a low-tier match",
    )
    tier_intercept: float = tunable(
        TIER_CALIBRATION[0], "Likelihood fit: intercept",
        "Part of the formula that turns a search score into the likelihood that a memory is the right one.",
        calibrated_by=WINDOW_EVAL, engineering=CALIBRATED, ge=-50.0, le=50.0,
        description="calibrated relevance = logistic(intercept + fused weight x fused + lead weight x lead)",
    )
    tier_fused_weight: float = tunable(
        TIER_CALIBRATION[1], "Likelihood fit: relevance weight",
        "Part of the formula that turns a search score into the likelihood that a memory is the right one.",
        calibrated_by=WINDOW_EVAL, engineering=CALIBRATED, ge=-100.0, le=100.0,
        description="the fused relevance's weight in the calibrated relevance",
    )
    tier_lead_weight: float = tunable(
        TIER_CALIBRATION[2], "Likelihood fit: lead weight",
        ("Part of the formula that turns a search score into the likelihood that a memory is the right one: how much "
         "standing out from the other matches counts."),
        calibrated_by=WINDOW_EVAL, engineering=CALIBRATED, ge=-100.0, le=100.0,
        description=(
            "the weight of the lead (fused relevance minus the median of the query's best candidates) in the "
            "calibrated relevance"
        ),
    )
    window_turns: int = tunable(
        6, "Recent lines read",
        ("How many of the latest lines of the conversation, besides the message itself, help decide what to remember. "
         "0: the message alone."),
        unit="lines", ge=0, le=50, description="lines of the conversation window (newest) the query reads; 0: none",
    )
    window_vector_weight: float = tunable(
        1.0, "Recent lines' weight (meaning)",
        "How much the recent lines count beside the message (which counts 1) when searching by meaning.",
        ge=0.0, le=10.0,
        description="the window's weight in the query vector, the message's being 1 (cosines are averaged so)",
    )
    window_lexical_weight: float = tunable(
        0.5, "Recent lines' weight (wording)",
        "How much a word only the recent lines used counts, beside a word of the message (which counts 1).",
        ge=0.0, le=1.0, description="a word only the window says counts this much in BM25, a word of the message 1",
    )
    window_recency: float = tunable(
        0.85, "Fading of older lines",
        ("Each older recent line counts this much of the line after it: 1 counts them all alike, lower leans on the "
         "latest."),
        gt=0.0, le=1.0, description="each older line of the window weighs this much of the one after it, in both legs",
    )

    @model_validator(mode="after")
    def _check(self) -> RetrievalParams:
        if not math.isclose(self.vector_weight + self.lexical_weight, 1.0, abs_tol=1e-6):
            raise ValueError("vector_weight and lexical_weight must add up to 1")
        if self.vector_full_similarity <= self.vector_min_similarity:
            raise ValueError("vector_full_similarity must be above vector_min_similarity")
        if self.tier_low > self.tier_high:
            raise ValueError("tier_low must not be above tier_high")
        return self


class ScoringParams(_Params):
    """Stage two: relevance x salience x anchor boost x strength x scope weight."""

    result_limit: int = tunable(
        6, "Memories recalled", "How many memories one recall returns at most.",
        unit="memories", ge=1, le=40, description="memories recall returns",
    )
    half_life_days_per_intensity_squared: float = tunable(
        100.0 / 3.0, "How long feelings last",
        ("How long the character stays careful after a very sad moment: a memory's feeling halves after this many days "
         "× its intensity². At 33 days a mild moment (0.3) halves in 3 days, a very intense one (0.9) in 27."),
        unit="days", gt=0.0, le=10_000.0,
        description="emotional half-life in days = this x intensity^2 (0.3 -> 3 days, 0.9 -> 27 days)",
    )
    min_half_life_days: float = tunable(
        0.5, "Shortest half-life",
        "Even the faintest feeling takes at least this long to halve, so it does not vanish at once.",
        unit="days", gt=0.0, le=3650.0, description="half-life floor, so faint traces do not vanish instantly",
    )
    factual_salience: float = tunable(
        0.3, "Weight of plain facts",
        ("How much a plain fact (where the user works) weighs beside a feeling. A faded feeling never weighs less than "
         "this."),
        ge=0.0, le=1.0,
        description=(
            "salience of a factual trace: facts decay by supersession, not by age; in ranking, a faded emotional "
            "trace never weighs less than this"
        ),
    )
    factual_half_life_days: float = tunable(
        3650.0, "Half-life of facts",
        "Facts hardly fade with age; a newer fact replaces them instead. Ten years by default.",
        unit="days", gt=0.0, le=36_500.0,
        description="factual traces are nearly flat: a ten-year half-life (at most a century)",
    )
    salience_base: float = tunable(
        0.7, "Relevance before feeling",
        ("How much a memory ranks by relevance alone: 1 ignores feeling, lower lets intense moments rise. At 0.7 a "
         "fresh intense moment outweighs small talk by at most 1.27×."),
        ge=0.0, le=1.0,
        description=(
            "salience weight = base + (1 - base) x salience; a flat memory still ranks by relevance (0.7: a fresh "
            "intense moment outweighs small talk by at most 1.27x, so feeling reorders near-ties, not answers)"
        ),
    )
    anchor_boost: float = tunable(
        2.5, "Boost for a named thing",
        ("When the message names something a memory is about (a pet, a place, a person), that memory counts up to this "
         "many times more. A name many memories share counts less."),
        ge=1.0, le=100.0,
        description=(
            "multiplier when the message names one of the memory's anchors, scaled by how rare the anchor is among "
            "the candidates: full for an anchor one memory carries, none for one they all carry"
        ),
    )
    anchor_feeling_share: float = tunable(
        1.0, "Feeling's part in the boost",
        ("0: every memory about the named thing gets the boost. 1: each in proportion to how strongly it was felt, and "
         "a plain fact none."),
        ge=0.0, le=1.0,
        description=(
            "how much of the anchor boost depends on how the memory felt: 0, every memory that carries the anchor "
            "gets it; 1, in proportion to its emotional intensity (a factual memory gets none)"
        ),
    )
    window_anchor_weight: float = tunable(
        0.5, "Boost for a thing named recently",
        "A thing only the recent lines named, not the message itself, gets this share of the boost.",
        ge=0.0, le=1.0, description="an anchor only the conversation window named gets this share of the anchor boost",
    )


class ScopeParams(_Params):
    """How the memory levels weigh against each other, and diversification after ranking."""

    user_weight: float = tunable(
        1.0, "Weight of the user's memories", "How much the user's own memories and facts count.",
        ge=0.0, le=5.0, description="the user's own memories and facts",
    )
    canon_weight: float = tunable(
        1.2, "Weight of the character's canon", "How much the character's canon counts beside the user's memories.",
        ge=0.0, le=5.0, description="the character's canon",
    )
    shared_weight: float = tunable(
        0.9, "Weight of shared memory", "How much the organisation's shared memory counts beside the user's memories.",
        ge=0.0, le=5.0, description="the organisation's shared memory",
    )
    mmr_lambda: float = tunable(
        0.7, "Relevance versus variety",
        "1: recall the best matches even when they say the same thing; lower prefers memories that add something new.",
        ge=0.0, le=1.0, description="1: rank by score alone; lower trades score for diversity",
    )

    @model_validator(mode="before")
    @classmethod
    def _retired(cls, value: object) -> object:
        """``promote_mentions`` (a provisional fact stated that many times was proposed) is retired: the
        consolidation gate decides now, and its ``bar_stated`` is that count. A profile saved with it still loads."""
        if isinstance(value, dict) and "promote_mentions" in value:
            value = {k: v for k, v in value.items() if k != "promote_mentions"}
        return value


class ToneParams(_Params):
    """When a memory's trace turns into a tone rule for the character, and when that rule stands for good.

    A tone constraint is for an intense negative moment; a standing rule for the rare moment that must never be
    treated lightly (a death). The two bars are chosen on human intensity labels with the shipped classifier,
    never by eye: ``feltsense eval tone-thresholds`` (``eval/tone_thresholds.py``) picks them on ESConv valid and
    scores them on ESConv test and ISEAR. Rerun it whenever the classifier changes, and set these from its output.
    """

    min_intensity: float = tunable(
        TONE_BAR, "Tone bar", "How intense a negative moment must be for the character to be told to handle it gently.",
        calibrated_by=TONE_EVAL, ge=0.0, le=1.0,
        description=(
            "the tone bar: intensity at or above which a negative memory carries a tone rule. Chosen by `feltsense "
            "eval tone-thresholds` (Youden's J separating ESConv valid sessions the seeker rated 4-5 from 1-3, by "
            f"their most intense negative turn) with classifier {THRESHOLDS_CLASSIFIER}"
        ),
    )
    max_valence: float = tunable(
        -0.25, "How negative it must be",
        "A moment counts as negative at or below this valence (−1 very unpleasant, 1 very pleasant).",
        ge=-1.0, le=1.0, description="valence at or below which it counts",
    )
    standing_rule_salience: float = tunable(
        0.15, "When a tone rule settles",
        ("Once a handle-gently memory fades below this, it stops competing with other memories: it becomes a permanent "
         "rule if it clears the standing bar, otherwise it fades out of force."),
        ge=0.0, le=1.0,
        description=(
            "a toned memory whose salience decays below this stops competing for context slots: it becomes a "
            "standing tone rule if it clears the standing bar, and otherwise simply decays out of force"
        ),
    )
    standing_min_intensity: float = tunable(
        STANDING_BAR, "Standing bar",
        ("How intense a faded sad or shameful moment must have been to stay a permanent rule, in force on every turn. "
         "A loss stands at the tone bar."),
        calibrated_by=TONE_EVAL, ge=0.0, le=1.0,
        description=(
            "the standing bar: intensity at or above which a decayed toned memory of a standing register becomes "
            "a standing rule, in force on every turn from then on (a loss stands at the tone bar; a standing bar "
            "set below the tone bar counts as the tone bar). Chosen by "
            "`feltsense eval tone-thresholds` (the lowest intensity at or above the tone bar above which at least "
            "90% of ESConv valid sessions were rated 5 by the seeker, or the best share when none reaches 90%) with "
            f"classifier {THRESHOLDS_CLASSIFIER}"
        ),
    )
    loss_registers: tuple[Register, ...] = tunable(
        ("grief",), "Losses",
        ("Feelings of a loss that cannot be undone: a faded one stays a permanent rule at the tone bar, so a year on "
         "the character is still not cheerful about it."),
        description=(
            "registers of a loss, an ending that cannot be undone: a decayed toned memory of one stands at the tone "
            "bar. The classifier's intensity for a death sits mostly below the standing bar (ISEAR: three in four "
            "of its grief readings between the two bars are sadness reports, most of them a death; 'My cat Pepper "
            "died last night.' reads 0.80), and a year later the character must still not be cheerful about it"
        ),
    )
    standing_registers: tuple[Register, ...] = tunable(
        ("sadness", "shame"), "Feelings that stand when intense",
        "Feelings whose faded memories stay a permanent rule only when they cleared the standing bar.",
        description=(
            "registers whose decayed memories stand only when they clear the standing bar: very intense sadness "
            "or shame (the classifier gives sadness to some losses it does not call grief). Anxiety and anger "
            "never stand (at the standing bar they are the most common misreadings on ESConv test): a worry is "
            "about something ahead and a grievance about someone, and a year later both are settled or faded"
        ),
    )
    max_standing_rules: int = tunable(
        8, "Most permanent rules",
        ("How many permanent tone rules the character is told each turn at most; the most intense, then the newest, "
         "win."),
        unit="rules", ge=0, le=100,
        description="most standing rules in one system message; the most intense episodes (then newest) win",
    )
    anniversary_window_days: float = tunable(
        3.5, "Anniversary window",
        ("A permanent rule whose moment's anniversary is this many days away or nearer says so (“This week marks a "
         "year since then”), so the character can be gentle unprompted. 0: never."),
        unit="days", ge=0.0, le=60.0,
        description=(
            "a standing rule whose moment's anniversary (one or more whole years on, by the calendar; 29 February's "
            "falls on 28 February in other years) is within this many days of today says so (\"This week marks a "
            "year since then\"), so the character can be gentle, or acknowledge the day, unprompted. 3.5: the week "
            "centred on the day (a wider window reads \"It is about a year since then\"). Only inside the window "
            "does the prefix change; 0: never"
        ),
    )

    @field_validator("loss_registers", "standing_registers")
    @classmethod
    def _each_register_once(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        # Bounded by uniqueness (at most one of each register), not by maxItems: Litestar renders a length bound
        # on a variadic tuple as a second, empty item schema, which no response can satisfy.
        if len(set(value)) != len(value):
            raise ValueError("each register at most once")
        return value


class WriteParams(_Params):
    """The write-time pass."""

    emotional_min_intensity: float = tunable(
        0.35, "When a memory is emotional",
        ("A memory felt at least this intensely is emotional and its feeling fades with time; below it, it is a plain "
         "fact."),
        ge=0.0, le=1.0,
        description="a trace with a non-neutral register at or above this intensity is emotional, else factual",
    )
    episode_carry: float = tunable(
        0.85, "Feeling carried through an episode",
        ("A memory about the same thing as a more intense moment of the same session carries at least this share of "
         "its intensity."),
        ge=0.0, le=1.0,
        description=(
            "a memory that shares an anchor with a more intense memory of the same session carries at least "
            "this fraction of that intensity (the episode's feeling colours all of it)"
        ),
    )
    max_attempts: int = tunable(
        5, "Write attempts", "How many times the after-session pass tries a memory before leaving it.",
        engineering=OPERATIONS, ge=1, le=100, description="write-time attempts before a trace is left",
    )
    resolvable_registers: tuple[Register, ...] = tunable(
        ("anxiety", "anger"), "Feelings a later memory can settle",
        ("Feelings a later memory can settle (“the scan came back clear”, “she apologised”): the earlier memory stays, "
         "but its tone rule is lifted. Never grief."),
        description=(
            "registers a later memory can resolve (\"the scan came back clear\", \"she apologised\"): the earlier "
            "memory stays recallable but its tone is no longer in force. Never grief: a year later the character is "
            "still not cheerful about the dead dog (traces.resolution)"
        ),
    )
    @field_validator("resolvable_registers")
    @classmethod
    def _each_register_once(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(value)) != len(value):  # bounded by uniqueness: see ToneParams
            raise ValueError("each register at most once")
        return value

    resolution_min_valence: float = tunable(
        0.0, "How good a settling memory must feel",
        "A settling memory must feel better than this (“she apologised but I'm still furious” settles nothing).",
        ge=-1.0, le=1.0,
        description=(
            "a resolving memory's own valence must be above this (\"she apologised but I'm still furious\" "
            "is anger, not resolution)"
        ),
    )
    resolution_min_similarity: float = tunable(
        0.7, "Same episode by meaning",
        "How close in meaning a later memory must be to settle an earlier one when they name nothing in common.",
        engineering=EMBEDDER, ge=-1.0, le=1.0,
        description=(
            "cosine similarity at or above which a resolving memory and an earlier one without a shared anchor are "
            "the same episode (conservative, for the default MiniLM embedder: on LoCoMo, 0.58-0.64 linked cheerful "
            "chatter to unrelated thanks; a provider's embedder may need another value)"
        ),
    )


class StrengthParams(_Params):
    """The live strength scalar (scoring.strength): hybrid decay, usage, floors, and where decay leads."""

    fast_weight: float = tunable(
        0.6, "Quick-fading share",
        "How much of a memory's strength fades quickly, over days; the rest fades slowly, over months. Below 1.",
        ge=0.0, lt=1.0, description="share of the fast exponential term (below 1: a tail must remain)",
    )
    fast_half_life_days: float = tunable(
        7.0, "Quick-fading half-life", "The quick part halves after this many days.",
        unit="days", gt=0.0, le=3650.0, description="half-life of the fast term",
    )
    tail_scale_days: float = tunable(
        30.0, "Slow-fading time scale", "Roughly when the slow part starts to wane.",
        unit="days", gt=0.0, le=36500.0, description="time scale of the power-law tail",
    )
    tail_exponent: float = tunable(
        0.5, "Slow-fading steepness",
        "How steeply the slow part falls in the long run: higher forgets old memories sooner.",
        gt=0.0, le=5.0, description="exponent of the power-law tail",
    )
    retrieval_gain: float = tunable(
        0.15, "Strength from being recalled",
        "How much each recall strengthens a memory (less for each further recall).",
        ge=0.0, le=2.0, description="boost per log(1 + retrievals)",
    )
    query_kind_gain: float = tunable(
        0.1, "Strength from varied recall",
        "How much being recalled in different kinds of conversation strengthens a memory.",
        ge=0.0, le=2.0, description="boost per log(1 + distinct kinds)",
    )
    max_usage_boost: float = tunable(
        1.5, "Most strength from use", "Use can multiply a memory's strength by at most this much.",
        ge=1.0, le=5.0, description="cap on the usage boost",
    )
    canon_floor: float = tunable(
        0.6, "Floor for the character's canon", "The character's canon never weakens below this.",
        ge=0.0, le=1.0, description="character canon never ranks below this",
    )
    pin_floor: float = tunable(
        0.8, "Floor for pinned memories", "A pinned memory never weakens below this.",
        ge=0.0, le=1.0, description="a pinned memory never ranks below this",
    )
    stale_weight: float = tunable(
        0.2, "Weight of outdated facts", "A memory holding a fact that has since changed counts this much.",
        ge=0.0, le=1.0, description="multiplier for a memory carrying a superseded fact",
    )
    archive_below: float = tunable(
        0.05, "Archive below", "Each night, memories weaker than this are archived: kept, but no longer recalled.",
        ge=0.0, le=1.0, description="the nightly sweep archives memories whose strength is below this",
    )
    ranking_weight: float = tunable(
        0.05, "Strength's part in ranking",
        ("How much strength moves ranking: 0 not at all, 1 fully. Strength mostly decides what is archived; in ranking "
         "it only breaks near-ties."),
        ge=0.0, le=1.0,
        description=(
            "how far strength moves ranking: score x (1 - w + w x strength); 1 = strength multiplies fully. Strength "
            "governs the lifecycle (archive, floors, stale); in ranking it only breaks near-ties (0.05, chosen on "
            "the development conversations, eval/data/dev_conversations: R@6 69.5 against 68.5 at 0.1)"
        ),
    )


class ContextParams(_Params):
    """What the character is told each turn, in tokens of the character's model (``prompts.context``)."""

    budget_tokens: int = tunable(
        1500, "Context budget",
        ("How much the character is told each turn in all (tone rules, canon and memories), in tokens of its model; a "
         "token is about ¾ of a word."),
        unit="tokens", ge=50, le=200_000,
        description="prefix, tone constraints and memories together; Path A first, Path B fills the rest",
    )
    max_pin_tokens: int = tunable(
        400, "Longest canon record", "A canon record longer than this is cut at a paragraph break.",
        unit="tokens", ge=20, le=100_000, description="a canon record longer than this is cut at a paragraph",
    )
    min_tier: Tier = tunable(
        "standard", "Least sure match told",
        ("The weakest match the character is told: high, sure matches only; standard, sure and likely ones; low, "
         "everything recall finds."),
        description=(
            "the lowest relevance tier a recalled memory needs to be told to the character (Path B); recall still "
            "returns the low-tier best matches, marked, for a runtime that wants them"
        ),
    )


GATE_SWEEP = "feltsense eval consolidation"
GATE_SCALE = "it maps a count onto 0 to 1 for the blend; the sweep keeps it fixed and chooses the weights instead"


def _weight(default: float, signal: str) -> float:
    return tunable(default, f"Weight of {signal}", f"How much {signal} counts in the blended score.",
                   calibrated_by=GATE_SWEEP, ge=0.0, le=10.0, description=f"blend weight of {signal}")


def _bar(default: float, signal: str, unit: str, *, ge: float, le: float) -> float:
    return tunable(default, f"Bar for {signal}", f"In k-of-n mode, {signal} clears its bar at this value or more.",
                   unit=unit, calibrated_by=GATE_SWEEP, ge=ge, le=le, description=f"k-of-n bar of {signal}")


class ConsolidationParams(_Params):
    """The consolidation gate (``scoring.consolidation``): which provisional facts the nightly sweep proposes to
    make lasting, and the strength a kept one starts with (its blended score). Defaults come from
    ``feltsense eval consolidation`` on the development conversations (``eval/data/consolidation_sweep.md``):
    blended, threshold 0.65, weights (0, 0.5, 0, 0, 0.5, 2), so a fact is proposed once it has stood about seven
    weeks uncontradicted, sooner when it is said again or comes up in other kinds of question. Confidence and trust
    are 1 for every extracted fact today, so the sweep gave them no weight. k and the bars are the k-of-n mode's
    best on dev, which is k = 1 (it promotes everything there: see the report before choosing k-of-n)."""

    mode: Literal["blended", "k_of_n"] = tunable(
        "blended", "How the gate decides",
        ("blended: a weighted score of every signal must reach the threshold. k_of_n: at least k signals must each "
         "clear their own bar."),
        calibrated_by=GATE_SWEEP, description="blended threshold, or k of the n signals' bars",
    )
    threshold: float = tunable(
        0.65, "Score to propose", "In blended mode, a fact whose score reaches this is proposed.",
        calibrated_by=GATE_SWEEP, ge=0.0, le=1.0, description="blended score at which a candidate passes",
    )
    k: int = tunable(
        1, "Signals needed (k)", "In k-of-n mode, how many signals must clear their bars.",
        unit="signals", calibrated_by=GATE_SWEEP, ge=1, le=6, description="k of the 6 signals",
    )
    weight_retrievals: float = _weight(0.0, "being recalled")
    weight_query_kinds: float = _weight(0.5, "being recalled by different kinds of question")
    weight_confidence: float = _weight(0.0, "confidence")
    weight_source_trust: float = _weight(0.0, "who said it")
    weight_stated: float = _weight(0.5, "being said again")
    weight_age: float = _weight(2.0, "standing a while uncontradicted")
    bar_retrievals: float = _bar(5.0, "being recalled", "recalls", ge=0.0, le=1000.0)
    bar_query_kinds: float = _bar(3.0, "kinds of question", "kinds", ge=0.0, le=32.0)
    bar_confidence: float = _bar(1.0, "confidence", "", ge=0.0, le=1.0)
    bar_source_trust: float = _bar(1.0, "who said it", "", ge=0.0, le=1.0)
    bar_stated: float = _bar(3.0, "being said again", "times said", ge=1.0, le=100.0)
    bar_age_days: float = _bar(30.0, "standing a while", "days", ge=0.0, le=3650.0)
    retrieval_scale: float = tunable(3.0, "Recalls to count fully", "Recalls at which being recalled counts 63%.",
                                     engineering=GATE_SCALE, gt=0.0, le=1000.0, description="saturation of retrievals")
    query_kind_scale: float = tunable(2.0, "Question kinds to count fully", "Kinds at which variety counts 63%.",
                                      engineering=GATE_SCALE, gt=0.0, le=32.0, description="saturation of kinds")
    stated_scale: float = tunable(1.0, "Repeats to count fully", "Repeats (beyond the first) at which they count 63%.",
                                  engineering=GATE_SCALE, gt=0.0, le=100.0, description="saturation of repeats")
    age_scale_days: float = tunable(14.0, "Days to count fully", "Age at which standing a while counts 63%.",
                                    unit="days", engineering=GATE_SCALE, gt=0.0, le=3650.0,
                                    description="maturation of age")

    @model_validator(mode="after")
    def _some_weight(self) -> ConsolidationParams:
        if not any((self.weight_retrievals, self.weight_query_kinds, self.weight_confidence,
                    self.weight_source_trust, self.weight_stated, self.weight_age)):
            raise ValueError("at least one of the gate's weights must be above 0")
        return self


RehearsalKind = Literal["allergy", "diet", "close_name", "bereavement", "pinned"]


class RehearsalParams(_Params):
    """Rehearsal (``engine.rehearsal``): high-stakes memories re-checked on a Leitner schedule. An enrolled memory
    that is due lets Path A offer the character one optional, natural check; a confirmation moves it up a box (a
    longer wait), a contradiction files a review item."""

    enrol: tuple[RehearsalKind, ...] = tunable(
        ("allergy", "diet", "close_name", "bereavement", "pinned"), "What is rehearsed",
        ("Allergies, diets, the names of close people and pets, losses, and anything a director pins: the memories the "
         "character re-checks now and then. Empty: none."),
        description="the enrolment policy",
    )
    box_1_days: float = tunable(14.0, "First check after", "A newly enrolled memory is first re-checked after this.",
                                unit="days", gt=0.0, le=3650.0, description="box 1 interval")
    box_2_days: float = tunable(30.0, "Then after", "Once confirmed, the next check waits this long.",
                                unit="days", gt=0.0, le=3650.0, description="box 2 interval")
    box_3_days: float = tunable(90.0, "Then after", "Confirmed twice, the next check waits this long.",
                                unit="days", gt=0.0, le=3650.0, description="box 3 interval")
    box_4_days: float = tunable(180.0, "Then after", "Confirmed three times, the next check waits this long.",
                                unit="days", gt=0.0, le=3650.0, description="box 4 interval")
    box_5_days: float = tunable(365.0, "At most every", "The longest wait, for a memory confirmed four times or more.",
                                unit="days", gt=0.0, le=3650.0, description="box 5 interval (the last box)")
    min_days_between_cues: float = tunable(
        3.0, "Days between checks", "However many memories are due, the character checks at most one per session, "
        "and no more often than this with one user.", unit="days", ge=0.0, le=365.0,
        description="cadence of cues per user; never more than one per session",
    )

    @field_validator("enrol")
    @classmethod
    def _each_kind_once(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(value)) != len(value):
            raise ValueError("each kind at most once")
        return value

    def intervals(self) -> tuple[float, ...]:
        return (self.box_1_days, self.box_2_days, self.box_3_days, self.box_4_days, self.box_5_days)


TrustKind = Literal["promote", "demote"]


class TrustParams(_Params):
    """Earned trust (``engine.trust``): once people in an organisation have kept a kind of change often enough and
    reverted it rarely enough, the sweep keeps changes of that kind itself, each marked and each undoable back into
    the queue. Only people's decisions count; conflicts with canon and contradictions of rehearsed memories are
    always a person's."""

    auto_keep_after: int = tunable(
        19, "Keeps before trusting", "How many changes of one kind people must have kept (and not reverted) before "
        "changes of that kind are kept automatically. 0: never.", unit="keeps", ge=0, le=100_000,
        description="the count bar (0 turns earned trust off)",
    )
    min_keep_rate: float = tunable(
        1.0, "Share kept", "Of the changes of that kind people decided, the share they kept and never reverted.",
        ge=0.0, le=1.0, description="the rate bar: held / (kept + rejected)",
    )
    kinds: tuple[TrustKind, ...] = tunable(
        ("promote",), "Changes that can earn trust", "Which kinds of change may ever be kept automatically.",
        description="eligible review kinds (promotions are counted per relation: promote:diet)",
    )

    @field_validator("kinds")
    @classmethod
    def _each_kind_once(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(value)) != len(value):
            raise ValueError("each kind at most once")
        return value
