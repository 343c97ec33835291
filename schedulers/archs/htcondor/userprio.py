"""HTCondor's user priorities, pure: the accountant's real user priority
(RUP), the effective user priority (EUP) the negotiator sorts by, and the
pie slices it hands out.

Why these shapes: they are the HTCondor manual's ("User Priorities and
Negotiation"). RUP measures what a user has been using: at every update it
moves toward the user's current usage ``u`` (slots held now),
``RUP(t) = RUP(t0) * b + (1 - b) * u`` with ``b = 0.5 ** ((t - t0) / h)``
and ``h = PRIORITY_HALFLIFE``, so a user who holds ``u`` slots for long
converges to RUP ``u`` and one who stops decays back, halving the distance
per half-life. RUP never drops below 0.5 (HTCondor's floor), so an idle or
new user has the best possible priority and no EUP is ever 0. EUP = RUP x
the user's priority factor (an administrator's knob: a factor 2 halves the
user's share). Lower EUP is better.

The pie: each user with idle jobs gets a share of the pool proportional to
1 / EUP. HTCondor keeps fractional limits; here a share is whole slots
(largest remainder, leftovers to the better EUP, then the name), so the
quotas of users with demand always add up to the pie and a spin can never
strand a fraction nobody may spend. What a user cannot use (too few jobs,
or jobs no machine takes) is handed out again in the negotiator's later
pie spins.

No clock: ``update`` takes ``now``; the shell calls it at the start of each
negotiation cycle (as the accountant does) with the usage it sees.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

DAY = 86_400.0
MIN_RUP = 0.5  # HTCondor's floor on the real user priority


@dataclass
class UserPrio:
    """The accountant's view of users. ``half_life``: PRIORITY_HALFLIFE in
    emulated seconds. ``factors``: user -> priority factor (> 0), others use
    ``default_factor``. ``rup``: user -> real user priority (absent = 0.5).
    ``usage``: user -> slots in use at the last update (the negotiator
    subtracts it from the user's pie slice). ``at``: time of the last update
    (None before the first)."""

    half_life: float = DAY
    factors: dict[str, float] = field(default_factory=dict)
    default_factor: float = 1.0
    rup: dict[str, float] = field(default_factory=dict)
    usage: dict[str, float] = field(default_factory=dict)
    at: float | None = None

    def __post_init__(self) -> None:
        if not self.half_life > 0:
            raise ValueError("half_life must be > 0")
        if not self.default_factor > 0 or any(not f > 0 for f in self.factors.values()):
            raise ValueError("every priority factor must be > 0")

    def update(self, now: float, usage_by_user: Mapping[str, float]) -> None:
        """Age every known user's RUP to ``now`` toward the usage given.

        ``usage_by_user`` is what each user holds now (absent = 0); as in
        HTCondor's accountant it stands for the whole interval since the
        previous update, so update often (every cycle) for accuracy. The
        first call only records the time and usage (no interval elapsed).
        Time going backwards decays nothing.
        """
        if any(u < 0 for u in usage_by_user.values()):
            raise ValueError("usage must be >= 0")
        dt = 0.0 if self.at is None else max(now - self.at, 0.0)
        b = 0.5 ** (dt / self.half_life)
        for user in sorted(set(self.rup) | set(usage_by_user)):
            old = self.rup.get(user, MIN_RUP)
            self.rup[user] = max(MIN_RUP, old * b + (1.0 - b) * float(usage_by_user.get(user, 0.0)))
        self.usage = {u: float(v) for u, v in usage_by_user.items() if v > 0}
        self.at = now if self.at is None else max(self.at, now)

    def real(self, user: str) -> float:
        """The user's RUP (0.5 for a user never seen)."""
        return self.rup.get(user, MIN_RUP)

    def factor(self, user: str) -> float:
        return self.factors.get(user, self.default_factor)

    def eup(self, user: str) -> float:
        """Effective user priority: RUP x priority factor; lower is better."""
        return self.real(user) * self.factor(user)

    def in_use(self, user: str) -> float:
        """Slots the user held at the last update."""
        return self.usage.get(user, 0.0)

    def order(self, users: Iterable[str]) -> list[str]:
        """``users`` best first: by EUP, then name (a stable, seed-free tie-break)."""
        return sorted(set(users), key=lambda u: (self.eup(u), u))

    def shares(self, users_with_demand: Iterable[str], total_slots: int) -> dict[str, int]:
        """Whole-slot quotas of ``total_slots`` for ``users_with_demand``,
        proportional to 1 / EUP: each user gets the floor of its exact share,
        and the slots left by flooring go one each to the largest remainders
        (ties: better EUP, then name). The quotas add up to ``total_slots``
        whenever some user has demand."""
        if total_slots < 0:
            raise ValueError("total_slots must be >= 0")
        users = self.order(users_with_demand)
        if not users:
            return {}
        weights = {u: 1.0 / self.eup(u) for u in users}
        norm = sum(weights.values())
        exact = {u: total_slots * w / norm for u, w in weights.items()}
        quota = {u: math.floor(x + 1e-9) for u, x in exact.items()}
        left = total_slots - sum(quota.values())
        by_remainder = sorted(users, key=lambda u: (-(exact[u] - quota[u]), self.eup(u), u))
        for u in by_remainder[:max(left, 0)]:
            quota[u] += 1
        return quota
