"""Reproducible randomness: one generator per entity, from the scenario seed.

Every random stream is derived from (seed, entity name), so adding a scheduler
does not shift the job list, and a post-mortem can rebuild any stream."""
from __future__ import annotations

import zlib

import numpy as np


def entity_key(name: str) -> int:
    """A stable 32-bit key for a name (Python's hash() is salted per process)."""
    return zlib.crc32(name.encode())


def rng_for(seed: int, entity: str) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([int(seed), entity_key(entity)]))


def route(job_id: int, n: int) -> int:
    """Stable job -> scheduler routing by hashing the job id."""
    return entity_key(f"job-{job_id}") % n
