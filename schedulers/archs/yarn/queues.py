"""YARN's queue tree: the hierarchy both the Capacity and the Fair scheduler
divide the cluster along.

A queue is named by its dotted path under the implicit ``root``
(``root.prod.etl``); its parent is the path without the last part. Each spec
carries the settings of both schedulers (a Capacity tree ignores weights and
min/max shares, a Fair tree ignores capacities), so one parsed ``[yarn]``
section can be checked against whichever scheduler it selects.

Validation raises :class:`QueueError` whose ``key`` names the offending field
as ``queues[<i>].<field>`` (``i`` the spec's position in the list given), so
a caller can print ``file: yarn.queues[2].capacity: ...`` in one line.
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from schedlab.schedulers.model.resources import BASE

ROOT = "root"
CAPACITY_TOL = 1e-6  # siblings' capacities must sum to 100 within this


class QueueError(ValueError):
    """A queue configuration problem; ``key`` names the field
    (``queues[2].capacity``), str() is ``"<key>: <message>"``."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key
        self.message = message


@dataclass(frozen=True)
class QueueSpec:
    """One queue as configured. Percentages are of the parent queue.

    * ``capacity``: the Capacity scheduler's guarantee, percent of the parent.
    * ``max_capacity``: the elasticity ceiling, percent of the parent
      (``capacity <= max_capacity <= 100``).
    * ``user_limit_factor``: one user may use up to this times the queue's
      guarantee (Capacity; > 0).
    * ``minimum_user_limit_percent``: the least share of the queue each active
      user is promised when several compete (Capacity; (0, 100]).
    * ``weight``: the Fair scheduler's weight (> 0).
    * ``min_share``: Fair's minResources, a resource vector (default zeros).
    * ``max_share``: Fair's maxResources, a resource vector, or ``None`` for
      unlimited.
    """

    name: str
    capacity: float = 0.0
    max_capacity: float = 100.0
    user_limit_factor: float = 1.0
    minimum_user_limit_percent: float = 100.0
    weight: float = 1.0
    min_share: tuple[float, ...] | None = None  # None: 0 of every resource
    max_share: tuple[float, ...] | None = None


@dataclass(frozen=True)
class Queue:
    """A validated queue with its place in the tree and its absolute
    fractions of the cluster (products of the percentages along the path)."""

    name: str
    parent: str | None
    children: tuple[str, ...]  # sorted by name
    abs_capacity: float  # guaranteed fraction of the cluster
    abs_max_capacity: float  # ceiling, fraction of the cluster
    user_limit_factor: float
    minimum_user_limit_percent: float
    weight: float
    min_share: np.ndarray  # [R]
    max_share: np.ndarray  # [R], inf where unlimited

    @property
    def is_leaf(self) -> bool:
        return not self.children


def _finite_at_least(key: str, value: float, low: float, strict: bool = False) -> float:
    v = float(value)
    if not math.isfinite(v) or v < low or (strict and v <= low):
        raise QueueError(key, f"must be a finite number {'>' if strict else '>='} {low:g}, got {value!r}")
    return v


def _vector(key: str, value: object, width: int) -> np.ndarray:
    try:
        vec = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise QueueError(key, f"must be a resource vector of {width} numbers, got {value!r}") from None
    if vec.shape != (width,):
        raise QueueError(key, f"must be a resource vector of {width} numbers, got {value!r}")
    if np.any(np.isnan(vec)) or np.any(vec < 0):
        raise QueueError(key, f"must be >= 0 in every resource, got {value!r}")
    return vec


class QueueTree:
    """The validated hierarchy. ``queues`` holds every queue, root first,
    then in depth-first order with children by name (the order every walk
    over the tree uses, so results never depend on spec order)."""

    def __init__(self, queues: dict[str, Queue], capacity_checked: bool) -> None:
        self.queues = queues
        self.capacity_checked = capacity_checked

    # ------------------------------------------------------------ building

    @classmethod
    def build(cls, specs: list[QueueSpec] | tuple[QueueSpec, ...], *, check_capacity: bool, width: int = len(BASE)) -> QueueTree:
        """Validate ``specs`` and build the tree.

        ``check_capacity``: the Capacity scheduler is in use, so the
        capacities of every queue's children must sum to 100
        (``CAPACITY_TOL``). The Fair scheduler ignores capacities.
        ``width``: the cell's resources (every share is a vector of them).

        Raises :class:`QueueError` naming ``queues[<i>].<field>``: an empty
        list (``queues``), a bad or duplicate name, an unknown parent,
        negative or non-finite numbers, ``max_capacity`` below ``capacity``
        or above 100, ``min_share`` above ``max_share``, children's
        capacities not summing to 100.
        """
        if not specs:
            raise QueueError("queues", "no queues: at least one leaf queue under 'root' is needed")
        index: dict[str, int] = {}
        for i, s in enumerate(specs):
            key = f"queues[{i}]"
            parts = s.name.split(".") if isinstance(s.name, str) else []
            if len(parts) < 2 or parts[0] != ROOT or not all(parts):
                raise QueueError(f"{key}.name", f"must be a dotted path under '{ROOT}' (e.g. 'root.prod'), got {s.name!r}")
            if s.name in index:
                raise QueueError(f"{key}.name", f"duplicate queue {s.name!r} (also queues[{index[s.name]}])")
            index[s.name] = i
        for i, s in enumerate(specs):
            parent = s.name.rsplit(".", 1)[0]
            if parent != ROOT and parent not in index:
                raise QueueError(f"queues[{i}].name", f"unknown parent queue {parent!r}")

        checked: dict[str, tuple[float, float, np.ndarray, np.ndarray | None]] = {}
        for i, s in enumerate(specs):
            key = f"queues[{i}]"
            cap = _finite_at_least(f"{key}.capacity", s.capacity, 0.0)
            if cap > 100.0:
                raise QueueError(f"{key}.capacity", f"must be <= 100 (percent of the parent), got {s.capacity!r}")
            mx = _finite_at_least(f"{key}.max_capacity", s.max_capacity, 0.0)
            if mx > 100.0:
                raise QueueError(f"{key}.max_capacity", f"must be <= 100 (percent of the parent), got {s.max_capacity!r}")
            if mx < cap:
                raise QueueError(f"{key}.max_capacity", f"{mx:g} is below capacity {cap:g}")
            _finite_at_least(f"{key}.user_limit_factor", s.user_limit_factor, 0.0, strict=True)
            mulp = _finite_at_least(f"{key}.minimum_user_limit_percent", s.minimum_user_limit_percent, 0.0, strict=True)
            if mulp > 100.0:
                raise QueueError(f"{key}.minimum_user_limit_percent", f"must be <= 100, got {s.minimum_user_limit_percent!r}")
            _finite_at_least(f"{key}.weight", s.weight, 0.0, strict=True)
            lo = np.zeros(width) if s.min_share is None else _vector(f"{key}.min_share", s.min_share, width)
            hi = None if s.max_share is None else _vector(f"{key}.max_share", s.max_share, width)
            if hi is not None and np.any(lo > hi):
                raise QueueError(f"{key}.min_share", f"{tuple(lo.tolist())} exceeds max_share {tuple(hi.tolist())}")
            checked[s.name] = (cap, mx, lo, hi)

        children: dict[str, list[str]] = {ROOT: []}
        for s in specs:
            children.setdefault(s.name, [])
        for s in specs:
            children[s.name.rsplit(".", 1)[0]].append(s.name)
        if check_capacity:
            for parent, kids in children.items():
                if not kids:
                    continue
                total = sum(checked[k][0] for k in kids)
                if abs(total - 100.0) > CAPACITY_TOL:
                    first = min(index[k] for k in kids)
                    each = ", ".join(f"{k} {checked[k][0]:g}" for k in kids)
                    raise QueueError(f"queues[{first}].capacity",
                                     f"capacities of the children of {parent!r} sum to {total:g}, not 100 ({each})")

        queues: dict[str, Queue] = {}
        inf = np.full(width, np.inf)

        def add(name: str, parent: str | None, abs_cap: float, abs_max: float) -> None:
            kids = tuple(sorted(children[name]))
            if parent is None:
                q = Queue(name, None, kids, 1.0, 1.0, 1.0, 100.0, 1.0, np.zeros(width), inf.copy())
            else:
                s = specs[index[name]]
                _, _, lo, hi = checked[name]
                q = Queue(name, parent, kids, abs_cap, abs_max, float(s.user_limit_factor),
                          float(s.minimum_user_limit_percent), float(s.weight), lo, inf.copy() if hi is None else hi)
            queues[name] = q
            for k in kids:
                cap, mx, _, _ = checked[k]
                add(k, name, abs_cap * cap / 100.0, abs_max * mx / 100.0)

        add(ROOT, None, 1.0, 1.0)
        return cls(queues, capacity_checked=check_capacity)

    @classmethod
    def single(cls, leaf: str = "default") -> QueueTree:
        """One leaf holding the whole cluster (the FIFO scheduler's)."""
        return cls.build([QueueSpec(f"{ROOT}.{leaf}", capacity=100.0)], check_capacity=True)

    # ------------------------------------------------------------ lookups

    def __getitem__(self, name: str) -> Queue:
        return self.queues[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.queues)

    def leaves(self) -> list[str]:
        """Leaf names in tree order."""
        return [n for n, q in self.queues.items() if q.is_leaf]

    def path(self, name: str) -> tuple[str, ...]:
        """``root`` .. ``name``, inclusive."""
        out = [name]
        while (p := self.queues[out[-1]].parent) is not None:
            out.append(p)
        return tuple(reversed(out))

    def leaf(self, name: str) -> str:
        """The full name of the leaf queue an application is submitted to.

        Accepts a full path or, as the Capacity scheduler does, a leaf's
        short name when exactly one leaf has it. Raises :class:`QueueError`
        (key ``queue``) for an unknown, ambiguous or non-leaf name:
        applications only ever run in leaf queues."""
        if name in self.queues:
            if not self.queues[name].is_leaf:
                raise QueueError("queue", f"{name!r} is a parent queue; applications go to leaf queues")
            return name
        matches = [n for n in self.leaves() if n.rsplit(".", 1)[-1] == name]
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise QueueError("queue", f"{name!r} is ambiguous: {', '.join(matches)}")
        raise QueueError("queue", f"unknown queue {name!r}; leaf queues: {', '.join(self.leaves())}")
