"""SLURM's multifactor job priority, pure: a weighted sum of factors in
[0, 1] (age, fair-share, job size, partition tier, QOS), and the
fair-share factor from usage that decays with a half-life.

Why these shapes: they are slurmctld's priority/multifactor plugin's. A
factor is a fraction so that the weights alone say what matters; the
fair-share factor is the classic ``2 ** (-usage / shares)`` (an account
that used exactly its share of the cell gets 0.5, one that used nothing
gets 1), with usage decayed by ``PriorityDecayHalfLife`` so old use is
forgiven; age saturates at ``PriorityMaxAge``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

DAY = 86_400.0


@dataclass(frozen=True)
class Weights:
    """PriorityWeight* (slurm.conf), each multiplying a factor in [0, 1]."""

    age: float = 1000.0
    fairshare: float = 10_000.0
    job_size: float = 1000.0
    partition: float = 1000.0
    qos: float = 0.0
    max_age: float = 7 * DAY  # PriorityMaxAge: age factor 1 from here on
    favor_small: bool = False  # PriorityFavorSmall: the size factor rewards small jobs instead


@dataclass
class FairShare:
    """Accounts' shares and decayed usage (node-seconds). ``shares``:
    account -> its share (any positive numbers; normalised over the
    accounts). ``half_life``: PriorityDecayHalfLife, emulated seconds."""

    shares: dict[str, float]
    half_life: float = 7 * DAY
    usage: dict[str, float] = field(default_factory=dict)
    at: float = 0.0  # when ``usage`` was last decayed

    def __post_init__(self) -> None:
        if not self.shares or any(s <= 0 for s in self.shares.values()):
            raise ValueError("every account needs a share > 0")
        if self.half_life <= 0:
            raise ValueError("half_life must be > 0")

    def decay(self, now: float) -> None:
        """Bring every account's usage to ``now``: halved per half-life."""
        if now <= self.at:
            return
        f = 2.0 ** (-(now - self.at) / self.half_life)
        self.usage = {a: u * f for a, u in self.usage.items()}
        self.at = now

    def charge(self, account: str, node_seconds: float, now: float) -> None:
        """Add use (a running job's nodes times the time it ran), as of ``now``."""
        self.decay(now)
        self.usage[account] = self.usage.get(account, 0.0) + node_seconds

    def factor(self, account: str, now: float) -> float:
        """2 ** (-U / S): U the account's share of all decayed usage, S its
        share of all shares. With no usage anywhere every account gets 1."""
        self.decay(now)
        total_use = sum(self.usage.values())
        s = self.shares.get(account, 0.0) / sum(self.shares.values())
        if s <= 0:
            return 0.0
        u = self.usage.get(account, 0.0) / total_use if total_use > 0 else 0.0
        return 2.0 ** (-u / s)


def priority(w: Weights, *, submitted: float, now: float, nodes: int, total_nodes: int, fairshare: float,
             partition_factor: float = 0.0, qos_factor: float = 0.0) -> float:
    """A job's priority: the weighted sum of its factors. ``fairshare``,
    ``partition_factor`` (its partition's PriorityJobFactor over the
    largest) and ``qos_factor`` are already in [0, 1]."""
    age = min(max(now - submitted, 0.0) / w.max_age, 1.0) if w.max_age > 0 else 1.0
    size = nodes / total_nodes if total_nodes > 0 else 0.0
    if w.favor_small:
        size = 1.0 - size
    return (w.age * age + w.fairshare * fairshare + w.job_size * size + w.partition * partition_factor
            + w.qos * qos_factor)
