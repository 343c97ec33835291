"""Run a federation: every site a whole cell of its own architecture
(``actors.run.CellRun``, each in a namespace of its own, its files under
``OUT/sites/<name>/``), the federation's users, board and front ends
beside them, all on one clock; then each site's summary and the
federation's (``summary.py``) in ``OUT/summary.json``."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from schedlab.actors import engines, interrupt
from schedlab.actors.federation.fronts import BoardActor, Client, Meta, Peer, Sites, Users
from schedlab.actors.federation.summary import federation_summary
from schedlab.actors.common.event_files import read_events
from schedlab.actors.common.metrics import MetricsCollector
from schedlab.actors.run import CellRun, Started, connected, plan_run, run_id
from schedlab.schedulers.arch import spec_of
from schedlab.schedulers.federation.spec import Federation, client_name, peer_name
from schedlab.schedulers.placement.policies import get_policy


def run_federation(fed: Federation, out_dir: str | Path, engine: str | None = None, address: str | None = None) -> dict:
    name = engine or fed.engine
    sc0 = fed.sites[0]
    eng = engines.engine_class(name)(scale=fed.time_scale, latency=sc0.substrate.latency, seed=fed.seed)
    with engines.use(eng):
        return _run(fed, Path(out_dir), address)


def _run(fed: Federation, out: Path, address: str | None) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    rid = run_id(fed.seed)
    home = f"schedlab-{rid}-federation"
    with connected(address, home) as started:
        interrupt.check()
        summary = _drive(fed, out, rid, home, started)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def _drive(fed: Federation, out: Path, run_id: str, home: str, started: Started) -> dict:
    eng = engines.current()
    flush = fed.sites[0].substrate.batch_interval
    sites: list[CellRun] = []
    for sc, site in zip(fed.sites, fed.site_names):
        policy_fns = {d.name: get_policy(d.policy) for d in spec_of(sc.architecture).deciders(sc) if d.policy is not None}
        sites.append(CellRun(plan_run(sc), out / "sites" / site, f"schedlab-{run_id}-{site}", started, policy_fns,
                             open_ended=True))
        interrupt.check()
    rt = eng.runtime(fed.time_scale, home)
    metrics = started.add(eng.spawn(MetricsCollector, "metrics", home, str(out / "events.jsonl")))
    reach = Sites(fed.site_names, tuple(s.submitter for s in sites), tuple(s.metrics for s in sites), fed.capacity)
    makers = _front_makers(fed, rt, reach, metrics, flush)
    fronts = {n: started.add(make()) for n, make in makers.items()}
    users = started.add(eng.spawn(Users, "users", home, rt, list(fed.jobs), fed.join, reach, metrics, flush))
    eng.gather([eng.call(h, "ready") for h in [*fronts.values(), users, metrics]], timeout=300)

    epoch = eng.time() + 0.2
    for s in sites:
        s.start(epoch)
    eng.gather([eng.call(h, "start", epoch) for h in [*fronts.values(), users]])
    end_wall = epoch + fed.duration / fed.time_scale
    faults = sorted(fed.faults, key=lambda f: f.at)
    restarts: list[tuple[float, str]] = []
    record: list[dict] = []
    while (left := end_wall - eng.time()) > 0:
        interrupt.check()
        eng.sleep(min(min(s.nap() for s in sites), left))
        for s in sites:
            s.step()
        now = (eng.time() - epoch) * fed.time_scale
        while faults and faults[0].at <= now:
            f = faults.pop(0)
            eng.kill_all([fronts[f.target]])
            record.append({"at_s": round(now, 3), "kind": "kill", "target": f.target, "restart_after_s": f.restart_after})
            if f.restart_after is not None:
                restarts.append((f.at + f.restart_after, f.target))
        for at, target in sorted(restarts):
            if at <= now:
                restarts.remove((at, target))
                fronts[target] = started.add(makers[target]())
                eng.gather([eng.call(fronts[target], "start", epoch)])
                record.append({"at_s": round(now, 3), "kind": "restart", "target": target})
    # No new jobs, then the front ends (what they hold is reported), then every site.
    eng.outcomes([eng.call(users, "stop")], timeout=120)
    eng.outcomes([eng.call(h, "stop") for h in fronts.values()], timeout=120)
    site_summaries = {name: s.finish() for name, s in zip(fed.site_names, sites)}
    for name, summ in site_summaries.items():
        (out / "sites" / name / "summary.json").write_text(json.dumps(summ, indent=2) + "\n")
    eng.gather([eng.call(metrics, "close")])
    events = read_events(out)
    site_events = {name: read_events(out / "sites" / name) for name in fed.site_names}
    return federation_summary(fed, events, site_events, site_summaries, record, eng.name)


def _front_makers(fed: Federation, rt: Any, reach: Sites, metrics: Any, flush: float) -> dict[str, Any]:
    """Each federation actor's recipe (a killed one is made again from it)."""
    eng, ns, join, n = engines.current(), rt.namespace, fed.join, len(fed.sites)
    makers: dict[str, Any] = {}
    subscribers: list[str] = []
    if join.mode == "observational":
        for i in range(n):
            subscribers.append(client_name(i))
            makers[client_name(i)] = (lambda i=i: eng.spawn(Client, client_name(i), ns, rt, i, join, reach, fed.seed,
                                                            metrics, flush))
    elif join.mode == "meta":
        subscribers.append("meta")
        makers["meta"] = lambda: eng.spawn(Meta, "meta", ns, rt, join, reach, fed.seed, metrics, flush)
    else:
        for i in range(n):
            makers[peer_name(i)] = (lambda i=i: eng.spawn(Peer, peer_name(i), ns, rt, i, join, reach, fed.seed,
                                                          metrics, flush))
    makers["board"] = lambda: eng.spawn(BoardActor, "board", ns, rt, join, reach, subscribers, metrics, flush)
    return makers
