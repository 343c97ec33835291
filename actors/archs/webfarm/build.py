"""What a web farm run starts: an httpd per machine host (the host polls
it), the clients (the submitter's route: they send each page to the
balancer holding the address and keep its timeout), and the load
balancers: one, restarted in place, or ``lbs`` of them on the coordinator
group's lease (the active one holds the address)."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np

from schedlab.actors import engines
from schedlab.actors.archs.webfarm.clients import Clients, ClientsConfig
from schedlab.actors.archs.webfarm.httpd import Httpd, HttpdConfig, HttpdEndpoint
from schedlab.actors.archs.webfarm.loadbalancer import ROUTE, BalancerConfig, LoadBalancer
from schedlab.actors.coordinator.replica_set import LeasedSet
from schedlab.actors.topology import Build, Topology
from schedlab.schedulers.archs.webfarm.sessions import assign_sessions
from schedlab.schedulers.archs.webfarm.spec import CLIENTS, ROLE_HTTPD, ROLE_LB, WebfarmSpec, httpd_name, lb_name
from schedlab.schedulers.consensus.lease import LeaseMachineFactory
from schedlab.schedulers.model.cluster import host_count
from schedlab.schedulers.model.resources import largest_request, slots_for
from schedlab.schedulers.model.seeding import rng_for


class BalancerSet(LeasedSet):
    """``lbs`` balancers on the lease: spawn, find the active one, kill,
    restart (a restarted balancer comes back as a standby)."""

    def __init__(self, cfg: BalancerConfig, rt: Any, metrics: Any, flush: float, on_spawn: Callable[[Any], Any]) -> None:
        super().__init__(cfg.spec.lbs, on_spawn)
        self.cfg, self.rt, self.metrics, self.flush = cfg, rt, metrics, flush

    def make(self, i: int) -> Any:
        cfg = dataclasses.replace(self.cfg, index=i, restarted=i in self.killed)
        return engines.current().spawn(LoadBalancer, lb_name(i), self.rt.namespace, self.rt, cfg, self.metrics, self.flush)


def build(b: Build) -> Topology:
    sc, cell = b.scenario, b.plan.cell
    s: WebfarmSpec = sc.section
    flush = sc.substrate.batch_interval
    k = sc.cell.machines_per_actor
    hosts = host_count(cell.size, k)
    largest = largest_request([j["request"] for j in b.plan.jobs], b.plan.cell.width)
    standing = b.plan.prefill.by_machine()
    classes = [s.server_class(mc.name) for mc in sc.cell.machine_classes for _ in range(mc.count)]
    workers = [c.workers or s.workers for c in classes]
    balancers = tuple(lb_name(i) for i in range(s.lbs))
    # A silent host is a dead server: a few of its polls missed.
    silent_after = 3 * flush * b.rt.scale
    # Clients fence a page unanswered two load reports past its deadline
    # (an httpd acknowledges what it took in with each report; the fence is
    # exact without them, they only spare it); an httpd remembers what it
    # took in far longer than any fence can come late.
    grace = 2 * s.report_interval
    retention = max(600.0, 20 * (s.client_timeout + grace))
    httpds = {}
    for h in range(hosts):
        ms = tuple(range(h * k, min(cell.size, (h + 1) * k)))
        cfg = HttpdConfig(
            host=h, machines=ms, capacity=np.asarray(cell.capacity[ms[0]:ms[-1] + 1]), largest=largest,
            workers=tuple(workers[m] for m in ms), speeds=tuple(classes[m].speed for m in ms), max_queue=s.max_queue,
            transfer_cost=s.transfer_cost, standing=tuple(tuple(standing.get(m, ())) for m in ms),
            report_interval=s.report_interval, balancers=balancers, silent_after=silent_after, hosts=hosts,
            sample_interval=sc.metrics.sample_interval, total=tuple(float(x) for x in cell.capacity.sum(axis=0)),
            retention=retention,
        )
        httpds[h] = b.members.spawn(ROLE_HTTPD, Httpd, httpd_name(h), b.rt, cfg, b.metrics, flush)
    n_jobs = 1 + max((int(j["job_id"]) for j in b.plan.jobs), default=0)
    sessions, last = assign_sessions(n_jobs, s.session_length, s.concurrent_sessions, rng_for(sc.seed, "webfarm/sessions"))
    base = BalancerConfig(index=0, spec=s, servers=cell.size, machines_per_host=k, hosts=hosts,
                          weights=tuple(c.weight for c in classes), sessions=sessions, last=last,
                          replicas=sc.coordinator.replicas, seed=sc.seed)
    job_classes = [jc.name for jc in sc.workload.classes]
    info = {"webfarm": {
        "policy": s.policy, "info": s.info, "d": s.d, "sessions": s.sessions, "lbs": s.lbs,
        "servers": cell.size, "speeds": [c.speed for c in classes], "weights": [c.weight for c in classes],
        "workers": [slots_for(cell.capacity[m], np.zeros(cell.capacity.shape[1]), largest, workers[m])
                    for m in range(cell.size)],
        "client_timeout": s.client_timeout, "transfer_cost": s.transfer_cost,
    }}
    clients = b.members.on_spawn(engines.current().spawn(
        Clients, CLIENTS, b.rt.namespace, b.rt,
        ClientsConfig(timeout=s.client_timeout, grace=grace, tick=s.report_interval, hosts=hosts, first_holder=lb_name(0)),
        b.metrics, flush))
    if s.lbs == 1:
        h = b.members.spawn(ROLE_LB, LoadBalancer, lb_name(0), b.rt, base, b.metrics, flush)
        topo = Topology(HttpdEndpoint(httpds), [h, *httpds.values(), clients], None, info=info)
        topo.route(job_classes, lb_name(0), clients, holder=CLIENTS)
        return topo
    group = b.coordinator_group(LeaseMachineFactory(), None)
    group.spawn_all()
    lbs = BalancerSet(base, b.rt, b.metrics, flush, b.members.on_spawn)
    handles = lbs.spawn_all()
    topo = Topology(HttpdEndpoint(httpds), list(group.live.values()), group, controllers={ROLE_LB: lbs},
                    start_with_hosts=[*handles, *httpds.values()], stop_also=[*httpds.values(), clients], info=info)
    topo.route(job_classes, ROUTE, clients, holder=CLIENTS)
    return topo
