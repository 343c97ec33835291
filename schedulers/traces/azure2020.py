"""Azure's packing trace 2020 (AzureTracesForPacking2020, the workload of
the Protean paper) as a canonical trace.

What ``src`` is: the trace's SQLite file (``packing_trace_zone_a_v1.sqlite``
as extracted from the published zip), or a folder holding exactly one
``.sqlite``/``.sqlite3``/``.db`` file. Two tables are read, streamed with
``sqlite3`` cursors (the standard library): ``vm`` (``VM_COLUMNS``: one
row per VM request, times in fractional days from the collection's start,
``starttime`` negative for VMs alive when it began, ``endtime`` NULL for
VMs alive long after it) and ``vmType`` (``VM_TYPE_COLUMNS``: what one VM
of a type takes of one machine of type ``machineId``, as fractions).

The trace records no cell: no machine counts and no placements
(``recorded`` is False). The cell built here, and said in the notes:

- one machine type, the one on which the most VM requests fit (their VM
  type has a ``vmType`` row for it whose fractions are at most 1; ties: the
  lowest ``machineId``); VMs of types that do not fit on it are skipped,
  counted in the notes;
- ``ReadOptions.machines`` machines of it, or by default enough that the
  trace's peak load fills ``1 / HEADROOM`` (80%) of the cell in its
  busiest resource (the peak over the whole trace, VMs alive at its start
  included);
- resources ``cpu``, ``mem`` and ``ssd`` (the three the trace's docs say a
  VM type asks), each machine 1.0 of each: a VM asks its type's fractions
  (``core``, ``memory``, ``ssd``); ``hdd`` and ``nic`` are not used.

Each VM is a job of one task, submitted and started at ``starttime``
(requests are created and placed at once in the trace's terms), ending at
``endtime`` (finished; a low-priority VM's end may have been an eviction,
the trace does not say) or, NULL, still running at the end. Tiers by
priority as the docs give it: 0 ``high``, 1 ``low``; neither is a service
tier (the docs call none a service). ``job_priority`` is bigger for more
important (as Google's traces): high 1, low 0. The user is the tenant
(``tenantId``). Times are seconds (days x 86400) from the collection's
start; the trace's ends run past its 14 days (up to 90, NULL beyond), so
a conversion without a window spans to the latest end.

Bad input (no such table or column, a value that is not a number, an
unknown priority) is a TraceError naming the file, the table, the row
(``rowid``) and the column.
"""
from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.schedulers.traces import form
from schedlab.schedulers.traces.builder import Builder
from schedlab.schedulers.traces.form import TraceError
from schedlab.schedulers.traces.readers import Reader, ReadOptions

VM_COLUMNS = ("vmId", "tenantId", "vmTypeId", "priority", "starttime", "endtime")
VM_TYPE_COLUMNS = ("id", "vmTypeId", "machineId", "core", "memory", "hdd", "ssd", "nic")
RESOURCES = ("cpu", "mem", "ssd")
_FRACTIONS = ("core", "memory", "ssd")  # vmType's columns for RESOURCES
TIERS = {0: "high", 1: "low"}
PRIORITY = {0: 1, 1: 0}  # canonical: bigger is more important
DAY = 86_400.0
HEADROOM = 1.25  # the default cell: the peak load fills 1 / HEADROOM of it
_SUFFIXES = (".sqlite", ".sqlite3", ".db")
_CHUNK = 50_000


def _database(src: Path) -> Path:
    if src.is_file():
        return src
    found = sorted(p for p in src.iterdir() if p.is_file() and p.name.endswith(_SUFFIXES))
    if len(found) == 1:
        return found[0]
    if not found:
        zips = sorted(p.name for p in src.iterdir() if p.name.endswith(".zip"))
        hint = f" (extract {zips[0]} first)" if zips else ""
        raise TraceError(f"{src}: no .sqlite file: azure2020 reads the packing trace's SQLite database{hint}")
    raise TraceError(f"{src}: {len(found)} SQLite files ({', '.join(p.name for p in found)}): name one")


def _connect(db: Path) -> sqlite3.Connection:
    try:
        con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
        con.execute("SELECT name FROM sqlite_master LIMIT 1").fetchall()
    except sqlite3.Error as e:
        raise TraceError(f"{db}: not a SQLite database: {e}") from None
    return con


def _check_schema(con: sqlite3.Connection, db: Path) -> None:
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    for table, columns in (("vm", VM_COLUMNS), ("vmType", VM_TYPE_COLUMNS)):
        if table not in tables:
            raise TraceError(f"{db}: no table {table!r} (the packing trace has tables vm and vmType; found: "
                             f"{', '.join(sorted(tables)) or 'none'})")
        have = {r[1] for r in con.execute(f'PRAGMA table_info("{table}")')}
        need = columns if table == "vm" else ("vmTypeId", "machineId", *_FRACTIONS)
        missing = [c for c in need if c not in have]
        if missing:
            raise TraceError.at(f"{db}: table {table!r}", None, missing[0], "missing")


# -- rows as numbers -------------------------------------------------------------------------------------

@dataclass
class _Rows:
    """A chunk of one table's rows: its rowids and columns, as selected."""

    where: str  # "file: table 'vm'"
    rowid: list[int]
    values: dict[str, tuple[Any, ...]]

    def fail(self, k: int, column: str, problem: str) -> TraceError:
        return TraceError.at(f"{self.where}: row {self.rowid[k]}", None, column, problem)

    def floats(self, column: str, required: bool = True) -> np.ndarray:
        """The column as float64 (NULL: nan, or a TraceError if required)."""
        col = self.values[column]
        try:
            out = np.array(col, dtype=np.float64)
        except (TypeError, ValueError):
            out = np.array([self._one(k, column, v) for k, v in enumerate(col)], dtype=np.float64)
        bad = np.isinf(out) | (np.isnan(out) & required)
        if bad.any():
            k = int(np.argmax(bad))
            raise self.fail(k, column, "missing value (NULL)" if col[k] is None else f"not a finite number: {col[k]!r}")
        return out

    def integers(self, column: str) -> np.ndarray:
        out = self.floats(column)
        bad = out != np.round(out)
        if bad.any():
            k = int(np.argmax(bad))
            raise self.fail(k, column, f"not an integer: {self.values[column][k]!r}")
        return out.astype(np.int64)

    def _one(self, k: int, column: str, v: Any) -> float:
        if v is None:
            return math.nan
        if isinstance(v, (int, float)):
            return float(v)
        try:
            return float(v.decode() if isinstance(v, bytes) else v)
        except (TypeError, ValueError, UnicodeDecodeError):
            raise self.fail(k, column, f"not a number: {str(v)[:40]!r}") from None


def _select(con: sqlite3.Connection, db: Path, table: str, columns: tuple[str, ...]) -> Iterator[_Rows]:
    names = ", ".join(f'"{c}"' for c in columns)
    where = f"{db}: table {table!r}"
    try:
        cur = con.execute(f'SELECT rowid, {names} FROM "{table}"')
    except sqlite3.OperationalError:  # a view or a table without rowids: rows by their place
        cur = con.execute(f'SELECT NULL, {names} FROM "{table}"')
    seen = 0
    try:
        while rows := cur.fetchmany(_CHUNK):
            cols = list(zip(*rows))
            rowid = [r if r is not None else seen + k + 1 for k, r in enumerate(cols[0])]
            seen += len(rows)
            yield _Rows(where, rowid, dict(zip(columns, cols[1:])))
    except sqlite3.Error as e:
        raise TraceError(f"{where}: unreadable: {e}") from None


# -- the cell --------------------------------------------------------------------------------------------

def _vm_types(con: sqlite3.Connection, db: Path) -> dict[int, dict[int, tuple[float, ...]]]:
    """machineId -> {vmTypeId: its fractions}, for the types that fit on it (every fraction at most 1)."""
    out: dict[int, dict[int, tuple[float, ...]]] = {}
    for rows in _select(con, db, "vmType", ("vmTypeId", "machineId", *_FRACTIONS)):
        vm_type, machine = rows.integers("vmTypeId"), rows.integers("machineId")
        fractions = np.column_stack([rows.floats(c, required=c != "ssd") for c in _FRACTIONS])
        fractions[:, 2] = np.nan_to_num(fractions[:, 2])  # no SSD column value: asks none
        negative = (fractions < 0).any(axis=1)
        if negative.any():
            k = int(np.argmax(negative))
            column = _FRACTIONS[int(np.argmax(fractions[k] < 0))]
            raise rows.fail(k, column, f"a negative fraction of a machine: {fractions[k].min():g}")
        fits = (fractions <= 1.0).all(axis=1)
        for t, m, f in zip(vm_type[fits].tolist(), machine[fits].tolist(), fractions[fits].tolist()):
            out.setdefault(m, {})[t] = tuple(f)
    return out


def _machine_type(con: sqlite3.Connection, db: Path, types: dict[int, dict[int, tuple[float, ...]]]) -> tuple[int, int]:
    """(the machine type on which the most VM requests fit, how many fit)."""
    if not types:
        raise TraceError(f"{db}: table 'vmType': no VM type fits on any machine (no row with every fraction at most 1)")
    try:
        counts = dict(con.execute('SELECT "vmTypeId", COUNT(*) FROM "vm" GROUP BY "vmTypeId"').fetchall())
    except sqlite3.Error as e:
        raise TraceError(f"{db}: table 'vm': unreadable: {e}") from None
    fit = {m: sum(counts.get(t, 0) for t in fits) for m, fits in types.items()}
    best = min(fit, key=lambda m: (-fit[m], m))
    return best, fit[best]


def _peak(start: np.ndarray, end: np.ndarray, request: np.ndarray) -> np.ndarray:
    """The most of each resource the VMs ask at once (an end frees before a start at the same time)."""
    if start.size == 0:
        return np.zeros(request.shape[1])
    ends = ~np.isnan(end)
    time = np.concatenate([start, end[ends]])
    delta = np.concatenate([request, -request[ends]])
    order = np.lexsort((np.concatenate([np.ones(start.size), np.zeros(int(ends.sum()))]), time))
    return np.cumsum(delta[order], axis=0).max(axis=0)


# -- the reader ------------------------------------------------------------------------------------------

def _vms(con: sqlite3.Connection, db: Path, fits: dict[int, tuple[float, ...]], b: Builder) -> dict[str, Any]:
    """Each VM whose type fits a job of one task; returns what the default cell and the notes need."""
    type_ids = np.array(sorted(fits), dtype=np.int64)
    table = np.array([fits[t] for t in sorted(fits)], dtype=np.float64).reshape(-1, len(RESOURCES))
    kept: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    skipped = clamped = 0
    for rows in _select(con, db, "vm", VM_COLUMNS):
        vm, tenant, vm_type, prio = (rows.integers(c) for c in ("vmId", "tenantId", "vmTypeId", "priority"))
        unknown = ~np.isin(prio, list(TIERS))
        if unknown.any():
            k = int(np.argmax(unknown))
            raise rows.fail(k, "priority", f"unknown priority {int(prio[k])}: 0 (high) or 1 (low)")
        start, end = rows.floats("starttime") * DAY, rows.floats("endtime", required=False) * DAY
        clamped += int((end < start).sum())
        end = np.where(end < start, start, end)
        at = np.minimum(np.searchsorted(type_ids, vm_type), max(type_ids.size - 1, 0))
        ok = type_ids[at] == vm_type if type_ids.size else np.zeros(vm.size, bool)
        skipped += int((~ok).sum())
        vm, tenant, prio, start, end, request = vm[ok], tenant[ok], prio[ok], start[ok], end[ok], table[at[ok]]
        for v, s, p, u in zip(vm.tolist(), start.tolist(), prio.tolist(), tenant.tolist()):
            b.job(v, s, TIERS[p], PRIORITY[p], str(u))
        b.tasks(_task_columns(vm, start, end, request))
        kept.append((start, end, request))
    start, end, request = ((np.concatenate(x) for x in zip(*kept)) if kept else
                           (np.zeros(0), np.zeros(0), np.zeros((0, len(RESOURCES)))))
    return {"start": start, "end": end, "request": request, "skipped": skipped, "clamped": clamped}


def _task_columns(vm: np.ndarray, start: np.ndarray, end: np.ndarray, request: np.ndarray) -> dict[str, np.ndarray]:
    n = vm.size
    return {"job": vm, "index": np.zeros(n, np.int32), "request": request.astype(np.float32), "submit": start,
            "start": start, "last_start": start, "end": end,
            "reason": np.where(np.isnan(end), form.NONE, form.FINISHED).astype(np.int8),
            "machine": np.full(n, -1, np.int64), "attempts": np.ones(n, np.int16)}


def read(src: Path, options: ReadOptions) -> Builder:
    """A Builder filled from the packing trace's database at ``src`` (the
    cell as the module's docstring says), or TraceError."""
    if options.machines is not None and options.machines < 1:
        raise TraceError(f"{src}: machines must be at least 1 (got {options.machines})")
    db = _database(src)
    con = _connect(db)
    try:
        _check_schema(con, db)
        types = _vm_types(con, db)
        machine_type, fitting = _machine_type(con, db, types)
        units = tuple(f"fraction of one machine of type {machine_type}'s {r}" for r in ("cores", "memory", "SSD"))
        b = Builder("azure2020", RESOURCES, units, (str(db),), recorded=False)
        got = _vms(con, db, types[machine_type], b)
    finally:
        con.close()
    peak = _peak(got["start"], got["end"], got["request"])
    machines = options.machines if options.machines is not None else max(1, math.ceil(float(peak.max(initial=0.0)) * HEADROOM))
    first = min(0.0, float(got["start"].min(initial=0.0)))
    for m in range(machines):
        b.machine(first, m, form.ADD, (1.0,) * len(RESOURCES))
    b.notes.update({
        "machine_type": machine_type, "machine_types": len(types), "vms_fitting": fitting,
        "vms_skipped_not_fitting": got["skipped"], "ends_before_starts": got["clamped"], "machines": machines,
        "machines_from": "ReadOptions.machines" if options.machines is not None else
        f"the peak load x {HEADROOM} (peak {', '.join(f'{r} {p:.4g}' for r, p in zip(RESOURCES, peak))})",
        "approximations": "no placements or machine counts recorded: one machine type, capacity 1.0 per resource; "
                          "a VM starts when requested; an ended low-priority VM may have been evicted (kept as finished); "
                          "priority 0 -> tier high (job priority 1), 1 -> low (0)",
    })
    return b


READER = Reader(
    "azure2020", read, default_tier="high")
