"""What an HTCondor run starts: the central manager (collector and
negotiator), a schedd per submit machine (routed its job classes), and a
startd actor per machine host (the host polls it for launches)."""
from __future__ import annotations

import dataclasses

import numpy as np

from schedlab.actors.archs.htcondor.collector import Collector, CollectorConfig
from schedlab.actors.archs.htcondor.schedd import ScheddActor, ScheddConfig
from schedlab.actors.archs.htcondor.startd import SlotSpec, StartdConfig, StartdEndpoint, StartdService
from schedlab.actors.topology import Build, Topology
from schedlab.schedulers.archs.htcondor.pool import slot_ad, slot_count, slot_name
from schedlab.schedulers.archs.htcondor.spec import (
    COLLECTOR, ROLE_CM, ROLE_SCHEDD, ROLE_STARTD, CondorSpec, schedd_name, startd_name,
)
from schedlab.schedulers.model.cluster import host_count


def build(b: Build) -> Topology:
    sc, cell = b.scenario, b.plan.cell
    s: CondorSpec = sc.section
    flush = sc.substrate.batch_interval
    k = sc.cell.machines_per_actor
    hosts = host_count(cell.size, k)
    standing = b.plan.prefill.by_machine()
    cm_cfg = CollectorConfig(
        schedds=s.schedds, machines_per_host=k, total=tuple(float(x) for x in cell.capacity.sum(axis=0)),
        negotiator_interval=s.negotiator_interval, update_interval=s.update_interval,
        priority_halflife=s.priority_halflife, t_cycle=s.t_cycle, t_eval=s.t_eval,
        sample_interval=sc.metrics.sample_interval,
    )
    cm = b.members.spawn(ROLE_CM, Collector, COLLECTOR, b.rt, cm_cfg, b.metrics, flush)
    startds = {}
    for h in range(hosts):
        ms = tuple(range(h * k, min(cell.size, (h + 1) * k)))
        slots, owners = [], []
        for m in ms:
            mc = cell.classes[int(cell.machine_class[m])]
            ads = s.machine_ads(mc.name)
            n = slot_count(float(cell.capacity[m][0]), ads)
            labels = cell.labels[m] if cell.labels else mc.labels
            slots.append(tuple(SlotSpec(slot_name(m, i), m, slot_ad(m, i, mc.name, cell.capacity[m].tolist(), n, ads,
                                                                    labels, int(cell.rack[m]), cell.resources))
                               for i in range(n)))
            owners.append((ads.owner_present, ads.owner_away))
        cfg = StartdConfig(
            host=h, machines=ms, capacity=np.asarray(cell.capacity[ms[0]:ms[-1] + 1]), slots=tuple(slots),
            owners=tuple(owners), prefill=tuple(tuple(standing.get(m, ())) for m in ms), seed=sc.seed,
            suspend_grace=s.suspend_grace, match_timeout=s.match_timeout, update_interval=s.update_interval,
        )
        startds[h] = b.members.spawn(ROLE_STARTD, StartdService, startd_name(h), b.rt, cfg, b.metrics, flush)
    topo = Topology(StartdEndpoint(startds), [cm, *startds.values()], None)
    for i in range(s.schedds):
        classes = s.classes_of(i)
        schedd = ScheddConfig(name=schedd_name(i), classes=tuple((c, s.job_ads(c)) for c in classes),
                              machines_per_host=k, hosts=hosts, t_shadow=s.t_shadow, resources=cell.resources)
        h = b.members.spawn(ROLE_SCHEDD, ScheddActor, schedd.name, b.rt, schedd, b.metrics, flush,
                            again=(b.rt, dataclasses.replace(schedd, restarted=True), b.metrics, flush))
        topo.route(classes, schedd.name, h)
    topo.names.append(COLLECTOR)  # the negotiator decides too: its cycles are its transactions
    total_slots = sum(slot_count(float(cell.capacity[m][0]), s.machine_ads(cell.classes[int(cell.machine_class[m])].name))
                      for m in range(cell.size))
    topo.info["htcondor"] = {"schedds": s.schedds, "startd_actors": hosts, "slots": total_slots}
    return topo
