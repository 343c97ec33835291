"""Borg's quota, checked at admission.

A user's quota is a vector of resources per priority band. Admitting a job
charges ``tasks x request`` to its user's band; the charge is returned when
the job ends (finishes, is killed, or is abandoned). A job whose charge
would exceed the quota is rejected with a reason, never queued. A band with
no quota configured for a user is unlimited (Borg gives best-effort work no
quota at all and runs it on what is left).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from schedlab.schedulers.archs.borg.priority import band
from schedlab.schedulers.model.resources import DEFAULT, EPS


@dataclass
class QuotaBook:
    limits: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)  # (user, band) -> [R]
    used: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    resources: tuple[str, ...] = DEFAULT  # the vectors' names, for the refusal's words

    def admit(self, user: str, priority: int, request: np.ndarray, tasks: int) -> tuple[bool, str]:
        """Charge the job if it fits in its user's quota; else (False, reason)."""
        key = (user, band(priority))
        charge = np.asarray(request, dtype=np.float64) * tasks
        limit = self.limits.get(key)
        if limit is not None:
            used = self.used.get(key, np.zeros_like(charge))
            over = used + charge > limit + EPS
            if over.any():
                r = int(np.flatnonzero(over)[0])
                return False, (f"over quota: user {user!r} in band {key[1]} would use {used[r] + charge[r]:g} "
                               f"{self.resources[r]} of {limit[r]:g}")
        self.used[key] = self.used.get(key, np.zeros_like(charge)) + charge
        return True, ""

    def refund(self, user: str, priority: int, request: np.ndarray, tasks: int) -> None:
        key = (user, band(priority))
        if key in self.used:
            self.used[key] = np.maximum(self.used[key] - np.asarray(request, dtype=np.float64) * tasks, 0.0)
