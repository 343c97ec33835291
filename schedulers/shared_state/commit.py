"""The Omega commit rule: one pure function, the single door into shared state.

A transaction is a list of claims, each (machine, request, seq the scheduler
saw). ``commit`` decides which claims apply to the master copy:

* conflict detection ``resource``: a claim conflicts only if it no longer fits
  (after the earlier accepted claims of the same transaction);
  ``sequence``: a claim also conflicts if the machine changed at all since the
  scheduler read it (its sequence number moved), even when it would still fit.
* transaction mode ``incremental``: non-conflicting claims apply;
  ``all_or_nothing``: one conflict rejects the whole transaction (gang
  scheduling).

Every machine a transaction changes gets its sequence number bumped once.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from schedlab.schedulers.model.resources import EPS


class ConflictMode(str, enum.Enum):
    RESOURCE = "resource"
    SEQUENCE = "sequence"


class TxnMode(str, enum.Enum):
    INCREMENTAL = "incremental"
    ALL_OR_NOTHING = "all_or_nothing"


@dataclass(frozen=True)
class Claims:
    """A transaction's claims, in the order the scheduler made them."""

    machine: np.ndarray  # [K] int64
    request: np.ndarray  # [K, R] float64
    seen_seq: np.ndarray  # [K] int64

    def __len__(self) -> int:
        return int(self.machine.size)


@dataclass(frozen=True)
class CommitResult:
    accepted: np.ndarray  # [K] bool, aligned with the claims
    free: np.ndarray  # master free after the commit, [M, R] (a new array)
    seq: np.ndarray  # sequence numbers after the commit, [M] (a new array)
    touched: np.ndarray  # sorted machine indices whose state changed

    @property
    def committed(self) -> int:
        return int(self.accepted.sum())

    @property
    def conflicted(self) -> int:
        return int(self.accepted.size - self.accepted.sum())


def commit(
    free: np.ndarray,
    seq: np.ndarray,
    claims: Claims,
    conflict_mode: ConflictMode,
    txn_mode: TxnMode,
) -> CommitResult:
    """Apply the commit rule. Inputs are not modified; a claim naming a machine
    outside the cell raises ValueError (a scheduler bug, not a conflict)."""
    k = len(claims)
    m = claims.machine
    if k and (m.min() < 0 or m.max() >= free.shape[0]):
        raise ValueError("claim names a machine outside the cell")
    accepted = np.ones(k, dtype=bool)
    if conflict_mode is ConflictMode.SEQUENCE:
        accepted &= seq[m] == claims.seen_seq

    # Fast path: if every still-accepted claim fits together, one vector check
    # decides; otherwise walk the claims in order (earlier claims win).
    demand = np.zeros_like(free)
    np.add.at(demand, m[accepted], claims.request[accepted])
    if not np.all(free + EPS >= demand):
        running = free.copy()
        for i in range(k):
            if not accepted[i]:
                continue
            row = running[m[i]] - claims.request[i]
            if np.all(row + EPS >= 0):
                running[m[i]] = row
            else:
                accepted[i] = False
    if txn_mode is TxnMode.ALL_OR_NOTHING and not accepted.all():
        accepted[:] = False

    new_free = free.copy()
    np.subtract.at(new_free, m[accepted], claims.request[accepted])
    touched = np.unique(m[accepted])
    new_seq = seq.copy()
    new_seq[touched] += 1
    return CommitResult(accepted=accepted, free=new_free, seq=new_seq, touched=touched)
