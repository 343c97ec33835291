"""A synthetic Azure packing trace 2020, in the trace's exact schema (one
SQLite file, tables ``vm`` and ``vmType`` with the published columns and
units: times in fractional days, resources as fractions of a machine), for
tests and demos of ``schedlab.schedulers.traces.azure2020``.

What it holds, seeded (NumPy's generator): a few machine types and a few
dozen VM types, each type defined on some machine types: the largest,
``BEST``, has them all (so the reader's choice is known) but two defined
only elsewhere and one too big for it (fractions above 1), whose VMs the
reader skips; VM requests from tenants,
high (0) and low (1) priority, some alive before the trace starts
(negative ``starttime``), most ending within days, some still alive
(``endtime`` NULL).
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np

BEST = 7  # the machineId every VM type but three fits on
NAME = "packing_trace_zone_a_v1.sqlite"
_MACHINES = {3: (40, 256, 4), BEST: (96, 768, 16), 11: (64, 512, 8), 15: (48, 384, 8)}  # cores, GB, SSD units
_TypeRow = tuple[int, int, int, float, float, float, float, float]


def _types(rng: np.random.Generator, n: int) -> tuple[list[_TypeRow], np.ndarray]:
    """vmType rows (id, vmTypeId, machineId, core, memory, hdd, ssd, nic),
    and the type ids: the last two defined only off ``BEST``, the one
    before them too big for it."""
    type_ids = np.sort(rng.choice(np.arange(1, 1000), n, replace=False))
    rows: list[_TypeRow] = []
    for k, t in enumerate(type_ids.tolist()):
        cores = 128 if k == n - 3 else int(rng.choice([1, 2, 4, 8, 16, 32, 64]))
        gb = cores * float(rng.choice([2.0, 4.0, 8.0]))
        ssd = float(rng.choice([0.0, 0.5, 1.0, 2.0]))
        others = [m for m in _MACHINES if m != BEST and (rng.random() < 0.5 or k >= n - 2 and m == 3)]
        for m in ([BEST] if k < n - 2 else []) + others:
            c, g, s = _MACHINES[m]
            rows.append((len(rows) + 1, t, m, cores / c, gb / g, float(rng.random() * 0.1), ssd / s, cores / c / 2))
    return rows, type_ids


def write(out: Path, *, machines: int = 40, jobs: int = 300, hours: float = 6.0, seed: int = 0, gz: bool = False) -> dict:
    """Write ``out/packing_trace_zone_a_v1.sqlite``: ``jobs`` VM requests
    over ``hours`` (plus some alive before). ``machines`` is not written
    (the trace records none): it is returned, the cell a test converts
    with. ``gz`` is accepted for a common signature and ignored: SQLite is
    read uncompressed (the trace ships as a zip to extract). Returns
    ``path``; ``machines``; ``machine_type`` (``BEST``); ``types`` (the
    vmType rows); ``vm``: ``vmId``, ``tenantId``, ``vmTypeId``,
    ``priority``, ``starttime``, ``endtime`` (days, nan for NULL) as
    written; ``fits`` (its type is defined on ``BEST`` within 1) and
    ``request`` ([n, 3]: core, memory, ssd on ``BEST``; nan where not)."""
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    path = out / NAME
    path.unlink(missing_ok=True)
    types, type_ids = _types(rng, 30)
    n = jobs
    days = hours / 24.0
    vm_id = rng.choice(np.arange(1, 20 * n + 1), n, replace=False)
    tenant = rng.integers(1, max(2, n // 8), n)
    vm_type = rng.choice(type_ids, n)
    priority = (rng.random(n) < 0.25).astype(np.int64)
    before = rng.random(n) < 0.15
    start = np.where(before, -rng.uniform(0.01, 3.0, n), rng.uniform(0.0, days, n))
    life = rng.lognormal(np.log(days / 4 + 1e-3), 1.5, n)
    alive = rng.random(n) < 0.2
    end = np.where(alive, np.nan, start + life)
    end[before & ~alive] = np.maximum(end[before & ~alive], 0.001)  # those alive before mostly still running at 0
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE vm (vmId INTEGER, tenantId INTEGER, vmTypeId INTEGER, priority INTEGER, "
                    "starttime REAL, endtime REAL)")
        con.execute("CREATE TABLE vmType (id INTEGER, vmTypeId INTEGER, machineId INTEGER, core REAL, memory REAL, "
                    "hdd REAL, ssd REAL, nic REAL)")
        con.executemany("INSERT INTO vmType VALUES (?, ?, ?, ?, ?, ?, ?, ?)", types)
        rows = zip(vm_id.tolist(), tenant.tolist(), vm_type.tolist(), priority.tolist(), start.tolist(),
                   [None if np.isnan(e) else e for e in end.tolist()])
        con.executemany("INSERT INTO vm VALUES (?, ?, ?, ?, ?, ?)", rows)
    con.close()
    on_best = {t: (c, m, s) for _, t, mach, c, m, _h, s, _n in types if mach == BEST and max(c, m, s) <= 1.0}
    fits = np.array([t in on_best for t in vm_type.tolist()], dtype=bool)
    request = np.array([on_best.get(t, (np.nan,) * 3) for t in vm_type.tolist()], dtype=np.float64).reshape(n, 3)
    return {"path": path, "machines": machines, "machine_type": BEST, "types": types,
            "vm": {"vmId": vm_id, "tenantId": tenant, "vmTypeId": vm_type, "priority": priority, "starttime": start,
                   "endtime": end},
            "fits": fits, "request": request}
