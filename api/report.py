"""``schedlab report DIR``: write DIR/report.md with PNG plots in DIR/plots/.

DIR is a sweep (sweep.json + sweep.csv) or a run of any kind
(``api.kinds``): one cell's (summary.json + events.jsonl), a comparison's
(subdirectories that are runs, one per architecture: OUT/<architecture>) or
a federation's (its sites' runs under OUT/sites/<name>/). This module decides *what* to plot from events and summaries
(pure, no matplotlib) and writes the markdown; ``actors.analysis.plots`` draws.
A plot whose data is absent is skipped with a line saying why, never an error.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


from schedlab.actors.common.event_files import events_file, read_events
from schedlab.actors.analysis.devices import device_series
from schedlab.actors.analysis.run_info import RunSetup
from schedlab.actors.analysis.stats import by_event
from schedlab.actors.analysis.summary import first_attempts
from schedlab.actors.analysis import plots
from schedlab.actors.arch import of_summary
from schedlab.schedulers.events.shared import CELL_SAMPLE, JOB_SUBMITTED, RAFT_ROLE
from schedlab.schedulers.model.resources import BASE, sample_shares
from schedlab.schedulers.scenario.toml_table import ScenarioError
from schedlab.actors.analysis.saved_run import NotARun
from schedlab.api import kinds
from schedlab.api.compare import headline
from schedlab.actors.analysis.report_parts import Events, Figure, PlotSpec, ReportError, Skip, figure_md, load_json, md_table



def write_report(path: Path) -> Path:
    """Write ``path``/report.md (and ``path``/plots/*.png); return the report's path."""
    path = Path(path)
    kind = directory_kind(path)
    try:
        plots.pyplot()  # fail before writing anything when matplotlib is missing
        if kind == "sweep":
            from schedlab.api.report_sweep import sweep_report

            text = sweep_report(path)
        else:
            text = kinds.kind(kind).fn("report")(path)
    except plots.MatplotlibMissing as e:
        raise ReportError(str(e)) from e
    out = path / "report.md"
    out.write_text(text)
    return out


# ---- what kind of directory --------------------------------------------------

def directory_kind(path: Path) -> str:
    """"sweep", or the name of the run kind (``api.kinds``) ``path`` holds;
    ReportError naming it when it is neither."""
    if not path.is_dir():
        raise ReportError(f"{path}: no such directory")
    if (path / "sweep.json").is_file() and (path / "sweep.csv").is_file():
        return "sweep"
    try:
        return kinds.of_out(path).name
    except NotARun:
        raise ReportError(f"{path}: not a run, comparison, federation or sweep directory (expected summary.json and "
                          "events.jsonl, subdirectories holding them, sites/ beside them, or sweep.json and sweep.csv)") from None


def load_run(path: Path) -> tuple[dict, Events]:
    try:
        events = read_events(path)
    except ValueError as e:  # e.g. a last line cut short by a crash
        raise ReportError(f"{events_file(path)}: cannot read: {e}") from e
    return load_json(path / "summary.json"), by_event(events)


# ---- plot data from one run (pure) -------------------------------------------

def utilization_data(summary: dict, ev: Events) -> Any:
    end = float(summary["emulated_seconds"])
    # The same window summary.py averages over, so the mean line matches the curve.
    samples = sorted((e for e in ev.get(CELL_SAMPLE, []) if 0 <= e["t"] <= end + 1e-6), key=lambda e: e["t"])
    if not samples:
        return Skip("no cell_sample events: the cell was never sampled")
    util = summary.get("utilization", {})
    names = summary.get("cell", {}).get("resources") or list(BASE)
    shares = [sample_shares(e, len(names)) for e in samples]
    means = util.get("by_resource") or {"cpu": util.get("cpu_mean"), "mem": util.get("mem_mean")}
    return {"t": [e["t"] for e in samples], "series": {r: [s[i] for s in shares] for i, r in enumerate(names)},
            "mean": {r: means.get(r) for r in names}}


def first_attempt_waits(ev: Events) -> dict[str, dict[str, Any]]:
    """Per job class: waits from job_submitted to the job's first job_attempt
    (first=True), as summary.py computes wait_time_s.first_attempt."""
    submitted = {e["job_id"]: e for e in ev.get(JOB_SUBMITTED, [])}
    first = first_attempts(ev)
    out: dict[str, dict[str, Any]] = {}
    for job, e in sorted(submitted.items()):
        d = out.setdefault(e.get("job_class", e.get("kind", "?")), {"waits": [], "submitted": 0})
        d["submitted"] += 1
        if job in first:
            d["waits"].append(first[job] - e["t"])
    return dict(sorted(out.items()))


def wait_data(summary: dict, ev: Events) -> Any:
    waits = first_attempt_waits(ev)
    if not waits:
        return Skip("no job_submitted events: no job was submitted")
    if not any(d["waits"] for d in waits.values()):
        return Skip("no job_attempt event with first=true: no job was ever tried")
    return waits


def scheduler_data(summary: dict, ev: Events) -> Any:
    return summary.get("schedulers") or Skip("summary.json lists no schedulers")


def leader_events(summary: dict) -> list[tuple[str, str, Callable[[dict], str | None]]]:
    """(row label, event, who leads according to that event or None): the
    coordinator's Raft leaders, and the leader changes the summary's
    architecture registers."""
    arch = of_summary(summary)
    own = [(le.label, le.event, le.who) for le in (arch.leaders if arch is not None else ())]
    return [("Raft leader", RAFT_ROLE, lambda e: e["actor"] if e.get("role") == "leader" else None), *own]


def leader_changes(ev: Events, summary: dict) -> dict[str, list[tuple[float, str]]]:
    out = {}
    for label, name, who in leader_events(summary):
        changes: list[tuple[float, str]] = []
        seen: set[tuple[str | None, Any]] = set()
        for e in sorted(ev.get(name, []), key=lambda e: e["t"]):
            leader = who(e)
            # A leader re-announces itself (raft_role on every commit-index
            # change); only a new (leader, term) is a change.
            key = (leader, e.get("term", e.get("epoch")))
            if leader is not None and key not in seen:
                seen.add(key)
                changes.append((e["t"], leader))
        if changes:
            out[label] = changes
    return out


def _target(f: dict) -> str:
    t = f.get("target")
    return ", ".join(map(str, t)) if isinstance(t, list) else str(t if t is not None else f["kind"])


def timeline_data(summary: dict, ev: Events) -> Any:
    faults = [{**f, "target": _target(f)} for f in summary.get("faults", [])]
    failovers = summary.get("failovers", [])
    leaders = leader_changes(ev, summary)
    if not faults and not failovers and all(len(c) <= 1 for c in leaders.values()):
        return Skip("no faults, failovers or leader changes in this run")
    return {"faults": faults, "failovers": failovers, "leaders": leaders, "end": float(summary["emulated_seconds"])}


RUN_PLOTS = (
    PlotSpec("utilization", "Utilization over time",
             "Share of the cell's cpu and memory held by tasks at each periodic cell sample; dashed lines are the run means.",
             utilization_data, plots.utilization),
    PlotSpec("wait_cdf", "Wait to first scheduling attempt, per job class",
             "Each curve is the share of that class's submitted jobs whose first attempt came within x emulated seconds "
             "(log scale); a curve that levels off below 100% means the rest were never tried.",
             wait_data, plots.wait_cdf),
    PlotSpec("schedulers", "Busyness and conflicts per scheduler",
             "Left: share of the run each scheduler spent thinking (busyness) and also syncing and committing (occupancy); "
             "right: conflicted per committed transaction, raw counts on the bars.",
             scheduler_data, plots.schedulers),
)
TIMELINE = PlotSpec(
    "failovers", "Faults, failovers and leaders",
    "Top: one row per fault target, a marker per injected fault and a grey bar while it lasted; red spans are failover "
    "downtime (leader kill to its recovery: the first acknowledged write, or what the role's failover record names; "
    "a dotted red line when no recovery was observed before the run ended); lower rows show which replica led when.",
    timeline_data, plots.timeline)


def plot_specs(summary: dict) -> tuple[PlotSpec, ...]:
    arch = of_summary(summary)
    own = arch.plots() if arch is not None and arch.plots is not None else ()
    return RUN_PLOTS + own + (TIMELINE,)


def render(spec: PlotSpec, summary: dict, ev: Events, plot_dir: Path, rel: str) -> Figure:
    data = spec.extract(summary, ev)
    png = plot_dir / f"{spec.name}.png"
    if isinstance(data, Skip):
        png.unlink(missing_ok=True)  # a plot left from an earlier report would contradict the note
        return Figure(spec.title, None, data.reason)
    spec.draw(data, png)
    extra = failover_table(summary) if spec is TIMELINE else ""
    how = spec.how
    if spec.name == "schedulers" and (arch := of_summary(summary)) is not None:
        how += f" Conflicts here: {arch.refused_means}."
    return Figure(spec.title, f"{rel}/{spec.name}.png", how, extra)


# ---- markdown ----------------------------------------------------------------

def _num(v: Any, fmt: str = ".3g") -> str:
    return "-" if v is None else format(v, fmt)


def headline_rows(summaries: list[dict]) -> list[list[str]]:
    return headline(summaries, also=("mem",))


def failover_table(summary: dict) -> str:
    fos = summary.get("failovers", [])
    if not fos:
        return ""
    rows = [[f["role"], str(f.get("target", "-")), _num(f["killed_at_s"], ".1f"), str(f.get("new_leader") or "-"),
             _num(f.get("elected_at_s"), ".1f"), _num(f.get("downtime_emulated_s"), ".1f"), _num(f.get("downtime_wall_s"), ".2f")]
            for f in fos]
    return md_table(["role", "killed", "killed at (s)", "new leader", "elected at (s)", "downtime (emulated s)",
                     "downtime (wall s)"], rows)


def run_body(path: Path, summary: dict, ev: Events, plot_rel: str, level: str, headline: bool = True) -> str:
    """Headline table and every plot of one run; plots go to path/plot_rel."""
    parts = [md_table(["", summary["architecture"]], headline_rows([summary]))] if headline else []
    if summary.get("warnings"):
        parts.append("Warnings:\n\n" + "".join(f"- {w}\n" for w in summary["warnings"]))
    for spec in plot_specs(summary):
        parts.append(figure_md(render(spec, summary, ev, path / plot_rel, plot_rel), level))
    if summary.get("devices"):
        spec = dataclasses.replace(DEVICES, extract=lambda s, e: device_data(path, s, e))
        parts.append(figure_md(render(spec, summary, ev, path / plot_rel, plot_rel), level))
    if summary.get("trace"):
        parts.append(trace_md(summary["trace"], level))
    return "\n".join(parts)


def trace_md(tr: dict, level: str) -> str:
    """The replayed trace's own waits and machines beside the run's: a reference line, not a fidelity claim."""
    rows = [[cls, str(b["jobs"]), *(f"{_num(b['recorded_s'][p])} / {_num(b['replayed_s'][p])}" for p in ("p50", "p90", "p99"))]
            for cls, b in tr["by_class"].items()]
    same = tr["same_machine"]
    where = ("" if same is None else
             f"\n{same:.1%} of the {tr['tasks_compared']} tasks compared were placed on the machine the trace recorded.\n")
    return (f"{level} The trace's own scheduling beside this run's\n\nWait from submission to every task started, "
            "emulated s, as the trace recorded it / as this run placed it (a different scheduler on the window's "
            "cell: a reference, not a fidelity claim).\n\n"
            + md_table(["class", "jobs", "p50", "p90", "p99"], rows) + where)


def device_data(path: Path, summary: dict, ev: Events) -> Any:
    """The device measures of the run at ``path`` (its cell from run.json), per model and cell-wide."""
    try:
        cell = RunSetup.read(path / "run.json").cell()
    except (OSError, ValueError, KeyError, TypeError, ScenarioError) as e:
        return Skip(f"run.json unreadable ({type(e).__name__})")
    series = device_series(ev, cell, float(summary["emulated_seconds"]))
    if series is None:
        return Skip("run.json names no device resource")
    n = np.maximum(series.devices, 1)
    return {"t": series.t.tolist(), "allocated": {m: (series.allocated[:, k] / n[k]).tolist() for k, m in enumerate(series.models)},
            "unallocated": (series.devices.sum() - series.allocated.sum(axis=1)).tolist(),
            "fragmented": series.fragmented.sum(axis=1).tolist()}


DEVICES = PlotSpec(
    "devices", "Devices allocated and fragmented",
    "Left: the share of each device model's devices held by tasks over the run; right: the cell's unallocated devices "
    "(grey) and, shaded, how many of them were fragmented: free on machines where a typical task of the run's workload "
    "cannot use them (Weng et al., ATC 2023).",
    lambda s, e: Skip("needs the run's directory"), plots.devices)


def _run_line(summary: dict) -> str:
    return (f"{summary['emulated_seconds']:g} emulated s in {summary['wall_seconds']:.0f} wall s "
            f"(time scale {summary['time_scale']:g}×), {summary['cell']['machines']} machines.")


def run_report(path: Path) -> str:
    summary, ev = load_run(path)
    title = f"# {summary['scenario']}: {summary['architecture']}, seed {summary['seed']}\n\n"
    return title + _run_line(summary) + "\n\n" + run_body(path, summary, ev, "plots", "##")


def comparison_report(path: Path) -> str:
    runs = [(d, *load_run(d)) for d in kinds.comparison_runs(path)]
    summaries = [s for _d, s, _ev in runs]
    seeds = ", ".join(sorted({str(s["seed"]) for s in summaries}))
    parts = [f"# {summaries[0]['scenario']}: {', '.join(s['architecture'] for s in summaries)}, seed {seeds}\n",
             md_table(["", *(_run_label(d, s) for d, s, _ in runs)], headline_rows(summaries))]
    overlay = {_run_label(d, s): _all_classes(first_attempt_waits(ev)) for d, s, ev in runs}
    overlay = {k: v for k, v in overlay.items() if v["waits"]}
    if overlay:
        plots.wait_cdf(overlay, path / "plots" / "wait_cdf_by_architecture.png", title="Wait to first attempt, all jobs")
        parts.append("![Wait to first attempt per architecture](plots/wait_cdf_by_architecture.png)\n\n"
                     "Share of all submitted jobs first tried within x emulated seconds, one curve per architecture.\n")
    for d, s, ev in runs:
        parts.append(f"## {_run_label(d, s)}\n\n{_run_line(s)}\n")
        # The comparison table above already holds each run's headline numbers.
        parts.append(run_body(path, s, ev, f"plots/{d.name}", "###", headline=False))
    return "\n".join(parts)


def federation_report(path: Path) -> str:
    """A federation's report: how its sites were joined and what that did
    (jobs routed, held, moved; imbalance), its sites side by side as a
    comparison's runs are, then each site's own plots."""
    fed = load_json(path / "summary.json")
    try:
        names = [s["name"] for s in fed["sites"]]
        j, im = fed["jobs"], fed["imbalance"]
    except (KeyError, TypeError) as e:
        raise ReportError(f"{path / 'summary.json'}: not a federation's summary ({type(e).__name__}: {e})") from None
    runs = [(path / "sites" / n, *load_run(path / "sites" / n)) for n in names]
    win = im["windows"]
    joined = md_table(["", "value"], [
        ["mode", str(fed["mode"])],
        ["jobs released / routed / held at the end", f"{j['released']} / {j['routed']} / {j['held_at_end']}"],
        ["jobs moved between sites", str(j["transferred"])],
        ["imbalance overall (busiest / least busy site, work per capacity)", str(im["overall"]["max_min"])],
        [f"imbalance per {win['window_s']:g}-s window: median; windows with an idle site",
         f"{win['median_max_min']}; {win['with_an_idle_site']} of {win['n']}"],
        ["wait from release p50 / p90 (s)", " / ".join(_num(fed["wait_from_release_s"].get(k)) for k in ("p50", "p90"))],
        ["invariants broken", ", ".join(f"{k} {v}" for k, v in fed["invariants"].items() if v) or "none"],
    ])
    parts = [f"# {fed['scenario']}: federation of {len(names)} sites ({fed['mode']}), seed {fed['seed']}\n",
             f"{fed['emulated_seconds']:g} emulated s (time scale {fed['time_scale']:g}×), engine {fed['engine']}.\n",
             joined, md_table(["", *(f"{d.name} ({s['architecture']})" for d, s, _ in runs)], headline_rows([s for _, s, _ in runs]))]
    for d, s, ev in runs:
        parts.append(f"## {d.name} ({s['architecture']})\n\n{_run_line(s)}\n")
        parts.append(run_body(path, s, ev, f"plots/{d.name}", "###", headline=False))
    return "\n".join(parts)


def _run_label(d: Path, summary: dict) -> str:
    arch = summary["architecture"]
    return arch if d.name == arch else f"{arch} ({d.name})"


def _all_classes(waits: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {"waits": [w for d in waits.values() for w in d["waits"]], "submitted": sum(d["submitted"] for d in waits.values())}
