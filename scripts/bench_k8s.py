"""Throughput of the Kubernetes architecture in the shape of the upstream
scheduler_perf workload "SchedulingBasic": pods bound per second, on the sim
engine and live (Ray), beside the upstream CI threshold for that workload.

    python scripts/bench_k8s.py [--pods 10000,50000] [--nodes 5000] [--engine sim|ray|both] [--repeat 1]
                                [--init-pods N] [--per-actor 250] [--live-seconds S] [--json PATH] [--quick]

**The workload** (kubernetes/kubernetes, test/integration/scheduler_perf,
``misc/performance-config.yaml``): ``createNodes`` 5,000 nodes of the default
node template (4 cpu, 32 GiB, 110 pods), ``createPods`` the initial pods, then
``createPods`` the measured pods with ``collectMetrics``, no think time, the
default scheduler profile; pods of the default template (100m cpu, 500 MiB).
Upstream's performance cases and CI thresholds (average pods/s scheduled):

* ``SchedulingBasic/5000Nodes_10000Pods``: 1,000 initial pods, 10,000
  measured, threshold 680;
* ``SchedulingBasic/5000Nodes_50000Pods``: 5,000 initial pods, 50,000
  measured, threshold 810.

**Here** (``bench_scenario``): ``--nodes`` machines of 4 cpu x 32 GB
(``--per-actor`` per host actor, so host actors stay few); the initial pods
are the prefill (running when the run starts, as upstream's are scheduled
before measuring: a service class of ``--init-pods`` tasks that never
arrives, and a prefill target of half its share of the cell, so one job of
it is the whole prefill); the
measured pods are **one job** of ``pods`` tasks (0.1 cpu, 0.5 GB, running
past the end) submitted at t = 0, which kube-controller-manager turns into
pods in one write to the API store. No ``[kubernetes]`` section: one
kube-scheduler with the default profile (upstream's plugins and weights),
no think time (``t_pod`` 0). ``time_scale`` 1, so a live run's emulated
seconds are wall seconds.

**Measured**, per run: pods bound (the summary's ``kubernetes.pods_bound``)
over the span from the measured job's submission (its pods are created
then) to the last accepted bind (``txn`` events), in emulated seconds; and
the CPU seconds spent from the moment every actor has started to the first
progress sample after that last bind (sim: this process; live: this
process and every process it started, i.e. Ray's GCS, raylet and workers,
read from /proc, also by process kind: Ray workers by actor class). A sim
run lasts ``SIM_SECONDS`` emulated; a live run the pods at the last live
rate measured (else ``LIVE_RATE_GUESS``) plus a quarter and
``LIVE_SLACK_S`` (``--live-seconds`` overrides): one that ends first is
reported incomplete, its rate a lower bound. Two rates:

* **emulated pods/s** = bound / emulated span. Live at ``time_scale`` 1 it
  is pods per wall second, **the rate to compare with upstream there** (a
  real concurrent system on a real clock, as upstream's). On sim it is an
  artefact: a scheduling cycle takes no emulated time (no think time), so
  the span is only the latency model's round trips between batches of
  binds; it is printed, never compared.
* **CPU pods/s** = bound / CPU seconds. On sim, where the emulated clock is
  virtual, this is the honest speed and **the rate compared with
  upstream**: the pods per second one core binds when it runs the whole
  system (API store on three replicas, controller, scheduler, kubelets),
  with messaging free. Live it shows what Ray costs per pod (on 2 cores it
  is at most twice the wall rate).

Rates are the medians of ``--repeat`` runs (the row is the median run's).
No speed target is asserted here or in tests (tests/test_bench_k8s.py runs
``--quick`` for shape only); the threshold is printed beside the result.
``python -m schedlab.scripts.bench_k8s_cycle`` measures the scheduling
cycle alone (no store, no engine).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from schedlab.schedulers.events.shared import JOB_SUBMITTED, TXN
from schedlab.scripts.options import parse_bench_args

TOOL_HELP = "Kubernetes in scheduler_perf's SchedulingBasic shape"  # one line in `schedlab --help` (cli.tools)

NODE = (4.0, 32.0)  # cpu, GB: scheduler_perf's node-default.yaml (4 cpu, 32Gi)
POD = (0.1, 0.5)  # cpu, GB: its pod-default.yaml (100m, 500Mi)
TIME_SCALE = 1.0
SIM_SECONDS = 10.0  # emulated: on sim the binds take well under 1 s (cycles cost no emulated time)
LIVE_RATE_GUESS = 500.0  # pods/s, sizing the first live run before any was measured
LIVE_SLACK_S = 10.0  # emulated (= wall) seconds added to a live run for creating the pods
PER_ACTOR = 250
SEED = 1
# (nodes, pods) -> (initial pods, threshold pods/s, upstream name)
UPSTREAM: dict[tuple[int, int], tuple[int, int, str]] = {
    (5000, 10000): (1000, 680, "SchedulingBasic/5000Nodes_10000Pods"),
    (5000, 50000): (5000, 810, "SchedulingBasic/5000Nodes_50000Pods"),
}
QUICK = {"nodes": 100, "pods": [1000], "engine": "sim", "repeat": 1}


def upstream(nodes: int, pods: int) -> tuple[int, int | None, str | None]:
    """(initial pods, threshold, upstream case) for this shape; off the
    upstream table, a tenth of the pods initially and no threshold."""
    init, threshold, name = UPSTREAM.get((nodes, pods), (pods // 10, None, None))
    return init, threshold, name


def bench_scenario(nodes: int, pods: int, init_pods: int, engine: str, duration: float,
                   per_actor: int = PER_ACTOR) -> dict[str, Any]:
    """The scenario as raw TOML data (see the module doc)."""
    never = 2.0 * duration  # the init class's first arrival: after the run, so only the prefill uses it
    share = init_pods * POD[0] / (nodes * NODE[0])
    return {
        "name": f"bench-k8s-{nodes}n-{pods}p",
        "architecture": "kubernetes",
        "engine": engine,
        "seed": SEED,
        "time_scale": TIME_SCALE,
        "duration": duration,
        "cell": {"machines_per_actor": per_actor,
                 "machine_classes": [{"name": "node", "count": nodes, "cpu": NODE[0], "mem": NODE[1],
                                      "racks": max(1, nodes // 500)}]},
        "workload": {
            # The prefill places whole jobs of the classes, services first,
            # until the target: one init job (share >= half the share) ends it.
            "prefill_utilization": share / 2 if init_pods else 0.0,
            "classes": [
                {"name": "measured", "kind": "batch", "interarrival": never, "interarrival_mode": "fixed", "start": 0.0,
                 "tasks": float(pods), "duration": 10.0 * duration, "cpu": POD[0], "mem": POD[1]},
                {"name": "init", "kind": "service", "interarrival": never, "interarrival_mode": "fixed", "start": never,
                 "tasks": float(max(1, init_pods)), "cpu": POD[0], "mem": POD[1]},
            ]},
        "metrics": {"sample_interval": 10.0},
        # The API store's etcd at etcd's own timers (time_scale 1: emulated
        # is wall), as a cluster scheduler_perf measures runs it.
        "coordinator": {"heartbeat_ms": 100.0, "election_ms": 1000.0},
    }


def parse_bench(nodes: int, pods: int, init_pods: int, engine: str, duration: float, per_actor: int = PER_ACTOR) -> Any:
    from schedlab.actors.engines.limits import local_limits
    from schedlab.schedulers.scenario.parse import parse_scenario

    return parse_scenario(bench_scenario(nodes, pods, init_pods, engine, duration, per_actor), "bench_k8s", local_limits())


# ------------------------------------------------------------ CPU of a process tree

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
SELF = "driver"


def _title(pid: int) -> str:
    """What a process is: a Ray worker's title up to the method
    (``ray::KubeScheduler``), else its program (``raylet``, ``gcs_server``,
    or a Python script's file name)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return "?"
    if not argv:
        return "?"
    if argv[0].startswith("ray::"):
        return argv[0].split()[0].split(".")[0]
    script = next((a for a in argv[1:] if a.endswith(".py")), None)
    return os.path.basename(script or argv[0])


def descendants_cpu(root: int) -> dict[str, float]:
    """CPU seconds (user + system) of every live descendant of ``root``,
    by process title (``_title``), read from /proc (empty where there is
    none, or no /proc). A process that exited took its CPU time with it."""
    parent: dict[int, int] = {}
    cpu: dict[int, float] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return {}
    for d in entries:
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()  # after "pid (comm) "
        parent[int(d)] = int(fields[1])
        cpu[int(d)] = (int(fields[11]) + int(fields[12])) / _TICK
    kids: dict[int, list[int]] = {}
    for pid, pp in parent.items():
        kids.setdefault(pp, []).append(pid)
    out: dict[str, float] = {}
    todo = list(kids.get(root, []))
    while todo:
        pid = todo.pop()
        title = _title(pid)
        out[title] = out.get(title, 0.0) + cpu.get(pid, 0.0)
        todo.extend(kids.get(pid, []))
    return out


def cpu_by_process() -> dict[str, float]:
    """CPU seconds of this process (``driver``) and of each kind of process
    it started (Ray's, live)."""
    return {SELF: time.process_time(), **descendants_cpu(os.getpid())}


def cpu_spent(start: dict[str, float], end: dict[str, float]) -> dict[str, float]:
    """CPU seconds per process kind between two ``cpu_by_process`` readings,
    largest first (a kind started in between counts from zero)."""
    spent = {k: round(v - start.get(k, 0.0), 3) for k, v in end.items()}
    return dict(sorted(((k, v) for k, v in spent.items() if v > 0), key=lambda kv: -kv[1]))


# ------------------------------------------------------------ one run


@dataclass(frozen=True)
class Measured:
    """One run. Times in emulated seconds (``time_scale`` 1: live, wall
    seconds) unless named wall; ``cpu_s`` and ``wall_s`` cover the window
    from every actor started to the first progress sample after the last
    bind."""

    engine: str
    nodes: int
    pods: int
    init_pods: int
    per_actor: int
    duration: float
    bound: int
    prefill: int
    created_at: float
    first_bind_at: float
    last_bind_at: float
    wall_s: float
    cpu_s: float
    setup_wall_s: float
    total_wall_s: float
    invariants_ok: bool
    threshold: int | None = None
    upstream_case: str | None = None
    latency_p50: float | None = None
    latency_p99: float | None = None
    cpu_by_process: dict[str, float] | None = None  # CPU s of the window per process kind (live: Ray's workers by class)

    @property
    def span(self) -> float:
        return max(self.last_bind_at - self.created_at, 1e-9)

    @property
    def emulated_rate(self) -> float:
        return self.bound / self.span

    @property
    def cpu_rate(self) -> float:
        return self.bound / max(self.cpu_s, 1e-9)

    @property
    def complete(self) -> bool:
        return self.bound >= self.pods

    @property
    def compared(self) -> float:
        """The rate that compares with upstream: CPU pods/s on sim, pods per
        wall second live (emulated / time_scale)."""
        return self.cpu_rate if self.engine == "sim" else self.emulated_rate * TIME_SCALE


def bind_times(events: Path) -> tuple[float | None, float | None, float | None]:
    """(measured job submitted, first and last accepted bind), emulated s,
    from the events file (only job_submitted and txn lines parsed)."""
    created = first = last = None
    with events.open() as f:
        for line in f:
            if '"job_submitted"' in line:
                e = json.loads(line)
                if e.get("event") == JOB_SUBMITTED and e.get("job_class") == "measured":
                    created = e["t"] if created is None else min(created, e["t"])
            elif '"txn"' in line:
                e = json.loads(line)
                if e.get("event") == TXN and e.get("committed", 0) > 0:
                    t = float(e["t"])
                    first = t if first is None else min(first, t)
                    last = t if last is None else max(last, t)
    return created, first, last


Sample = tuple[float, float, Any]  # (emulated now, wall, CPU reading)


def window_end(samples: list[Sample], last_bind: float) -> tuple[float, Any]:
    """(wall, CPU reading) of the first progress sample at or after
    ``last_bind`` (emulated s); the last sample if none is (the run ended
    first)."""
    for now, wall, cpu in samples:
        if now >= last_bind:
            return wall, cpu
    return samples[-1][1], samples[-1][2]


def measure(nodes: int, pods: int, init_pods: int, engine: str, duration: float, per_actor: int = PER_ACTOR) -> Measured:
    from schedlab.actors.run import run_scenario

    sc = parse_bench(nodes, pods, init_pods, engine, duration, per_actor)
    mark: dict[str, Any] = {}
    samples: list[Sample] = []

    def started(_namespace: str, _address: str) -> None:
        mark["wall"], mark["cpu"] = time.perf_counter(), cpu_by_process()

    def progress(now: float, _counts: dict) -> None:
        samples.append((now, time.perf_counter(), cpu_by_process()))

    with tempfile.TemporaryDirectory(prefix="bench-k8s-") as out:
        w0 = time.perf_counter()
        s = run_scenario(sc, out, on_started=started, on_progress=progress)
        w1 = time.perf_counter()
        created, first, last = bind_times(Path(out) / "events.jsonl")
    if not samples:
        samples.append((sc.duration, w1, cpu_by_process()))
    k = s["kubernetes"]
    end_wall, end_cpu = window_end(samples, last if last is not None else sc.duration)
    spent = cpu_spent(mark["cpu"], end_cpu)
    ok = all(not v for v in s["invariants"].values() if isinstance(v, (int, float)))
    _init, threshold, case = upstream(nodes, pods)
    return Measured(engine, nodes, pods, init_pods, per_actor, sc.duration, int(k["pods_bound"]),
                    int(s["jobs"].get("prefill_tasks", 0)), created if created is not None else 0.0,
                    first if first is not None else sc.duration, last if last is not None else sc.duration,
                    end_wall - mark["wall"], round(sum(spent.values()), 3), mark["wall"] - w0, w1 - w0, ok,
                    threshold if (threshold is not None and init_pods == _init) else None, case,
                    k["scheduling_latency_s"]["p50"], k["scheduling_latency_s"]["p99"], spent)


def live_duration(pods: int, rate: float | None, cap: float | None) -> float:
    """Emulated (= wall) seconds for a live run: the pods at the last live
    rate measured (else a guess) plus a quarter, plus time to create them;
    ``cap`` (--live-seconds) overrides. A run that ends before binding
    every pod is reported incomplete, its rate a lower bound."""
    if cap is not None:
        return cap
    return round(LIVE_SLACK_S + 1.25 * pods / (rate or LIVE_RATE_GUESS), 1)


def median_run(runs: list[Measured]) -> Measured:
    """The run with the median compared rate (its numbers all from one run)."""
    return sorted(runs, key=lambda m: m.compared)[len(runs) // 2]


# ------------------------------------------------------------ report


def _n(x: float | None, fmt: str = ",.0f") -> str:
    return "-" if x is None else format(x, fmt)


def report(rows: list[tuple[Measured, list[Measured]]]) -> str:
    head = ("| engine | nodes | pods (+ initial) | bound | span (emulated s) | emulated pods/s | wall s | CPU s "
            "| CPU pods/s | compared | upstream threshold | ratio | queue-to-bind p50/p99 (s) | invariants |")
    out = [head, "|" + " --- |" * 2 + " ---: |" * 11 + " --- |"]
    for m, runs in rows:
        if m.engine == "sim":
            compared = f"{m.cpu_rate:,.0f} (CPU)"
        else:
            compared = f"{m.emulated_rate * TIME_SCALE:,.0f} (wall)"
        if not m.complete:
            compared += f" incomplete: {m.bound}/{m.pods}, a lower bound"
        if len(runs) > 1:
            compared += f" [{min(r.compared for r in runs):,.0f}-{max(r.compared for r in runs):,.0f}]"
        ratio = f"{m.compared / m.threshold:.2f}x" if m.threshold else "-"
        out.append(f"| {m.engine} | {m.nodes:,} | {m.pods:,} (+{m.prefill:,}) | {m.bound:,} | {m.span:.3f} | "
                   f"{m.emulated_rate:,.0f} | {m.wall_s:.1f} | {m.cpu_s:.1f} | {m.cpu_rate:,.0f} | {compared} | "
                   f"{_n(m.threshold)} | {ratio} | {_n(m.latency_p50, '.3f')} / {_n(m.latency_p99, '.3f')} | "
                   f"{'ok' if m.invariants_ok else 'VIOLATED'} |")
    out += ["",
            ("compared: sim -> CPU pods/s (the emulated clock is virtual and a cycle costs no emulated time, so its "
             "emulated pods/s only measures the latency model); live -> pods per wall second (time_scale 1)."),
            "upstream: kubernetes test/integration/scheduler_perf misc/performance-config.yaml, "
            + "; ".join(f"{name} ({init:,} initial pods) {thr} pods/s" for init, thr, name in UPSTREAM.values())
            + "."]
    for m, _runs in rows:
        if m.cpu_by_process and len(m.cpu_by_process) > 1:
            out.append(f"{m.engine} {m.pods:,} pods, CPU s by process: {_by_process(m)}")
    return "\n".join(out)


def _by_process(m: Measured, top: int = 8) -> str:
    items = list((m.cpu_by_process or {}).items())
    rest = sum(v for _k, v in items[top:])
    return ", ".join([f"{k} {v:.1f}" for k, v in items[:top]] + ([f"others {rest:.1f}"] if rest else []))


def log(msg: str) -> None:
    """Progress, on stderr: stdout is the results."""
    print(msg, file=sys.stderr, flush=True)


def _pods(text: str) -> list[int]:
    try:
        pods = [int(x.replace("_", "")) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of pod counts: {text!r}") from None
    if not pods or any(p <= 0 for p in pods):
        raise argparse.ArgumentTypeError(f"pod counts must be positive: {text!r}")
    return pods


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pods", type=_pods, default=[10000, 50000], help="measured pods per case, comma-separated")
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--engine", choices=("sim", "ray", "both"), default="both")
    p.add_argument("--repeat", type=int, default=1, help="runs per case; the median counts")
    p.add_argument("--init-pods", type=int, default=None,
                   help="pods running before the measured ones (default: upstream's for the case, else pods/10)")
    p.add_argument("--per-actor", type=int, default=PER_ACTOR, help="machines per host actor")
    p.add_argument("--live-seconds", type=float, default=None,
                   help="wall seconds per live run (default: sized from the last live rate measured)")
    args = parse_bench_args(p, argv, QUICK, "100 nodes, 1,000 pods, sim, once: for tests")
    if args.nodes <= 0 or args.repeat <= 0 or args.per_actor <= 0:
        p.error("--nodes, --repeat and --per-actor must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    engines = ["sim", "ray"] if args.engine == "both" else [args.engine]
    rows: list[tuple[Measured, list[Measured]]] = []
    live_rate: float | None = None
    log(f"SchedulingBasic shape: {args.nodes:,} nodes of {NODE[0]:g} cpu x {NODE[1]:g} GB, pods of "
        f"{POD[0]:g} cpu x {POD[1]:g} GB, {args.per_actor} nodes per host actor")
    for engine in engines:
        for pods in args.pods:
            init = args.init_pods if args.init_pods is not None else upstream(args.nodes, pods)[0]
            runs = []
            for i in range(args.repeat):
                duration = SIM_SECONDS if engine == "sim" else live_duration(pods, live_rate, args.live_seconds)
                m = measure(args.nodes, pods, init, engine, duration, args.per_actor)
                log(f"{engine} {pods:,} pods (+{m.prefill:,}) run {i + 1}: bound {m.bound:,} in {m.span:.3f} emulated s "
                    f"(first bind at {m.first_bind_at - m.created_at:.3f} s): {m.emulated_rate:,.0f} emulated pods/s, "
                    f"{m.cpu_s:.1f} CPU s = {m.cpu_rate:,.0f} CPU pods/s; set-up {m.setup_wall_s:.1f} s, "
                    f"run {m.total_wall_s:.1f} s wall")
                if m.cpu_by_process and len(m.cpu_by_process) > 1:
                    log("  CPU s by process: " + _by_process(m))
                if engine != "sim" and m.complete:
                    live_rate = m.emulated_rate
                runs.append(m)
            rows.append((median_run(runs), runs))
    print(report(rows))
    if args.json is not None:
        args.json.write_text(json.dumps([{"median": asdict(m), "runs": [asdict(r) for r in runs]} for m, runs in rows],
                                        indent=2) + "\n")
    bad = [m for m, runs in rows for r in runs if not r.invariants_ok]
    if bad:
        print(f"invariants violated in: {', '.join(f'{m.engine} {m.pods}' for m in bad)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
