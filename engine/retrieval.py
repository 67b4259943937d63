"""Stage one's fusion with the tuning profile's constants, shared by every store adapter."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from engine.tuning import RetrievalParams
from scoring.fusion import fuse, normalise_similarity


def fuse_legs(
    cosine: NDArray[np.float64],
    lexical: NDArray[np.float64],
    vector_hit: NDArray[np.bool_],
    lexical_hit: NDArray[np.bool_],
    params: RetrievalParams,
    *,
    have_vector: bool,
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Relevance in [0, 1] and which hits clear the floor. Without a query vector (the embedder is down) the
    lexical leg answers alone, uncapped: capping it would only hide the best lexical matches there are."""
    return fuse(
        normalise_similarity(cosine, min_similarity=params.vector_min_similarity,
                             full_similarity=params.vector_full_similarity),
        lexical, vector_hit, lexical_hit,
        vector_weight=params.vector_weight if have_vector else 0.0,
        lexical_weight=params.lexical_weight if have_vector else 1.0,
        lexical_only_cap=params.lexical_only_cap if have_vector else 1.0,
        fused_floor=params.fused_floor,
    )
