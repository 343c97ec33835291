"""Cell model: machines with capacity, attributes and a class.

The cell is held as numpy arrays (one row per machine) because every policy
works on whole-cell vectors; per-machine Python objects would make a
10,000-machine placement pass slow.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import dataclasses

from schedlab.schedulers.model.devices import layout
from schedlab.schedulers.model.resources import DEFAULT, declared, device_columns


@dataclass(frozen=True)
class MachineClass:
    """A homogeneous group of machines in a scenario."""

    name: str
    count: int
    capacity: tuple[float, ...]  # one amount per resource the cell declares, in its order
    racks: int = 1
    labels: tuple[str, ...] = ()
    model: str = ""  # its devices' model, in a cell whose [cell] devices names a resource ("" none named)


@dataclass
class Cell:
    """Static description of a cell: capacity and attributes per machine."""

    capacity: np.ndarray  # [M, R]
    rack: np.ndarray  # [M] int
    machine_class: np.ndarray  # [M] int index into classes
    classes: tuple[MachineClass, ...]
    labels: tuple[frozenset[str], ...] = field(default=())
    resources: tuple[str, ...] = DEFAULT  # the names of capacity's columns
    # A resource held as devices ([cell] devices): its column, each machine's
    # device model (an index into ``models``; -1: none named).
    device: int | None = None
    model: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    models: tuple[str, ...] = ()

    @property
    def width(self) -> int:
        return int(self.capacity.shape[1])

    @property
    def declared(self) -> int:
        """Columns of resources the scenario declared; device columns (``with_devices``) follow them."""
        return len(declared(self.resources))

    @property
    def device_slots(self) -> int:
        """Device columns after the declared ones (0: none)."""
        return self.width - self.declared

    @property
    def size(self) -> int:
        return int(self.capacity.shape[0])

    def total(self) -> np.ndarray:
        return self.capacity.sum(axis=0)


def build_cell(classes: tuple[MachineClass, ...], resources: tuple[str, ...] = DEFAULT, devices: str | None = None) -> Cell:
    """Lay machines out class after class; racks are numbered cell-wide so two
    classes never share a rack (a rack is a failure domain of one hardware kind)."""
    caps: list[np.ndarray] = []
    racks: list[np.ndarray] = []
    kinds: list[np.ndarray] = []
    labels: list[frozenset[str]] = []
    rack_base = 0
    for ci, mc in enumerate(classes):
        if len(mc.capacity) != len(resources):
            raise ValueError(f"machine class {mc.name}: capacity needs {len(resources)} dimensions ({', '.join(resources)})")
        caps.append(np.tile(np.asarray(mc.capacity, dtype=np.float64), (mc.count, 1)))
        racks.append(rack_base + np.arange(mc.count) % max(1, mc.racks))
        kinds.append(np.full(mc.count, ci))
        labels.extend([frozenset(mc.labels)] * mc.count)
        rack_base += max(1, mc.racks)
    if not caps:
        capacity = np.zeros((0, len(resources)))
        return Cell(capacity, np.zeros(0, int), np.zeros(0, int), classes, (), resources)
    models = tuple(sorted({mc.model for mc in classes if mc.model}))
    kind = np.concatenate(kinds).astype(np.int64)
    by_class = np.array([models.index(mc.model) if mc.model else -1 for mc in classes], dtype=np.int64)
    return Cell(
        capacity=np.concatenate(caps),
        rack=np.concatenate(racks).astype(np.int64),
        machine_class=np.concatenate(kinds).astype(np.int64),
        classes=classes,
        labels=tuple(labels),
        resources=tuple(resources),
        device=None if devices is None else resources.index(devices),
        model=by_class[kind],
        models=models,
    )


def with_devices(cell: Cell) -> Cell:
    """``cell`` with a column per device slot after its declared resources
    (``resources.DEVICE_MARK``): each machine's devices, 1 free each, 0 in
    a slot it does not have. For an architecture that places devices; one
    that counts them gets the cell as declared."""
    if cell.device is None or cell.device_slots:
        return cell
    counts = np.rint(cell.capacity[:, cell.device]).astype(np.int64)
    slots = layout(counts.tolist())
    names = device_columns(cell.resources[cell.device], slots.shape[1])
    return dataclasses.replace(cell, capacity=np.hstack([cell.capacity, slots]), resources=cell.resources + names)


def host_of(machine: int | np.ndarray, machines_per_actor: int) -> int | np.ndarray:
    """Which host actor carries a machine: contiguous blocks of K machines."""
    return machine // machines_per_actor


def host_count(machines: int, machines_per_actor: int) -> int:
    return -(-machines // machines_per_actor)
