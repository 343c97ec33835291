"""Resource vectors, over the resources a scenario declares.

A resource vector is a float64 numpy array with one entry per resource the
scenario's ``[cell] resources`` names, in that order. The list always
begins with ``cpu`` and ``mem`` (``BASE``): every system modelled has both
(vcores and memory-mb, cpus and mem, Cpus and Memory) and the prefill,
the utilization samples and the summary's headline numbers are about them;
any further resource (a GPU count, disk, rdma) is named by the scenario and
carried, fitted, shared and summarized by the same code as these two. Code
that runs a scenario takes the width from its arrays or the names from the
cell (``Cell.resources``), never from a constant here: ``DEFAULT`` is only
what a scenario that declares nothing gets.
"""
from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

BASE: tuple[str, ...] = ("cpu", "mem")
DEFAULT: tuple[str, ...] = BASE

# A resource's name is a scenario key and an event field: a plain identifier.
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")

# A fit filter may name a node's short resources by a bit mask per resource ("Insufficient cpu", ...).
MAX_RESOURCES = 16

# Float slack for fit checks: requests are summed and subtracted repeatedly.
EPS = 1e-9


def names_problem(names: Sequence[str]) -> str | None:
    """What is wrong with a declared list of resource names, or None."""
    if tuple(names[:2]) != BASE:
        return f"must begin with {', '.join(map(repr, BASE))} (every modelled system has both), then any others"
    bad = [n for n in names if not isinstance(n, str) or not _NAME.match(n)]
    if bad:
        return f"{bad[0]!r} is not a resource name (lower case letters, digits, _; a letter first)"
    if len(set(names)) != len(names):
        return "names a resource twice"
    if len(names) > MAX_RESOURCES:
        return f"{len(names)} resources: at most {MAX_RESOURCES} (a fit check's bit mask per resource)"
    return None


# A cell whose further resource is held as devices (``[cell] devices``)
# gives an architecture that places devices one more column per device
# slot, named ``<resource>#<slot>`` (no scenario key can be: ``#`` is not
# in a resource name): a machine's free share of each device, so a commit,
# a host's overcommit check and the invariants' replay, which compare
# vectors, are device-exact without knowing what a device is.
DEVICE_MARK = "#"


def device_columns(name: str, slots: int) -> tuple[str, ...]:
    return tuple(f"{name}{DEVICE_MARK}{g}" for g in range(slots))


def declared(names: Sequence[str]) -> tuple[str, ...]:
    """The resources a scenario declared among a cell's column names (its device columns left out)."""
    return tuple(n for n in names if DEVICE_MARK not in n)


def vector(names: Sequence[str] = DEFAULT, /, **amounts: float) -> np.ndarray:
    """A resource vector over ``names`` from keyword amounts; missing ones are 0."""
    unknown = set(amounts) - set(names)
    if unknown:
        raise KeyError(f"unknown resource(s): {sorted(unknown)}")
    return np.array([float(amounts.get(r, 0.0)) for r in names], dtype=np.float64)


def fits(free: np.ndarray, request: np.ndarray) -> np.ndarray:
    """Boolean mask over rows of ``free`` (shape [M, R]) that can hold ``request``."""
    return np.all(free + EPS >= request, axis=-1)


def slots_for(capacity: Sequence[float] | np.ndarray, used: Sequence[float] | np.ndarray, largest: Sequence[float] | np.ndarray,
              configured: int = 0) -> int:
    """Slots of a machine: how many tasks of the workload's largest request
    (per resource) fit in what ``used`` (standing tasks) leaves of
    ``capacity``; ``configured`` > 0 caps it (never more than fit: a slot
    must be able to run any task without overcommitting the machine)."""
    cap = np.asarray(capacity, dtype=np.float64) - np.asarray(used, dtype=np.float64)
    req = np.asarray(largest, dtype=np.float64)
    fit = int(min((math.floor(c / r + 1e-9) for c, r in zip(cap, req) if r > 0), default=0))
    fit = max(0, fit)
    return min(fit, configured) if configured > 0 else fit


def largest_request(requests: Sequence[Sequence[float]], width: int) -> tuple[float, ...]:
    """The largest of these requests per resource (1 of each of ``width``
    resources when there are none): a slot sized for it runs any of them."""
    if not len(requests):
        return tuple(1.0 for _ in range(width))
    return tuple(float(x) for x in np.max(np.asarray(requests, dtype=np.float64), axis=0))


def used_shares(used: Sequence[float] | np.ndarray, total: Sequence[float] | np.ndarray) -> list[float]:
    """The share of ``total`` in use, per resource (0 where there is none of it)."""
    return [round(float(a / b), 6) if b > 0 else 0.0
            for a, b in zip(np.asarray(used, dtype=np.float64), np.asarray(total, dtype=np.float64))]


def sample_fields(shares: Sequence[float]) -> dict[str, object]:
    """A ``cell_sample``'s usage fields from ``used_shares``: ``cpu`` and
    ``mem``, and each further resource's share in ``more`` (in the declared
    order; absent when there are none). Positional, so the many actors
    that sample need only their vectors, not the names."""
    s = [float(x) for x in shares]
    out: dict[str, object] = dict(zip(BASE, s))
    if len(s) > len(BASE):
        out["more"] = s[len(BASE):]
    return out


def sample_shares(fields: dict, width: int) -> list[float]:
    """``sample_fields`` read back: the shares of ``width`` resources (0 for one a sample does not carry)."""
    s = [float(fields[r]) for r in BASE] + [float(x) for x in fields.get("more", ())]
    return (s + [0.0] * width)[:width]
