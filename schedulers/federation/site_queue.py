"""A site's queue as the federation sees it, without knowing the site's
architecture: the jobs handed to it, minus those its own event log says
stopped waiting (scheduled, abandoned or refused). What a site publishes
(``bulletin.Publication``) and what a peer answers a probe with come from
here."""
from __future__ import annotations

from collections.abc import Iterable

from schedlab.schedulers.federation.bulletin import Publication, WaitWindow


class SiteQueue:
    def __init__(self, site: int, capacity: float, wait_window: float = 120.0) -> None:
        self.site, self.capacity = site, capacity
        self.waiting: dict[int, tuple[float, float]] = {}  # job -> (handed at, work)
        self.gone: set[int] = set()  # left before we learned it was handed (a reordered report)
        self.waits = WaitWindow(wait_window)
        self.cursor = 0  # into the site's left-queue log

    def handed(self, job: int, at: float, work: float) -> None:
        if job in self.gone:
            self.gone.discard(job)
            return
        self.waiting[job] = (at, work)

    def left(self, rows: Iterable[tuple[int, float]], cursor: int) -> None:
        """Jobs that stopped waiting, [job, t] in the site's order, and the
        cursor after them."""
        for job, t in rows:
            got = self.waiting.pop(int(job), None)
            if got is None:
                self.gone.add(int(job))
            else:
                self.waits.record(float(t), max(0.0, float(t) - got[0]))
        self.cursor = cursor

    def length(self) -> int:
        return len(self.waiting)

    def work(self) -> float:
        return float(sum(w for _t, w in self.waiting.values()))

    def load(self) -> float:
        """Jobs waiting per slot: what a p2p probe compares to its threshold."""
        return self.length() / self.capacity

    def publication(self, now: float) -> Publication:
        return Publication(self.site, now, self.length(), self.work(), 0.0, self.capacity, self.waits.p50(now))
