"""A federation file: several sites, each a cell of any registered
architecture, and one way of joining them. Parsed and checked here, pure,
before anything starts; ``actors.federation`` runs it.

A federation file has ``[[sites]]`` instead of a single cell::

    name, seed, engine, time_scale, duration   # as in a scenario, shared by every site
    [workload]                  # the users' jobs (classes as in a scenario)
    [multicluster]              # how sites are joined: mode and its knobs
    [[sites]]                   # name, architecture, users (weight of local users),
    [sites.cell] ...            #   its cell, its architecture's section,
    [sites.<architecture>] ...  #   [sites.coordinator], [[sites.faults]]
    [[faults]]                  # kills of the federation's own actors (meta, clients, peers, board)

Every job has a home site, drawn by the sites' ``users`` weights: its
user submits there first (observational and p2p) or to the
meta-scheduler. A site runs as a whole scenario of its architecture (same
clock, its own events and invariants, under ``OUT/sites/<name>/``) whose
submitter takes the jobs the federation hands it.
"""
from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass
import numpy as np

from schedlab.schedulers.federation.meta import ON_FAILURE
from schedlab.schedulers.federation.observational import SCORES
from schedlab.schedulers.model.seeding import rng_for
from schedlab.schedulers.model.workload import generate_jobs
from schedlab.schedulers.scenario.limits import Limits
from schedlab.schedulers.scenario.parse import ScenarioError, parse_scenario
from schedlab.schedulers.scenario.spec import Scenario
from schedlab.schedulers.faults import plan as scenario_faults
from schedlab.schedulers.scenario.fields import Field, parse_fields
from schedlab.schedulers.scenario.toml_table import Table, non_negative, positive, table_array

MODES = ("observational", "meta", "p2p")
# A federation file's own keys: how the sites are joined, and the sites (the schema and the key reference read these).
SECTION = "multicluster"
SITES = "sites"
SHARED = ("seed", "engine", "time_scale", "duration", "substrate", "metrics", "liveness")
FRONT_ACTORS = ("meta", "board")  # and client-<i>, peer-<i>


def client_name(i: int) -> str:
    return f"client-{i}"


def peer_name(i: int) -> str:
    return f"peer-{i}"


@dataclass(frozen=True)
class JoinSpec:
    mode: str = "observational"
    publish_interval: float = 30.0  # emulated s between a site's publications on the board
    score: str = "queue"  # what an observational client minimizes
    margin: float = 0.0  # a client stays home unless the best site beats home by more
    wait_window: float = 120.0  # s of started jobs behind the "wait" score
    on_failure: str = "wait"  # meta down: jobs wait for it, or go home
    threshold: float = 1.0  # p2p: queued jobs per slot above which a site sends arrivals away
    probe_limit: int = 3
    transfer_delay: float = 5.0  # emulated s a transferred job is in flight


@dataclass(frozen=True)
class FaultSpec:
    at: float
    target: str
    restart_after: float | None = None


@dataclass(frozen=True)
class Federation:
    name: str
    source: str
    seed: int
    engine: str
    time_scale: float
    duration: float
    join: JoinSpec
    sites: tuple[Scenario, ...]
    site_names: tuple[str, ...]
    users: tuple[float, ...]
    jobs: tuple[dict, ...]  # every job, wire form, with "home"
    capacity: tuple[float, ...]  # per site, in slots of the workload's mean task
    faults: tuple[FaultSpec, ...] = ()

    def front_actors(self) -> list[str]:
        n = len(self.sites)
        out = ["board"]
        if self.join.mode == "observational":
            out += [client_name(i) for i in range(n)]
        elif self.join.mode == "meta":
            out += ["meta"]
        else:
            out += [peer_name(i) for i in range(n)]
        return out


_J = JoinSpec()

# [multicluster]: how the sites are joined.
JOIN_FIELDS = (
    Field("mode", str, _J.mode, choices=MODES,
          doc="observational: clients pick a site from the board; meta: one meta-scheduler places every job; "
              "p2p: sites send arrivals to each other."),
    Field("publish_interval", float, _J.publish_interval, unit="emulated s", check=positive,
          doc="Between a site's publications on the board."),
    Field("score", str, _J.score, choices=SCORES, doc="What an observational client minimizes."),
    Field("margin", float, _J.margin, check=non_negative, doc="A client stays home unless the best site beats home by more."),
    Field("wait_window", float, _J.wait_window, unit="emulated s", check=positive,
          doc="The started jobs behind the wait score: those of this last stretch."),
    Field("on_failure", str, _J.on_failure, choices=ON_FAILURE, doc="The meta-scheduler down: jobs wait for it, or go home."),
    Field("threshold", float, _J.threshold, check=non_negative,
          doc="p2p: queued jobs per slot above which a site sends arrivals away."),
    Field("probe_limit", int, _J.probe_limit, check=lambda v: None if 0 <= v <= 64 else "must be 0..64",
          schema={"minimum": 0, "maximum": 64},
          doc="p2p: random peers a site probes (a fresh load each) before sending a job away."),
    Field("transfer_delay", float, _J.transfer_delay, unit="emulated s", check=non_negative,
          doc="How long a transferred job is in flight."),
)

# [[faults]] of a federation: kills of its own actors, in the order their
# keys are read (``values``: ``actors``, the front actors; ``run``, the run's duration).
FAULT_FIELDS = (
    Field("target", str, against=lambda v, got: None if v in got["actors"]
          else f"unknown federation actor {v!r} (this mode has: {sorted(got['actors'])})",
          doc="A front actor: board, meta, client-<i> or peer-<i>, as the mode has them."),
    Field("action", str, "kill", choices=("kill",), doc="kill (the one action on the federation's own actors)."),
    *(f for f in scenario_faults.FAULT_FIELDS if f.name in ("at", "restart_after")),  # as a scenario's faults
)


def job_work(job: dict) -> float:
    """Slot-seconds a job asks for: its tasks' durations (a service task
    counts one duration of a day, the horizon of any run here)."""
    return float(sum(d if d >= 0 else 86400.0 for d in job["durations"]))


def _site_data(top: dict, site: dict) -> dict:
    data = {k: copy.deepcopy(top[k]) for k in SHARED if k in top}
    data.update({k: copy.deepcopy(v) for k, v in site.items() if k not in ("name", "users")})
    data["name"] = site.get("name")
    data["workload"] = copy.deepcopy(top.get("workload", {}))
    data["workload"]["prefill_utilization"] = site.get("prefill_utilization", 0.0)
    data.pop("prefill_utilization", None)
    return data


def parse_federation(data: dict, source: str, limits: Limits | None = None) -> Federation:
    """``data`` (a federation file) as a Federation, or ScenarioError in one
    line naming the file and the key (``sites[2].architecture: ...``).
    ``limits``: how big each site may be (``parse_scenario``'s)."""
    top = Table(data, "", source)
    name = top.get("name", str, default=source.rsplit("/", 1)[-1].removesuffix(".toml"))
    top.get("description", str, default="")
    seed = top.get("seed", int, default=0, check=lambda v: None if v >= 0 else "must be >= 0")
    time_scale = top.get("time_scale", float, default=100.0, check=positive)
    duration = top.get("duration", float, check=positive)
    for k in ("substrate", "metrics", "liveness"):
        if k in data:
            top.get(k, dict)
    top.get("workload", dict)
    mt = top.sub(SECTION)
    join = JoinSpec(**parse_fields(mt, JOIN_FIELDS))
    mt.done()
    sites_t = table_array(top, SITES)
    sites, names, users = [], [], []
    engine = None
    for i, st in enumerate(sites_t):
        site_name = st.get("name", str, default=f"site{i}")
        if site_name in names:
            st.fail(st.key("name"), f"site names must be unique ({site_name!r} twice)")
        if not site_name.replace("_", "").replace("-", "").isalnum():
            st.fail(st.key("name"), "must be letters, digits, - and _ (it names a directory)")
        names.append(site_name)
        users.append(st.get("users", float, default=1.0, check=positive))
        if "workload" in st.data:
            st.fail(st.key("workload"), "sites share the federation's [workload] (give users = weight for local users)")
        try:
            sc = parse_scenario(_site_data(data, st.data), f"{source}\0{st.path}", limits)
        except ScenarioError as e:
            raise ScenarioError(_site_error(str(e), source, st.path)) from None
        sites.append(dataclasses.replace(sc, source=f"{source}: {st.path}"))
        engine = sc.engine
    if len(sites) < 2:
        top.fail(SITES, "a federation needs at least two sites")
    top.get("engine", str, default="ray")
    top.get("name", str, default="")
    fed_faults = []
    names_known = set(Federation(name, source, seed, "", time_scale, duration, join, tuple(sites), tuple(names),
                                 tuple(users), (), ()).front_actors())
    for ft in (table_array(top, "faults") if "faults" in data else []):
        v = parse_fields(ft, FAULT_FIELDS, values={"actors": names_known, "run": duration})
        fed_faults.append(FaultSpec(at=v["at"], target=v["target"], restart_after=v["restart_after"]))
        ft.done()
    top.done()
    jobs = _jobs(sites[0], users, seed)
    mean_cpu = float(np.mean([j["request"][0] for j in jobs])) if jobs else 1.0
    capacity = tuple(max(1.0, float(sum(mc.capacity[0] * mc.count for mc in sc.cell.machine_classes)) / mean_cpu)
                     for sc in sites)
    return Federation(name, source, seed, engine or "ray", time_scale, duration, join, tuple(sites), tuple(names),
                      tuple(users), tuple(jobs), capacity, tuple(fed_faults))


def _site_error(msg: str, source: str, path: str) -> str:
    """A site's scenario error, re-keyed under its place in the file."""
    head = f"{source}\0{path}: "
    if msg.startswith(head):
        rest = msg[len(head):]
        key, sep, problem = rest.partition(": ")
        return f"{source}: {path}.{key}: {problem}" if sep and key != "<top level>" else f"{source}: {path}: {rest}"
    return msg.replace("\0", ": ")


def _jobs(site: Scenario, users: list[float], seed: int) -> list[dict]:
    """The users' jobs (the workload of any site: they share it), each with
    a home site drawn by the users' weights."""
    jobs = [j.to_wire() for j in generate_jobs(site.workload.classes, site.duration, seed)]
    p = np.asarray(users, dtype=np.float64)
    homes = rng_for(seed, "multicluster/homes").choice(len(users), size=len(jobs), p=p / p.sum())
    for j, h in zip(jobs, homes.tolist()):
        j["home"] = int(h)
    return jobs


def total_work(jobs: tuple[dict, ...]) -> float:
    return float(sum(job_work(j) for j in jobs if math.isfinite(job_work(j))))
