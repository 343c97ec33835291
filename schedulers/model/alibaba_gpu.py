"""Readers of Alibaba's public GPU-cluster traces, from the files as
published (alibaba/clusterdata):

- ``cluster-trace-gpu-v2023`` ("openb", the FGD paper's traces): a node
  list (``sn, cpu_milli, memory_mib, gpu, model``; 1,523 nodes) and pod
  lists (``name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, qos,
  pod_phase, creation_time, deletion_time, scheduled_time``; 8,152 pods in
  ``openb_pod_list_default.csv``), CSV with a header;
- ``cluster-trace-gpu-v2020`` (PAI): ``pai_machine_spec`` (``machine,
  gpu_type, cap_cpu, cap_mem, cap_gpu``), ``pai_job_table`` (``job_name,
  inst_id, user, status, start_time, end_time``) and ``pai_task_table``
  (``job_name, task_name, inst_num, status, start_time, end_time, plan_cpu,
  plan_mem, plan_gpu, gpu_type``), headerless CSV shipped as ``.tar.gz``
  (the headers are separate ``.header`` files).

Every reader streams (one row at a time; a ``.gz`` or a ``.tar.gz`` holding
one CSV is read compressed) and yields one canonical form: ``Node`` and
``Task``, in cores, GiB and devices (a GPU amount below 1 is a share of
one GPU, 1 or more whole GPUs: ``schedulers.model.devices``). A bad row is
``TraceError``: one line naming the file, the line, the column and the
problem.

Units as the traces document them: openb's cpu in milli-cores, memory in
MiB, ``gpu_milli`` the share of one GPU in thousandths (for ``num_gpu ==
1``), times in seconds. PAI's ``plan_cpu`` in percent of a core,
``plan_mem`` in GB, ``plan_gpu`` in percent of one GPU (50: half of one;
200: two), times in seconds; an empty field is 0 (a CPU-only task has no
``plan_gpu``). A PAI ``plan_gpu`` above 100 that is not a multiple of 100
(rare) is rounded up to whole GPUs: a task cannot hold 1.5 GPUs.
"""
from __future__ import annotations

import csv
import gzip
import io
import math
import tarfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from schedlab.schedulers.model.devices import ask_problem

MIB_PER_GIB = 1024.0


class TraceError(ValueError):
    """A trace file that cannot be read; str() is one line: file:line: column: problem."""


@dataclass(frozen=True)
class Node:
    name: str
    cpu: float  # cores
    mem: float  # GiB
    devices: int  # GPUs
    model: str  # GPU model ("" when it has none)


@dataclass(frozen=True)
class Task:
    """One task (a pod; an instance of a PAI task): its request, the GPU
    models it may use (empty: any), when it was submitted, started and
    ended (None: the trace does not say), its tier (openb's qos, PAI's
    user) and how it ended (openb's pod_phase, PAI's status)."""

    name: str
    cpu: float
    mem: float
    devices: float
    models: tuple[str, ...]
    submit: float
    start: float | None
    end: float | None
    tier: str
    outcome: str


OPENB_NODES = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
OPENB_PODS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
              "creation_time", "deletion_time", "scheduled_time")
PAI_MACHINES = ("machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu")
PAI_JOBS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
PAI_TASKS = ("job_name", "task_name", "inst_num", "status", "start_time", "end_time", "plan_cpu", "plan_mem",
             "plan_gpu", "gpu_type")


def _text(path: Path) -> io.TextIOBase:
    """The file's text: plain, gzip, or the one CSV member of a .tar.gz."""
    name = path.name
    if name.endswith((".tar.gz", ".tgz")):
        tar = tarfile.open(path, "r:gz")
        member = next((m for m in tar if m.isfile()), None)
        if member is None:
            raise TraceError(f"{path}: an empty archive")
        raw = tar.extractfile(member)
        assert raw is not None
        return io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
    if name.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8-sig", newline="")
    return open(path, encoding="utf-8-sig", newline="")


def _rows(path: str | Path, columns: tuple[str, ...], header: bool) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, row by column) for every data row; TraceError on a
    missing file, a header without a column, or a row of the wrong width."""
    p = Path(path)
    if not p.is_file():
        raise TraceError(f"{p}: no such file")
    try:
        with _text(p) as f:
            reader = csv.reader(f)
            names = columns
            line = 0
            if header:
                first = next(reader, None)
                line = 1
                if first is None:
                    raise TraceError(f"{p}:1: empty: expected a header ({', '.join(columns)})")
                missing = [c for c in columns if c not in first]
                if missing:
                    raise TraceError(f"{p}:1: {missing[0]}: missing column (the header has {', '.join(first)})")
                names = tuple(first)
            for row in reader:
                line = reader.line_num
                if not row or all(not x.strip() for x in row):
                    continue
                if len(row) != len(names):
                    raise TraceError(f"{p}:{line}: {len(row)} fields, expected {len(names)} ({', '.join(names)})")
                yield line, dict(zip(names, row))
    except (UnicodeDecodeError, OSError, EOFError, tarfile.TarError, csv.Error, zlib.error) as e:
        raise TraceError(f"{p}: cannot read ({type(e).__name__}: {e})") from None


def _number(p: str | Path, line: int, row: dict[str, str], col: str, empty: float | None = None) -> float:
    raw = row[col].strip()
    if raw == "" or raw.lower() == "nan":
        if empty is not None:
            return empty
        raise TraceError(f"{p}:{line}: {col}: empty")
    try:
        v = float(raw)
    except ValueError:
        raise TraceError(f"{p}:{line}: {col}: {raw!r} is not a number") from None
    if not math.isfinite(v) or v < 0:
        raise TraceError(f"{p}:{line}: {col}: {raw!r} is not a number >= 0")
    return v


def _optional(p: str | Path, line: int, row: dict[str, str], col: str) -> float | None:
    v = _number(p, line, row, col, empty=-1.0)
    return None if v < 0 else v


def _name(v: str) -> str:
    v = v.strip()
    return "" if v.lower() == "nan" else v


# ------------------------------------------------------------------ openb (2023)


def openb_nodes(path: str | Path) -> Iterator[Node]:
    """The nodes of an ``openb_node_list_*.csv``."""
    for line, row in _rows(path, OPENB_NODES, header=True):
        gpus = _number(path, line, row, "gpu")
        if gpus != int(gpus):
            raise TraceError(f"{path}:{line}: gpu: {row['gpu']!r} is not a whole number of GPUs")
        model = _name(row["model"])
        if gpus and not model:
            raise TraceError(f"{path}:{line}: model: empty for a node with {int(gpus)} GPUs")
        yield Node(row["sn"].strip(), _number(path, line, row, "cpu_milli") / 1000.0,
                   _number(path, line, row, "memory_mib") / MIB_PER_GIB, int(gpus), model)


def openb_tasks(path: str | Path) -> Iterator[Task]:
    """The pods of an ``openb_pod_list_*.csv``, in file order. A pod's GPU
    amount: ``num_gpu`` whole GPUs, or ``gpu_milli / 1000`` of one GPU when
    it asks for one GPU and less than all of it (GPU sharing)."""
    for line, row in _rows(path, OPENB_PODS, header=True):
        n = _number(path, line, row, "num_gpu")
        milli = _number(path, line, row, "gpu_milli", empty=0.0)
        if n != int(n) or n > 64:
            raise TraceError(f"{path}:{line}: num_gpu: {row['num_gpu']!r} is not a whole number of GPUs")
        if milli > 1000 or milli != int(milli):
            raise TraceError(f"{path}:{line}: gpu_milli: {row['gpu_milli']!r} is not a whole number of thousandths "
                             "of one GPU (0 to 1000)")
        if n == 0 and milli > 0:
            raise TraceError(f"{path}:{line}: gpu_milli: {row['gpu_milli']!r} for a pod asking no GPU (num_gpu 0)")
        devices = milli / 1000.0 if n == 1 and 0 < milli < 1000 else n
        created = _number(path, line, row, "creation_time")
        end = _optional(path, line, row, "deletion_time")
        if end is not None and end < created:
            raise TraceError(f"{path}:{line}: deletion_time: {row['deletion_time']} is before creation_time {row['creation_time']}")
        spec = _name(row["gpu_spec"])
        yield Task(row["name"].strip(), _number(path, line, row, "cpu_milli") / 1000.0,
                   _number(path, line, row, "memory_mib") / MIB_PER_GIB, devices,
                   tuple(s for s in spec.split("|") if s) if spec else (), created,
                   _optional(path, line, row, "scheduled_time"), end, _name(row["qos"]), _name(row["pod_phase"]))


# ------------------------------------------------------------------ PAI (2020)


def pai_machines(path: str | Path) -> Iterator[Node]:
    """The machines of ``pai_machine_spec`` (cap_cpu in cores, cap_mem in GB)."""
    for line, row in _rows(path, PAI_MACHINES, header=False):
        gpus = _number(path, line, row, "cap_gpu", empty=0.0)
        if gpus != int(gpus):
            raise TraceError(f"{path}:{line}: cap_gpu: {row['cap_gpu']!r} is not a whole number of GPUs")
        yield Node(row["machine"].strip(), _number(path, line, row, "cap_cpu"), _number(path, line, row, "cap_mem"),
                   int(gpus), _name(row["gpu_type"]) if gpus else "")


def pai_devices(plan_gpu: float) -> float:
    """A PAI ``plan_gpu`` (percent of one GPU) as a device amount."""
    if plan_gpu <= 100:
        return plan_gpu / 100.0
    return float(math.ceil(plan_gpu / 100.0 - 1e-9))


def pai_job_submits(path: str | Path) -> dict[str, float]:
    """job_name -> its submission time (``pai_job_table``'s start_time)."""
    out: dict[str, float] = {}
    for line, row in _rows(path, PAI_JOBS, header=False):
        out[row["job_name"].strip()] = _number(path, line, row, "start_time")
    return out


def pai_tasks(path: str | Path, submits: dict[str, float] | None = None) -> Iterator[Task]:
    """One ``Task`` per instance of each ``pai_task_table`` row (``inst_num``
    of them), submitted when its job was (``submits``; without them, when
    the task started), its models the row's ``gpu_type`` when it asks for
    GPUs (PAI records the type a task ran on)."""
    for line, row in _rows(path, PAI_TASKS, header=False):
        n = _number(path, line, row, "inst_num", empty=1.0)
        if n != int(n) or n < 1:
            raise TraceError(f"{path}:{line}: inst_num: {row['inst_num']!r} is not a count of instances")
        start = _optional(path, line, row, "start_time")
        end = _optional(path, line, row, "end_time")
        if start is not None and end is not None and end < start:
            raise TraceError(f"{path}:{line}: end_time: {row['end_time']} is before start_time {row['start_time']}")
        job = row["job_name"].strip()
        submit = submits.get(job) if submits is not None else None
        if submit is None:
            if start is None:
                raise TraceError(f"{path}:{line}: start_time: empty, and no job table gives job {job!r} a submission time")
            submit = start
        devices = pai_devices(_number(path, line, row, "plan_gpu", empty=0.0))
        if problem := ask_problem(devices):
            raise TraceError(f"{path}:{line}: plan_gpu: {row['plan_gpu']!r}: {problem}")
        model = _name(row["gpu_type"])
        base = Task(f"{job}/{row['task_name'].strip()}", _number(path, line, row, "plan_cpu", empty=0.0) / 100.0,
                    _number(path, line, row, "plan_mem", empty=0.0), devices, (model,) if model and devices else (),
                    submit, start, end, "", _name(row["status"]))
        for i in range(int(n)):
            yield base if n == 1 else replace(base, name=f"{base.name}/{i}")
