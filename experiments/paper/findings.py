"""The published findings schedlab reproduces, each with its experiment
and its tolerance. ``FINDINGS`` is the suite, in the Fidelity table's order.

Published values are quoted from the papers; where only secondary sources
were at hand when this was written, the source says so. Experiments run the
scenarios in ``scenarios/paper/`` through the sweep machinery (``Context.sweep``).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from schedlab.schedulers.archs.yarn.events import QUEUE_USAGE
from schedlab.schedulers.archs.mesos import analytic_model as mesos_model
from schedlab.experiments.fidelity import Context, Finding, Result, metric, schedulers
from schedlab.experiments.paper.findings_gpu import fgd_inflation
from schedlab.experiments.paper.findings_sampling import multicluster_imbalance, sparrow_vs_omniscient, supermarket

BORG = ['architectures=["borg"]', "coordinator.replicas=3"]
MESOS = ['architectures=["mesos"]']
SHORT = ["duration=150"]  # smoke runs: 6 wall seconds at x25


def _fmt(xs: list[float], digits: int = 2) -> str:
    return ", ".join("-" if math.isnan(x) else f"{x:.{digits}g}" for x in xs)


def _rising(ys: list[float], slack: float = 0.1) -> bool:
    """Each value at least the one before, less ``slack`` of the range."""
    span = (max(ys) - min(ys)) or 1.0
    return all(b >= a - slack * span for a, b in zip(ys, ys[1:])) and ys[-1] > ys[0]


# ------------------------------------------------------------ Omega paper

def monolithic_busyness(ctx: Context) -> Result:
    t_jobs = [0.1, 0.25, 0.5, 1.0, 2.0, 4.0]
    rows = ctx.sweep("monolithic", "paper/omega_paper.toml", BORG + ["borg.t_job=" + ",".join(map(str, t_jobs))],
                     smoke_sets=SHORT + ["borg.t_job=0.1,4"])
    xs = [float(r["set"]["borg.t_job"]) for r in rows]
    busy = [max(schedulers(r, "busyness").values(), default=float("nan")) for r in rows]
    occupied = [max(schedulers(r, "occupancy").values(), default=float("nan")) for r in rows]
    unscheduled = [metric(r, "jobs.pending") / metric(r, "jobs.submitted") for r in rows]
    low = [(x, b) for x, b in zip(xs, busy) if x <= 1.0]
    r2 = float("nan")
    if len(low) >= 3:
        x, y = np.array(low).T
        fit = np.polyval(np.polyfit(x, y, 1), x)
        r2 = 1.0 - float(((y - fit) ** 2).sum() / max(((y - y.mean()) ** 2).sum(), 1e-12))
    saturated = occupied[-1] >= 0.95 and unscheduled[-1] >= 0.5
    ok = saturated and (r2 >= 0.95 if not ctx.smoke else True)
    return Result(f"busyness {_fmt(busy)} at t_job {_fmt(xs)} s (linear up to 1 s: R² {r2:.3f}); occupancy "
                  f"{_fmt(occupied)}; unscheduled at the end {_fmt(unscheduled)}", ok,
                  "Borg's single path also writes each decision through its 3-replica log (about 1 emulated s per job "
                  "at x25), so it saturates (occupancy, think plus write time, reaches 1) while busyness, think time "
                  "alone, is still below 1.",
                  {"t_job": xs, "busyness": busy, "occupancy": occupied, "unscheduled": unscheduled, "r2": r2})


def multipath(ctx: Context) -> Result:
    rows = ctx.sweep("multipath", "paper/omega_paper.toml", BORG + ["borg.t_job=4", "borg.multi_path=false,true"], smoke_sets=SHORT)
    wait = {r["set"]["borg.multi_path"]: metric(r, "wait_time_s.by_class.batch.first_attempt.p90") for r in rows}
    single, multi = wait["false"], wait["true"]
    ok = multi * 5 <= single
    return Result(f"batch wait p90 {single:.3g} s single-path vs {multi:.3g} s multi-path (service t_job 4 s)", ok,
                  numbers={"single": single, "multi": multi})


def mesos_starves_batch(ctx: Context) -> Result:
    rows = ctx.sweep("mesos_slow_service", "paper/omega_paper.toml", MESOS + ["mesos.frameworks.1.t_job=1,30"], smoke_sets=SHORT)
    omega = ctx.sweep("omega_slow_service", "paper/omega_paper.toml", ["omega.schedulers.1.t_job=30"], smoke_sets=SHORT)
    by = {r["set"]["mesos.frameworks.1.t_job"]: r for r in rows}
    fast, slow = (metric(by[k], "wait_time_s.by_class.batch.first_attempt.p90") for k in ("1", "30"))
    om = metric(omega[0], "wait_time_s.by_class.batch.first_attempt.p90")
    ok = slow >= 3 * fast and slow >= 3 * om
    return Result(f"Mesos batch wait p90 {fast:.3g} s (service t_job 1 s) -> {slow:.3g} s (30 s); Omega at 30 s: {om:.3g} s", ok,
                  "Offers here go to one framework at a time (cell granularity), as in the paper's simulator; "
                  "jobs left waiting are reported pending at the end rather than abandoned after 1,000 attempts.",
                  {"mesos_fast": fast, "mesos_slow": slow, "omega_slow": om})


def omega_service_tjob(ctx: Context) -> Result:
    # Three seeds per point (medians): with one, the conflict fraction moved by ~0.15 between runs.
    # On the sim engine, 40x the live run: at t_job 60 s the service scheduler
    # still attempts ~300 transactions per point (live: 8).
    # Service jobs every 80 s, not 20, on sim: over 20,000 s the scenario's own
    # mix (sized for a 500 s live run) fills the cell (cpu 0.98), so a slower
    # service scheduler places fewer jobs into an emptier cell and its
    # conflict fraction falls. At 80 s the cell keeps the paper's headroom
    # (cpu ~0.69 at every t_job) and the scheduler still keeps up at 60 s.
    rows = ctx.sweep("omega_service_tjob", "paper/omega_paper.toml", ["omega.schedulers.1.t_job=1,5,15,30,60"], seeds=3,
                     smoke_sets=SHORT + ["omega.schedulers.1.t_job=1,60"],
                     sim_sets=["duration=20000", "workload.classes.1.interarrival=80"])
    xs = [float(r["set"]["omega.schedulers.1.t_job"]) for r in rows]
    cf = [schedulers(r, "conflict_fraction").get("scheduler-service-0", float("nan")) for r in rows]
    busy = [schedulers(r, "busyness").get("scheduler-service-0", float("nan")) for r in rows]
    util = [metric(r, "utilization.cpu_mean") for r in rows]
    txns = [metric(r, "schedulers.scheduler-service-0.transactions.committed") for r in rows]
    ok = _rising(cf) and _rising(busy)
    return Result(f"service conflict fraction {_fmt(cf)}; busyness {_fmt(busy)} at t_job {_fmt(xs)} s", ok,
                  f"Medians of 3 seeds. Cpu utilization {_fmt(util)} and service transactions committed per run "
                  f"{_fmt(txns, 3)} over the sweep"
                  + (" (on sim, service jobs every 80 s instead of 20 s, so the cell keeps headroom over 20,000 s)"
                     if ctx.engine == "sim" and not ctx.smoke else "")
                  + (", and each conflict fraction rests on a handful of transactions" if min(txns, default=0) < 30 else "")
                  + ". The paper's high-fidelity simulator, on Google's fuller cells, reached a conflict fraction near 1 "
                  "at t_job 10 s; schedlab's cell is emptier, so its conflicts are fewer but rise the same way.",
                  numbers={"t_job": xs, "conflict_fraction": cf, "busyness": busy, "cpu_utilization": util,
                           "service_txns_committed": txns})


def conflict_modes(ctx: Context) -> Result:
    rows = ctx.sweep("omega_conflict_modes", "paper/omega_paper.toml",
                     ["omega.schedulers.1.t_job=15", "omega.conflict_mode=resource,sequence",
                      "omega.transaction_mode=incremental,all_or_nothing"], smoke_sets=SHORT)
    # The share of the service scheduler's transactions that conflicted: the
    # paper's conflict fraction (per successful transaction) is unbounded,
    # and undefined when nothing commits at all (gang + sequence numbers here).
    share, fraction = {}, {}
    for r in rows:
        mode = (r["set"]["omega.conflict_mode"], r["set"]["omega.transaction_mode"])
        ok = metric(r, "schedulers.scheduler-service-0.transactions.committed")
        bad = metric(r, "schedulers.scheduler-service-0.transactions.conflicted")
        share[mode] = bad / (ok + bad) if ok + bad > 0 else float("nan")
        fraction[mode] = bad / ok if ok > 0 else float("inf")
    fine = share[("resource", "incremental")]
    ok_ = (share[("sequence", "all_or_nothing")] >= 1.5 * fine and share[("sequence", "incremental")] >= fine
           and share[("resource", "all_or_nothing")] >= fine)
    shown = "; ".join(f"{c}+{t} {share[(c, t)]:.0%} ({fraction[(c, t)]:.3g})" for c, t in share)
    return Result(f"service transactions conflicted (conflict fraction): {shown}", ok_,
                  "Gang transactions with sequence numbers never committed a service job here: every attempt "
                  "found some machine changed (conflict fraction undefined, shown as inf).",
                  {f"{c}+{t}": {"share": share[(c, t)], "fraction": fraction[(c, t)]} for c, t in share})


def batch_schedulers(ctx: Context) -> Result:
    rows = ctx.sweep("omega_batch_schedulers", "paper/omega_paper.toml",
                     ["omega.schedulers.0.t_job=1", "omega.schedulers.0.count=1,2,4"], smoke_sets=SHORT + ["omega.schedulers.0.count=1,4"])
    ns = [int(r["set"]["omega.schedulers.0.count"]) for r in rows]
    per = [{k: v for k, v in schedulers(r, "busyness").items() if "batch" in k} for r in rows]
    busiest = [max(p.values(), default=float("nan")) for p in per]
    conf = [float(np.mean([v for k, v in schedulers(r, "conflict_fraction").items() if "batch" in k] or [float("nan")]))
            for r in rows]
    ok = _rising(conf) and all(b <= a for a, b in zip(busiest, busiest[1:]))
    return Result(f"batch schedulers {ns}: mean conflict fraction {_fmt(conf)}, busiest one's busyness {_fmt(busiest)}", ok,
                  numbers={"schedulers": ns, "conflict_fraction": conf, "busyness": busiest})


# ------------------------------------------------------------ Mesos paper

# scenarios/paper/mesos_behaviour.toml: k single-slot machines, background tasks of mean T, jobs beta*T long on k slots.
TABLE2_K, TABLE2_T, TABLE2_BETA = 20, 60.0, 1.0
TABLE2_TASK = 0.2  # an elastic job's tasks, in units of T (the scenario's 12 s)
TABLE2_BACKGROUND = {"constant": f'{{dist="uniform",low=0.1,high={TABLE2_T}}}', "exponential": f'{{dist="exponential",mean={TABLE2_T}}}'}
# (time scale, trial period in T, trials). A period must outlast the slowest
# slot and the job (the exponential tail is long: the last of 20 slots comes
# after 7T in 2% of trials). Elastic jobs relaunch a task every T/5 through
# an offer cycle, so they run slower (x20) than rigid ones (x60), which pay it once.
TABLE2_RUNS = {("elastic", "constant"): (20, 3, 8), ("elastic", "exponential"): (20, 8, 6),
               ("rigid", "constant"): (60, 3, 8), ("rigid", "exponential"): (60, 8, 12)}
TABLE2_RIGID = ['mesos.frameworks.1.mode="rigid"', f"workload.classes.1.tasks={TABLE2_K}",
                f"workload.classes.1.duration={TABLE2_BETA * TABLE2_T}"]
QUANTITIES = ("ramp_up", "completion", "utilization")


def mesos_table2(ctx: Context) -> Result:
    from schedlab.actors.common.event_files import read_events
    from schedlab.actors.analysis.stats import by_event

    k, T, beta = TABLE2_K, TABLE2_T, TABLE2_BETA
    cells, numbers, ok = [], {}, True
    for mode in mesos_model.MODES:
        for dist in mesos_model.DISTS:
            scale, periods, n = TABLE2_RUNS[(mode, dist)]
            period = periods * T
            sets = [f"time_scale={scale}", f"workload.classes.0.duration={TABLE2_BACKGROUND[dist]}",
                    f"workload.classes.0.interarrival={period}", f"workload.classes.1.interarrival={period}",
                    f"duration={period * n + 60}"]
            rows = ctx.sweep(f"mesos_{mode}_{dist}", "paper/mesos_behaviour.toml", sets + (TABLE2_RIGID if mode == "rigid" else []),
                             smoke_sets=[f"duration={period * 2 + 60}"])
            ev = by_event(read_events(rows[0]["runs"][0] / "events.jsonl"))
            trials, skipped = mesos_model.trials(ev, "background", "test", mode)
            if not trials:
                raise RuntimeError(f"{mode}/{dist}: no complete trial ({skipped} skipped)")
            want = mesos_model.exact(mode, dist, k, beta, TABLE2_TASK if mode == "elastic" else None)
            formula = mesos_model.paper(mode, dist, k, beta)
            got = {}
            for q in QUANTITIES:
                xs = np.array([getattr(t, q) for t in trials]) / (1.0 if q == "utilization" else T)
                got[q] = mesos_model.utilization(trials) if q == "utilization" else float(xs.mean())
                if not ctx.smoke:
                    ok &= mesos_model.judge(got[q], want[q], float(xs.std(ddof=1)) if len(xs) > 1 else 0.0, len(xs), 0.1)
            ideal = float(np.mean([t.ideal_completion for t in trials])) / T
            numbers[f"{mode}_{dist}"] = {"measured": got, "exact_model": want, "paper": formula, "trials": len(trials),
                                         "skipped": skipped, "ideal_completion": ideal}
            cells.append(f"{mode}/{dist} ({len(trials)} trials): ramp-up {got['ramp_up']:.2f}T (model {want['ramp_up']:.2f}), "
                         f"completion {got['completion']:.2f}T ({want['completion']:.2f}), "
                         f"utilization {got['utilization']:.2f} ({want['utilization']:.2f})")
    return Result("; ".join(cells), ok,
                  f"Times in units of T = {T:g} s, k = {k}, beta = {beta:g}. Model values are the paper's model evaluated "
                  "exactly at this k, where its Table 2 gives large-k forms: T ln k stands for H_k T (the last of k "
                  "exponential slots; ln k + 0.58 on average), and an elastic job's work comes here in tasks of T/5, "
                  "not infinitely divisible, which leaves slots idle at the end (simulated: completion +0.1T, "
                  "utilization about 0.92 instead of 1). Each trial is one random draw of slot releases, so exponential "
                  "ramp-ups vary by about T from trial to trial; the tolerance adds two standard errors of the mean. "
                  "What remains is the emulation: each of an elastic job's tasks waits an offer cycle (its slot goes "
                  "back to the master and is offered again, ~0.7 emulated s at x20) and a rigid job waits one before it starts.",
                  numbers)


def delay_scheduling(ctx: Context) -> Result:
    (row,) = ctx.sweep("delay_scheduling", "mesos_delay_scheduling.toml", [], smoke_sets=["duration=300"])
    loc = {name: metric(row, f"mesos.frameworks.framework-{name}.locality_fraction") for name in ("nodelay", "delay")}
    ok = loc["delay"] >= 0.75 and loc["delay"] >= loc["nodelay"] + 0.25
    return Result(f"locality {loc['nodelay']:.0%} without delay, {loc['delay']:.0%} with a 5 s delay", ok,
                  "Synthetic: each task's data on 3 of 40 machines, no static-partitioning baseline (the paper's 18% "
                  "is static partitioning; schedlab's 'without delay' is Mesos without delay scheduling).",
                  {"nodelay": loc["nodelay"], "delay": loc["delay"]})


# ------------------------------------------------------ DRF, Borg, Raft

def drf_example(ctx: Context) -> Result:
    from schedlab.schedulers.allocation.fairness import dominant_shares, drf

    capacity = np.array([9.0, 18.0])
    demands = np.array([[1.0, 4.0], [3.0, 1.0]])
    tasks = drf(capacity, demands)
    shares = dominant_shares(capacity, demands, tasks)
    used = tasks[:, None] * demands
    ok = tasks.tolist() == [3, 2] and np.allclose(shares, [2 / 3, 2 / 3])
    return Result(f"A {int(tasks[0])} tasks ⟨{used[0, 0]:g} CPU, {used[0, 1]:g} GB⟩, B {int(tasks[1])} tasks "
                  f"⟨{used[1, 0]:g} CPU, {used[1, 1]:g} GB⟩; dominant shares {shares[0]:.3f}, {shares[1]:.3f}", ok,
                  numbers={"tasks": tasks.tolist(), "shares": shares.tolist()})


# Skewed task shapes: memory-heavy tasks strand cpu, cpu-heavy ones memory.
SKEWED = ["workload.classes.0.mem.values=[2.0,4.0]", "workload.classes.1.cpu.values=[0.5,1.0]", "workload.classes.1.mem.values=[12.0,16.0]"]


TRACE_SAMPLE = Path(__file__).resolve().parents[2] / "scenarios" / "traces" / "google2019_sample.npz"


def borg_compaction(ctx: Context) -> Result:
    from schedlab.schedulers.archs.borg.compaction import smallest_cell
    from schedlab.schedulers.archs.borg.placement import SCORING, PlacementParams
    from schedlab.schedulers.model.cluster import build_cell
    from schedlab.api.scenario_files import load_scenario
    from schedlab.experiments.compaction import snapshot
    from schedlab.experiments.fidelity import PAPER

    seeds = 3 if ctx.smoke else 11  # the paper: 11 trials per cell
    p90: dict[str, dict[str, float]] = {}
    shown = []
    ok = True
    for label, sets in (("mixed shapes", []), ("skewed shapes", SKEWED)):
        sc = load_scenario(PAPER / "borg_compaction.toml", sets)
        cell = build_cell(sc.cell.machine_classes, sc.cell.resources)
        jobs = snapshot(sc)
        sizes = {p: [smallest_cell(cell.capacity, jobs, PlacementParams(p), s) for s in range(seeds)] for p in SCORING}
        # The paper reports the 90th percentile; more than the cell means it did not fit at all.
        p90[label] = {p: float(np.percentile(v, 90)) for p, v in sizes.items()}
        ok = ok and p90[label]["hybrid"] <= p90[label]["best_fit"] < p90[label]["worst_fit"]
        cells = ", ".join(f"{p} {'no fit' if v > cell.size else f'{v:g}'}" for p, v in p90[label].items())
        shown.append(f"{label}: {cells}")
    # A snapshot built as the paper built its: a cell's machines and the tasks
    # running on them at an instant, from a trace in Google's 2019 schema.
    # The shipped one is a made-up sample, so it informs and does not judge.
    from schedlab.experiments.compaction import trace_snapshot
    capacity, jobs, _name = trace_snapshot(str(TRACE_SAMPLE), 3600.0)
    sizes = {p: [smallest_cell(capacity, jobs, PlacementParams(p), s) for s in range(seeds)] for p in SCORING}
    p90["trace sample"] = {p: float(np.percentile(v, 90)) for p, v in sizes.items()}
    sample = ", ".join(f"{p} {'no fit' if v > capacity.shape[0] else f'{v:g}'}" for p, v in p90["trace sample"].items())
    return Result(f"smallest cell of {cell.size} machines (p90 of {seeds} trials): " + "; ".join(shown)
                  + f"; a Google-2019-schema snapshot of {capacity.shape[0]} machines, {sum(j.tasks for j in jobs)} tasks "
                  f"(the shipped made-up sample, not judged): {sample}", ok,
                  "Two synthetic snapshots (scenarios/paper/borg_compaction.toml as is, and with skewed task shapes), "
                  "not Google's 15 cells: which of best fit and the hybrid packs tighter depends on the task shapes. "
                  "On Google's own shapes: schedlab compaction --trace <a converted cell> --at <s> (a snapshot as the "
                  "paper built its); not run here (no download).",
                  p90)


def raft_election(ctx: Context) -> Result:
    # Emulated ms at the scenario's time_scale 20: the paper's 150-150, 150-165, 150-180 and 150-300 wall ms.
    ranges = ["[3000,3000]", "[3000,3300]", "[3000,3600]", "[3000,6000]"]
    # Two seeds: twelve leader crashes per range, all pooled into one median.
    # Smoke runs go twice as fast with the same wall timers.
    rows = ctx.sweep("raft_election", "paper/raft_election.toml", ["coordinator.election_ms=" + ",".join(ranges)], seeds=2,
                     smoke_sets=["time_scale=40", "coordinator.heartbeat_ms=1800", "coordinator.election_ms=[6000,6600],[6000,12000]"])
    med = {}
    for r in rows:
        times = [f["election_wall_s"] for s in r["summaries"] for f in s["failovers"] if f.get("election_wall_s") is not None]
        scale = float(r["summaries"][0]["time_scale"]) if r["summaries"] else 20.0
        lo, hi = (float(x) / scale for x in r["set"]["coordinator.election_ms"].strip("[] ").split(","))
        med[f"{lo:.0f}-{hi:.0f}"] = (float(np.median(times)) * 1000 if times else float("nan"), len(times))
    wide = med.get("150-300", (float("nan"), 0))[0]
    narrow = med.get("150-165", (float("nan"), 0))[0]
    ok = 150 <= wide <= 600 and 0.5 * 287 <= narrow <= 2 * 287
    if "150-150" in med:
        ok = ok and med["150-150"][0] >= 1.5 * wide
    shown = "; ".join(f"{k} ms: {v:.0f} ms (n={n})" for k, (v, n) in med.items())
    return Result(f"median time without leader {shown}", ok,
                  "schedlab kills the leader at random, not just after a synchronized heartbeat, and timers on a "
                  "loaded 2-core machine jitter by milliseconds, which breaks split votes exact timers would repeat; "
                  "the narrowest randomized range here is 150-165 ms (the paper's: 150-155 ms).",
                  {k: v for k, (v, _n) in med.items()})



# ------------------------------------------------------------ YARN

YARN_DELAYS = (0, 4, 16)  # node_locality_delay, missed opportunities; 40 nodes heartbeat per round


def yarn_delay_scheduling(ctx: Context) -> Result:
    rows = ctx.sweep("yarn_delay_scheduling", "yarn_locality.toml",
                     ["yarn.node_locality_delay=" + ",".join(map(str, YARN_DELAYS))],
                     smoke_sets=["duration=300", "yarn.node_locality_delay=0,16"])
    by = {int(r["set"]["yarn.node_locality_delay"]): r for r in rows}
    loc = {d: metric(r, "yarn.locality.node_local") for d, r in by.items()}
    wait = {d: metric(r, "wait_time_s.fully_scheduled.p50") for d, r in by.items()}
    without, with_ = loc[0], loc[max(by)]
    ok = with_ >= 0.9 and with_ >= without + 0.25
    shown = ", ".join(f"{loc[d]:.0%} with delay {d}" for d in sorted(by) if d)
    return Result(f"node-local {without:.0%} without delay, {shown}", ok,
                  "Capacity scheduler, scenarios/yarn_locality.toml: each task's data on 3 of 40 machines, jobs of "
                  "2-8 tasks, cell ~60% busy; the delay is YARN's node-locality-delay, counted in missed scheduling "
                  "opportunities (16 is under one round of the 40 nodes' heartbeats, Hadoop's default is 40). Wait to "
                  "fully scheduled p50 " + ", ".join(f"{wait[d]:.3g} s" for d in sorted(by))
                  + f" at delays {', '.join(map(str, sorted(by)))}. No static-partitioning or Facebook-trace baseline.",
                  {"node_local": {str(d): v for d, v in loc.items()}, "wait_full_p50": {str(d): v for d, v in wait.items()}})


def queue_elasticity(ctx: Context) -> Result:
    from schedlab.actors.common.event_files import read_events

    # scenarios/yarn_queues.toml: adhoc guaranteed 30% (max 100%) of 16 x 16 GB,
    # prod 70%; only adhoc submits until prod's jobs start at 200 s.
    (row,) = ctx.sweep("queue_elasticity", "yarn_queues.toml", [], smoke_sets=["duration=300"])
    run = row["runs"][0]
    summary = row["summaries"][0]
    end = float(summary["emulated_seconds"])
    cell_mem, guarantee, maximum, prod_start = 16 * 16.0, 0.30, 1.0, 200.0
    samples = [(e["t"], {q["queue"]: q["used"][1] / cell_mem for q in e["queues"]})
               for e in read_events(run / "events.jsonl") if e["event"] == QUEUE_USAGE]

    def mean(queue: str, lo: float, hi: float) -> float:
        xs = [s[queue] for t, s in samples if lo <= t < hi]
        return float(np.mean(xs)) if xs else float("nan")

    late = max(prod_start + 50.0, end - 200.0)  # after the reclaim: the last 200 s of the full run
    burst = mean("root.adhoc", 100.0, prod_start)
    back, prod = mean("root.adhoc", late, end + 1.0), mean("root.prod", late, end + 1.0)
    pre = summary["yarn"]["queues"]["root.adhoc"]["preemptions"]
    ok = burst >= 0.85 * maximum and abs(back - guarantee) <= 0.1
    return Result(f"adhoc (guarantee 30%, max 100%) holds {burst:.0%} of the cell's memory while prod is idle, "
                  f"{back:.0%} after prod's load returns (prod {prod:.0%}); {pre} containers preempted from adhoc", ok,
                  f"scenarios/yarn_queues.toml: Capacity scheduler with preemption, memory shares of 16 machines; burst "
                  f"= mean over 100-{prod_start:g} s, after = mean over {late:g}-{end:g} s. Prod's offered load is about its "
                  "70% guarantee, less its AMs' share, so it rarely asks for all of it and adhoc keeps what prod leaves idle.",
                  {"adhoc_burst": burst, "adhoc_after": back, "prod_after": prod, "preemptions": pre})


# ------------------------------------------------------------ SLURM

def slurm_backfill(ctx: Context) -> Result:
    rows = ctx.sweep("slurm_backfill", "slurm_backfill.toml", ["slurm.partitions.0.backfill=fcfs,easy,conservative"],
                     smoke_sets=["duration=21600"])
    by = {r["set"]["slurm.partitions.0.backfill"]: r["summaries"][0] for r in rows}
    util = {m: float(s["utilization"]["cpu_mean"]) for m, s in by.items()}
    bsld = {m: float(s["slurm"]["bounded_slowdown"]["mean"]) for m, s in by.items()}
    done = {m: int(s["jobs"]["scheduled"]) for m, s in by.items()}
    easy_delays = int(by["easy"]["slurm"]["reservation_delays"])
    cons = by["conservative"]["slurm"]
    gain = {m: util[m] / util["fcfs"] - 1.0 for m in ("easy", "conservative")}
    ok = gain["easy"] >= 0.1 and gain["conservative"] >= 0.1 and easy_delays == 0
    return Result(f"utilization FCFS {util['fcfs']:.0%}, EASY {util['easy']:.0%} (+{gain['easy']:.0%}), conservative "
                  f"{util['conservative']:.0%} (+{gain['conservative']:.0%}); mean bounded slowdown {bsld['fcfs']:.3g}, "
                  f"{bsld['easy']:.3g}, {bsld['conservative']:.3g}; EASY head-job reservations delayed: {easy_delays}", ok,
                  "scenarios/slurm_backfill.toml: 64 whole nodes (select/linear), two days of a synthetic SWF log "
                  "(scripts/make_swf.py: jobs of 1-32 nodes, lognormal run times, requested times 1-5x the run time) "
                  "offered ~1.3x what the machine can run, so each scheduler's utilization is what it can get through. "
                  f"Jobs started: {done['fcfs']}, {done['easy']}, {done['conservative']}. Conservative backfill reserved "
                  f"{cons['reservations']} starts and {cons['reservation_delays']} of them came later than first promised: "
                  "reservations are recomputed every pass on specific nodes, and a job started early on other nodes can "
                  "take a later one's. The gain depends on the log: with jobs up to the whole machine and a lighter load "
                  "it was 0.28 -> 0.66 (FCFS drains the machine before every full-width job); with jobs up to a quarter "
                  "of it and an unsaturated load, utilization was equal (0.82, 0.83) and only slowdown fell (14.6 -> 3.8).",
                  {"utilization": util, "bounded_slowdown": bsld, "scheduled": done, "easy_reservation_delays": easy_delays})



FINDINGS = [
    Finding("monolithic", "Omega §4, Fig. 5a/6a", "Single-path monolithic: busyness grows linearly with t_job, then saturates",
            "linear rise, then saturation (jobs go unscheduled)",
            "busyness linear up to t_job 1 s (R² ≥ 0.95); at the largest t_job occupancy ≥ 0.95 and ≥ half the jobs unscheduled",
            monolithic_busyness),
    Finding("multipath", "Omega §4, Fig. 5b/6b", "Multi-path monolithic avoids head-of-line blocking",
            "a fast batch path cuts batch wait sharply", "batch wait p90 at least 5x lower", multipath),
    Finding("mesos_starves_batch", "Omega §4, Fig. 7", "Mesos: a slow service framework starves batch jobs",
            "batch jobs wait (and are abandoned) while the service framework holds offers",
            "batch wait p90 ≥ 3x its fast-service value and ≥ 3x Omega's", mesos_starves_batch),
    Finding("omega_service_tjob", "Omega §4-5, Figs. 5c/6c and 11", "Omega: conflicts and busyness rise with the service t_job",
            "both rise; conflict fraction near 1 at t_job ≈ 10 s (high-fidelity simulator)", "both rise over the sweep (10% slack)",
            omega_service_tjob),
    Finding("conflict_modes", "Omega §5, Fig. 12 (per secondary sources)", "Coarse conflict detection and all-or-nothing cost more conflicts",
            "sequence numbers and gang transactions: 2-3x the conflicts (secondary sources)",
            "share of conflicted service transactions: sequence + all-or-nothing ≥ 1.5x resource + incremental; "
            "each coarse option alone ≥ it", conflict_modes),
    Finding("batch_schedulers", "Omega §4, Fig. 9 (per secondary sources)", "More batch schedulers: more conflicts, less busyness each",
            "conflict fraction rises, per-scheduler busyness falls (1 to 32 schedulers)",
            "mean conflict fraction rises, busiest scheduler's busyness falls", batch_schedulers),
    Finding("mesos_table2", "Mesos §4.2, Table 2", "Ramp-up, completion and utilization of elastic and rigid frameworks",
            "ramp-up T (constant), T ln k (exponential); completion elastic (½+β)T, (1+β)T, rigid (1+β)T, (ln k+β)T; "
            "utilization elastic 1, rigid β/(½+β), β/(ln k−1+β)",
            f"each of the 12 trial means within 10% (+ 2 standard errors) of the model at k = {TABLE2_K}, β = {TABLE2_BETA:g}",
            mesos_table2),
    Finding("delay_scheduling", "Mesos §6, Fig. 8", "Delay scheduling's locality gain",
            "18% (static partitioning) -> >90% (1 s delay), 95% (5 s delay)", "≥ 75% with delay and ≥ 25 points above without",
            delay_scheduling),
    Finding("drf_example", "DRF §4.1", "DRF's worked example allocation", "A: 3 tasks ⟨3 CPU, 12 GB⟩, B: 2 tasks ⟨6 CPU, 2 GB⟩; "
            "dominant shares 2/3 each", "exact", drf_example, engine=None),
    Finding("borg_compaction", "Borg §3.2, §5.1", "Cell compaction ranks hybrid, best fit, worst fit",
            "hybrid ~3-5% better packing than best fit; worst fit (E-PVM) fragments more",
            "hybrid ≤ best fit < worst fit (p90 smallest cell) in both snapshots", borg_compaction, engine=None),
    Finding("raft_election", "Raft §9.3, Fig. 16", "Time without a leader vs election timeout range",
            "150-150 ms: > 10 s (split votes); 150-155 ms: median 287 ms; 150-300 ms recommended",
            "150-165 median within 0.5-2x of 287 ms; 150-300 median 150-600 ms; 150-150 ≥ 1.5x 150-300", raft_election,
            engine="ray"),
    Finding("yarn_delay_scheduling", "Delay scheduling (Zaharia et al., EuroSys 2010) §5",
            "Delay scheduling on YARN: a short wait makes small jobs' tasks node-local",
            "locality low without it for small jobs; with a short wait nearly 100% (\"nearly optimal data locality\")",
            "≥ 90% node-local with the largest delay and ≥ 25 points above without", yarn_delay_scheduling),
    Finding("queue_elasticity", "YARN Capacity scheduler docs; Vavilapalli et al., SoCC 2013",
            "Queue elasticity: a queue's usage tracks its guarantee and maximum as load shifts",
            "a queue may use idle capacity up to its maximum; preemption returns it to its guarantee when the owner's load returns",
            "bursting queue ≥ 85% of its maximum while the other is idle; within 10 points of its guarantee after",
            queue_elasticity),
    Finding("slurm_backfill", "Maui/Moab scheduler documentation (backfill); Mu'alem and Feitelson, IEEE TPDS 2001",
            "Backfill raises utilization over FCFS on a saturated machine",
            "backfill raises utilization by around 20% (Maui/Moab); EASY never delays the head job's reservation",
            "EASY and conservative utilization each ≥ 1.1x FCFS's; EASY head-job reservation delays 0", slurm_backfill),
    Finding("supermarket", "Mitzenmacher, IEEE TPDS 2001; Vvedenskaya, Dobrushin and Karpelevich, 1996",
            "Power of two choices: d = 2 cuts the mean time in system several-fold against random placement",
            "at load 0.9: random (M/M/1) 1/(1-λ) = 10 mean service times; d = 2, as n -> infinity, "
            "Σ λ^(2^i - 2) = 2.61",
            "d=2's distance to 2.61 at the largest cell ≤ half the smallest cell's excess and ≤ 10%; random / d=2 ≥ 3 "
            "at the largest cell; random's pooled mean within 3 standard errors of 10", supermarket),
    Finding("sparrow_vs_omniscient", "Sparrow (Ousterhout et al., SOSP 2013), abstract",
            "Sparrow's late binding comes close to an omniscient scheduler at 80% load",
            "within 12% of an ideal scheduler (abstract, 110-machine cluster); within 5% in simulation (per the issue)",
            "mean and p50 job response time ≤ 1.05x the omniscient dispatcher's", sparrow_vs_omniscient),
    Finding("multicluster_imbalance", "Multi-cluster scheduling: observational (grid information service) vs "
            "meta-scheduling; Mitzenmacher, IEEE TPDS 2000 (old information herds)",
            "Observational scheduling herds: its imbalance between sites exceeds the meta-scheduler's and the sites' "
            "size imbalance",
            "clients choosing on the same stale published state send their jobs to the same sites; a meta-scheduler "
            "that counts what it sent does not",
            "per publish-interval window: busiest/mean ≥ 1.5x the meta-scheduler's and > 2, a site left idle in most "
            "windows observational and in none with the meta-scheduler", multicluster_imbalance),
    Finding("fgd_inflation", "Weng et al., USENIX ATC 2023, Fig. 9a and abstract",
            "Fragmentation Gradient Descent leaves fewer GPUs unallocated than packing heuristics",
            "under workload inflation FGD leaves the fewest GPUs unallocated; up to 49% fewer than the best packing "
            "baseline (290 more GPUs allocated of 6,200+) on the openb trace",
            "FGD's unallocated GPUs at 130% arrived ≤ every baseline's (best fit, dot product, GPU packing, GPU "
            "clustering, random fit)", fgd_inflation, engine=None),
]
