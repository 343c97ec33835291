"""The values the Mesos allocator's books hold and hand out: offers,
framework accounts, launches and the result of accepting an offer. Kept
apart from ``allocator.Allocator`` (the decisions) so each reads alone."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

TaskKey = tuple[int, int]  # (job id, task index)

@dataclass
class Offer:
    offer_id: int
    framework: str
    machines: np.ndarray  # int64 [k], ascending and distinct (``accept`` finds rows by binary search)
    resources: np.ndarray  # [k, R]
    made_at: float
    expires_at: float


@dataclass
class Account:
    name: str
    index: int
    weight: float = 1.0
    priority: int = 0
    guarantee: float = 0.0
    wants: bool = True
    allocated: np.ndarray = field(default_factory=lambda: np.zeros(0))
    last_offer_at: float = 0.0
    starving_since: float | None = None

    def give_back(self, amount: np.ndarray) -> None:
        """Resources returned. Many tiny adds and subtracts leave float dust
        (-1e-19 after CSS's 0.002-cpu tasks): an allocation is never below
        zero, and DRF refuses negative demands."""
        self.allocated -= amount
        np.maximum(self.allocated, 0.0, out=self.allocated)


@dataclass
class Launch:
    key: TaskKey
    machine: int
    request: np.ndarray


@dataclass
class AcceptResult:
    ok: bool  # False: the offer was rescinded (or never made); nothing launched
    launched: np.ndarray  # bool per launch
    held: np.ndarray  # bool per hold
    returned: np.ndarray  # [R] offered resources handed back unused
