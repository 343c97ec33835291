"""The sweep part of ``schedlab report``: each headline metric against the
first swept key (one line per architecture or scheduler, and per value of a
second key), error bars ± MAD, then every point as a table. Reads only
sweep.json and sweep.csv (``cli.sweep`` wrote them)."""
from __future__ import annotations

import collections
import csv
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from schedlab.actors.analysis import plots
from schedlab.actors.analysis.report_parts import Figure, ReportError, figure_md, load_json, md_table
from schedlab.api.scenario_files import toml_value


@dataclass(frozen=True)
class SweepPlot:
    name: str
    metric: str  # a summary metric, or a per-scheduler one (schedulers.<name>.<metric>)
    per_scheduler: bool
    title: str
    ylabel: str
    percent: bool = False


SWEEP_PLOTS = (
    SweepPlot("sweep_busyness", "busyness", True, "Scheduler busyness", "busyness (share of the run)", percent=True),
    SweepPlot("sweep_conflict_fraction", "conflict_fraction", True, "Conflict fraction", "conflicted / committed transactions"),
    SweepPlot("sweep_wait_p90", "wait_time_s.first_attempt.p90", False, "Wait to first attempt, p90", "p90 wait (emulated s)"),
    SweepPlot("sweep_cpu_utilization", "utilization.cpu_mean", False, "Mean cpu utilization", "share of cell cpu", percent=True),
)


def _float(cell: str | None) -> float | None:
    return float(cell) if cell not in (None, "") else None


def metric_columns(header: list[str], metric: str, per_scheduler: bool) -> list[tuple[str, str]]:
    """(scheduler name or "", column stem) for every median column of ``metric``."""
    if not per_scheduler:
        return [("", metric)] if f"{metric}.median" in header else []
    pat = re.compile(rf"^schedulers\.(.+)\.{re.escape(metric)}\.median$")
    return [(m.group(1), c[: -len(".median")]) for c in header if (m := pat.match(c))]


def x_axis(sweep: dict, rows: list[dict[str, str]]) -> tuple[Callable[[str], float], list[str] | None]:
    """Map a first-key cell to an x position; categories when values are not numbers."""
    key = sweep["keys"][0]
    values = [toml_value(r[key]) for r in rows]
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return (lambda cell: float(toml_value(cell))), None
    cats = [str(v) for v in sweep.get("values", {}).get(key, [])]
    cats += [str(v) for v in values if str(v) not in cats]
    return (lambda cell: float(cats.index(str(toml_value(cell))))), cats


def short_key(key: str) -> str:
    return key.rsplit(".", 1)[-1]


def sweep_series(sweep: dict, rows: list[dict[str, str]], header: list[str], metric: str,
                 per_scheduler: bool) -> dict[tuple[str, str], list[tuple[float, float, float]]]:
    """(line, second-key label) -> [(x, median, mad)]; a line is an
    architecture, or architecture/scheduler for per-scheduler metrics."""
    keys = sweep["keys"]
    to_x, _ = x_axis(sweep, rows)
    out: dict[tuple[str, str], list[tuple[float, float, float]]] = collections.defaultdict(list)
    for r in rows:
        # A second swept key splits every line into one line per value of it.
        second = f"{short_key(keys[1])}={toml_value(r[keys[1]])}" if len(keys) > 1 else ""
        for sched, stem in metric_columns(header, metric, per_scheduler):
            med = _float(r.get(f"{stem}.median"))
            if med is not None:
                line = f"{r['architecture']}/{sched}" if sched else r["architecture"]
                out[(line, second)].append((to_x(r[keys[0]]), med, _float(r.get(f"{stem}.mad")) or 0.0))
    return dict(out)


def load_sweep(path: Path) -> tuple[dict, list[str], list[dict[str, str]]]:
    sweep = load_json(path / "sweep.json")
    with (path / "sweep.csv").open(newline="") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
        header = list(reader.fieldnames or [])
    if not rows:
        raise ReportError(f"{path}: sweep.csv has no rows")
    return sweep, header, rows


def _pm(r: dict[str, str], stem: str, fmt: str = ".3g") -> str:
    med, mad = _float(r.get(f"{stem}.median")), _float(r.get(f"{stem}.mad"))
    return "-" if med is None else f"{med:{fmt}} ± {mad or 0.0:.2g}"


def sweep_table(sweep: dict, header: list[str], rows: list[dict[str, str]]) -> str:
    def per_sched(r: dict[str, str], metric: str) -> str:
        cells = [f"{name} {_pm(r, stem)}" for name, stem in metric_columns(header, metric, True) if r.get(f"{stem}.median")]
        return "; ".join(cells) or "-"

    out = [[r["point"], r["architecture"], *(str(toml_value(r[k])) for k in sweep["keys"]), f"{r['ok_runs']}/{r['seeds']}",
            _pm(r, "wait_time_s.first_attempt.p90"), _pm(r, "utilization.cpu_mean"),
            per_sched(r, "busyness"), per_sched(r, "conflict_fraction")] for r in rows]
    return md_table(["point", "architecture", *sweep["keys"], "ok runs / seeds", "wait p90 (s)", "cpu utilization",
                     "busyness", "conflict fraction"], out)


def render_sweep(spec: SweepPlot, sweep: dict, header: list[str], rows: list[dict[str, str]], path: Path) -> Figure:
    keys = sweep["keys"]
    series = sweep_series(sweep, rows, header, spec.metric, spec.per_scheduler)
    png = path / "plots" / f"{spec.name}.png"
    if not series:
        png.unlink(missing_ok=True)  # a plot left from an earlier report would contradict the note
        return Figure(spec.title, None, f"sweep.csv has no values for {spec.metric}")
    plots.sweep_metric(series, png, title=f"{spec.title} vs {keys[0]}", xlabel=keys[0], ylabel=spec.ylabel,
                       categories=x_axis(sweep, rows)[1], percent=spec.percent)
    lines = "architecture/scheduler" if spec.per_scheduler else "architecture"
    second = f" and value of {keys[1]} (dash style)" if len(keys) > 1 else ""
    return Figure(spec.title, f"plots/{spec.name}.png",
                  f"One line per {lines}{second}, against {keys[0]}; points are medians over seeds, error bars ± MAD.")


def sweep_report(path: Path) -> str:
    sweep, header, rows = load_sweep(path)
    keys = ", ".join(f"`{k}`" for k in sweep["keys"]) or "nothing"
    seeds = ", ".join(map(str, sweep.get("seeds", [])))
    parts = [f"# Sweep: {sweep.get('scenario', path.name)}\n",
             f"Swept {keys} over seeds {seeds}; each value is the median over seeds ± the median absolute deviation (MAD).\n"]
    if sweep["keys"]:  # seeds only: nothing to plot against, the table says it all
        parts += [figure_md(render_sweep(spec, sweep, header, rows, path), "##") for spec in SWEEP_PLOTS]
    parts.append("## All points\n\n" + sweep_table(sweep, header, rows))
    return "\n".join(parts)
