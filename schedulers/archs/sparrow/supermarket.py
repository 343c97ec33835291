"""The supermarket model's closed form (Mitzenmacher, "The Power of Two
Choices in Randomized Load Balancing", 2001; Vvedenskaya, Dobrushin and
Karpelevich, 1996): n servers, Poisson arrivals at rate lam < 1 per server,
exponential service at rate 1, each arrival joins the shortest of d servers
chosen uniformly at random. As n -> infinity the fraction of servers with
at least i tasks is s_i = lam^((d^i - 1)/(d - 1)) (doubly exponential in i
for d >= 2; lam^i, M/M/1, for d = 1), so by Little's law the expected time
in system is T_d(lam) = (1/lam) sum_{i>=1} s_i
= sum_{i>=1} lam^((d^i - d)/(d - 1)); for d = 1, 1/(1 - lam).

Why it is here: it is the yardstick for the sampling policies (at
lam = 0.9, d = 2 gives about 2.6 against random's 10), and the finite-n
emulation should approach it.
"""
from __future__ import annotations

import math

TOL = 1e-12


def _check(lam: float, d: int) -> None:
    if not 0.0 <= lam < 1.0:
        raise ValueError(f"arrival rate per server must be in [0, 1), got {lam}")
    if int(d) != d or d < 1:
        raise ValueError(f"d must be a positive integer, got {d}")


def _exponent(d: int, i: int) -> float:
    """(d^i - 1)/(d - 1) = 1 + d + ... + d^(i-1); i for d = 1."""
    return float(i) if d == 1 else (float(d) ** i - 1.0) / (d - 1)


def tail_fraction(lam: float, d: int, i: int) -> float:
    """Fraction of servers with at least ``i`` tasks (i >= 0) as n -> inf."""
    _check(lam, d)
    if i < 0:
        raise ValueError(f"i must be >= 0, got {i}")
    if i == 0:
        return 1.0
    if lam == 0.0:
        return 0.0
    if d > 1 and (i - 1) * math.log(d) > 700.0:
        return 0.0  # exponent > d^(i-1) > 1e304: below the smallest float for any lam < 1
    e = _exponent(d, i)
    return math.exp(e * math.log(lam)) if e * math.log(lam) > -745.0 else 0.0


def expected_time(lam: float, d: int) -> float:
    """Expected time in system, T_d(lam); summed until a term is below 1e-12
    (the terms fall doubly exponentially for d >= 2, so the rest is far
    smaller)."""
    _check(lam, d)
    if d == 1:
        return 1.0 / (1.0 - lam)
    if lam == 0.0:
        return 1.0
    total, i = 0.0, 1
    while True:
        term = tail_fraction(lam, d, i) / lam
        total += term
        if term < TOL:
            return total
        i += 1
