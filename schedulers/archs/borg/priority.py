"""Borg's priority bands and its pending queue.

Bands (Verma et al., EuroSys 2015, section 2.5), by numeric priority:
monitoring >= 360, production 200-359, batch 100-199, best-effort < 100.
Production and monitoring together are "prod": a prod task is never
preempted by another prod task.
"""
from __future__ import annotations

import collections
from typing import Generic, Hashable, Iterator, TypeVar

BANDS: tuple[tuple[str, int], ...] = (("monitoring", 360), ("production", 200), ("batch", 100), ("best_effort", -(10**9)))
PROD_MIN = 200

T = TypeVar("T", bound=Hashable)


def band(priority: int) -> str:
    for name, low in BANDS:
        if priority >= low:
            return name
    return BANDS[-1][0]


def is_prod(priority: int) -> bool:
    return priority >= PROD_MIN


def may_preempt(attacker: int, victim: int) -> bool:
    """A task may preempt a strictly lower-priority one, never prod by prod."""
    return victim < attacker and not (is_prod(attacker) and is_prod(victim))


class PendingQueue(Generic[T]):
    """Highest priority first; within a priority, users take turns (round
    robin), each user's items in arrival order. Items are unique."""

    def __init__(self) -> None:
        self._by_prio: dict[int, collections.OrderedDict[str, collections.deque[T]]] = {}
        self._where: dict[T, tuple[int, str]] = {}

    def __len__(self) -> int:
        return len(self._where)

    def __contains__(self, item: T) -> bool:
        return item in self._where

    def push(self, item: T, priority: int, user: str, front: bool = False) -> None:
        if item in self._where:
            raise ValueError(f"{item!r} is already queued")
        users = self._by_prio.setdefault(priority, collections.OrderedDict())
        q = users.setdefault(user, collections.deque())
        (q.appendleft if front else q.append)(item)
        self._where[item] = (priority, user)

    def remove(self, item: T) -> None:
        priority, user = self._where.pop(item)
        users = self._by_prio[priority]
        users[user].remove(item)
        self._tidy(priority, user)

    def _tidy(self, priority: int, user: str) -> None:
        users = self._by_prio[priority]
        if not users[user]:
            del users[user]
        if not users:
            del self._by_prio[priority]

    def pop(self) -> T:
        """The next item; its user moves to the back of its priority's turn."""
        if not self._where:
            raise IndexError("pop from an empty PendingQueue")
        priority = max(self._by_prio)
        users = self._by_prio[priority]
        user, q = next(iter(users.items()))
        item = q.popleft()
        users.move_to_end(user)
        del self._where[item]
        self._tidy(priority, user)
        return item

    def order(self) -> Iterator[T]:
        """Every item in the order successive pops would return them."""
        for priority in sorted(self._by_prio, reverse=True):
            queues = [collections.deque(q) for q in self._by_prio[priority].values()]
            while queues:
                for q in list(queues):
                    yield q.popleft()
                    if not q:
                        queues.remove(q)
