"""Emulated time: one epoch for every actor, durations scaled by time_scale."""
from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass
class Clock:
    """Emulated seconds since ``epoch`` (a wall ``time.time()`` value handed to
    every actor at start). Before start, now() is negative or meaningless."""

    scale: float
    epoch: float = 0.0

    def now(self) -> float:
        return (time.time() - self.epoch) * self.scale

    def wall(self, emulated: float) -> float:
        """Wall seconds that ``emulated`` seconds take."""
        return emulated / self.scale
