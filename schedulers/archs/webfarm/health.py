"""Health checks as a balancer runs them (HAProxy's ``fall``/``rise``): a
server in the pool that fails ``fall`` consecutive checks is taken out; a
server out of the pool that passes ``rise`` consecutive checks is put back.

Why two thresholds: one failed probe is often a timeout under load, and
pulling a busy server on one probe pushes its load onto the others (which
then fail their probes: a cascade). ``rise`` > 1 keeps a flapping server out
until it has proved itself. The price is detection delay: a dead server
still gets traffic for up to ``fall`` check intervals.

Pure: the caller runs the probes (on its own clock) and reports outcomes.
"""
from __future__ import annotations


class HealthChecks:
    def __init__(self, n_servers: int, fall: int = 3, rise: int = 2) -> None:
        if n_servers < 1:
            raise ValueError(f"a pool needs at least one server, got {n_servers}")
        if fall < 1 or rise < 1:
            raise ValueError(f"health check fall and rise must be >= 1, got fall={fall}, rise={rise}")
        self.n = n_servers
        self.fall = fall
        self.rise = rise
        self.up = [True] * n_servers  # every server starts in the pool
        self.streak = [0] * n_servers  # consecutive checks contradicting the current state

    def check(self, server: int, ok: bool) -> bool | None:
        """Record one probe of ``server``. Returns the new state (True: put
        back, False: taken out) when it changes, else None. A probe
        agreeing with the current state resets the streak: only
        *consecutive* contrary probes count."""
        if ok == self.up[server]:
            self.streak[server] = 0
            return None
        self.streak[server] += 1
        if self.streak[server] >= (self.rise if ok else self.fall):
            self.up[server] = ok
            self.streak[server] = 0
            return ok
        return None

    def healthy(self) -> list[int]:
        """Servers in the pool, ascending (a deterministic order policies
        can rely on)."""
        return [s for s in range(self.n) if self.up[s]]

    def is_healthy(self, server: int) -> bool:
        return self.up[server]
