"""The per-character tuning profile: every constant that shapes retrieval, ranking and tone.

Creative directors tune these, not engineers, so each one is validated, documented here with its default, and
carries its unit in its name. Nothing in ``scoring/`` or the services hard-codes a constant that belongs here.

Each constant says twice what it does: its ``description`` is the engineer's note (the formula, the measurement
behind the default), and its ``Shown`` the creative director's (a plain-language label and help). The tuning page
reads the second from ``GET /v1/tuning/defaults``; nothing else keeps labels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from engine.domain.models import Register, Tier


class _Params(BaseModel):
    # Infinity is saved as JSON null, which no later load accepts (a bad row once stopped the service starting).
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


@dataclass(frozen=True)
class Shown:
    """How a constant (or a section) is presented to a creative director: a plain-language ``label`` and ``help``,
    its ``unit``, the evaluation that chooses its value (``calibrated_by``: rerun it rather than guess) and, for a
    constant that is an engineer's to change rather than a director's, why (``engineering``; the page folds those
    away). Pydantic keeps it in the field's metadata and does not validate with it."""

    label: str
    help: str
    unit: str = ""
    calibrated_by: str = ""
    engineering: str = ""


EMBEDDER = "it depends on the embedder's scale of similarity: set for the embedder in use, by measurement"
SEARCH = "it tunes how well search finds the expected memory (`feltsense eval window`), not how the character feels"
CALIBRATED = "it is fitted to evaluation data, not chosen: refit it when the search or the embedder changes"
OPERATIONS = "an operational setting: how often the service retries, not what the character remembers"
TONE_EVAL = "feltsense eval tone-thresholds"
WINDOW_EVAL = "feltsense eval window --calibrate"


TONE_BAR = 0.52
STANDING_BAR = 0.78
THRESHOLDS_CLASSIFIER = "feltsense-session@2.80fb25ef86"
"""The bars' defaults and the classifier they were chosen with: `feltsense eval tone-thresholds` on ESConv valid
(tone bar 0.5216 by Youden's J, seeker rating 4-5 vs 1-3, J 0.17; standing bar 0.7737: no cut reached 90% rated 5
with at least 5 sessions, so the best share, 2 of the 3 valid sessions above it). On ESConv test: tone bar TPR 0.79
at FPR 0.63, standing bar 6 of its 9 sessions rated 5. Rerun and reset both when the classifier changes."""


TIER_CALIBRATION = (-2.9, 22.65, 4.05)
"""The relevance tiers' calibration (intercept, fused weight, lead weight), fitted by `feltsense eval window
--calibrate` on the development set's window recalls (192 returned results, 95 of them expected memories; bands
0-0.3 / 0.3-0.6 / 0.6-1 predicted 0.22 / 0.42 / 0.84, observed 0.23 / 0.40 / 0.86). Refit when stage one's fusion,
the window constants or the embedder change."""


class RetrievalParams(_Params):
    """Stage one: two legs (vector and lexical) fused into one ranked list (seed 000, "Two legs, one ranked list")."""

    candidates: Annotated[int, Shown(
        "Candidates looked at",
        ("How many possible memories the search hands on to ranking. More can find a rarer match, and costs time on "
         "every turn."),
        unit="memories", engineering=SEARCH,
    )] = Field(default=40, ge=1, le=200, description="how many fused candidates stage one returns")
    vector_min_similarity: Annotated[float, Shown(
        "Weakest match by meaning",
        "How close in meaning to the message a memory must be to be considered at all.",
        engineering=EMBEDDER,
    )] = Field(
        default=0.2, ge=-1.0, lt=1.0,
        description="cosine below which a vector hit never enters the pool",
    )
    vector_full_similarity: Annotated[float, Shown(
        "Full match by meaning",
        "How close in meaning counts as a perfect match.",
        engineering=EMBEDDER,
    )] = Field(
        default=0.8, gt=-1.0, le=1.0,
        description="cosine at which the vector leg's normalised score reaches 1",
    )
    vector_weight: Annotated[float, Shown(
        "Weight of meaning",
        ("How much finding a memory depends on what the message means rather than the words it uses. Meaning and "
         "wording add up to 1."),
    )] = Field(default=0.5, ge=0.0, le=1.0, description="share of the vector leg in fusion")
    lexical_weight: Annotated[float, Shown(
        "Weight of wording",
        ("How much finding a memory depends on sharing words with the message, such as names and places. Meaning and "
         "wording add up to 1."),
    )] = Field(default=0.5, ge=0.0, le=1.0, description="share of the lexical leg in fusion")
    fused_floor: Annotated[float, Shown(
        "Relevance floor",
        "A memory less relevant than this is left out, unless it is the best there is.",
        engineering=SEARCH,
    )] = Field(
        default=0.02, ge=0.0, le=1.0,
        description=(
            "fused relevance below which a hit drops, unless it is the query's best (the floor is then the best)"
        ),
    )
    lexical_only_cap: Annotated[float, Shown(
        "Cap for word-only matches",
        ("The most a memory found only by shared words can score, so repeating a keyword cannot push a memory to the "
         "top."),
        engineering=SEARCH,
    )] = Field(
        default=0.3, ge=0.0, le=1.0,
        description="most a hit found only by the lexical leg can score, so keyword stuffing cannot win",
    )
    bm25_k1: Annotated[float, Shown(
        "Repeated words (BM25 k1)",
        "How quickly a word said many times stops counting for more.",
        engineering=SEARCH,
    )] = Field(default=1.2, ge=0.0, le=3.0, description="BM25 term-frequency saturation, both stores")
    bm25_b: Annotated[float, Shown(
        "Long memories (BM25 b)",
        "How much a long memory is discounted for simply containing more words.",
        engineering=SEARCH,
    )] = Field(default=0.75, ge=0.0, le=1.0, description="BM25 length normalisation, both stores")
    vector_zero_margin: Annotated[float, Shown(
        "Margin below the weakest match",
        "How far below the weakest match by meaning a memory still counts a little.",
        engineering=EMBEDDER,
    )] = Field(
        default=0.05, ge=0.0, le=1.0,
        description=(
            "the vector leg's normalised score is 0 this much cosine below the query's vector threshold (so a hit "
            "right at the threshold still counts a little) and 1 at vector_full_similarity"
        ),
    )
    vector_relative_margin: Annotated[float, Shown(
        "Margin from the best match",
        ("A memory this close in meaning to the best match is considered even when it is weak, so a character who "
         "knows little still recalls the best of it."),
        engineering=EMBEDDER,
    )] = Field(
        default=0.1, ge=0.0, le=2.0,
        description=(
            "the vector threshold adapts: a hit within this much cosine of the query's best match enters even below "
            "vector_min_similarity, so a partition where every match is weak still returns its best"
        ),
    )
    fused_relative_floor: Annotated[float, Shown(
        "Floor relative to the best match",
        ("A memory less relevant than this share of the best match is left out, so a strong match is not padded with "
         "noise."),
        engineering=SEARCH,
    )] = Field(
        default=0.5, ge=0.0, le=1.0,
        description=(
            "the fused floor is relative too: a hit below this fraction of the query's best fused relevance drops, "
            "so a strong match is not padded with noise and a weak partition still returns its best few"
        ),
    )
    tier_high: Annotated[float, Shown(
        "Sure-match bar",
        "How likely to be the right memory a match must be to count as a sure match (0 to 1).",
    )] = Field(
        default=0.6, ge=0.0, le=1.0,
        description="calibrated relevance (a probability) at or above which a memory is a high-tier match",
    )
    tier_low: Annotated[float, Shown(
        "Weak-match bar",
        ("Below this likelihood a match is weak. The character is told weak matches only when “Least sure match told” "
         "is low."),
    )] = Field(
        default=0.3, ge=0.0, le=1.0, description="calibrated relevance below which a memory is a low-tier match"
    )
    tier_intercept: Annotated[float, Shown(
        "Likelihood fit: intercept",
        "Part of the formula that turns a search score into the likelihood that a memory is the right one.",
        calibrated_by=WINDOW_EVAL, engineering=CALIBRATED,
    )] = Field(
        default=TIER_CALIBRATION[0], ge=-50.0, le=50.0,
        description="calibrated relevance = logistic(intercept + fused weight x fused + lead weight x lead)",
    )
    tier_fused_weight: Annotated[float, Shown(
        "Likelihood fit: relevance weight",
        "Part of the formula that turns a search score into the likelihood that a memory is the right one.",
        calibrated_by=WINDOW_EVAL, engineering=CALIBRATED,
    )] = Field(default=TIER_CALIBRATION[1], ge=-100.0, le=100.0,
                                     description="the fused relevance's weight in the calibrated relevance")
    tier_lead_weight: Annotated[float, Shown(
        "Likelihood fit: lead weight",
        ("Part of the formula that turns a search score into the likelihood that a memory is the right one: how much "
         "standing out from the other matches counts."),
        calibrated_by=WINDOW_EVAL, engineering=CALIBRATED,
    )] = Field(
        default=TIER_CALIBRATION[2], ge=-100.0, le=100.0,
        description=(
            "the weight of the lead (fused relevance minus the median of the query's best candidates) in the "
            "calibrated relevance"
        ),
    )
    window_turns: Annotated[int, Shown(
        "Recent lines read",
        ("How many of the latest lines of the conversation, besides the message itself, help decide what to remember. "
         "0: the message alone."),
        unit="lines",
    )] = Field(
        default=6, ge=0, le=50, description="lines of the conversation window (newest) the query reads; 0: none"
    )
    window_vector_weight: Annotated[float, Shown(
        "Recent lines' weight (meaning)",
        "How much the recent lines count beside the message (which counts 1) when searching by meaning.",
    )] = Field(
        default=1.0, ge=0.0, le=10.0,
        description="the window's weight in the query vector, the message's being 1 (cosines are averaged so)",
    )
    window_lexical_weight: Annotated[float, Shown(
        "Recent lines' weight (wording)",
        "How much a word only the recent lines used counts, beside a word of the message (which counts 1).",
    )] = Field(
        default=0.5, ge=0.0, le=1.0,
        description="a word only the window says counts this much in BM25, a word of the message 1",
    )
    window_recency: Annotated[float, Shown(
        "Fading of older lines",
        ("Each older recent line counts this much of the line after it: 1 counts them all alike, lower leans on the "
         "latest."),
    )] = Field(
        default=0.85, gt=0.0, le=1.0,
        description="each older line of the window weighs this much of the one after it, in both legs",
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

    result_limit: Annotated[int, Shown(
        "Memories recalled",
        "How many memories one recall returns at most.",
        unit="memories",
    )] = Field(default=6, ge=1, le=40, description="memories recall returns")
    half_life_days_per_intensity_squared: Annotated[float, Shown(
        "How long feelings last",
        ("How long the character stays careful after a very sad moment: a memory's feeling halves after this many days "
         "× its intensity². At 33 days a mild moment (0.3) halves in 3 days, a very intense one (0.9) in 27."),
        unit="days",
    )] = Field(
        default=100.0 / 3.0, gt=0.0, le=10_000.0,
        description="emotional half-life in days = this x intensity^2 (0.3 -> 3 days, 0.9 -> 27 days)",
    )
    min_half_life_days: Annotated[float, Shown(
        "Shortest half-life",
        "Even the faintest feeling takes at least this long to halve, so it does not vanish at once.",
        unit="days",
    )] = Field(
        default=0.5, gt=0.0, le=3650.0, description="half-life floor, so faint traces do not vanish instantly"
    )
    factual_salience: Annotated[float, Shown(
        "Weight of plain facts",
        ("How much a plain fact (where the user works) weighs beside a feeling. A faded feeling never weighs less than "
         "this."),
    )] = Field(
        default=0.3, ge=0.0, le=1.0,
        description=(
            "salience of a factual trace: facts decay by supersession, not by age; in ranking, a faded emotional "
            "trace never weighs less than this"
        ),
    )
    factual_half_life_days: Annotated[float, Shown(
        "Half-life of facts",
        "Facts hardly fade with age; a newer fact replaces them instead. Ten years by default.",
        unit="days",
    )] = Field(
        default=3650.0, gt=0.0, le=36_500.0,
        description="factual traces are nearly flat: a ten-year half-life (at most a century)",
    )
    salience_base: Annotated[float, Shown(
        "Relevance before feeling",
        ("How much a memory ranks by relevance alone: 1 ignores feeling, lower lets intense moments rise. At 0.7 a "
         "fresh intense moment outweighs small talk by at most 1.27×."),
    )] = Field(
        default=0.7, ge=0.0, le=1.0,
        description=(
            "salience weight = base + (1 - base) x salience; a flat memory still ranks by relevance (0.7: a fresh "
            "intense moment outweighs small talk by at most 1.27x, so feeling reorders near-ties, not answers)"
        ),
    )
    anchor_boost: Annotated[float, Shown(
        "Boost for a named thing",
        ("When the message names something a memory is about (a pet, a place, a person), that memory counts up to this "
         "many times more. A name many memories share counts less."),
    )] = Field(
        default=2.5, ge=1.0, le=100.0,
        description=(
            "multiplier when the message names one of the memory's anchors, scaled by how rare the anchor is among "
            "the candidates: full for an anchor one memory carries, none for one they all carry"
        ),
    )
    anchor_feeling_share: Annotated[float, Shown(
        "Feeling's part in the boost",
        ("0: every memory about the named thing gets the boost. 1: each in proportion to how strongly it was felt, and "
         "a plain fact none."),
    )] = Field(
        default=1.0, ge=0.0, le=1.0,
        description=(
            "how much of the anchor boost depends on how the memory felt: 0, every memory that carries the anchor "
            "gets it; 1, in proportion to its emotional intensity (a factual memory gets none)"
        ),
    )
    window_anchor_weight: Annotated[float, Shown(
        "Boost for a thing named recently",
        "A thing only the recent lines named, not the message itself, gets this share of the boost.",
    )] = Field(
        default=0.5, ge=0.0, le=1.0,
        description="an anchor only the conversation window named gets this share of the anchor boost",
    )


class ToneParams(_Params):
    """When a memory's trace turns into a tone rule for the character, and when that rule stands for good.

    A tone constraint is for an intense negative moment; a standing rule for the rare moment that must never be
    treated lightly (a death). The two bars are chosen on human intensity labels with the shipped classifier,
    never by eye: ``feltsense eval tone-thresholds`` (``eval/tone_thresholds.py``) picks them on ESConv valid and
    scores them on ESConv test and ISEAR. Rerun it whenever the classifier changes, and set these from its output.
    """

    min_intensity: Annotated[float, Shown(
        "Tone bar",
        "How intense a negative moment must be for the character to be told to handle it gently.",
        calibrated_by=TONE_EVAL,
    )] = Field(
        default=TONE_BAR, ge=0.0, le=1.0,
        description=(
            "the tone bar: intensity at or above which a negative memory carries a tone rule. Chosen by `feltsense "
            "eval tone-thresholds` (Youden's J separating ESConv valid sessions the seeker rated 4-5 from 1-3, by "
            f"their most intense negative turn) with classifier {THRESHOLDS_CLASSIFIER}"
        ),
    )
    max_valence: Annotated[float, Shown(
        "How negative it must be",
        "A moment counts as negative at or below this valence (−1 very unpleasant, 1 very pleasant).",
    )] = Field(default=-0.25, ge=-1.0, le=1.0, description="valence at or below which it counts")
    standing_rule_salience: Annotated[float, Shown(
        "When a tone rule settles",
        ("Once a handle-gently memory fades below this, it stops competing with other memories: it becomes a permanent "
         "rule if it clears the standing bar, otherwise it fades out of force."),
    )] = Field(
        default=0.15, ge=0.0, le=1.0,
        description=(
            "a toned memory whose salience decays below this stops competing for context slots: it becomes a "
            "standing tone rule if it clears the standing bar, and otherwise simply decays out of force"
        ),
    )
    standing_min_intensity: Annotated[float, Shown(
        "Standing bar",
        ("How intense a faded sad or shameful moment must have been to stay a permanent rule, in force on every turn. "
         "A loss stands at the tone bar."),
        calibrated_by=TONE_EVAL,
    )] = Field(
        default=STANDING_BAR, ge=0.0, le=1.0,
        description=(
            "the standing bar: intensity at or above which a decayed toned memory of a standing register becomes "
            "a standing rule, in force on every turn from then on (a loss stands at the tone bar; a standing bar "
            "set below the tone bar counts as the tone bar). Chosen by "
            "`feltsense eval tone-thresholds` (the lowest intensity at or above the tone bar above which at least "
            "90% of ESConv valid sessions were rated 5 by the seeker, or the best share when none reaches 90%) with "
            f"classifier {THRESHOLDS_CLASSIFIER}"
        ),
    )
    loss_registers: Annotated[tuple[Register, ...], Shown(
        "Losses",
        ("Feelings of a loss that cannot be undone: a faded one stays a permanent rule at the tone bar, so a year on "
         "the character is still not cheerful about it."),
    )] = Field(
        default=("grief",),
        description=(
            "registers of a loss, an ending that cannot be undone: a decayed toned memory of one stands at the tone "
            "bar. The classifier's intensity for a death sits mostly below the standing bar (ISEAR: three in four "
            "of its grief readings between the two bars are sadness reports, most of them a death; 'My cat Pepper "
            "died last night.' reads 0.80), and a year later the character must still not be cheerful about it"
        ),
    )
    standing_registers: Annotated[tuple[Register, ...], Shown(
        "Feelings that stand when intense",
        "Feelings whose faded memories stay a permanent rule only when they cleared the standing bar.",
    )] = Field(
        default=("sadness", "shame"),
        description=(
            "registers whose decayed memories stand only when they clear the standing bar: very intense sadness "
            "or shame (the classifier gives sadness to some losses it does not call grief). Anxiety and anger "
            "never stand (at the standing bar they are the most common misreadings on ESConv test): a worry is "
            "about something ahead and a grievance about someone, and a year later both are settled or faded"
        ),
    )
    max_standing_rules: Annotated[int, Shown(
        "Most permanent rules",
        ("How many permanent tone rules the character is told each turn at most; the most intense, then the newest, "
         "win."),
        unit="rules",
    )] = Field(
        default=8, ge=0, le=100,
        description="most standing rules in one system message; the most intense episodes (then newest) win",
    )
    anniversary_window_days: Annotated[float, Shown(
        "Anniversary window",
        ("A permanent rule whose moment's anniversary is this many days away or nearer says so (“This week marks a "
         "year since then”), so the character can be gentle unprompted. 0: never."),
        unit="days",
    )] = Field(
        default=3.5, ge=0.0, le=60.0,
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

    emotional_min_intensity: Annotated[float, Shown(
        "When a memory is emotional",
        ("A memory felt at least this intensely is emotional and its feeling fades with time; below it, it is a plain "
         "fact."),
    )] = Field(
        default=0.35, ge=0.0, le=1.0,
        description="a trace with a non-neutral register at or above this intensity is emotional, else factual",
    )
    episode_carry: Annotated[float, Shown(
        "Feeling carried through an episode",
        ("A memory about the same thing as a more intense moment of the same session carries at least this share of "
         "its intensity."),
    )] = Field(
        default=0.85, ge=0.0, le=1.0,
        description=(
            "a memory that shares an anchor with a more intense memory of the same session carries at least "
            "this fraction of that intensity (the episode's feeling colours all of it)"
        ),
    )
    max_attempts: Annotated[int, Shown(
        "Write attempts",
        "How many times the after-session pass tries a memory before leaving it.",
        engineering=OPERATIONS,
    )] = Field(default=5, ge=1, le=100, description="write-time attempts before a trace is left")
    resolvable_registers: Annotated[tuple[Register, ...], Shown(
        "Feelings a later memory can settle",
        ("Feelings a later memory can settle (“the scan came back clear”, “she apologised”): the earlier memory stays, "
         "but its tone rule is lifted. Never grief."),
    )] = Field(
        default=("anxiety", "anger"),
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

    resolution_min_valence: Annotated[float, Shown(
        "How good a settling memory must feel",
        "A settling memory must feel better than this (“she apologised but I'm still furious” settles nothing).",
    )] = Field(
        default=0.0, ge=-1.0, le=1.0,
        description="a resolving memory's own valence must be above this (\"she apologised but I'm still furious\" "
                    "is anger, not resolution)",
    )
    resolution_min_similarity: Annotated[float, Shown(
        "Same episode by meaning",
        "How close in meaning a later memory must be to settle an earlier one when they name nothing in common.",
        engineering=EMBEDDER,
    )] = Field(
        default=0.7, ge=-1.0, le=1.0,
        description=(
            "cosine similarity at or above which a resolving memory and an earlier one without a shared anchor are "
            "the same episode (conservative, for the default MiniLM embedder: on LoCoMo, 0.58-0.64 linked cheerful "
            "chatter to unrelated thanks; a provider's embedder may need another value)"
        ),
    )


class StrengthParams(_Params):
    """The live strength scalar (scoring.strength): hybrid decay, usage, floors, and where decay leads."""

    fast_weight: Annotated[float, Shown(
        "Quick-fading share",
        "How much of a memory's strength fades quickly, over days; the rest fades slowly, over months. Below 1.",
    )] = Field(
        default=0.6, ge=0.0, lt=1.0, description="share of the fast exponential term (below 1: a tail must remain)"
    )
    fast_half_life_days: Annotated[float, Shown(
        "Quick-fading half-life",
        "The quick part halves after this many days.",
        unit="days",
    )] = Field(default=7.0, gt=0.0, le=3650.0, description="half-life of the fast term")
    tail_scale_days: Annotated[float, Shown(
        "Slow-fading time scale",
        "Roughly when the slow part starts to wane.",
        unit="days",
    )] = Field(default=30.0, gt=0.0, le=36500.0, description="time scale of the power-law tail")
    tail_exponent: Annotated[float, Shown(
        "Slow-fading steepness",
        "How steeply the slow part falls in the long run: higher forgets old memories sooner.",
    )] = Field(default=0.5, gt=0.0, le=5.0, description="exponent of the power-law tail")
    retrieval_gain: Annotated[float, Shown(
        "Strength from being recalled",
        "How much each recall strengthens a memory (less for each further recall).",
    )] = Field(default=0.15, ge=0.0, le=2.0, description="boost per log(1 + retrievals)")
    query_kind_gain: Annotated[float, Shown(
        "Strength from varied recall",
        "How much being recalled in different kinds of conversation strengthens a memory.",
    )] = Field(default=0.1, ge=0.0, le=2.0, description="boost per log(1 + distinct kinds)")
    max_usage_boost: Annotated[float, Shown(
        "Most strength from use",
        "Use can multiply a memory's strength by at most this much.",
    )] = Field(default=1.5, ge=1.0, le=5.0, description="cap on the usage boost")
    canon_floor: Annotated[float, Shown(
        "Floor for the character's canon",
        "The character's canon never weakens below this.",
    )] = Field(default=0.6, ge=0.0, le=1.0, description="character canon never ranks below this")
    pin_floor: Annotated[float, Shown(
        "Floor for pinned memories",
        "A pinned memory never weakens below this.",
    )] = Field(default=0.8, ge=0.0, le=1.0, description="a pinned memory never ranks below this")
    stale_weight: Annotated[float, Shown(
        "Weight of outdated facts",
        "A memory holding a fact that has since changed counts this much.",
    )] = Field(
        default=0.2, ge=0.0, le=1.0, description="multiplier for a memory carrying a superseded fact"
    )
    archive_below: Annotated[float, Shown(
        "Archive below",
        "Each night, memories weaker than this are archived: kept, but no longer recalled.",
    )] = Field(
        default=0.05, ge=0.0, le=1.0, description="the nightly sweep archives memories whose strength is below this"
    )
    ranking_weight: Annotated[float, Shown(
        "Strength's part in ranking",
        ("How much strength moves ranking: 0 not at all, 1 fully. Strength mostly decides what is archived; in ranking "
         "it only breaks near-ties."),
    )] = Field(
        default=0.05, ge=0.0, le=1.0,
        description=(
            "how far strength moves ranking: score x (1 - w + w x strength); 1 = strength multiplies fully. Strength "
            "governs the lifecycle (archive, floors, stale); in ranking it only breaks near-ties (0.05, chosen on "
            "the development conversations, eval/data/dev_conversations: R@6 69.5 against 68.5 at 0.1)"
        ),
    )


class ScopeParams(_Params):
    """How the memory levels weigh against each other, and diversification after ranking."""

    user_weight: Annotated[float, Shown(
        "Weight of the user's memories",
        "How much the user's own memories and facts count.",
    )] = Field(default=1.0, ge=0.0, le=5.0, description="the user's own memories and facts")
    canon_weight: Annotated[float, Shown(
        "Weight of the character's canon",
        "How much the character's canon counts beside the user's memories.",
    )] = Field(default=1.2, ge=0.0, le=5.0, description="the character's canon")
    shared_weight: Annotated[float, Shown(
        "Weight of shared memory",
        "How much the organisation's shared memory counts beside the user's memories.",
    )] = Field(default=0.9, ge=0.0, le=5.0, description="the organisation's shared memory")
    mmr_lambda: Annotated[float, Shown(
        "Relevance versus variety",
        "1: recall the best matches even when they say the same thing; lower prefers memories that add something new.",
    )] = Field(
        default=0.7, ge=0.0, le=1.0, description="1: rank by score alone; lower trades score for diversity"
    )
    promote_mentions: Annotated[int, Shown(
        "Mentions before a fact is proposed",
        "A new fact the user states this many times is proposed for review as a lasting fact.",
        unit="mentions",
    )] = Field(
        default=2, ge=1, le=100, description="a provisional fact stated this many times is proposed for promotion"
    )


class ContextParams(_Params):
    """What the character is told each turn, in tokens of the character's model (``prompts.context``)."""

    budget_tokens: Annotated[int, Shown(
        "Context budget",
        ("How much the character is told each turn in all (tone rules, canon and memories), in tokens of its model; a "
         "token is about ¾ of a word."),
        unit="tokens",
    )] = Field(
        default=1500, ge=50, le=200_000,
        description="prefix, tone constraints and memories together; Path A first, Path B fills the rest",
    )
    max_pin_tokens: Annotated[int, Shown(
        "Longest canon record",
        "A canon record longer than this is cut at a paragraph break.",
        unit="tokens",
    )] = Field(
        default=400, ge=20, le=100_000, description="a canon record longer than this is cut at a paragraph"
    )
    min_tier: Annotated[Tier, Shown(
        "Least sure match told",
        ("The weakest match the character is told: high, sure matches only; standard, sure and likely ones; low, "
         "everything recall finds."),
    )] = Field(
        default="standard",
        description=(
            "the lowest relevance tier a recalled memory needs to be told to the character (Path B); recall still "
            "returns the low-tier best matches, marked, for a runtime that wants them"
        ),
    )


class TuningProfile(_Params):
    """All tunable constants of one character. ``version`` grows with every saved change."""

    character_id: str = "default"
    version: int = Field(default=1, ge=1, le=2**63 - 1, description="the store keeps it in an SQLite INTEGER")
    retrieval: Annotated[RetrievalParams, Shown(
        "Finding memories",
        ("Before ranking, memories are found two ways, by meaning and by shared words, and the two are blended. The "
         "recent lines of the conversation help too."),
    )] = RetrievalParams()
    scoring: Annotated[ScoringParams, Shown(
        "Ranking and how long feelings last",
        ("How the found memories are ranked: relevance, how strongly each was felt and how long ago, and things the "
         "message names."),
    )] = ScoringParams()
    tone: Annotated[ToneParams, Shown(
        "Tone rules",
        "When a painful moment makes the character handle a subject gently, and when that care becomes permanent.",
    )] = ToneParams()
    write: Annotated[WriteParams, Shown(
        "Reading a session afterwards",
        ("After a session, each memory is read for its feeling: what counts as emotional, and what later news settles "
         "it."),
    )] = WriteParams()
    strength: Annotated[StrengthParams, Shown(
        "Memory strength and forgetting",
        "Every memory weakens with age and strengthens with use; weak memories are archived.",
    )] = StrengthParams()
    scopes: Annotated[ScopeParams, Shown(
        "Whose memories count",
        ("How the user's memories, the character's canon and shared memory weigh against each other, and variety in "
         "what is recalled."),
    )] = ScopeParams()
    context: Annotated[ContextParams, Shown(
        "What the character is told",
        "How much of what is recalled the character is told on each turn.",
    )] = ContextParams()


class ProfileSource:
    """Tuning profiles by character; characters without one use the defaults."""

    def __init__(self, profiles: dict[str, TuningProfile] | None = None, default: TuningProfile | None = None) -> None:
        self._profiles = dict(profiles or {})
        self._default = default or TuningProfile()

    def profile_for(self, character_id: str) -> TuningProfile:
        found = self._profiles.get(character_id)
        if found is not None:
            return found
        return self._default.model_copy(update={"character_id": character_id})

    def set(self, profile: TuningProfile) -> None:
        self._profiles[profile.character_id] = profile
