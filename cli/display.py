"""Terminal output: a live progress line and the end-of-run table (rich)."""
from __future__ import annotations

import collections
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from schedlab.actors.arch import of_summary
from schedlab.schedulers.events.shared import FAULT, JOB_ABANDONED, JOB_SCHEDULED, JOB_SUBMITTED, TXN


# Beyond this many faults (a soak, a monkey) the table counts them by kind;
# summary.json keeps every one.
FAULTS_LISTED = 12


def extra_rows(s: dict) -> list[tuple[str, str]]:
    """Rows for the summary's optional blocks (devices, gangs, inflation, trace), when the run has them."""
    rows = []
    d = s.get("devices")
    if d:
        models = "  ".join(f"{m} {b['allocated_mean']:.1%}" for m, b in d["by_model"].items() if b["allocated_mean"] is not None)
        rows.append((f"{d['resource']} devices", f"{d['devices']}: allocated {d['allocated_mean'] or 0:.1%}  unallocated "
                                                 f"{d['unallocated_mean']:.3g}  fragmented {d['fragmented_mean']:.3g}  ({models})"))
    g = s.get("gangs")
    if g:
        spread = g["start_spread_s"]["max"]
        rows.append(("gangs", f"{g['scheduled']} of {g['jobs']} started whole (start spread max "
                              f"{'-' if spread is None else f'{spread:.3g} s'}), {g['pending']} waiting at the end, "
                              f"{g['releases']} partial holds released"))
    i = s.get("inflation")
    if i:
        full = i["unallocated_at_full"]
        rows.append(("inflation", f"{i['resource']} arrived {i['arrived']:.0%}: unallocated "
                                  f"{'-' if full is None else f'{full:.1%}'} at 100%, {i['unallocated_at_end']:.1%} at the end"))
    tr = s.get("trace")
    if tr:
        for cls, b in tr["by_class"].items():
            rows.append((f"  {cls}: trace vs replay", f"wait p50 {_s(b['recorded_s']['p50'])} vs {_s(b['replayed_s']['p50'])}"
                                                   f"  p90 {_s(b['recorded_s']['p90'])} vs {_s(b['replayed_s']['p90'])}"))
        if tr["same_machine"] is not None:
            rows.append(("  on the trace's machine", f"{tr['same_machine']:.1%} of {tr['tasks_compared']} tasks"))
    return rows


def _s(v: float | None) -> str:
    return "-" if v is None else f"{v:.3g} s"


def _side(x: Any) -> str:
    return "+".join(x) if isinstance(x, list) else str(x)


def _fault_text(f: dict[str, Any]) -> str:
    text = f"{f['kind']} {_side(f.get('target'))}" + (f" | {_side(f['peer'])}" if f.get("peer") else "") + f" @{f['at_s']:g}s"
    return text + (" (skipped)" if f.get("skipped") else "")


def faults_cell(faults: list[dict[str, Any]]) -> str:
    if len(faults) <= FAULTS_LISTED:
        return ", ".join(_fault_text(f) for f in faults)
    done = [f for f in faults if not f.get("skipped")]
    kinds = collections.Counter(f["kind"] for f in done)
    skipped = len(faults) - len(done)
    text = f"{len(done)}: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
    return text + (f"; {skipped} skipped" if skipped else "") + " (each in summary.json faults)"


class RunProgress:
    """Progress bar over emulated time with live job and conflict counts."""

    def __init__(self, duration: float, console: Console) -> None:
        self.duration = duration
        self.progress = Progress(
            TextColumn("[bold]emulated[/] {task.completed:>7.0f}/{task.total:.0f}s"),
            BarColumn(),
            TextColumn("{task.fields[stats]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self.task = self.progress.add_task("run", total=duration, stats="starting")

    def __enter__(self) -> RunProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.stop()

    def update(self, emulated: float, counts: dict) -> None:
        stats = (
            f"submitted {counts.get(JOB_SUBMITTED, 0)}  scheduled {counts.get(JOB_SCHEDULED, 0)}  "
            f"abandoned {counts.get(JOB_ABANDONED, 0)}  attempts {counts.get(TXN, 0)}  "
            f"conflicted {counts.get('conflicted_txns', 0)}  faults {counts.get(FAULT, 0)}"
        )
        self.progress.update(self.task, completed=emulated, stats=stats)


def _p(d: dict) -> str:
    return " / ".join("-" if d[k] is None else f"{d[k]:.3g}" for k in ("p50", "p90", "p99"))


def _fraction(x: float | None) -> str:
    return "undefined (nothing committed)" if x is None else f"{x:.3f}"


def summary_table(s: dict) -> Table:
    engine = s.get("engine", "ray")
    title = f"{s['scenario']} ({s['architecture']}, seed {s['seed']}, x{s['time_scale']:g}{'' if engine == 'ray' else ', ' + engine})"
    t = Table(title=title, show_header=False)
    t.add_column("metric", style="bold")
    t.add_column("value")
    j = s["jobs"]
    t.add_row("cell", f"{s['cell']['machines']} machines on {s['cell']['host_actors']} host actors (K={s['cell']['machines_per_actor']})")
    virtual = "" if engine == "ray" else "virtual "
    t.add_row("run", f"{s['emulated_seconds']:g} emulated s in {s['wall_seconds']:.1f} {virtual}wall s")
    t.add_row("jobs", f"submitted {j['submitted']}  scheduled {j['scheduled']}  completed {j['completed']}  "
                      f"abandoned {j['abandoned']}  pending {j['pending']}")
    t.add_row("wait to first attempt (s)", f"p50/p90/p99 {_p(s['wait_time_s']['first_attempt'])}")
    t.add_row("wait to fully scheduled (s)", f"p50/p90/p99 {_p(s['wait_time_s']['fully_scheduled'])}")
    for sc in s["schedulers"]:
        tx = sc["transactions"]
        t.add_row(
            f"  {sc['name']}",
            f"busyness {sc['busyness']:.3f}  conflict fraction {_fraction(sc['conflict_fraction'])}  "
            f"txns committed {tx['committed']} conflicted {tx['conflicted']}",
        )
    u = s["utilization"]
    if u["cpu_mean"] is not None:
        t.add_row("utilization", "  ".join(f"{r} {m:.1%}" for r, m in (u.get("by_resource") or
                                                                        {"cpu": u["cpu_mean"], "mem": u["mem_mean"]}).items()
                                           if m is not None))
    for label, value in extra_rows(s):
        t.add_row(label, value)
    sub = s["substrate"]
    t.add_row("substrate round trip", f"{sub['rtt_wall_ms_p50']:.2f} ms wall = {sub['rtt_emulated_s_p50']:.3g} s emulated (p50)")
    arch = of_summary(s)
    for label, value in (arch.table_rows(s) if arch is not None and arch.table_rows else []):
        t.add_row(label, value)
    for f in s.get("failovers", []):
        recovery = f.get("recovery", "first write")  # what ended the downtime
        if f["downtime_wall_s"] is None:
            t.add_row(f"  failover {f['target']}", f"killed at {f['killed_at_s']:g}s; {recovery}: not before the end")
            continue
        elected = (f"{f['new_leader']} elected after {f['election_wall_s']:.2f}s wall; "
                   if f.get("election_wall_s") is not None else "")
        t.add_row(f"failover {f['target']}",
                  f"killed at {f['killed_at_s']:g}s, {elected}{recovery} after {f['downtime_wall_s']:.2f}s wall"
                  f" = {f['downtime_emulated_s']:.3g}s emulated")
    pl = s.get("placement")
    if pl:
        by_node: dict[str, list[str]] = {}
        for host, node in pl["hosts"].items():
            by_node.setdefault(node, []).append(host.removeprefix("machine-host-"))
        t.add_row("placement", "  ".join(f"{node}: hosts {','.join(hs)}" for node, hs in sorted(by_node.items())))
    if s.get("faults"):
        t.add_row("faults injected", faults_cell(s["faults"]))
    bad = {k: v for k, v in s["invariants"].items() if v}
    if "collateral" in s["invariants"]:  # absent from summaries written before it was counted
        hurt = s["invariants"]["collateral"]
        t.add_row("collateral damage", ("[red]" if hurt else "") + f"{hurt} tasks killed on machines no fault touched")
    t.add_row("invariants", "all hold" if not bad else "[red]VIOLATED " + ", ".join(f"{k}={v}" for k, v in bad.items()))
    for w in s.get("warnings", []):
        t.add_row("[yellow]warning", f"[yellow]{w}")
    return t


def _p2(w: dict) -> str:
    return " / ".join("-" if w[k] is None else f"{w[k]:.1f}" for k in ("p50", "p90"))


def federation_table(s: dict) -> Table:
    """A federation's run: a row per site, then how the sites were joined."""
    engine = s.get("engine", "ray")
    t = Table(title=f"{s['scenario']} (federation, {s['mode']}, seed {s['seed']}, x{s['time_scale']:g}"
                    f"{'' if engine == 'ray' else ', ' + engine})")
    for col in ("site", "architecture", "machines", "users", "routed", "work / capacity", "wait p50/p90 (s)",
                "cpu", "completed"):
        t.add_column(col)
    for x in s["sites"]:
        w = x["wait_from_release_s"]
        cpu = x["utilization_cpu"]
        t.add_row(x["name"], x["architecture"], str(x["machines"]), f"{x['users']:g}", str(x["routed"]),
                  f"{x['work_per_capacity']:.1f}", _p2(w), "-" if cpu is None else f"{cpu:.1%}",
                  str(x["jobs"]["completed"]))
    j, im = s["jobs"], s["imbalance"]
    win = im["windows"]
    t.caption = (f"jobs released {j['released']}, routed {j['routed']}, transferred {j['transferred']}, "
                 f"held at the end {j['held_at_end']}; imbalance (work per capacity, busiest / least busy) "
                 f"overall {im['overall']['max_min']}, per {win['window_s']:g}-s window median {win['median_max_min']} "
                 f"({win['with_an_idle_site']} of {win['n']} windows left a site idle), busiest / mean "
                 f"{win['mean_max_mean']}; sizes differ {im['capacity_ratio']:g}x")
    return t
