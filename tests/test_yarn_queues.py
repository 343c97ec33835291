"""YARN's queue tree (schedulers.archs.yarn.queues): validation with keyed
errors, absolute fractions, leaf resolution."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from schedlab.schedulers.archs.yarn.queues import ROOT, QueueError, QueueSpec, QueueTree


def capacity_tree() -> QueueTree:
    return QueueTree.build([
        QueueSpec("root.prod", capacity=60, max_capacity=80),
        QueueSpec("root.dev", capacity=40),
        QueueSpec("root.prod.etl", capacity=50, max_capacity=50),
        QueueSpec("root.prod.serve", capacity=50),
    ], check_capacity=True)


def test_absolute_fractions_are_products_along_the_path() -> None:
    t = capacity_tree()
    assert t["root.prod.etl"].abs_capacity == pytest.approx(0.3)
    assert t["root.prod.etl"].abs_max_capacity == pytest.approx(0.4)  # 80% x 50%
    assert t["root.prod.serve"].abs_max_capacity == pytest.approx(0.8)
    assert t["root.dev"].abs_capacity == pytest.approx(0.4) and t["root.dev"].abs_max_capacity == 1.0
    assert t[ROOT].abs_capacity == 1.0


def test_tree_order_and_structure() -> None:
    t = capacity_tree()
    assert list(t) == ["root", "root.dev", "root.prod", "root.prod.etl", "root.prod.serve"]
    assert t.leaves() == ["root.dev", "root.prod.etl", "root.prod.serve"]
    assert t.path("root.prod.etl") == ("root", "root.prod", "root.prod.etl")
    assert t["root.prod"].children == ("root.prod.etl", "root.prod.serve") and not t["root.prod"].is_leaf
    assert t["root.dev"].parent == "root"


def test_children_may_be_listed_before_their_parent() -> None:
    t = QueueTree.build([QueueSpec("root.a.x", capacity=100), QueueSpec("root.a", capacity=100)], check_capacity=True)
    assert t.leaves() == ["root.a.x"]


@pytest.mark.parametrize(("specs", "key", "fragment"), [
    ([], "queues", "no queues"),
    ([QueueSpec("prod", capacity=100)], "queues[0].name", "dotted path"),
    ([QueueSpec("root", capacity=100)], "queues[0].name", "dotted path"),
    ([QueueSpec("root..x", capacity=100)], "queues[0].name", "dotted path"),
    ([QueueSpec("root.a", capacity=50), QueueSpec("root.a", capacity=50)], "queues[1].name", "duplicate"),
    ([QueueSpec("root.a", capacity=100), QueueSpec("root.b.c", capacity=100)], "queues[1].name", "unknown parent queue 'root.b'"),
    ([QueueSpec("root.a", capacity=-1)], "queues[0].capacity", ">= 0"),
    ([QueueSpec("root.a", capacity=120)], "queues[0].capacity", "<= 100"),
    ([QueueSpec("root.a", capacity=float("nan"))], "queues[0].capacity", "finite"),
    ([QueueSpec("root.a", capacity=100, max_capacity=50)], "queues[0].max_capacity", "below capacity"),
    ([QueueSpec("root.a", capacity=100, max_capacity=101)], "queues[0].max_capacity", "<= 100"),
    ([QueueSpec("root.a", capacity=100, user_limit_factor=0)], "queues[0].user_limit_factor", "> 0"),
    ([QueueSpec("root.a", capacity=100, minimum_user_limit_percent=150)], "queues[0].minimum_user_limit_percent", "<= 100"),
    ([QueueSpec("root.a", capacity=100, weight=-2)], "queues[0].weight", "> 0"),
    ([QueueSpec("root.a", capacity=100, min_share=(1.0, -1.0))], "queues[0].min_share", ">= 0"),
    ([QueueSpec("root.a", capacity=100, min_share=(1.0,))], "queues[0].min_share", "resource vector"),
    ([QueueSpec("root.a", capacity=100, max_share=(1.0, 2.0, 3.0))], "queues[0].max_share", "resource vector"),
    ([QueueSpec("root.a", capacity=100, min_share=(4.0, 4.0), max_share=(8.0, 2.0))], "queues[0].min_share", "exceeds max_share"),
    ([QueueSpec("root.a", capacity=60), QueueSpec("root.b", capacity=30)], "queues[0].capacity", "sum to 90, not 100"),
    ([QueueSpec("root.a", capacity=100), QueueSpec("root.a.x", capacity=40), QueueSpec("root.a.y", capacity=40)],
     "queues[1].capacity", "children of 'root.a' sum to 80"),
])
def test_invalid_trees_name_the_offending_field(specs: list[QueueSpec], key: str, fragment: str) -> None:
    with pytest.raises(QueueError) as e:
        QueueTree.build(specs, check_capacity=True)
    assert e.value.key == key
    assert fragment in e.value.message
    assert str(e.value) == f"{key}: {e.value.message}"


def test_capacity_sum_checked_only_for_the_capacity_scheduler() -> None:
    specs = [QueueSpec("root.a", weight=2.0), QueueSpec("root.b")]  # capacities 0: a Fair tree
    with pytest.raises(QueueError):
        QueueTree.build(specs, check_capacity=True)
    t = QueueTree.build(specs, check_capacity=False)
    assert not t.capacity_checked and t["root.a"].weight == 2.0
    assert np.all(np.isinf(t["root.b"].max_share)) and not t["root.b"].min_share.any()


def test_capacity_sum_tolerance() -> None:
    third = 100.0 / 3
    QueueTree.build([QueueSpec(f"root.q{i}", capacity=third) for i in range(3)], check_capacity=True)
    with pytest.raises(QueueError):
        QueueTree.build([QueueSpec("root.a", capacity=50.0), QueueSpec("root.b", capacity=50.001)], check_capacity=True)


def test_leaf_resolution() -> None:
    t = QueueTree.build([
        QueueSpec("root.prod", capacity=50), QueueSpec("root.dev", capacity=50),
        QueueSpec("root.prod.etl", capacity=50), QueueSpec("root.prod.adhoc", capacity=50),
        QueueSpec("root.dev.adhoc", capacity=100),
    ], check_capacity=True)
    assert t.leaf("root.prod.etl") == "root.prod.etl"
    assert t.leaf("etl") == "root.prod.etl"  # a unique short name, as CapacityScheduler accepts
    for name, fragment in [("root.prod", "parent queue"), ("adhoc", "ambiguous"), ("nope", "unknown queue"),
                           ("root", "parent queue")]:
        with pytest.raises(QueueError) as e:
            t.leaf(name)
        assert e.value.key == "queue" and fragment in e.value.message


def test_single_leaf_tree() -> None:
    t = QueueTree.single()
    assert t.leaves() == ["root.default"] and t["root.default"].abs_capacity == 1.0


@st.composite
def capacity_specs(draw: st.DrawFn) -> list[QueueSpec]:
    """A random two-level Capacity tree whose siblings' capacities sum to 100."""
    def split(n: int) -> list[float]:
        cuts = sorted(draw(st.lists(st.integers(0, 100), min_size=n - 1, max_size=n - 1)))
        return [float(b - a) for a, b in zip([0, *cuts], [*cuts, 100])]

    specs = []
    n_top = draw(st.integers(1, 4))
    for i, cap in enumerate(split(n_top)):
        mx = draw(st.floats(cap, 100.0))
        specs.append(QueueSpec(f"root.q{i}", capacity=cap, max_capacity=mx))
        n_kids = draw(st.integers(0, 3))
        if n_kids:
            for j, kc in enumerate(split(n_kids)):
                specs.append(QueueSpec(f"root.q{i}.k{j}", capacity=kc, max_capacity=draw(st.floats(kc, 100.0))))
    return specs


@settings(max_examples=40, deadline=None)
@given(capacity_specs())
def test_leaf_guarantees_partition_the_cluster(specs: list[QueueSpec]) -> None:
    t = QueueTree.build(specs, check_capacity=True)
    assert sum(t[q].abs_capacity for q in t.leaves()) == pytest.approx(1.0)
    for name in t:
        q = t[name]
        assert 0 <= q.abs_capacity <= q.abs_max_capacity + 1e-12 <= 1 + 1e-12
        if q.parent is not None:
            assert q.abs_max_capacity <= t[q.parent].abs_max_capacity + 1e-12
