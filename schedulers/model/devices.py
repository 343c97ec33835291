"""Devices: a resource a machine holds as separate devices (GPUs), asked for
whole or as a share of one.

A *device resource* of a cell is, on each machine, a number of devices of
capacity 1 each, all of the machine's one model (as in Alibaba's GPU
traces: a node has N GPUs of one type). A task's amount ``a`` of it means
what GPU-sharing schedulers mean by it (Alibaba's openb trace writes it as
``num_gpu`` and ``gpu_milli``):

- ``0 < a < 1``: a share of *one* device, which must have ``a`` free on
  that device alone (two halves on two devices are not one half-GPU
  task's room, whatever the machine's sum says);
- ``a >= 1``, a whole number: ``a`` whole devices, each entirely free;
- ``0``: none.

The machine's sum of the resource (the cell's resource vector) stays what
every architecture fits and meters; this module adds the device-level
truth: whether a machine's devices can hold an ask, which devices a task
takes, and what it leaves. Pure: numpy in, numpy out, no randomness.

Shapes: ``free`` [M, G]: each machine's devices' free fractions, 0 for a
device slot the machine does not have (a machine with fewer devices than
the widest); a row [G] is one machine.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

EPS = 1e-9
MIN_SHARE = 1e-3  # the finest share asked for (openb's gpu_milli: thousandths); below it, EPS slack would let it fit anywhere


def ask_problem(amount: float) -> str | None:
    """Why ``amount`` is no device ask (for a one-line scenario error), or None."""
    if not math.isfinite(amount) or amount < 0:
        return f"{amount:g} is not an amount of devices"
    if 0 < amount < MIN_SHARE:
        return f"{amount:g}: a share of one device is at least {MIN_SHARE:g} (a thousandth)"
    if amount >= 1 and abs(amount - round(amount)) > EPS:
        return f"{amount:g}: a share of one device is below 1; more is a whole number of devices"
    return None


def count_problem(amount: float) -> str | None:
    """Why a machine's amount of a device resource is no number of devices, or None."""
    if not math.isfinite(amount) or amount < 0 or abs(amount - round(amount)) > EPS:
        return f"{amount:g} is not a whole number of devices"
    return None


@dataclass(frozen=True)
class DeviceAsk:
    """One task's ask of a device resource: ``amount`` (see the module
    docstring) and the device models it may run on (None: any)."""

    amount: float
    models: frozenset[int] | None = None

    @property
    def share(self) -> bool:
        return 0 < self.amount < 1

    @property
    def whole(self) -> int:
        """Whole devices asked for (0 for a share or none)."""
        return int(round(self.amount)) if self.amount >= 1 else 0

    @property
    def per_device(self) -> float:
        """What each device it uses must have free: the share, or all of it."""
        return self.amount if self.share else 1.0


def model_ok(model: np.ndarray, ask: DeviceAsk) -> np.ndarray:
    """Mask over machines (``model`` [M]: each one's model index) whose model the ask allows."""
    if ask.models is None:
        return np.ones(model.shape, dtype=bool)
    return np.isin(model, np.fromiter(ask.models, dtype=np.int64))


def device_fits(free: np.ndarray, ask: DeviceAsk) -> np.ndarray:
    """Mask over machines whose devices can hold ``ask`` (not looking at models)."""
    if ask.amount <= 0:
        return np.ones(free.shape[0], dtype=bool)
    usable = free + EPS >= ask.per_device
    return usable.sum(axis=-1) >= max(1, ask.whole)


def choices(row: np.ndarray, ask: DeviceAsk) -> list[np.ndarray]:
    """The distinct ways one machine's devices (``row``) can hold ``ask``,
    each the device indices it would take: a share on any one device that
    has it (they differ: which one is left with the sliver); whole devices
    as the lowest-numbered free ones (whole free devices are all alike).
    Empty when the machine cannot hold it; one empty array for no ask."""
    if ask.amount <= 0:
        return [np.zeros(0, dtype=np.int64)]
    usable = np.flatnonzero(row + EPS >= ask.per_device)
    if ask.share:
        return [usable[i:i + 1] for i in range(usable.size)]
    return [usable[:ask.whole]] if usable.size >= ask.whole else []


def take(row: np.ndarray, devices: np.ndarray, ask: DeviceAsk) -> np.ndarray:
    """``row`` after the task takes ``devices`` (a copy). ValueError when
    they cannot hold it: the device-level overcommit the caller must refuse."""
    out = np.array(row, dtype=np.float64)
    if ask.amount <= 0:
        return out
    if len(devices) != max(1, ask.whole) or np.any(out[devices] + EPS < ask.per_device):
        raise ValueError(f"devices {list(map(int, devices))} cannot hold {ask.amount:g} (free {out[devices].tolist()})")
    out[devices] = np.maximum(out[devices] - ask.per_device, 0.0)
    return out


def give_back(row: np.ndarray, devices: Sequence[int], ask: DeviceAsk) -> np.ndarray:
    """``row`` after a task that held ``devices`` ends (a copy; never above 1)."""
    out = np.array(row, dtype=np.float64)
    if ask.amount > 0:
        idx = np.asarray(devices, dtype=np.int64)
        out[idx] = np.minimum(out[idx] + ask.per_device, 1.0)
    return out


def layout(counts: Sequence[int]) -> np.ndarray:
    """The free matrix [M, G] of machines with ``counts`` devices each, all free."""
    width = max(counts, default=0)
    return (np.arange(width)[None, :] < np.asarray(counts, dtype=np.int64)[:, None]).astype(np.float64)
