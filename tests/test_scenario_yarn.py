"""The [yarn] scenario section: defaults (Hadoop's), every key reaching its
config object, and bad input failing as one line naming file, key and
problem.

``parse_yarn_scenario`` below does
what ``parse_scenario`` does for a registered section, in the same order: the rest of the file (cell, workload, coordinator, and the generic
checks such as a task that fits no machine) parsed as the Omega scenario
the test data starts from, then ``parse_yarn`` on ``top.sub("yarn")`` with
the same ``SectionContext``, then the size checks with the architecture's
own ``check_sizes``.
"""
from __future__ import annotations

import copy
import math
import tomllib
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from schedlab.schedulers.arch import Decider, SectionContext
from schedlab.schedulers.archs.yarn.app_master import AMConfig
from schedlab.schedulers.archs.yarn.capacity import (
    CapacityConfig,
    CapacityPreemption,
    CapacityScheduler,
)
from schedlab.schedulers.archs.yarn.cores import (
    am_config,
    build_scheduler,
    queue_tree,
    rm_config,
    scheduler_config,
)
from schedlab.schedulers.archs.yarn.fair import (
    FairConfig,
    FairPreemption,
    FairScheduler,
)
from schedlab.schedulers.archs.yarn.fifo import FifoConfig, FifoScheduler
from schedlab.schedulers.archs.yarn.locality import LocalityDelay
from schedlab.schedulers.archs.yarn.rm_books import RMConfig
from schedlab.schedulers.archs.yarn.spec import (
    YarnQueueSpec,
    YarnSpec,
    check_sizes,
    deciders,
    parse_yarn,
    roster,
)
from schedlab.schedulers.model.cluster import build_cell
from schedlab.schedulers.scenario.limits import expected_jobs, tasks_per_job
from schedlab.schedulers.scenario.parse import ScenarioError, parse_scenario
from schedlab.schedulers.scenario.spec import Scenario
from schedlab.schedulers.scenario.toml_table import Table

from tests.conftest import small_scenario_data

# small_scenario_data's cell: 8 x (cpu 4, mem 16) on 2 racks + 4 x (cpu 8, mem 32): 12 machines, (64, 256) in all.
# Its classes: batch (cpu 0.5, mem 1) and service (cpu 1, mem 2).
N_MACHINES = 12


def parse_yarn_scenario(data: dict, source: str = "bad.toml") -> Scenario:
    """``data`` (with an optional ``yarn`` table) as parse_scenario would
    read it once YARN is registered (see the module docstring)."""
    rest = copy.deepcopy(data)
    rest.pop("yarn", None)
    base = parse_scenario(rest, source)
    top = Table(data, "", source)
    ctx = SectionContext(tuple(jc.name for jc in base.workload.classes), base.cell.machine_classes, base.coordinator, top)
    sc = replace(base, architecture="yarn", section=parse_yarn(top.sub("yarn", default={}), ctx))
    tasks = {jc.name: expected_jobs(jc, sc.duration) * tasks_per_job(jc) for jc in sc.workload.classes}
    check_sizes(top, sc, tasks)
    return sc


def yarn_data(**yarn: Any) -> dict:
    data = small_scenario_data(engine="sim")
    if yarn:
        data["yarn"] = yarn
    return data


def two_queues(**yarn: Any) -> dict:
    """root.a takes batch (60), root.b takes service (40)."""
    return yarn_data(queues=[{"name": "a", "classes": ["batch"], "capacity": 60},
                             {"name": "root.b", "classes": ["service"], "capacity": 40}], **yarn)


def _err(data: dict) -> str:
    with pytest.raises(ScenarioError) as e:
        parse_yarn_scenario(data)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("bad.toml: ")
    return msg


def _cell() -> tuple[np.ndarray, np.ndarray]:
    sc = parse_scenario(small_scenario_data(engine="sim"), "c.toml")
    cell = build_cell(sc.cell.machine_classes, sc.cell.resources)
    return cell.capacity, cell.rack


# ------------------------------------------------------------ valid sections


def test_no_yarn_section_is_hadoops_defaults_with_one_default_queue() -> None:
    y: YarnSpec = parse_yarn_scenario(yarn_data(), "ok.toml").section
    assert y.queues == (YarnQueueSpec("root.default", classes=("batch", "service"), capacity=100.0),)
    assert y.implied == ()
    assert (y.scheduler, y.am, y.am_heartbeat, y.max_am_attempts) == ("capacity", (1.0, 1.5), 1.0, 2)
    assert (y.global_scheduling, y.assign_multiple, y.max_assign) == (False, True, 0)
    assert (y.preemption, y.monitor_interval, y.rms, y.rm_lease_ms) == (False, 3.0, 1, 1000.0)
    assert scheduler_config(y, N_MACHINES) == CapacityConfig(
        locality=LocalityDelay(node=40, rack=0), resource_calculator="memory", assign_multiple=True, max_assign=0,
        max_off_switch_per_heartbeat=1, global_scheduling=False,
        preemption=CapacityPreemption(enabled=False, max_wait_before_kill=15.0, total_preemption_per_round=0.1,
                                      max_ignored_over_capacity=0.1, natural_termination_factor=0.2))
    assert rm_config(y) == RMConfig(max_am_attempts=2, lost_am_counts=True, global_scheduling=False)
    assert am_config(y.queue_of("service")) == AMConfig(locality=False, relax_locality=True)
    assert y.route("batch", 41) == ("root.default", "u0")
    core = build_scheduler(y, *_cell())
    assert isinstance(core, CapacityScheduler) and core.state.tree.leaves() == ["root.default"]
    assert core.state.tree["root.default"].abs_capacity == 1.0 and core.state.n_nodes == N_MACHINES
    assert deciders(parse_yarn_scenario(yarn_data(am_heartbeat=2.0), "ok.toml")) == [Decider("resourcemanager", 2.0, 0.0)]


def test_every_capacity_key_reaches_its_config() -> None:
    data = yarn_data(
        scheduler="capacity", am={"cpu": 2, "mem": 3}, am_heartbeat=0.5, max_am_attempts=4, global_scheduling=True,
        assign_multiple=False, max_assign=3, node_locality_delay=7, rack_locality_additional_delay=2,
        resource_calculator="dominant", max_off_switch_per_heartbeat=0, preemption=True, monitor_interval=1.5,
        max_wait_before_kill=5.0, total_preemption_per_round=0.3, max_ignored_over_capacity=0.05,
        natural_termination_factor=0.5, rms=2, rm_lease_ms=250, am_pools=3, am_expiry=30.0,
        queues=[
            {"name": "prod", "capacity": 70},
            {"name": "root.prod.etl", "capacity": 60, "classes": ["batch"], "users": 3, "max_capacity": 80,
             "user_limit_factor": 2.5, "minimum_user_limit_percent": 25, "data_replicas": 3, "relax_locality": False},
            {"name": "root.prod.adhoc", "capacity": 40},
            {"name": "dev", "capacity": 30, "max_capacity": 50, "classes": ["service"]},
        ])
    data["coordinator"] = {"replicas": 3}
    y: YarnSpec = parse_yarn_scenario(data, "ok.toml").section
    assert (y.am, y.am_heartbeat, y.max_am_attempts, y.rms, y.rm_lease_ms) == ((2.0, 3.0), 0.5, 4, 2, 250.0)
    assert (y.am_pools, y.am_expiry) == (3, 30.0)
    assert y.monitor_interval == 1.5
    assert scheduler_config(y, N_MACHINES) == CapacityConfig(
        locality=LocalityDelay(node=7, rack=2), resource_calculator="dominant", assign_multiple=False, max_assign=3,
        max_off_switch_per_heartbeat=0, global_scheduling=True,
        preemption=CapacityPreemption(enabled=True, max_wait_before_kill=5.0, total_preemption_per_round=0.3,
                                      max_ignored_over_capacity=0.05, natural_termination_factor=0.5))
    assert rm_config(y) == RMConfig(max_am_attempts=4, global_scheduling=True)
    etl = y.queue_of("batch")
    assert etl == YarnQueueSpec("root.prod.etl", ("batch",), users=3, capacity=60.0, max_capacity=80.0,
                                user_limit_factor=2.5, minimum_user_limit_percent=25.0, data_replicas=3,
                                relax_locality=False)
    assert am_config(etl) == AMConfig(locality=True, relax_locality=False)
    assert [y.route("batch", j) for j in (0, 1, 5)] == [("root.prod.etl", "u0"), ("root.prod.etl", "u1"),
                                                        ("root.prod.etl", "u2")]
    assert y.route("service", 5) == ("root.dev", "u0")
    tree = queue_tree(y)
    assert tree.leaves() == ["root.dev", "root.prod.adhoc", "root.prod.etl"]
    assert math.isclose(tree["root.prod.etl"].abs_capacity, 0.42) and math.isclose(tree["root.prod.etl"].abs_max_capacity, 0.8)
    assert math.isclose(tree["root.dev"].abs_max_capacity, 0.5)
    assert tree["root.prod.etl"].user_limit_factor == 2.5 and tree["root.prod.etl"].minimum_user_limit_percent == 25.0
    core = build_scheduler(y, *_cell())
    assert isinstance(core, CapacityScheduler) and core.config == scheduler_config(y, N_MACHINES)


def test_every_fair_key_reaches_its_config() -> None:
    y: YarnSpec = parse_yarn_scenario(yarn_data(
        scheduler="fair", fair_policy="drf", locality_threshold_node=0.5, locality_threshold_rack=0.25, max_assign=4,
        preemption=True, min_share_preemption_timeout=10.0, fair_share_preemption_timeout=30.0,
        fair_share_preemption_threshold=0.8,
        queues=[{"name": "a", "classes": ["batch"], "weight": 3, "min_share": {"cpu": 8, "mem": 32},
                 "max_share": {"cpu": 40}},
                {"name": "b", "classes": ["service"]}],  # no capacities: the Fair scheduler ignores them
    ), "ok.toml").section
    assert y.assign_multiple is False and y.monitor_interval == 0.5  # Hadoop's Fair defaults
    assert scheduler_config(y, N_MACHINES) == FairConfig(
        policy="drf", locality=LocalityDelay(node=6, rack=3), assign_multiple=False, max_assign=4,
        global_scheduling=False,
        preemption=FairPreemption(enabled=True, min_share_preemption_timeout=10.0, fair_share_preemption_timeout=30.0,
                                  fair_share_preemption_threshold=0.8))
    a = y.queue_of("batch")
    assert (a.weight, a.min_share, a.max_share) == (3.0, (8.0, 32.0), (40.0, math.inf))
    assert y.queue_of("service").max_share is None
    core = build_scheduler(y, *_cell())
    assert isinstance(core, FairScheduler) and core.config.locality == LocalityDelay(6, 3)
    assert core.state.tree["root.a"].weight == 3.0 and list(core.state.tree["root.a"].max_share) == [40.0, math.inf]


def test_fair_defaults_are_hadoops() -> None:
    y: YarnSpec = parse_yarn_scenario(yarn_data(scheduler="fair"), "ok.toml").section
    assert scheduler_config(y, N_MACHINES) == FairConfig(policy="fair", locality=LocalityDelay(0, 0),
                                                         assign_multiple=False, max_assign=0,
                                                         preemption=FairPreemption(enabled=False))
    assert y.min_share_preemption_timeout == math.inf and y.fair_share_preemption_threshold == 0.5


@pytest.mark.parametrize("yarn,expected", [
    ({}, FifoConfig(max_assign=0)),
    ({"assign_multiple": False}, FifoConfig(max_assign=1)),
    ({"max_assign": 5}, FifoConfig(max_assign=5)),
])
def test_fifo_config(yarn: dict, expected: FifoConfig) -> None:
    y: YarnSpec = parse_yarn_scenario(yarn_data(scheduler="fifo", **yarn), "ok.toml").section
    assert scheduler_config(y, N_MACHINES) == expected
    assert isinstance(build_scheduler(y, *_cell()), FifoScheduler)


def test_a_section_written_as_toml() -> None:
    text = """
    [yarn]
    scheduler = "capacity"
    am = { cpu = 1, mem = 2 }
    [[yarn.queues]]
    name = "root.prod.etl"
    classes = ["batch", "service"]
    data_replicas = 2
    """
    data = yarn_data()
    data.update(tomllib.loads(text))
    y: YarnSpec = parse_yarn_scenario(data, "ok.toml").section
    # root.prod is implied: its only child's parent, and root's only child.
    assert y.implied == ("root.prod",) and y.am == (1.0, 2.0)
    assert y.queues == (YarnQueueSpec("root.prod.etl", ("batch", "service"), capacity=100.0, data_replicas=2),)
    tree = queue_tree(y)
    assert tree["root.prod"].children == ("root.prod.etl",) and tree["root.prod.etl"].abs_capacity == 1.0


def test_an_idle_leaf_and_a_declared_parent_without_classes_are_fine() -> None:
    y: YarnSpec = parse_yarn_scenario(yarn_data(queues=[
        {"name": "p", "capacity": 50, "classes": []},
        {"name": "root.p.x", "classes": ["batch", "service"]},  # only child: capacity 100
        {"name": "idle", "capacity": 50},
    ]), "ok.toml").section
    assert [q.capacity for q in y.queues] == [50.0, 100.0, 50.0]
    assert queue_tree(y).leaves() == ["root.idle", "root.p.x"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([0.0, 10.0, 25.0, 30.0, 45.0, 50.0, 60.0, 100.0]), min_size=2, max_size=4))
def test_sibling_capacities_accepted_iff_they_sum_to_100(caps: list[float]) -> None:
    queues = [{"name": f"q{i}", "capacity": c, "classes": ["batch", "service"] if i == 0 else []}
              for i, c in enumerate(caps)]
    if math.isclose(sum(caps), 100.0):
        y = parse_yarn_scenario(yarn_data(queues=queues), "ok.toml").section
        assert [q.capacity for q in y.queues] == caps
    else:
        assert f"yarn.queues[0].capacity: capacities of the children of 'root' sum to {sum(caps):g}, not 100" in \
            _err(yarn_data(queues=queues))
    # The Fair scheduler ignores capacities.
    assert parse_yarn_scenario(yarn_data(scheduler="fair", queues=queues), "ok.toml").section.scheduler == "fair"


# ------------------------------------------------------------ bad input


def _y(**kw: Any) -> Callable[[dict], None]:
    return lambda d: d.setdefault("yarn", {}).update(kw)


def _q(i: int, **kw: Any) -> Callable[[dict], None]:
    return lambda d: d["yarn"]["queues"][i].update(kw)


def _queues(*qs: dict) -> Callable[[dict], None]:
    return lambda d: d.setdefault("yarn", {}).__setitem__("queues", list(qs))


def _both(*fs: Callable[[dict], None]) -> Callable[[dict], None]:
    def run(d: dict) -> None:
        for f in fs:
            f(d)
    return run


ALL = ["batch", "service"]

# (id, mutation of two_queues(), full key, problem)
BAD: list[tuple[str, Callable[[dict], None], str, str]] = [
    # unknown keys, at every level
    ("yarn key", _y(colour="red"), "yarn.colour", "unknown key"),
    ("queue key", _q(0, colour="red"), "yarn.queues[0].colour", "unknown key"),
    ("am key", _y(am={"disk": 1.0}), "yarn.am.disk", "unknown key"),
    ("min_share key", _q(0, min_share={"gpu": 1.0}), "yarn.queues[0].min_share.gpu", "unknown key"),
    ("max_share key", _q(1, max_share={"gpu": 1.0}), "yarn.queues[1].max_share.gpu", "unknown key"),
    ("scheduler", _y(scheduler="drf"), "yarn.scheduler", "must be one of capacity, fair, fifo (got 'drf')"),
    # queues that do not exist, and names
    ("undeclared parent with a sibling", _queues({"name": "root.a.x", "classes": ALL, "capacity": 100},
                                                 {"name": "b", "capacity": 0}),
     "yarn.queues[0].name", "parent queue 'root.a' is not declared; declare it in [[yarn.queues]]"),
    ("undeclared parent with two children", _queues({"name": "root.a.x", "classes": ["batch"], "capacity": 50},
                                                    {"name": "root.a.y", "classes": ["service"], "capacity": 50}),
     "yarn.queues[0].name", "parent queue 'root.a' is not declared"),
    ("implied parent's only child below 100", _queues({"name": "root.a.x", "classes": ALL, "capacity": 60}),
     "yarn.queues[0].capacity", "capacities of the children of 'root.a' sum to 60, not 100 (root.a.x 60)"),
    ("dotted name outside root", _q(0, name="prod.etl"), "yarn.queues[0].name",
     "'prod.etl': a dotted path starts with 'root.' (a plain name means 'root.<name>')"),
    ("root itself", _q(0, name="root"), "yarn.queues[0].name", "'root' is implicit"),
    ("bad characters", _q(1, name="root.my queue"), "yarn.queues[1].name", "a queue name is parts of letters"),
    ("empty part", _q(1, name="root..b"), "yarn.queues[1].name", "a queue name is parts"),
    ("duplicate", _q(1, name="root.a"), "yarn.queues[1].name", "duplicate queue 'root.a' (also yarn.queues[0])"),
    ("no name", lambda d: d["yarn"]["queues"][0].pop("name"), "yarn.queues[0].name", "is required"),
    ("empty queue list", _queues(), "yarn.queues", "must not be empty"),
    ("queue not a table", _queues("a"), "yarn.queues[0]", "must be a table, got str"),
    # capacities
    ("siblings sum to 90", _q(1, capacity=30), "yarn.queues[0].capacity",
     "capacities of the children of 'root' sum to 90, not 100 (root.a 60, root.b 30)"),
    ("nested siblings", _queues({"name": "p", "capacity": 100}, {"name": "root.p.x", "capacity": 70, "classes": ["batch"]},
                                {"name": "root.p.y", "capacity": 20, "classes": ["service"]}),
     "yarn.queues[1].capacity", "capacities of the children of 'root.p' sum to 90, not 100"),
    ("capacity missing", lambda d: d["yarn"]["queues"][1].pop("capacity"), "yarn.queues[1].capacity",
     'is required with scheduler = "capacity"'),
    ("capacity above 100", _q(0, capacity=160), "yarn.queues[0].capacity", "must be in [0, 100]"),
    ("max_capacity below capacity", _q(0, max_capacity=50), "yarn.queues[0].max_capacity", "50 is below capacity 60"),
    ("min_share above max_share", _both(_y(scheduler="fair"), _q(0, min_share={"mem": 8}, max_share={"mem": 4})),
     "yarn.queues[0].min_share", "exceeds max_share"),
    ("user_limit_factor", _q(0, user_limit_factor=0), "yarn.queues[0].user_limit_factor", "must be > 0"),
    ("minimum_user_limit_percent", _q(0, minimum_user_limit_percent=0), "yarn.queues[0].minimum_user_limit_percent",
     "must be in (0, 100]"),
    ("weight", _q(1, weight=0), "yarn.queues[1].weight", "must be > 0"),
    ("min_share negative", _q(0, min_share={"cpu": -1}), "yarn.queues[0].min_share.cpu", "must be >= 0"),
    ("users", _q(0, users=0), "yarn.queues[0].users", "must be >= 1 (got 0)"),
    ("data_replicas", _q(0, data_replicas=-1), "yarn.queues[0].data_replicas", "must be >= 0"),
    ("relax_locality type", _q(0, relax_locality="no"), "yarn.queues[0].relax_locality", "expected bool, got str"),
    # classes to queues
    ("class in two queues", _q(1, classes=["service", "batch"]), "yarn.queues[1].classes",
     "job class 'batch' is already submitted to root.a (yarn.queues[0]); each class goes to one leaf queue"),
    ("class twice in a queue", _q(0, classes=["batch", "batch"]), "yarn.queues[0].classes", "names a job class twice"),
    ("class in no queue", _q(1, classes=[]), "yarn.queues", "no leaf queue takes job class 'service'"),
    ("unknown class", _q(0, classes=["nope"]), "yarn.queues[0].classes", "unknown job class 'nope'"),
    ("unhashable class", _q(0, classes=[["batch"]]), "yarn.queues[0].classes", "unknown job class ['batch']"),
    ("parent with classes", _queues({"name": "p", "capacity": 100, "classes": ["service"]},
                                    {"name": "root.p.x", "classes": ["batch"]}),
     "yarn.queues[0].classes", "root.p is a parent queue (of root.p.x); jobs are submitted to leaf queues"),
    # the AM and the tasks
    ("AM fits no machine", _y(am={"mem": 40}), "yarn.am",
     "the AM container (cpu=1, mem=40) fits no machine class; the largest is 'b' (cpu=8, mem=32)"),
    ("AM size", _y(am={"cpu": 0}), "yarn.am.cpu", "must be > 0"),
    ("task fits no machine", lambda d: d["workload"]["classes"][1].update(mem=64.0), "workload.classes[1]",
     "a task of job class 'service' (cpu=1, mem=64) fits no machine class"),
    ("AM and task above a queue's max_capacity", _both(_q(0, capacity=99), _q(1, capacity=1, max_capacity=1)),
     "yarn.queues[1].classes",
     ("an application of job class 'service' holds its AM and a task at once (cpu=2, mem=3.5), more than queue "
     "root.b may ever hold (cpu=0.64, mem=2.56: max_capacity along its path)")),
    ("AM and task above an ancestor's max_capacity",
     _queues({"name": "p", "capacity": 1, "max_capacity": 1}, {"name": "root.p.x", "classes": ALL},
             {"name": "q", "capacity": 99}),
     "yarn.queues[1].classes", "more than queue root.p.x may ever hold (cpu=0.64, mem=2.56: max_capacity"),
    ("AM and task above a max_share", _both(_y(scheduler="fair"), _q(0, max_share={"mem": 2})),
     "yarn.queues[0].classes", ("job class 'batch' holds its AM and a task at once (cpu=1.5, mem=2.5), more than "
                               "queue root.a may ever hold (cpu=inf, mem=2: max_share along its path)")),
    # keys of the other scheduler
    ("fair preemption key under capacity", _y(preemption=True, min_share_preemption_timeout=10.0),
     "yarn.min_share_preemption_timeout", "is a key of the Fair scheduler; this section has scheduler = 'capacity'"),
    ("fair threshold under capacity", _y(fair_share_preemption_threshold=0.5),
     "yarn.fair_share_preemption_threshold", "is a key of the Fair scheduler"),
    ("capacity preemption key under fair", _y(scheduler="fair", max_wait_before_kill=5.0),
     "yarn.max_wait_before_kill", "is a key of the Capacity scheduler; this section has scheduler = 'fair'"),
    ("capacity locality key under fair", _y(scheduler="fair", node_locality_delay=3),
     "yarn.node_locality_delay", "is a key of the Capacity scheduler"),
    ("fair key under fifo", _y(scheduler="fifo", fair_policy="drf"), "yarn.fair_policy",
     "is a key of the Fair scheduler; this section has scheduler = 'fifo'"),
    ("preemption under fifo", _y(scheduler="fifo", preemption=True), "yarn.preemption",
     "the FIFO scheduler never preempts (got True)"),
    ("monitor_interval under fifo", _y(scheduler="fifo", monitor_interval=1.0), "yarn.monitor_interval",
     "is a preemption key; the FIFO scheduler never preempts"),
    # standby RMs
    ("standby RMs need raft", _y(rms=2), "yarn.rms",
     "standby ResourceManagers elect their leader through the coordinator: set [coordinator] replicas >= 3"),
    ("too many RMs", _y(rms=10), "yarn.rms", "must be 1 to 9 (got 10)"),
    ("lease", _y(rm_lease_ms=10.0), "yarn.rm_lease_ms", "must be >= 50"),
    ("no AM pool", _y(am_pools=0), "yarn.am_pools", "must be 1 to 64"),
    ("AM expiry", _y(am_expiry=0.0), "yarn.am_expiry", "must be > 0"),
    ("AM expiry within heartbeats", _y(am_expiry=1.5), "yarn.am_expiry", "must be more than twice am_heartbeat"),
    # values
    ("am_heartbeat", _y(am_heartbeat=0), "yarn.am_heartbeat", "must be > 0"),
    ("max_am_attempts", _y(max_am_attempts=0), "yarn.max_am_attempts", "must be >= 1"),
    ("max_assign", _y(max_assign=-1), "yarn.max_assign", "must be >= 0"),
    ("node_locality_delay", _y(node_locality_delay=-1), "yarn.node_locality_delay", "must be >= 0"),
    ("node_locality_delay type", _y(node_locality_delay=1.5), "yarn.node_locality_delay", "expected int, got float"),
    ("resource_calculator", _y(resource_calculator="cpu"), "yarn.resource_calculator", "must be one of memory, dominant"),
    ("total_preemption_per_round", _y(total_preemption_per_round=0), "yarn.total_preemption_per_round",
     "must be in (0, 1]"),
    ("natural_termination_factor", _y(natural_termination_factor=1.5), "yarn.natural_termination_factor",
     "must be in (0, 1]"),
    ("monitor_interval", _y(monitor_interval=0), "yarn.monitor_interval", "must be > 0"),
    ("fair_policy", _y(scheduler="fair", fair_policy="fifo"), "yarn.fair_policy", "must be one of fair, drf"),
    ("locality threshold", _y(scheduler="fair", locality_threshold_node=-1.0), "yarn.locality_threshold_node",
     "must be in [0, 1] (got -1.0)"),
    ("fair threshold", _y(scheduler="fair", fair_share_preemption_threshold=1.5),
     "yarn.fair_share_preemption_threshold", "must be in [0, 1]"),
    ("fair timeout", _y(scheduler="fair", fair_share_preemption_timeout=-1.0), "yarn.fair_share_preemption_timeout",
     "must be >= 0"),
    ("global_scheduling type", _y(global_scheduling="yes"), "yarn.global_scheduling", "expected bool, got str"),
    ("section not a table", lambda d: d.__setitem__("yarn", 3), "yarn", "expected dict, got int"),
]


@pytest.mark.parametrize("mutate,key,problem", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_yarn_sections_name_file_key_and_problem(mutate: Callable[[dict], None], key: str, problem: str) -> None:
    data = two_queues()
    parse_yarn_scenario(data, "ok.toml")  # valid before the mutation
    mutate(data)
    msg = _err(data)
    assert msg.startswith(f"bad.toml: {key}: "), msg
    assert problem in msg, msg


def test_default_queue_too_small_for_an_am_and_a_task_blames_the_am() -> None:
    data = yarn_data(am={"cpu": 4})
    data["cell"]["machine_classes"] = [{"name": "a", "count": 1, "cpu": 4.0, "mem": 16.0}]
    data["workload"]["prefill_utilization"] = 0.0
    assert _err(data) == ("bad.toml: yarn.am: an application of job class 'batch' holds its AM and a task at once "
                          "(cpu=4.5, mem=2.5), more than queue root.default may ever hold (cpu=4, mem=16: "
                          "max_capacity along its path)")


def test_input_locations_the_rm_would_hold_are_bounded() -> None:
    data = two_queues()
    data["workload"]["classes"][0]["interarrival"] = 0.001  # ~300,000 jobs of ~3 tasks
    parse_yarn_scenario(data, "ok.toml")  # without data replicas, fine
    data["yarn"]["queues"][0]["data_replicas"] = 50  # x 12 machines (the most replicas there can be)
    msg = _err(data)
    assert msg.startswith("bad.toml: yarn.queues[0].data_replicas: ~10,") and "at most 10,000,000" in msg


def test_standby_rms_take_the_coordinator_group_and_a_single_rm_refuses_one() -> None:
    data = yarn_data(rms=3)
    data["coordinator"] = {"replicas": 3}
    sc = parse_yarn_scenario(data, "ok.toml")
    assert sc.section.rms == 3
    assert roster(sc)["rm"] == ["rm-0", "rm-1", "rm-2"]
    data = yarn_data(rms=1)
    data["coordinator"] = {"replicas": 3}
    assert _err(data) == ("bad.toml: coordinator.replicas: a single ResourceManager runs no coordinator group: "
                          "set replicas = 1, or yarn.rms > 1 (standby RMs elect the active one through it)")
    assert roster(parse_yarn_scenario(yarn_data(), "ok.toml"))["rm"] == ["resourcemanager"]


def test_the_active_rm_is_a_leader_to_kill_only_with_standbys() -> None:
    from schedlab.schedulers.scenario.parse import roster_for

    data = yarn_data(rms=2)
    data["coordinator"] = {"replicas": 3}
    ha = roster_for(parse_yarn_scenario(data, "ok.toml"))
    assert "rm" in ha.leader_roles and ha.kill_leader["kill_rm"] == "rm"
    single = roster_for(parse_yarn_scenario(yarn_data(), "ok.toml"))
    assert "rm" not in single.leader_roles and "kill_rm" not in single.kill_leader
    assert "restarted in place" in single.unavailable["kill_rm"]
