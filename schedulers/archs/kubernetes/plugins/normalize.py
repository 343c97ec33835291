"""Score normalisation shared by the plugins.

Scores are int64 as upstream's, so ties (and therefore the tie-break) fall
where upstream's integer arithmetic puts them."""
from __future__ import annotations

import numpy as np

from ..extension_points import MAX_NODE_SCORE

_EPS = 1e-9  # float slack before flooring, so 49.999999999 counts as 50


def floor_int(x: np.ndarray) -> np.ndarray:
    """Upstream computes scores in integers (milli-CPU, bytes) and truncates;
    on our floats the same is a floor with a little slack."""
    return np.floor(x + _EPS).astype(np.int64)


def default_normalize(scores: np.ndarray, reverse: bool = False) -> np.ndarray:
    """Scale so the best node gets MAX_NODE_SCORE (integer division);
    ``reverse`` flips it (fewer is better). All zero: zeros, or all
    MAX_NODE_SCORE when reversed."""
    top = int(scores.max()) if scores.size else 0
    if top == 0:
        return np.full_like(scores, MAX_NODE_SCORE) if reverse else scores
    out = scores * MAX_NODE_SCORE // top
    return MAX_NODE_SCORE - out if reverse else out


def min_max_normalize(scores: np.ndarray) -> np.ndarray:
    """Map [min, max] onto [0, MAX_NODE_SCORE], truncating; all equal -> 0."""
    if not scores.size:
        return scores
    lo, hi = int(scores.min()), int(scores.max())
    if hi == lo:
        return np.zeros_like(scores)
    return (MAX_NODE_SCORE * ((scores - lo) / (hi - lo))).astype(np.int64)
