"""Classic one-dimensional bin packing, for teaching: the textbook algorithms
the cell placement policies are named after.

Items have sizes in (0, 1]; bins have capacity 1. Every algorithm takes the
item sizes in arrival order and returns the *assignment*: an int array, one
bin number per item, bins numbered 0, 1, ... in the order they were opened
(first fit decreasing: opened while packing the sorted list).
``n_bins(assignment)`` is the number of bins used, ``loads`` each bin's fill.
Returning the assignment rather than a count lets a test check that every
item is placed exactly once and no bin overflows.

Worst-case bounds, with OPT the fewest bins any packing needs (sources:
D. S. Johnson, "Fast algorithms for bin packing", JCSS 8, 1974; Johnson,
Demers, Ullman, Garey and Graham, "Worst-case performance bounds for simple
one-dimensional packing algorithms", SIAM J. Comput. 3, 1974; summarised in
Garey and Johnson, "Computers and Intractability", 1979; later tightenings
as cited on each function):

=================  ==================================================
next fit           NF <= 2 OPT - 1; asymptotic ratio 2
next-k fit         asymptotic ratio 1.7 + 3/(10(k-1)) for k >= 2
first fit          FF <= 1.7 OPT + small constant; now floor(1.7 OPT)
best fit           same as first fit
worst fit          same as next fit: asymptotic ratio 2
almost worst fit   same as first fit asymptotically: 1.7
first fit decr.    offline (sorts first): 11/9 OPT + 6/9
=================  ==================================================

OPT itself is NP-hard to compute; ``lower_bound`` (ceil of the total size)
is the cheap stand-in, so a ratio measured against it overstates the true
ratio to OPT, never understates it.

Pure Python + numpy; each online algorithm is O(n * bins) at worst, fine
for the few thousand items a demonstration packs.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial

import numpy as np

# Float slack of the fit test (a bin holds items summing to at most 1 + TOL),
# so that, e.g., ten items of 0.1 fill exactly one bin despite rounding.
TOL = 1e-9

Sizes = Sequence[float] | np.ndarray
Packer = Callable[[Sizes], np.ndarray]
# A rule for the Any Fit family: given the levels of the open bins an item
# fits in (ascending bin number) pick one of them, by position.
Chooser = Callable[[np.ndarray], int]


def _as_sizes(sizes: Sizes) -> np.ndarray:
    """Sizes as a float array; refuses sizes outside (0, 1], which no unit
    bin can hold (or which would make "placed once" meaningless)."""
    a = np.asarray(sizes, dtype=np.float64).reshape(-1)
    if a.size and not (np.all(a > 0) and np.all(a <= 1)):
        raise ValueError("item sizes must be in (0, 1]")
    return a


def lower_bound(sizes: Sizes) -> int:
    """ceil(sum(sizes)): no packing into unit bins uses fewer (OPT >= this).

    Divided by the fit test's 1 + TOL so float rounding of a sum that is
    really an integer cannot push the bound above what a packing achieves."""
    return math.ceil(math.fsum(_as_sizes(sizes)) / (1 + TOL))


def n_bins(assignment: np.ndarray) -> int:
    """Number of bins an assignment uses (bins are numbered from 0)."""
    return int(np.max(assignment)) + 1 if len(assignment) else 0


def loads(sizes: Sizes, assignment: np.ndarray) -> np.ndarray:
    """Total size in each bin, indexed by bin number."""
    return np.bincount(assignment, weights=_as_sizes(sizes), minlength=n_bins(assignment))


def next_fit(sizes: Sizes) -> np.ndarray:
    """Textbook next fit: only the current bin is open; an item that does not
    fit closes it for good and opens a new one. Linear time, one open bin.

    Bound: NF <= 2 OPT - 1 (any two consecutive bins hold more than 1;
    Johnson 1974); asymptotically tight (items alternating 1/2 and a tiny
    epsilon)."""
    return next_k_fit(sizes, 1)


def next_k_fit(sizes: Sizes, k: int = 3) -> np.ndarray:
    """Next-k fit: the k most recently opened bins stay open; an item goes to
    the first open one (oldest first) it fits in, else a new bin opens and,
    if that makes k + 1 open, the oldest is closed for good. k = 1 is next
    fit.

    Bound: asymptotic ratio 1.7 + 3/(10(k-1)) for k >= 2 (Johnson 1974
    gave the bracket, W. Mao, SIAM J. Comput. 22, 1993, proved it tight);
    never worse than next fit."""
    if k < 1:
        raise ValueError(f"next_k_fit needs k >= 1, got {k}")
    a = _as_sizes(sizes)
    out = np.empty(a.size, dtype=np.int64)
    level: list[float] = []  # level[b] of every bin opened so far
    open_bins: list[int] = []  # oldest first
    for i, x in enumerate(a.tolist()):
        b = next((b for b in open_bins if level[b] + x <= 1 + TOL), -1)
        if b < 0:
            b = len(level)
            level.append(0.0)
            open_bins.append(b)
            del open_bins[:-k]
        level[b] += x
        out[i] = b
    return out


def _any_fit(sizes: Sizes, choose: Chooser) -> np.ndarray:
    """The Any Fit family: every bin stays open; an item opens a new bin only
    when it fits in none, else ``choose`` picks among those it fits in.
    Every member uses at most as many bins as next fit on the same list
    (within a run of items next fit puts in one bin, the first new bin
    opened here holds only items of that run, so the rest of the run fits
    in it)."""
    a = _as_sizes(sizes)
    out = np.empty(a.size, dtype=np.int64)
    level = np.zeros(a.size)  # at most one bin per item
    used = 0
    for i, x in enumerate(a.tolist()):
        fit = np.flatnonzero(level[:used] + x <= 1 + TOL)
        if fit.size:
            b = int(fit[choose(level[fit])])
        else:
            b = used
            used += 1
        level[b] += x
        out[i] = b
    return out


def first_fit(sizes: Sizes) -> np.ndarray:
    """Each item in the lowest-numbered bin it fits in.

    Bound: FF <= 1.7 OPT + 2 (Johnson, Demers, Ullman, Garey, Graham 1974),
    tightened to FF <= floor(1.7 OPT) (G. Dosa and J. Sgall, STACS 2013)."""
    return _any_fit(sizes, lambda lv: 0)


def best_fit(sizes: Sizes) -> np.ndarray:
    """Each item in the fullest bin it fits in (ties: lowest number).

    Bound: same as first fit, BF <= 1.7 OPT + 2 (Johnson et al. 1974),
    tightened to BF <= floor(1.7 OPT) (Dosa and Sgall, ICALP 2014)."""
    return _any_fit(sizes, lambda lv: int(np.argmax(lv)))


def worst_fit(sizes: Sizes) -> np.ndarray:
    """Each item in the emptiest open bin it fits in (ties: lowest number).

    Bound: as bad as next fit, asymptotic ratio 2 (Johnson 1974): on next
    fit's worst-case lists it packs exactly as next fit does."""
    return _any_fit(sizes, lambda lv: int(np.argmin(lv)))


def _second_emptiest(lv: np.ndarray) -> int:
    if lv.size == 1:
        return 0
    order = np.argsort(lv, kind="stable")
    return int(order[1])


def almost_worst_fit(sizes: Sizes) -> np.ndarray:
    """Each item in the second emptiest bin it fits in; in the emptiest only
    when that is the only one (ties: lowest number).

    Bound: asymptotic ratio 1.7, like first fit (Johnson 1974: every
    "Almost Any Fit" rule, one that never picks the unique emptiest bin
    when another fits, has ratio 1.7). A small change from worst fit, a
    big change in the worst case."""
    return _any_fit(sizes, _second_emptiest)


def first_fit_decreasing(sizes: Sizes) -> np.ndarray:
    """Offline: first fit on the items sorted largest first; the assignment
    is returned in the original item order.

    Bound: FFD <= 11/9 OPT + 6/9 (Johnson 1973 proved 11/9 OPT + 4; the
    tight additive constant is G. Dosa's, 2007)."""
    a = _as_sizes(sizes)
    order = np.argsort(-a, kind="stable")
    out = np.empty(a.size, dtype=np.int64)
    out[order] = first_fit(a[order])
    return out


def algorithms(k: int = 3) -> dict[str, Packer]:
    """Every algorithm by display name, next-k fit with the given k."""
    return {
        "next_fit": next_fit,
        f"next_k_fit (k={k})": partial(next_k_fit, k=k),
        "first_fit": first_fit,
        "best_fit": best_fit,
        "worst_fit": worst_fit,
        "almost_worst_fit": almost_worst_fit,
        "first_fit_decreasing": first_fit_decreasing,
    }
