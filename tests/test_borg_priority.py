"""Borg priority bands, preemption rule and the pending queue (pure, no Ray)."""
from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.archs.borg.priority import PROD_MIN, PendingQueue, band, is_prod, may_preempt


@pytest.mark.parametrize(
    ("priority", "expected"),
    [(10**6, "monitoring"), (360, "monitoring"), (359, "production"), (200, "production"), (199, "batch"),
     (100, "batch"), (99, "best_effort"), (0, "best_effort"), (-5, "best_effort"), (-(10**12), "best_effort")],
)
def test_band_boundaries(priority: int, expected: str) -> None:
    assert band(priority) == expected


def test_is_prod_boundary() -> None:
    assert PROD_MIN == 200
    assert is_prod(200) and is_prod(359) and is_prod(360) and is_prod(1000)
    assert not is_prod(199) and not is_prod(0) and not is_prod(-1)


@pytest.mark.parametrize(
    ("attacker", "victim", "expected"),
    [(150, 100, True), (100, 100, False), (100, 150, False), (200, 199, True), (360, 250, False),
     (250, 200, False), (400, 360, False), (360, 0, True), (1, 0, True), (199, 198, True)],
)
def test_may_preempt(attacker: int, victim: int, expected: bool) -> None:
    assert may_preempt(attacker, victim) is expected


@given(st.integers(-500, 500), st.integers(-500, 500))
@settings(max_examples=200, deadline=None)
def test_may_preempt_property(a: int, v: int) -> None:
    assert may_preempt(a, v) == (v < a and not (a >= 200 and v >= 200))
    assert not (may_preempt(a, v) and may_preempt(v, a))


def test_queue_priority_then_round_robin_then_fifo() -> None:
    q: PendingQueue[str] = PendingQueue()
    for item, prio, user in [("a1", 5, "a"), ("a2", 5, "a"), ("a3", 5, "a"), ("b1", 5, "b"), ("c1", 5, "c"),
                             ("c2", 5, "c"), ("low", 1, "a"), ("hi", 9, "z")]:
        q.push(item, prio, user)
    expected = ["hi", "a1", "b1", "c1", "a2", "c2", "a3", "low"]
    assert list(q.order()) == expected
    assert len(q) == 8
    assert [q.pop() for _ in range(8)] == expected
    assert len(q) == 0 and list(q.order()) == []


def test_queue_push_front_and_remove() -> None:
    q: PendingQueue[int] = PendingQueue()
    q.push(1, 5, "u")
    q.push(2, 5, "u")
    q.push(3, 5, "u", front=True)
    assert list(q.order()) == [3, 1, 2]
    assert 1 in q and 9 not in q
    q.remove(1)
    assert 1 not in q and len(q) == 2
    assert list(q.order()) == [3, 2]
    q.remove(3)
    q.remove(2)
    assert len(q) == 0 and list(q.order()) == []
    with pytest.raises(IndexError):
        q.pop()


def test_queue_rejects_duplicates_and_unknown_removal() -> None:
    q: PendingQueue[str] = PendingQueue()
    q.push("x", 1, "u")
    with pytest.raises(ValueError):
        q.push("x", 2, "v")
    with pytest.raises(LookupError):
        q.remove("nope")
    assert list(q.order()) == ["x"] and len(q) == 1


def test_pop_moves_user_to_back_of_turn() -> None:
    q: PendingQueue[str] = PendingQueue()
    q.push("a1", 5, "a")
    q.push("a2", 5, "a")
    q.push("b1", 5, "b")
    assert q.pop() == "a1"
    q.push("c1", 5, "c")  # new user joins the end of the turn: b, a, c
    assert list(q.order()) == ["b1", "a2", "c1"]


class Model:
    """Reference: per priority, a turn list of [user, items]; a user leaves
    the turn when it has no items and rejoins at the back."""

    def __init__(self) -> None:
        self.prios: dict[int, list[list]] = {}

    def __len__(self) -> int:
        return sum(len(items) for turn in self.prios.values() for _, items in turn)

    def push(self, item: int, prio: int, user: str, front: bool) -> None:
        turn = self.prios.setdefault(prio, [])
        entry = next((e for e in turn if e[0] == user), None)
        if entry is None:
            entry = [user, []]
            turn.append(entry)
        if front:
            entry[1].insert(0, item)
        else:
            entry[1].append(item)

    def _tidy(self, prio: int) -> None:
        self.prios[prio] = [e for e in self.prios[prio] if e[1]]
        if not self.prios[prio]:
            del self.prios[prio]

    def remove(self, item: int) -> None:
        for prio, turn in self.prios.items():
            for entry in turn:
                if item in entry[1]:
                    entry[1].remove(item)
                    self._tidy(prio)
                    return
        raise KeyError(item)

    def pop(self) -> int:
        prio = max(self.prios)
        turn = self.prios[prio]
        entry = turn.pop(0)
        item = entry[1].pop(0)
        turn.append(entry)
        self._tidy(prio)
        return item

    def items(self) -> list[int]:
        return [i for turn in self.prios.values() for _, items in turn for i in items]

    def drain(self) -> list[int]:
        m = copy.deepcopy(self)
        return [m.pop() for _ in range(len(m))]


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("push"), st.sampled_from([1, 5, 9]), st.sampled_from("abc"), st.booleans()),
        st.tuples(st.just("pop")),
        st.tuples(st.just("remove"), st.integers(0, 50)),
    ),
    max_size=40,
)


@given(OPS)
@settings(max_examples=150, deadline=None)
def test_queue_matches_reference_model(ops: list[tuple]) -> None:
    q: PendingQueue[int] = PendingQueue()
    model = Model()
    next_item = 0
    for op in ops:
        if op[0] == "push":
            q.push(next_item, op[1], op[2], front=op[3])
            model.push(next_item, op[1], op[2], op[3])
            next_item += 1
        elif op[0] == "pop":
            if len(model) == 0:
                with pytest.raises(IndexError):
                    q.pop()
            else:
                assert q.pop() == model.pop()
        else:
            present = sorted(model.items())
            if present:
                victim = present[op[1] % len(present)]
                q.remove(victim)
                model.remove(victim)
        assert len(q) == len(model)
        assert list(q.order()) == model.drain()
    snapshot = list(q.order())
    assert sorted(snapshot) == sorted(model.items())
    assert [q.pop() for _ in range(len(q))] == snapshot
    assert len(q) == 0
