"""Why nodes were filtered out in one cycle: ``Diagnosis`` (a status per
rejected node, and the counts and messages derived from it) and
``StatusTable``, which builds its deduplicated status table while filtering.

Kept as arrays (rejected node rows and an index into a small table of
distinct statuses) rather than a dict per node, because a cycle may reject
thousands of nodes for a handful of reasons; PostFilter (preemption) reads
``preemption_candidates``, the run reads ``plugin_counts``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .status import Code, Status


@dataclass
class Diagnosis:
    """Why nodes were filtered out this cycle. ``nodes[k]`` was rejected
    with ``table[status_index[k]]``; nodes the cycle did not examine have no
    status, except that a PreFilter rejection (``absent``) applies to all."""

    n_nodes: int
    nodes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    status_index: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    table: list[Status] = field(default_factory=list)
    absent: Status | None = None

    def status(self, node: int) -> Status | None:
        hit = np.flatnonzero(self.nodes == node)
        if hit.size:
            return self.table[int(self.status_index[hit[0]])]
        return self.absent

    def statuses(self) -> dict[int, Status]:
        """Every rejected node's status (all nodes, for a PreFilter rejection)."""
        out = {i: self.absent for i in range(self.n_nodes)} if self.absent is not None else {}
        out.update({int(n): self.table[int(s)] for n, s in zip(self.nodes, self.status_index)})
        return out

    def _per_status(self) -> list[tuple[Status, int]]:
        if self.absent is not None:
            return [(self.absent, self.n_nodes)]
        counts = np.bincount(self.status_index, minlength=len(self.table))
        return [(st, int(c)) for st, c in zip(self.table, counts) if c]

    def plugin_counts(self) -> dict[str, int]:
        """Nodes filtered out per plugin (the run's metric)."""
        out: dict[str, int] = {}
        for st, c in self._per_status():
            out[st.plugin] = out.get(st.plugin, 0) + c
        return out

    def reason_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for st, c in self._per_status():
            for r in st.reasons:
                out[r] = out.get(r, 0) + c
        return out

    def message(self) -> str:
        """Upstream's FitError text: "0/5 nodes are available: 3 Insufficient cpu, ..."."""
        parts = sorted(f"{c} {r}" for r, c in self.reason_counts().items())
        return f"0/{self.n_nodes} nodes are available: {', '.join(parts)}."

    def preemption_candidates(self) -> np.ndarray:
        """Nodes where removing pods might help: rejected as Unschedulable,
        not UnschedulableAndUnresolvable (upstream's nodesWherePreemptionMightHelp)."""
        if self.absent is not None:
            return np.arange(self.n_nodes) if self.absent.code == Code.UNSCHEDULABLE else np.zeros(0, dtype=np.int64)
        codes = np.array([st.code for st in self.table], dtype=np.int64)
        if not codes.size:
            return np.zeros(0, dtype=np.int64)
        return np.sort(self.nodes[codes[self.status_index] == Code.UNSCHEDULABLE])


class StatusTable:
    """Statuses deduplicated into the Diagnosis table while filtering:
    ``index`` gives each distinct status one row, in first-seen order, and
    ``items`` becomes ``Diagnosis.table``."""

    def __init__(self) -> None:
        self.items: list[Status] = []
        self._ix: dict[Status, int] = {}

    def index(self, st: Status) -> int:
        i = self._ix.get(st)
        if i is None:
            i = self._ix[st] = len(self.items)
            self.items.append(st)
        return i
