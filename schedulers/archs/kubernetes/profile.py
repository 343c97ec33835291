"""A profile: a named scheduler's plugins per extension point, in order,
their Score weights, and how many feasible nodes a cycle looks for
(``num_feasible_nodes_to_find``, upstream's percentageOfNodesToScore).

Pure data and arithmetic: nothing here runs a plugin or imports another
module of the framework, so anything may import it without a cycle.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5

@dataclass(frozen=True)
class Profile:
    """A named scheduler: its plugins per extension point, in order, and the
    weight (a positive int) of each Score plugin. Pods pick a profile by
    ``schedulerName``. ``percentage_of_nodes_to_score``: None or 0 is
    upstream's adaptive default, 1..100 a fixed share. ``candidate_limit``:
    instead, stop at this many feasible nodes (Nomad's limit iterator: 2
    for batch jobs, the power of two choices), or ``"log2"`` (log2 of the
    nodes, Nomad's limit for services)."""

    name: str = "default-scheduler"
    pre_filter: tuple[Any, ...] = ()
    filter: tuple[Any, ...] = ()
    post_filter: tuple[Any, ...] = ()
    pre_score: tuple[Any, ...] = ()
    score: tuple[Any, ...] = ()
    reserve: tuple[Any, ...] = ()
    permit: tuple[Any, ...] = ()
    bind: tuple[Any, ...] = ()
    weights: Mapping[str, int] = field(default_factory=dict)
    percentage_of_nodes_to_score: int | None = None
    candidate_limit: int | str | None = None

    def __post_init__(self) -> None:
        for p in self.score:
            w = self.weights.get(p.name, 1)
            if isinstance(w, bool) or not isinstance(w, int) or w <= 0:
                raise ValueError(f"profile {self.name}: weight of {p.name} must be a positive integer (got {w!r})")
        pct = self.percentage_of_nodes_to_score
        if pct is not None and (isinstance(pct, bool) or not isinstance(pct, int) or not 0 <= pct <= 100):
            raise ValueError(f"profile {self.name}: percentage_of_nodes_to_score must be an integer 0..100 (got {pct!r})")

    @classmethod
    def of(
        cls,
        name: str,
        plugins: Sequence[Any],
        weights: Mapping[str, int] | None = None,
        percentage_of_nodes_to_score: int | None = None,
    ) -> Profile:
        """File each plugin under every extension point it implements (the
        method the point is named for), in the order given (upstream's multiPoint)."""
        def at(point: str) -> tuple[Any, ...]:
            return tuple(p for p in plugins if callable(getattr(p, point, None)))
        return cls(name=name, pre_filter=at("pre_filter"), filter=at("filter"), post_filter=at("post_filter"),
                   pre_score=at("pre_score"), score=at("score"), reserve=at("reserve"), permit=at("permit"), bind=at("bind"),
                   weights=dict(weights or {}), percentage_of_nodes_to_score=percentage_of_nodes_to_score)

    def weight(self, plugin_name: str) -> int:
        return self.weights.get(plugin_name, 1)

    def feasible_to_find(self, n_nodes: int) -> int:
        """How many feasible nodes a cycle looks for before it stops filtering."""
        limit = self.candidate_limit
        if limit:
            want = max(1, math.ceil(math.log2(max(n_nodes, 2)))) if limit == "log2" else int(limit)
            return min(n_nodes, want)
        return num_feasible_nodes_to_find(self.percentage_of_nodes_to_score, n_nodes)


def num_feasible_nodes_to_find(percentage: int | None, n_nodes: int) -> int:
    """How many feasible nodes a cycle looks for before it stops filtering.
    Small clusters (< 100 nodes) are searched whole; the adaptive default is
    50% less 1% per 125 nodes, floored at 5%; never fewer than 100."""
    if n_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return n_nodes
    pct = percentage or 0
    if pct == 0:
        pct = max(50 - n_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(n_nodes * pct // 100, MIN_FEASIBLE_NODES_TO_FIND)
