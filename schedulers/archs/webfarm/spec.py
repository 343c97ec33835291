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

from dataclasses import dataclass
from typing import Any

from schedlab.schedulers.arch import ArchSpec, Decider, Role, SectionContext
from schedlab.schedulers.archs.webfarm.balancer import SESSION_MODES
from schedlab.schedulers.archs.webfarm.policies import INFOS, POLICIES
from schedlab.schedulers.model.cluster import host_count
from schedlab.schedulers.model.workload import Dist
from schedlab.schedulers.scenario.spec import Scenario
from schedlab.schedulers.scenario.toml_table import Table, non_negative, one_of, positive, read_dist, table_array

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


def parse_webfarm(t: Table, ctx: SectionContext) -> WebfarmSpec:
    n = sum(mc.count for mc in ctx.machine_classes)
    known = {mc.name for mc in ctx.machine_classes}
    policy = t.get("policy", str, default="rr", check=one_of(POLICIES))
    d = t.get("d", int, default=2, check=_positive_int)
    if d > n:
        t.fail(t.key("d"), f"power of d choices needs d <= the {n} servers of the cell, got {d}")
    servers = []
    for s in (table_array(t, "servers") if "servers" in t.data else []):
        mc = s.get("class", str, check=lambda v: None if v in known else f"no machine class {v!r} (known: {sorted(known)})")
        if any(x.machine_class == mc for x in servers):
            s.fail(s.key("class"), f"machine class {mc!r} is given twice")
        servers.append(ServerClass(
            mc, speed=s.get("speed", float, default=1.0, check=positive),
            weight=s.get("weight", float, default=1.0, check=positive),
            workers=s.get("workers", int, default=0, check=lambda v: None if 0 <= v <= 4096 else "must be in 0..4096 (0: the section's)"),
        ))
        s.done()
    lbs = t.get("lbs", int, default=1, check=lambda v: None if 1 <= v <= 5 else "must be 1 to 5")
    if lbs > 1 and ctx.coordinator.replicas < 3:
        t.fail(t.key("lbs"), "standby balancers take over through the coordinator: set [coordinator] replicas >= 3")
    spec = WebfarmSpec(
        policy=policy,
        info=t.get("info", str, default="reported", check=one_of(INFOS)),
        d=d,
        report_interval=t.get("report_interval", float, default=1.0, check=positive),
        sessions=t.get("sessions", str, default="none", check=one_of(SESSION_MODES)),
        session_length=read_dist(t, "session_length", default=Dist("constant", value=1.0)),
        concurrent_sessions=t.get("concurrent_sessions", int, default=100,
                                  check=lambda v: None if 1 <= v <= 1_000_000 else "must be in 1..1000000"),
        transfer_cost=t.get("transfer_cost", float, default=0.005, check=non_negative),
        workers=t.get("workers", int, default=0, check=lambda v: None if 0 <= v <= 4096 else "must be in 0..4096 (0: auto)"),
        max_queue=t.get("max_queue", int, default=None, check=lambda v: None if v >= 0 else "must be >= 0"),
        servers=tuple(servers),
        lbs=lbs,
        lease_ms=t.get("lease_ms", float, default=1000.0, check=lambda v: None if v >= 50 else "must be >= 50"),
        health_interval=t.get("health_interval", float, default=1.0, check=positive),
        fall=t.get("fall", int, default=3, check=_positive_int),
        rise=t.get("rise", int, default=2, check=_positive_int),
        client_timeout=t.get("client_timeout", float, default=10.0, check=positive),
    )
    t.done()
    return spec


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


SPEC = ArchSpec(
    name="webfarm",
    title="Web farm (load balancers in front of server replicas; sticky or cookie sessions)",
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
    live="schedlab.actors.archs.webfarm.architecture:ARCHITECTURE",
    section_required=False,
    instruments=(CLIENTS,),
)
