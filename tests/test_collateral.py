"""Collateral damage (actors.analysis.collateral): tasks written off on machines no
fault touched, from synthetic event logs."""
from __future__ import annotations

import math

from schedlab.actors.analysis.collateral import collateral, fault_windows

K = 4  # machines per host


def launched(t: float, *tasks: tuple[int, int, int]) -> dict:
    return {"t": t, "tasks": [[j, tk, m, 1.0, 1.0, t] for j, tk, m in tasks]}


def down(t: float, hosts: list[int], lost: list[list[int]], timeout: float | None = 10.0, actor: str = "coordinator-0") -> dict:
    e = {"t": t, "hosts": hosts, "lost": lost, "actor": actor}
    if timeout is not None:
        e["timeout_s"] = timeout
    return e


def killed(t: float, host: int, *tasks: tuple[int, int, int], reason: str | None = "written_off") -> dict:
    e = {"t": t, "host": host, "tasks": [list(x) for x in tasks]}
    if reason:
        e["reason"] = reason
    return e


def fault(t: float, kind: str, target: object, **kw: object) -> dict:
    return {"t": t, "kind": kind, "target": target, **kw}


def events(**kw: list[dict]) -> dict[str, list[dict]]:
    base = {"tasks_launched": [launched(1.0, (1, 0, 0), (1, 1, 5), (2, 0, 9))]}
    base.update(kw)
    return base


def test_a_healthy_host_written_off_is_collateral_counted_once() -> None:
    # Host 0 (machines 0-3) and host 1 (4-7) written off with no fault anywhere;
    # host 0 also kills its task when it hears: the same task, counted once.
    ev = events(machines_down=[down(50.0, [0, 1], [[1, 0], [1, 1]])],
                tasks_killed=[killed(60.0, 0, (1, 0, 0))])
    assert collateral(ev, K) == 2


def test_a_fault_on_the_host_excuses_its_write_off_but_not_its_neighbours() -> None:
    lost = [[1, 0], [1, 1]]
    paused = [fault(30.0, "pause", "machine-host-0", duration_s=10.0)]
    assert collateral(events(fault=paused, machines_down=[down(45.0, [0, 1], lost)]), K) == 1  # host 1's task
    # A partition names hosts on either side.
    cut = [fault(30.0, "partition", ["coordinator-0"], peer=["machine-host-0", "machine-host-1"], duration_s=10.0)]
    assert collateral(events(fault=cut, machines_down=[down(45.0, [0, 1], lost)]), K) == 0


def test_a_fault_long_before_the_write_off_excuses_nothing() -> None:
    paused = [fault(30.0, "pause", "machine-host-0", duration_s=5.0)]
    # Paused until 35; the watcher's silence span is 10 s: a write-off up to
    # 2 x 10 s after the pause ended is the pause's, at 100 it is not.
    assert collateral(events(fault=paused, machines_down=[down(54.0, [0], [[1, 0]])]), K) == 0
    assert collateral(events(fault=paused, machines_down=[down(100.0, [0], [[1, 0]])]), K) == 1
    # A saved run from before timeouts were recorded: any earlier fault excuses.
    assert collateral(events(fault=paused, machines_down=[down(100.0, [0], [[1, 0]], timeout=None)]), K) == 0


def test_a_killed_host_is_excused_until_it_is_restarted() -> None:
    kill = [fault(30.0, "kill", "machine-host-0")]
    assert fault_windows({"fault": kill}) == {0: [(30.0, math.inf)]}
    assert collateral(events(fault=kill, machines_down=[down(500.0, [0], [[1, 0]])]), K) == 0
    back = kill + [fault(40.0, "restart", "machine-host-0")]
    assert fault_windows({"fault": back}) == {0: [(30.0, 40.0)]}
    assert collateral(events(fault=back, machines_down=[down(500.0, [0], [[1, 0]])]), K) == 1
    # The driver noticing a node's death counts as a kill of each of its hosts.
    # The driver noticing a node's death counts as a kill of each of its
    # hosts, from when the node was killed (or, if no fault killed it, always).
    node = [fault(20.0, "kill_node", "node-1", role="node"), fault(30.0, "node_down", "machine-host-2", role="machine", node="node-1")]
    assert collateral(events(fault=node, machines_down=[down(28.0, [2], [[2, 0]])]), K) == 0
    assert collateral(events(fault=node, machines_down=[down(15.0, [2], [[2, 0]])]), K) == 1
    alone = [fault(30.0, "host_lost", "machine-host-2", role="machine", node="node-0")]
    assert collateral(events(fault=alone, machines_down=[down(15.0, [2], [[2, 0]])]), K) == 0
    # A skipped fault touched nothing.
    skipped = [fault(30.0, "pause", "machine-host-0", duration_s=10.0, skipped="not running")]
    assert collateral(events(fault=skipped, machines_down=[down(35.0, [0], [[1, 0]])]), K) == 1


def test_policy_kills_and_a_hosts_own_rejoin_are_never_collateral() -> None:
    ev = events(tasks_killed=[killed(20.0, 0, (1, 0, 0), reason=None)],  # preemption, revocation
                machines_down=[down(25.0, [0], [[1, 0]], timeout=None, actor="machine-host-0")])
    assert collateral(ev, K) == 0


def test_a_hosts_kill_without_the_leaders_record_is_judged_on_its_own() -> None:
    # The leader that wrote host 1 off died before shipping machines_down:
    # only the host's own kill tells, and no fault touched host 1.
    assert collateral(events(tasks_killed=[killed(70.0, 1, (1, 1, 5))]), K) == 1
    slow = [fault(60.0, "slow", "machine-host-1", duration_s=5.0, delay_s=0.5)]
    assert collateral(events(fault=slow, tasks_killed=[killed(70.0, 1, (1, 1, 5))]), K) == 0


def test_a_node_kill_excuses_the_hosts_it_took_whenever_the_driver_notices() -> None:
    # The node kill names the hosts placed on its node when it was carried
    # out. The watcher writes host 2 off at 40, before the driver logs the
    # host's death at 60, or the run ends before the driver ever notices:
    # either way the write-off is the node kill's doing.
    kill = fault(20.0, "kill_node", "node-1", role="node", took=["machine-host-2"])
    noticed = fault(60.0, "node_down", "machine-host-2", role="machine", node="node-1")
    assert fault_windows({"fault": [kill]}) == {2: [(20.0, math.inf)]}
    for faults in ([kill, noticed], [kill]):
        assert collateral(events(fault=faults, machines_down=[down(40.0, [2], [[2, 0]])]), K) == 0
        # A write-off before the kill was not its doing; a host the node kill
        # did not take (host 0) is not excused by it.
        assert collateral(events(fault=faults, machines_down=[down(15.0, [2], [[2, 0]])]), K) == 1
        assert collateral(events(fault=faults, machines_down=[down(40.0, [0], [[1, 0]])]), K) == 1
    # A host of the node restarted later is excused only until then.
    back = [kill, fault(100.0, "restart", "machine-host-2")]
    assert fault_windows({"fault": back}) == {2: [(20.0, 100.0)]}
    # A skipped node kill (the node was already down) took nothing.
    assert fault_windows({"fault": [{**kill, "skipped": "node-1 is already down"}]}) == {}
