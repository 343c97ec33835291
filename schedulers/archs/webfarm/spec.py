"""A clustered web server: load balancers in front of N server replicas.
The ``[webfarm]`` section of a scenario and the architecture's registration.

Every machine of the cell is one server replica (``workers`` concurrent
workers and one FIFO accept queue; a ``speed`` and a balancing ``weight``
per machine class, ``[[webfarm.servers]]``). Each job of the workload is a
page: its tasks are requests on one keep-alive connection, served by one
server; a task's duration is its service demand on a speed-1 server.
The ``clients`` send the jobs to the ``lb-<i>`` balancer holding the
address (one active; with ``lbs`` > 1 the others stand by and take over
through the coordinator group's lease), which routes each by ``policy``
and the session mode. ``httpd-<h>`` serves the
machines of machine host h (its server cores, load reports, health
answers) and hands the requests it starts to its host.
``actors.archs.webfarm`` runs it.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from schedlab.schedulers.arch import ArchSpec, Decider, Role, SectionContext
from schedlab.schedulers.archs.webfarm.balancer import SESSION_MODES
from schedlab.schedulers.archs.webfarm.policies import INFOS, POLICIES
from schedlab.schedulers.model.cluster import host_count
from schedlab.schedulers.model.workload import Dist
from schedlab.schedulers.scenario.fields import Field, parse_fields, read_field
from schedlab.schedulers.scenario.spec import Scenario
from schedlab.schedulers.scenario.toml_table import Table, non_negative, positive, read_dist, table_array
from schedlab.schedulers.archs.webfarm.events import EVENTS

ROLE_LB, ROLE_HTTPD = "lb", "httpd"
CLIENTS = "clients"  # the users' actor: pages go through it to the balancer holding the address


def lb_name(i: int) -> str:
    return f"lb-{i}"


def httpd_name(h: int) -> str:
    return f"httpd-{h}"


@dataclass(frozen=True)
class ServerClass:
    """The servers on one machine class."""

    machine_class: str
    speed: float = 1.0
    weight: float = 1.0
    workers: int = 0  # 0: the section's ``workers``


@dataclass(frozen=True)
class WebfarmSpec:
    policy: str = "rr"  # rr, wrr, least, pod (power of d choices)
    info: str = "reported"  # what least/pod know of loads: fresh, reported, reported+sent
    d: int = 2
    report_interval: float = 1.0  # emulated s between a server's load reports
    sessions: str = "none"  # none, sticky, cookie
    session_length: Dist = Dist("constant", value=1.0)  # requests (pages) per session
    concurrent_sessions: int = 100
    transfer_cost: float = 0.005  # emulated s a request carrying cookie state holds its worker extra
    workers: int = 0  # per server; 0: as many of the workload's largest request as fit
    max_queue: int | None = None  # waiting requests per server; more are refused
    servers: tuple[ServerClass, ...] = ()
    lbs: int = 1  # > 1: standbys, the active one chosen through the coordinator group
    lease_ms: float = 1000.0  # wall ms an active balancer's lease lasts without renewal
    health_interval: float = 1.0  # emulated s between health checks of a server
    fall: int = 3
    rise: int = 2
    client_timeout: float = 10.0  # emulated s a client waits for an answer (a refusal, or a server taking its page in)

    def server_class(self, machine_class: str) -> ServerClass:
        return next((s for s in self.servers if s.machine_class == machine_class), ServerClass(machine_class))


def _positive_int(v: int) -> str | None:
    return None if v >= 1 else "must be >= 1"


def _workers(what: str) -> Callable[[int], str | None]:
    return lambda v: None if 0 <= v <= 4096 else f"must be in 0..4096 ({what})"


_D = WebfarmSpec()
_S = ServerClass("")

# [[webfarm.servers]]: one machine class's servers (``class`` is checked
# against the cell by the parser).
SERVER_FIELDS = (
    Field("class", str, doc="The machine class whose machines these servers are."),
    Field("speed", float, _S.speed, check=positive, doc="Service rate: a task's duration is its demand on a speed-1 server."),
    Field("weight", float, _S.weight, check=positive, doc="Its share under weighted balancing (wrr)."),
    Field("workers", int, _S.workers, check=_workers("0: the section's"), schema={"minimum": 0, "maximum": 4096},
          doc="Concurrent workers per server; 0: the section's workers."),
)

# Every key of [webfarm], in the order parse_webfarm reads them (the first
# bad one is the one reported).
FIELDS = (
    Field("policy", str, _D.policy, choices=POLICIES, doc="How a balancer picks a server: rr, wrr, least, pod (power of d choices)."),
    Field("d", int, _D.d, check=_positive_int, schema={"minimum": 1}, doc="Servers pod samples; at most the cell's servers."),
    Field("servers", list, (), nested=True, of=SERVER_FIELDS,
          doc="[[webfarm.servers]]: speed, weight and workers of one machine class's servers (default: 1, 1, the section's)."),
    Field("lbs", int, _D.lbs, check=lambda v: None if 1 <= v <= 5 else "must be 1 to 5", schema={"minimum": 1, "maximum": 5},
          doc="Load balancers; > 1: standbys take over through the coordinator group (replicas >= 3)."),
    Field("info", str, _D.info, choices=INFOS, doc="What least and pod know of loads: fresh, reported, reported+sent."),
    Field("report_interval", float, _D.report_interval, unit="emulated s", check=positive,
          doc="Between a server's load reports."),
    Field("sessions", str, _D.sessions, choices=SESSION_MODES, doc="Session mode: none, sticky (to a server) or cookie (state travels)."),
    Field("session_length", (float, dict), _D.session_length, nested=True, unit="requests",
          read=lambda t, got: read_dist(t, "session_length", default=_D.session_length),
          doc="Pages per session: a number (constant) or a distribution table (default 1)."),
    Field("concurrent_sessions", int, _D.concurrent_sessions,
          check=lambda v: None if 1 <= v <= 1_000_000 else "must be in 1..1000000", schema={"minimum": 1, "maximum": 1_000_000},
          doc="Sessions open at once."),
    Field("transfer_cost", float, _D.transfer_cost, unit="emulated s", check=non_negative,
          doc="Extra time a request carrying cookie state holds its worker."),
    Field("workers", int, _D.workers, check=_workers("0: auto"), schema={"minimum": 0, "maximum": 4096},
          doc="Concurrent workers per server; 0: as many of the workload's largest request as fit."),
    Field("max_queue", int, _D.max_queue, check=lambda v: None if v >= 0 else "must be >= 0", schema={"minimum": 0},
          doc="Waiting requests per server; more are refused (default: no limit)."),
    Field("lease_ms", float, _D.lease_ms, unit="wall ms", check=lambda v: None if v >= 50 else "must be >= 50",
          schema={"minimum": 50}, doc="How long an active balancer's lease lasts without renewal."),
    Field("health_interval", float, _D.health_interval, unit="emulated s", check=positive, doc="Between health checks of a server."),
    Field("fall", int, _D.fall, check=_positive_int, schema={"minimum": 1}, doc="Failed checks before a server is taken out."),
    Field("rise", int, _D.rise, check=_positive_int, schema={"minimum": 1}, doc="Passed checks before it is taken back."),
    Field("client_timeout", float, _D.client_timeout, unit="emulated s", check=positive,
          doc="How long a client waits to reach a balancer before giving up."),
)
FIELD = {f.name: f for f in FIELDS}


def parse_webfarm(t: Table, ctx: SectionContext) -> WebfarmSpec:
    n = sum(mc.count for mc in ctx.machine_classes)
    policy, d = read_field(t, FIELD["policy"]), read_field(t, FIELD["d"])
    if d > n:
        t.fail(t.key("d"), f"power of d choices needs d <= the {n} servers of the cell, got {d}")
    servers = _servers(t, {mc.name for mc in ctx.machine_classes})
    lbs = read_field(t, FIELD["lbs"])
    if lbs > 1 and ctx.coordinator.replicas < 3:
        t.fail(t.key("lbs"), "standby balancers take over through the coordinator: set [coordinator] replicas >= 3")
    spec = WebfarmSpec(policy=policy, d=d, servers=servers, lbs=lbs,
                       **parse_fields(t, FIELDS, skip=("policy", "d", "servers", "lbs")))
    t.done()
    return spec


def _servers(t: Table, known: set[str]) -> tuple[ServerClass, ...]:
    """[[webfarm.servers]]: each machine class at most once."""
    servers: list[ServerClass] = []
    for s in (table_array(t, "servers") if "servers" in t.data else []):
        mc = s.get("class", str, check=lambda v: None if v in known else f"no machine class {v!r} (known: {sorted(known)})")
        if any(x.machine_class == mc for x in servers):
            s.fail(s.key("class"), f"machine class {mc!r} is given twice")
        servers.append(ServerClass(mc, **parse_fields(s, SERVER_FIELDS, skip=("class",))))
        s.done()
    return tuple(servers)


def _hosts(sc: Scenario) -> int:
    return host_count(sc.cell.machines, sc.cell.machines_per_actor)


def roster(sc: Scenario) -> dict[str, list[str]]:
    s: WebfarmSpec = sc.section
    return {ROLE_LB: [lb_name(i) for i in range(s.lbs)], ROLE_HTTPD: [httpd_name(h) for h in range(_hosts(sc))]}


def actors(sc: Scenario) -> list[tuple[str, int]]:
    return [("webfarm.lbs", sc.section.lbs), ("webfarm.httpds", _hosts(sc))]


def deciders(sc: Scenario) -> list[Decider]:
    return [Decider(lb_name(i), 0.0, 0.0) for i in range(sc.section.lbs)]


def example(classes: tuple[str, ...]) -> dict[str, Any]:
    return {"policy": "pod", "d": 2, "sessions": "sticky", "session_length": {"dist": "exponential", "mean": 4.0},
            "concurrent_sessions": 20, "lbs": 2, "health_interval": 2.0}


def bench_classes(per_k: float) -> list[dict[str, Any]]:
    """Pages, as ``scenarios/web_failover.toml`` offers them (two requests a
    page, 4 s of demand each on a speed-1 server), one every 2 s per 1,000
    machines: as many jobs as the bench offers the other architectures."""
    return [{"name": "page", "kind": "batch", "interarrival": 2.0 / per_k, "tasks": 2.0,
             "duration": {"dist": "exponential", "mean": 4.0}, "cpu": 1.0, "mem": 1.0}]


SPEC = ArchSpec(
    name="webfarm",
    no_gang="a request is one task",
    title="Web farm (load balancers in front of server replicas; sticky or cookie sessions)",
    events=EVENTS,
    parse=parse_webfarm,
    roster=roster,
    actors=actors,
    deciders=deciders,
    roles=(
        Role(ROLE_LB, kill_leader="kill_lb", leader_from=2,
             about="a load balancer (one active; standbys take over through the coordinator)"),
        Role(ROLE_HTTPD, no_restart="an httpd is its machines' server processes: kill the machine host instead",
             about="the web servers of one machine host's machines (workers, accept queues)"),
    ),
    peers={"machine": (ROLE_HTTPD,), ROLE_HTTPD: ("machine", ROLE_LB), ROLE_LB: (ROLE_HTTPD, "coordinator"),
           "coordinator": (ROLE_LB,)},
    example=example,
    bench_classes=bench_classes,
    live="schedlab.actors.archs.webfarm.architecture:ARCHITECTURE",
    section_required=False,
    fields=FIELDS,
    instruments=(CLIENTS,),
    showcase="web_failover",
    no_further_resources=("a web farm's servers run requests in worker processes sized by cpu and memory; it has no notion of a "
                          "further resource"),
)
