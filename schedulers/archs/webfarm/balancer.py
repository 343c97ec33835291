"""The load balancer's decisions, pure: its healthy set (health checks),
its view of server loads (reports plus its own sent counts), and the
routing of each request through a session mode and a policy.

Contracts:

* A request goes only to a server the balancer believes healthy. Belief
  lags reality by up to ``fall`` check intervals: a request routed to a
  dead server in that window is refused there (the server's business).
* With no healthy server, ``route`` returns None and counts a refusal (a
  503 from the balancer itself).
* ``route`` records the request as sent (for ``reported+sent``); ``report``
  replaces what the balancer knew of that server.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from schedlab.schedulers.archs.webfarm.health import HealthChecks
from schedlab.schedulers.archs.webfarm.policies import Cookie, LoadBook, Policy, Stateless, Sticky
from schedlab.schedulers.archs.webfarm.server import LoadReport

SESSION_MODES = ("none", "sticky", "cookie")


@dataclass(frozen=True)
class Route:
    server: int
    carries_state: bool  # pays the state-transfer cost at the server
    session_lost: bool  # its sticky server was gone: state lost, re-assigned


class Balancer:
    def __init__(self, n_servers: int, policy: Policy, sessions: str = "none", fall: int = 3, rise: int = 2,
                 fresh: Callable[[int], float] | None = None) -> None:
        """``policy`` balances each request in modes ``none`` and
        ``cookie``. In mode ``sticky`` a session's first request goes by
        round robin among healthy servers (the model's rule: affinity
        tables in real balancers are filled that way) and ``policy`` is
        unused. ``fresh`` reads true loads (for ``info='fresh'``)."""
        if sessions not in SESSION_MODES:
            raise ValueError(f"session mode must be one of {SESSION_MODES}, not {sessions!r}")
        self.health = HealthChecks(n_servers, fall, rise)
        self.book = LoadBook(n_servers, fresh)
        self.sessions = sessions
        self.mode: Stateless | Sticky
        if sessions == "sticky":
            self.mode = Sticky()
        elif sessions == "cookie":
            self.mode = Cookie(policy)
        else:
            self.mode = Stateless(policy)
        self.routed = [0] * n_servers
        self.refused = 0  # requests that found no healthy server

    @property
    def sessions_lost(self) -> int:
        return self.mode.lost if isinstance(self.mode, Sticky) else 0

    def route(self, session: int, rng: np.random.Generator) -> Route | None:
        healthy = self.health.healthy()
        if not healthy:
            self.refused += 1
            return None
        server, lost = self.mode.route(session, healthy, self.book, rng)
        self.book.sent_to(server)
        self.routed[server] += 1
        return Route(server, self.mode.carries_state, lost)

    def report(self, rep: LoadReport) -> None:
        self.book.report(rep.server, rep.load, rep.at)

    def check(self, server: int, ok: bool) -> bool | None:
        """One health probe's outcome; the new state if it changed."""
        return self.health.check(server, ok)

    def end_session(self, session: int) -> None:
        if isinstance(self.mode, Sticky):
            self.mode.end(session)
