"""What the web farm's clients know of their pages, pure: each page sent
and not yet answered, its deadline (release + ``client_timeout``), and the
rule that gives every page exactly one fate, whatever died on its way.

Why the client and not a balancer: a balancer can die with pages it had
taken (refused, or forwarded on a link that was down) and its log dies
with it; the client is the one party that knows it never got an answer.

The protocol (contracts):

* A page is *answered* when a balancer refuses it (the client sees the
  refusal: that is the page's fate, logged by the client) or when a server
  took it in (the server's ``Intake`` admitted it: the server owns its fate
  from then on: scheduled, refused, or pending at the end).
* A server admits a page only while its client still waits
  (``gave_up`` is False at the server's own clock) and only if the client
  has not fenced it there.
* A page unanswered ``grace`` after its deadline is *fenced*: the client
  asks every server which of them took it in, and each server, in the same
  step, closes it (it will never admit it). Taken in somewhere: that server
  owns its fate. Nowhere: the client gave up on it, and that is its fate
  (``client_timeout``). Since every server's answer is final when given, a
  page gets one fate, never two and never none; ``grace`` only spares a
  fence for pages a server's acknowledgement is still on its way for.
"""
from __future__ import annotations

import heapq
from collections.abc import Iterable


def gave_up(released: float, timeout: float, now: float) -> bool:
    """The client stopped waiting for a page released at ``released``: past
    its deadline ``released + timeout`` (the rule ``ClientBook`` and
    ``Intake`` apply to deadlines)."""
    return now > released + timeout


class ClientBook:
    def __init__(self, timeout: float, grace: float) -> None:
        if not timeout > 0 or grace < 0:
            raise ValueError(f"client timeout must be positive and grace >= 0, got {timeout}, {grace}")
        self.timeout = timeout
        self.grace = grace
        self.open: dict[int, float] = {}  # page -> deadline, unanswered
        self._due: list[tuple[float, int]] = []  # heap of (deadline, page): open ones not yet fenced
        self.fencing: set[int] = set()  # open pages whose fence is under way
        self._bounced: dict[int, None] = {}  # open pages no balancer received (in send order)

    def sent(self, page: int, released: float) -> None:
        if page in self.open:
            return  # sent again (a retried batch): one page, one deadline
        deadline = released + self.timeout
        self.open[page] = deadline
        heapq.heappush(self._due, (deadline, page))

    def deadline(self, page: int) -> float:
        return self.open[page]

    def answered(self, page: int) -> bool:
        """The page got its answer. True if it was waiting (the caller logs
        the fate the answer carries); False if it had one already (a late
        refusal after the client gave up: ignored, so a page is counted once)."""
        if page not in self.open or page in self.fencing:
            return False
        del self.open[page]
        self._bounced.pop(page, None)
        return True

    def bounced(self, pages: Iterable[int]) -> None:
        """No balancer received these (the one addressed was dead): the client
        tries again when another takes the address (a connection retried)."""
        for p in pages:
            if p in self.open and p not in self.fencing:
                self._bounced[p] = None

    def resend(self, now: float) -> list[int]:
        """The bounced pages whose clients still wait, to send to the new
        address holder; the rest wait for their fence."""
        out = [p for p in self._bounced if p in self.open and p not in self.fencing and now <= self.open[p]]
        self._bounced.clear()
        return out

    def due(self, now: float) -> list[tuple[int, float]]:
        """(page, deadline) of the open pages ``grace`` past their deadline,
        in deadline order: to fence now. They count as fencing until
        ``fenced``."""
        out = []
        while self._due and self._due[0][0] + self.grace <= now:
            deadline, p = heapq.heappop(self._due)
            if p in self.open and p not in self.fencing:
                self.fencing.add(p)
                out.append((p, deadline))
        return out

    def fence_all(self) -> list[tuple[int, float]]:
        """Every open page, to fence now (the run ends), those whose fence
        was under way too (it may have been cut short: a fence is
        idempotent at the servers)."""
        out = sorted(self.open.items(), key=lambda x: (x[1], x[0]))
        self.fencing.update(p for p, _ in out)
        return out

    def fenced(self, pages: Iterable[int], taken: set[int]) -> list[int]:
        """The servers answered the fence of ``pages``: those in ``taken``
        are theirs; the rest no server will ever take. Closes every one;
        returns the pages whose fate is the client's (in the order given)."""
        out = []
        for p in pages:
            if p not in self.fencing:
                continue
            self.fencing.discard(p)
            self._bounced.pop(p, None)
            del self.open[p]
            if p not in taken:
                out.append(p)
        return out


class Intake:
    """A server's side of the protocol: the pages it took in (until the
    client could no longer ask) and the pages fenced before they came.

    ``retention``: emulated s past a page's deadline that the server still
    remembers taking it; a fence later than that would find it forgotten
    (the client fences ``grace`` after the deadline, so retention must be
    much longer than grace plus the longest pause of a server)."""

    def __init__(self, retention: float) -> None:
        self.retention = retention
        self.seen: dict[int, float] = {}  # page -> deadline
        self.closed: dict[int, float] = {}  # page -> deadline: fenced before it came
        self.new: list[int] = []  # taken in since the last acknowledgement

    def admit(self, page: int, deadline: float, now: float) -> bool:
        """May a request of this page start its life here? False: its
        client gave up (or fenced it here): the server drops it unanswered,
        and the page's fate is the client's."""
        if page in self.seen:
            return True
        if now > deadline or page in self.closed:
            return False
        self.seen[page] = deadline
        self.new.append(page)
        return True

    def fence(self, pages: Iterable[tuple[int, float]]) -> list[int]:
        """The pages of ``pages`` (page, deadline) taken in here; the others
        are closed here from now on."""
        taken = []
        for p, deadline in pages:
            if p in self.seen:
                taken.append(p)
            else:
                self.closed[p] = deadline
        return taken

    def taken(self, pages: Iterable[int]) -> list[int]:
        """Which of these were taken in here (a question that closes
        nothing: before sending a bounced page again, in case the dead
        balancer had forwarded it after all)."""
        return [p for p in pages if p in self.seen]

    def acks(self) -> list[int]:
        """The pages taken in since the last call (to tell their clients)."""
        out, self.new = self.new, []
        return out

    def prune(self, now: float) -> None:
        """Forget what no one can ask about any more: a closed page past its
        deadline is refused by the deadline alone."""
        self.closed = {p: d for p, d in self.closed.items() if d >= now}
        self.seen = {p: d for p, d in self.seen.items() if d + self.retention >= now}
