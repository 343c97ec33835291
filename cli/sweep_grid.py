"""The pure half of ``schedlab sweep``: the grid a sweep runs, the folder
each point gets, and the numbers one row of ``sweep.csv`` holds.

A sweep point is one assignment of every swept key; each point runs once
per seed (and per architecture, for a comparison scenario). Its row holds,
for every number in the runs' summaries, the median over seeds and the
median absolute deviation (MAD): both robust to the odd slow run a shared
machine produces, where mean and standard deviation are not.
"""
from __future__ import annotations

import csv
import itertools
import math
import re
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from schedlab.schedulers.scenario.parse import ScenarioError


def split_values(raw: str) -> list[str]:
    """``5,10,[1,2],"a,b"`` -> ['5', '10', '[1,2]', '"a,b"']: commas inside
    brackets or quotes belong to the value (TOML arrays and strings)."""
    out: list[str] = []
    cur: list[str] = []
    depth, quote = 0, ""
    for ch in raw:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur).strip())
    return out


def parse_sets(sets: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """Split ``--set`` arguments into fixed overrides (one value) and swept
    keys (several), keeping the order given. Values stay raw TOML text."""
    fixed: list[str] = []
    swept: dict[str, list[str]] = {}
    for assignment in sets:
        key, sep, raw = assignment.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ScenarioError(f"--set {assignment}: expected KEY=V1,V2,...")
        values = split_values(raw)
        if any(v == "" for v in values):
            raise ScenarioError(f"--set {assignment}: empty value in the list")
        if key in swept or any(f.partition("=")[0] == key for f in fixed):
            raise ScenarioError(f"--set {key}: given twice")
        if len(values) == 1:
            fixed.append(f"{key}={values[0]}")
        else:
            if len(set(values)) != len(values):
                raise ScenarioError(f"--set {assignment}: a value is repeated")
            swept[key] = values
    return fixed, swept


def expand(swept: dict[str, list[str]]) -> list[dict[str, str]]:
    """Every combination, the first key varying slowest (so the grid reads
    like nested loops in the order the keys were given)."""
    keys = list(swept)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(swept[k] for k in keys))]


def point_name(index: int, assignment: dict[str, str]) -> str:
    """``p003_t_job=30_policy=best_fit``: sortable, and readable in ``ls``
    (the last part of each key; sweep.json has the full keys)."""
    parts = [f"{k.rsplit('.', 1)[-1]}={_plain(v)}" for k, v in assignment.items()]
    slug = re.sub(r"[^A-Za-z0-9_.=+-]+", "-", "_".join(parts)).strip("-")
    return f"p{index:03d}" + (f"_{slug[:80]}" if slug else "")


def _plain(value: str) -> str:
    """``[30, 60]`` -> ``30-60``, ``"best fit"`` -> ``bestfit``."""
    return re.sub(r"[][\"' ]", "", value).replace(",", "-")


def flatten(summary: dict[str, Any]) -> dict[str, float]:
    """Every number in a summary under a dotted name. Entries of a list of
    named records (schedulers) are keyed by name, so a column means the same
    scheduler in every run; other lists of records by position; every list
    also gives its length as ``<key>.count``. Time series ([t, v] pairs) are
    plots, not columns, and are left out."""
    out: dict[str, float] = {}

    def walk(value: Any, name: str) -> None:
        if isinstance(value, bool):
            out[name] = float(value)
        elif isinstance(value, (int, float)):
            if math.isfinite(value):
                out[name] = float(value)
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{name}.{k}" if name else str(k))
        elif isinstance(value, list):
            out[f"{name}.count"] = float(len(value))
            for i, item in enumerate(value):
                if isinstance(item, dict):
                    walk({k: v for k, v in item.items() if k != "name"}, f"{name}.{item.get('name', i)}")

    walk(summary, "")
    for key in ("seed", "time_scale"):  # settings, not results
        out.pop(key, None)
    return out


def median_mad(values: Iterable[float]) -> tuple[float, float] | None:
    v = np.asarray(list(values), dtype=np.float64)
    if v.size == 0:
        return None
    med = float(np.median(v))
    return med, float(np.median(np.abs(v - med)))


def aggregate(summaries: list[dict[str, Any]]) -> dict[str, tuple[float, float]]:
    """metric -> (median, MAD) over the runs of one point that report it."""
    flat = [flatten(s) for s in summaries]
    names = sorted(set().union(*flat)) if flat else []
    out = {}
    for name in names:
        stats = median_mad(f[name] for f in flat if name in f)
        if stats is not None:
            out[name] = stats
    return out


def write_csv(path: Path, keys: list[str], rows: list[dict[str, Any]]) -> None:
    """One row per (point, architecture): the point, its settings, then
    ``M.median`` and ``M.mad`` for every metric any row has (empty when a
    row has none: one architecture's row lacks another's columns)."""
    metrics = sorted(set().union(*(r["metrics"] for r in rows))) if rows else []
    header = ["point", "architecture", "seeds", "ok_runs", "violations", *keys]
    header += [f"{m}.{s}" for m in metrics for s in ("median", "mad")]
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for r in rows:
            line = [r["point"], r["architecture"], r["seeds"], r["ok_runs"], r["violations"], *(r["set"][k] for k in keys)]
            for m in metrics:
                med, mad = r["metrics"].get(m, ("", ""))
                line += [_num(med), _num(mad)]
            w.writerow(line)


def write_tidy_csv(path: Path, keys: list[str], runs: list[dict[str, Any]]) -> None:
    """One row per run (point x seed x architecture): the point, the seed,
    the architecture, the point's settings, ``status`` (ok; violated: it
    broke an invariant; failed: no summary), the run's directory, then every
    metric of its summary under its dotted name, as is (empty where the run
    has none). ``runs``: dicts of point, seed, architecture, set, status,
    run and summary (None for a failed run). Long form, for pandas or R."""
    flat = [flatten(r["summary"]) if r["summary"] is not None else {} for r in runs]
    metrics = sorted(set().union(*flat)) if flat else []
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["point", "seed", "architecture", *keys, "status", "run", *metrics])
        for r, values in zip(runs, flat):
            w.writerow([r["point"], r["seed"], r["architecture"], *(r["set"][k] for k in keys), r["status"], r["run"],
                        *(_num(values[m]) if m in values else "" for m in metrics)])


def _num(x: float | str) -> str:
    return x if isinstance(x, str) else f"{x:.6g}"
