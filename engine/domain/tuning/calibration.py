"""The defaults that evaluations measure rather than anyone chooses: the tone bars with the classifier they were
chosen with, and the relevance tiers' calibration. Rerun the evaluation named beside each rather than edit it."""

from __future__ import annotations

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
