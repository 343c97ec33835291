"""YARN end to end on the sim engine: the shipped ``yarn_queues`` scenario
(two Capacity queues): adhoc bursts into prod's idle guarantee up to its
maximum, and preemption reclaims it for prod when prod's load arrives."""
from __future__ import annotations

import json
from pathlib import Path

from schedlab.actors.common.event_files import read_events
from schedlab.actors.run import run_scenario
import tomllib

from schedlab.schedulers.archs.yarn.events import (
    AM_BOOKS, AM_EXPIRED, AM_LAUNCHED, APP_FAILED, APP_FINISHED, APP_KILLED, APP_RESTORED, APP_SUBMITTED, ASKED,
    CONTAINER_ALLOCATED, CONTAINER_FINISHED, CONTAINER_LOST, CONTAINER_RELEASED, NODE_RECOVERED, QUEUE_USAGE,
    RECOVERY_SETTLED, RM_ELECTED, RM_STEPPED_DOWN, YARN_BOOKS,
)
from schedlab.schedulers.events.shared import (
    ACTOR_STARTED, JOBS_FINAL, JOB_ABANDONED, JOB_PENDING, JOB_SCHEDULED, MACHINES_DOWN, PREEMPTED, TASKS_LOST, TXN,
)
from schedlab.schedulers.scenario.parse import parse_scenario

ROOT = Path(__file__).resolve().parents[1]
MEM = 1


def test_a_queue_bursts_into_idle_capacity_and_preemption_reclaims_it(tmp_path: Path) -> None:
    path = ROOT / "scenarios" / "yarn_queues.toml"
    sc = parse_scenario(tomllib.loads(path.read_text()) | {"engine": "sim", "duration": 450.0}, str(path))
    summary = run_scenario(sc, tmp_path)
    assert not any(summary["invariants"].values()), summary["invariants"]
    events = read_events(tmp_path / "events.jsonl")
    assert _requests_accounted(events) > 10  # preempted tasks asked again among them
    samples = [(e["t"], {q["queue"]: q for q in e["queues"]}) for e in events if e["event"] == QUEUE_USAGE]
    cell_mem = 16 * 16.0
    prod_arrives = 200.0
    # The burst: before prod's first job, adhoc holds far more than its 30%.
    before = [s["root.adhoc"]["used"][MEM] for t, s in samples if 60.0 <= t < prod_arrives]
    assert before and max(before) > 0.8 * cell_mem
    assert all(s["root.prod"]["used"][MEM] == 0 for t, s in samples if t < prod_arrives)
    # The reclaim: preemption takes containers from adhoc only, and prod
    # ends above adhoc, which falls far below its burst.
    pre = [e for e in events if e["event"] == PREEMPTED]
    assert pre and {e["queue"] for e in pre} == {"root.adhoc"} and min(e["t"] for e in pre) >= prod_arrives
    end = [s for t, s in samples if t >= 400.0]
    assert end and all(s["root.prod"]["used"][MEM] > s["root.adhoc"]["used"][MEM] for s in end)
    assert max(s["root.adhoc"]["used"][MEM] for s in end) < 0.6 * max(before)
    y = json.loads((tmp_path / "summary.json").read_text())["yarn"]
    assert y["queues"]["root.adhoc"]["preemptions"] == len(pre) and y["queues"]["root.prod"]["preemptions"] == 0
    assert y["queues"]["root.adhoc"]["used_over_entitlement"] > 1.0


def _requests_accounted(events: list[dict]) -> int:
    """Every AM's requests accounted for at the end of a run, from its
    events. The ResourceManager logs each allocate call's asks (``asked``:
    accepted and refused), each container it allocates (``attempt``
    included) and each one's end (finished, preempted, lost, released),
    and at the end of the run its books (``yarn_books``: every open
    application's outstanding asks and held containers); each AM pool logs
    its AMs' books (``am_books``). Checked, for the RM incarnation alive at
    the end (a restart rebuilds from the AMs' resync, logged as asks too):

    * every task an AM asked for was allocated, is still outstanding, or
      went with its attempt or application (none vanished), and nothing was
      allocated unasked;
    * every container allocated ended once (finished, preempted, lost,
      released, or with its attempt or application) or is held at the end;
    * each open application's AM, where it and the RM last spoke in the
      same call, agrees with the RM: its outstanding asks are the RM's
      (plus allocations not yet delivered), what it holds the RM holds,
      and each of its tasks is finished, asked, about to be asked or held.

    Returns the number of AMs compared with the RM's books."""
    from collections import Counter

    events = sorted(events, key=lambda e: e["t"])
    rms = {e["actor"] for e in events if e["event"] == YARN_BOOKS}
    assert rms, "no yarn_books at the end of the run"
    final = [e for e in events if e["event"] == YARN_BOOKS][-1]
    rm = final["actor"]
    # The final RM incarnation began at its last (re)start or election.
    began = max([e["t"] for e in events if e["event"] == ACTOR_STARTED and e["actor"] == rm]
                + [e["t"] for e in events if e["event"] == RM_ELECTED and e["actor"] == rm] + [0.0])
    mine = [e for e in events if e.get("actor") == rm and e["t"] >= began]
    books = {a[0]: a for a in final["apps"]}
    ended = {e["app"] for e in events if e["event"] in (APP_FINISHED, APP_FAILED, APP_KILLED)}
    # Ended under an earlier RM whose events died with it: the final RM knows
    # from its state store (jobs_final, abandoned) or its AM pools (recovered).
    earlier = {a for e in events if e["event"] == JOBS_FINAL for a in e["scheduled"]}
    earlier |= {e["job_id"] for e in events if e["event"] == JOB_ABANDONED or (
        e["event"] == JOB_SCHEDULED and e.get("recovered") and e.get("attempts") == 0)}
    ended |= earlier - books.keys()
    tasks = {e["app"]: e["tasks"] for e in events if e["event"] == APP_SUBMITTED}
    admitted = tasks.keys() | {e["app"] for e in events if e["event"] == APP_RESTORED}
    assert admitted <= ended | books.keys(), sorted(admitted - ended - books.keys())[:10]
    asked: Counter = Counter()
    allocated: Counter = Counter()
    for e in mine:
        if e["event"] == ASKED:
            assert not set(e["tasks"]) & set(e["refused"])
            asked.update((e["app"], e["attempt"], t) for t in e["tasks"])
        elif e["event"] == CONTAINER_ALLOCATED:
            allocated[(e["app"], e["attempt"], e["task"])] += 1
    for key, n in allocated.items():
        assert n <= asked[key], ("allocated unasked", key)
    for app, attempt, _state, outstanding, _held, _undelivered, _done, _calls, _am_ask in books.values():
        for (a, at, t), n in asked.items():
            if a == app and at == attempt:
                assert n == allocated[(a, at, t)] + (t in outstanding), ("an ask vanished", app, attempt, t)
        assert all(asked[(app, attempt, t)] for t in outstanding), ("outstanding unasked", app, outstanding)
    # Containers: one end each, or held at the end.
    ends: Counter = Counter()
    for e in mine:
        if e["event"] in (CONTAINER_FINISHED, PREEMPTED, CONTAINER_LOST, CONTAINER_RELEASED) and e.get("container"):
            ends[e["container"]] += 1
    for e in mine:
        if e["event"] != CONTAINER_ALLOCATED:
            continue
        cid, app = e["container"], e["app"]
        b = books.get(app)
        held_now = b is not None and b[1] == e["attempt"] and str(cid) in b[4]
        gone = app in ended or (b is not None and b[1] > e["attempt"])
        assert ends[cid] + held_now <= 1 and (ends[cid] + held_now == 1 or gone), ("container", cid, app, ends[cid])
    # The AMs' own books against the RM's.
    compared = 0
    for pools in [e for e in events if e["event"] == AM_BOOKS]:
        for app, attempt, am_asked, to_ask, holding, releases, calls, finished in pools["ams"]:
            b = books.get(app)
            if b is None or b[1] != attempt or b[7] != calls:
                continue  # ended, a newer attempt, or a call the RM answered after its books were taken
            _, _, _, outstanding, held, undelivered, completions, _, _ = b
            held_tasks = set(holding.values())
            parts = [set(finished), set(am_asked), set(to_ask), held_tasks]
            assert sum(map(len, parts)) == len(set().union(*parts)) == tasks.get(app, len(set().union(*parts))), (
                "a task in two places, or in none", app, parts)
            told = {t for _c, t in undelivered}
            assert set(am_asked) == set(outstanding) | told and not set(outstanding) & told, (
                "the AM's asks are not the RM's", app, am_asked, outstanding, undelivered)
            gone = {str(c) for c, _t, _s in completions}
            assert set(holding) <= set(held) | gone, ("the AM holds what the RM does not", app, holding, held)
            pending = {str(c) for c, _t in undelivered} | {str(c) for c in releases}
            assert set(held) <= set(holding) | pending, ("the RM holds what the AM does not", app, held, holding)
            compared += 1
    return compared


def _run(tmp_path: Path, name: str, **over: object) -> tuple[dict, list[dict]]:
    """A shipped scenario on the sim engine, with top-level overrides and
    ``yarn.<key>`` overrides (``yarn_<key>=...``)."""
    path = ROOT / "scenarios" / f"{name}.toml"
    data = tomllib.loads(path.read_text()) | {"engine": "sim"}
    for k, v in over.items():
        if k.startswith("yarn_"):
            data["yarn"][k[len("yarn_"):]] = v
        else:
            data[k] = v
    summary = run_scenario(parse_scenario(data, str(path)), tmp_path)
    return summary, read_events(tmp_path / "events.jsonl")


def _mean_used(events: list[dict], queue: str, since: float) -> tuple[float, float]:
    """A queue's mean used (cpu, mem) over the queue_usage samples from ``since``."""
    used = [next(q["used"] for q in e["queues"] if q["queue"] == queue)
            for e in events if e["event"] == QUEUE_USAGE and e["t"] >= since]
    assert used
    return sum(u[0] for u in used) / len(used), sum(u[MEM] for u in used) / len(used)


def test_drf_equalises_dominant_shares_where_memory_fair_share_lets_the_cpu_pool_take_the_cpu(tmp_path: Path) -> None:
    # yarn_fair_drf: 16 x (8 cpu, 32 GB); pool "cpu" runs 2-cpu/1-GB tasks,
    # "mem" 1-cpu/8-GB tasks, both backlogged.
    cpu_total, mem_total = 16 * 8.0, 16 * 32.0
    shares = {}
    for policy in ("fair", "drf"):
        summary, events = _run(tmp_path / policy, "yarn_fair_drf", duration=300.0, yarn_fair_policy=policy)
        assert not any(summary["invariants"].values()), summary["invariants"]
        assert _requests_accounted(events) > 5
        cpu_pool_cpu, _ = _mean_used(events, "root.cpu", 60.0)
        _, mem_pool_mem = _mean_used(events, "root.mem", 60.0)
        shares[policy] = (cpu_pool_cpu / cpu_total, mem_pool_mem / mem_total)
    (fair_cpu, fair_mem), (drf_cpu, drf_mem) = shares["fair"], shares["drf"]
    # Memory-only fair share: the cpu pool holds little memory, so it is
    # offered every node first and takes far more cpu than the memory pool
    # gets memory. DRF takes cpu from it and gives memory to the other pool,
    # until the two dominant shares are about equal.
    assert fair_cpu > fair_mem + 0.1, shares
    assert drf_cpu < fair_cpu - 0.04 and drf_mem > fair_mem + 0.05, shares
    assert abs(drf_cpu - drf_mem) < 0.05, shares


def test_delay_scheduling_makes_nearly_every_task_node_local(tmp_path: Path) -> None:
    # yarn_locality: each task's data on 3 of 40 machines, small jobs.
    loc, waits = {}, {}
    for delay in (0, 16):
        summary, events = _run(tmp_path / str(delay), "yarn_locality", duration=300.0, yarn_node_locality_delay=delay)
        assert not any(summary["invariants"].values()), summary["invariants"]
        assert _requests_accounted(events) > 0
        y = summary["yarn"]
        assert y["containers_allocated"] > 200
        loc[delay], waits[delay] = y["locality"]["node_local"], summary["wait_time_s"]["fully_scheduled"]["p50"]
    assert loc[0] < 0.4 and loc[16] >= 0.9 and loc[16] >= loc[0] + 0.4, loc
    # The price is small: a few missed offers, under one heartbeat round.
    assert waits[16] < waits[0] + 5.0, waits


def test_a_killed_resourcemanager_restarts_without_losing_a_container(tmp_path: Path) -> None:
    # yarn_failover: the RM killed at 200 s, restarted 30 s later.
    summary, events = _run(tmp_path, "yarn_failover", duration=320.0)
    assert not any(summary["invariants"].values()), summary["invariants"]
    assert _requests_accounted(events) > 5  # the AMs resynced with the restarted RM
    kinds = [(f["kind"], f["target"]) for f in summary["faults"]]
    assert kinds == [("kill", "resourcemanager"), ("restart", "resourcemanager")]
    killed, restarted = (f["at_s"] for f in summary["faults"])
    # Work-preserving: every node re-registers with the containers it runs,
    # and the new RM adopts them all; none is lost, no AM starts again.
    recovered = [e for e in events if e["event"] == NODE_RECOVERED]
    assert len({e["node"] for e in recovered}) == 16 and all(e["t"] >= restarted for e in recovered)
    assert sum(e["adopted"] for e in recovered) > 20 and sum(e["killed"] for e in recovered) == 0
    assert not [e for e in events if e["event"] == CONTAINER_LOST]
    assert summary["yarn"]["am_attempts"] == {} and summary["jobs"]["abandoned"] == 0
    settled = [e["t"] for e in events if e["event"] == RECOVERY_SETTLED]
    assert len(settled) == 1 and restarted <= settled[0] < restarted + 10.0
    # Nothing is scheduled while the RM is down; new jobs are after it is back.
    allocs = [e["t"] for e in events if e["event"] == CONTAINER_ALLOCATED]
    assert not [t for t in allocs if killed + 1.0 < t < restarted]
    first = {}
    for e in sorted((e for e in events if e["event"] == JOB_SCHEDULED), key=lambda e: e["t"]):
        first.setdefault(e["job_id"], e["t"])
    assert sum(t < killed for t in first.values()) > 10
    assert sum(t >= settled[0] for t in first.values()) >= 5
    # The summary's failover record: the outage the jobs saw, kill to the
    # first container the restarted RM handed out.
    (rec,) = summary["failovers"]
    assert rec["role"] == "rm" and rec["target"] == "resourcemanager"
    assert rec["restarted_at_s"] >= restarted - 0.5 and rec["settled_at_s"] == round(settled[0], 3)
    assert rec["first_allocation_at_s"] == round(min(t for t in allocs if t >= settled[0]), 3)
    assert rec["downtime_emulated_s"] == round(rec["first_allocation_at_s"] - rec["killed_at_s"], 3) > 30.0
    assert rec["nodes_reregistered"] == 16 and rec["containers_adopted"] == sum(e["adopted"] for e in recovered)


def test_a_standby_resourcemanager_takes_over_without_losing_a_container(tmp_path: Path) -> None:
    # yarn_ha: an active and a standby RM (rms = 2, elected through three
    # coordinator replicas); the active one killed at 200 s and not brought
    # back: the standby wins the lease and rebuilds by the work-preserving
    # restart.
    summary, events = _run(tmp_path, "yarn_ha", duration=320.0)
    assert not any(summary["invariants"].values()), summary["invariants"]
    assert _requests_accounted(events) > 5
    (fault,) = summary["faults"]
    assert fault["kind"] == "kill_rm" and fault["was_leader"] and fault["target"] in ("rm-0", "rm-1")
    killed, victim = fault["at_s"], fault["target"]
    standby = ({"rm-0", "rm-1"} - {victim}).pop()
    elected = [e for e in events if e["event"] == RM_ELECTED]
    assert [e["rm"] for e in elected] == [victim, standby] and not elected[0]["rebuilt"] and elected[1]["rebuilt"]
    takeover = elected[1]["t"]
    assert takeover > killed
    # Work-preserving: every node re-registers with the standby, which adopts
    # every container; none is lost, none killed, no AM starts again.
    recovered = [e for e in events if e["event"] == NODE_RECOVERED]
    assert len({e["node"] for e in recovered}) == 16 and all(e["actor"] == standby and e["t"] >= takeover for e in recovered)
    assert sum(e["adopted"] for e in recovered) > 20 and sum(e["killed"] for e in recovered) == 0
    assert not [e for e in events if e["event"] in (CONTAINER_LOST, TASKS_LOST, MACHINES_DOWN)]
    assert summary["yarn"]["am_attempts"] == {} and summary["jobs"]["abandoned"] == 0
    (settled,) = [e["t"] for e in events if e["event"] == RECOVERY_SETTLED]
    # Nothing allocated between the kill and the takeover; jobs are scheduled after it.
    allocs = [e for e in events if e["event"] == CONTAINER_ALLOCATED]
    assert not [e for e in allocs if killed + 1.0 < e["t"] < takeover]
    assert all(e["actor"] == standby for e in allocs if e["t"] > killed + 1.0)
    first: dict[int, float] = {}
    for e in sorted((e for e in events if e["event"] == JOB_SCHEDULED), key=lambda e: e["t"]):
        first.setdefault(e["job_id"], e["t"])
    assert sum(t < killed for t in first.values()) > 10 and sum(t >= settled for t in first.values()) >= 5
    # The failover record: the standby elected, its recovery window, its
    # first container, and the outage from the kill to that container.
    (rec,) = summary["failovers"]
    assert rec["role"] == "rm" and rec["target"] == victim and rec["new_leader"] == standby
    assert rec["elected_at_s"] == round(takeover, 3) and rec["settled_at_s"] == round(settled, 3)
    assert rec["first_allocation_at_s"] == round(min(e["t"] for e in allocs if e["t"] >= settled), 3)
    assert rec["downtime_emulated_s"] == round(rec["first_allocation_at_s"] - rec["killed_at_s"], 3) > 0
    assert rec["nodes_reregistered"] == 16 and rec["containers_adopted"] == sum(e["adopted"] for e in recovered)


def test_a_run_ending_before_a_standby_takes_over_reports_the_dead_rms_jobs_pending(tmp_path: Path) -> None:
    # The active RM killed 5 s before the run ends: no standby holds the
    # lease yet, so the jobs the dead RM held are nobody's. They are
    # reported pending (the submitter's route was held by the dead RM), not
    # lost.
    summary, events = _run(tmp_path, "yarn_ha", duration=305.0, faults=[{"at": 300.0, "action": "kill_rm"}])
    assert not any(summary["invariants"].values()), summary["invariants"]
    (fault,) = summary["faults"]
    assert [e["rm"] for e in events if e["event"] == RM_ELECTED] == [fault["target"]]
    orphans = {e["job_id"] for e in events if e["event"] == JOB_PENDING and e.get("orphaned")}
    assert orphans and summary["jobs"]["pending"] >= 1
    j = summary["jobs"]
    assert j["submitted"] == j["scheduled"] + j["pending"] + j["abandoned"] + j["rejected"]


def test_an_application_that_failed_before_a_failover_is_not_run_again(tmp_path: Path) -> None:
    # The AM pool killed at 100 s for 60 s, AMs expiring after 30 s with one
    # attempt allowed: the applications whose AM was lost fail. The active
    # RM is killed at 200 s; the standby reads the RM state store (on the
    # coordinator group) before it restores the submitter's applications,
    # so none that failed is restored or given an AM again.
    summary, events = _run(tmp_path, "yarn_ha", duration=320.0, yarn_max_am_attempts=1, yarn_am_expiry=30.0,
                           faults=[{"at": 100.0, "action": "kill", "target": "am-pool-0", "restart_after": 60.0},
                                   {"at": 200.0, "action": "kill_rm"}])
    assert not any(summary["invariants"].values()), summary["invariants"]
    failed = {e["app"] for e in events if e["event"] == APP_FAILED and e["t"] < 200.0}
    assert len(failed) >= 5
    takeover = [e["t"] for e in events if e["event"] == RM_ELECTED][-1]
    assert takeover > 200.0
    assert not [e for e in events if e["event"] in (APP_RESTORED, AM_LAUNCHED, APP_SUBMITTED)
                and e["app"] in failed and e["t"] > takeover]
    # Others were restored from the store, with the attempt it kept.
    restored = [e for e in events if e["event"] == APP_RESTORED and e["t"] > takeover]
    assert restored and all(e["attempt"] == 1 for e in restored)
    j = summary["jobs"]
    assert j["submitted"] == j["scheduled"] + j["pending"] + j["abandoned"] + j["rejected"]


def test_an_rm_cut_off_from_the_coordinator_steps_down_and_the_standby_takes_over(tmp_path: Path) -> None:
    # The active RM partitioned from the coordinator replicas for 60 s: its
    # lease runs out, it stops answering as the active RM and steps down
    # (dropping its books; launches no node pulled are logged
    # commits_dropped); the standby wins the lease and rebuilds.
    cut = {"at": 200.0, "action": "partition", "target": "rm-leader", "peer": "coordinator", "duration": 60.0}
    summary, events = _run(tmp_path, "yarn_failover", duration=320.0, yarn_rms=2, coordinator={"replicas": 3},
                           faults=[cut])
    assert not any(summary["invariants"].values()), summary["invariants"]
    (fault,) = summary["faults"]
    (deposed,) = fault["target"]
    elected = [e for e in events if e["event"] == RM_ELECTED]
    assert elected[0]["rm"] == deposed and elected[1]["rm"] != deposed and elected[1]["t"] > 200.0
    (down,) = [e for e in events if e["event"] == RM_STEPPED_DOWN]
    assert down["actor"] == deposed and down["epoch"] == elected[0]["epoch"]
    # Once another RM holds the lease the deposed one hands out nothing.
    assert not [e for e in events if e["event"] == TXN and e["actor"] == deposed and e["t"] >= elected[1]["t"]]
    assert not [e for e in events if e["event"] == CONTAINER_LOST]
    assert sum(e["adopted"] for e in events if e["event"] == NODE_RECOVERED) > 20


def test_every_request_is_accounted_for_when_ams_and_nodes_die(tmp_path: Path) -> None:
    # The AM pool killed for 20 s (its AMs expire after 30 s: new attempts,
    # their old containers stopped) and a NodeManager killed for 20 s (its
    # containers lost, their tasks asked for again): every ask still ends
    # allocated, outstanding or with its attempt, every container once.
    faults = [{"at": 120.0, "action": "kill", "target": "am-pool-0", "restart_after": 20.0},
              {"at": 200.0, "action": "kill", "target": "machine-host-1", "restart_after": 20.0}]
    summary, events = _run(tmp_path, "yarn_failover", duration=320.0, yarn_am_expiry=30.0, faults=faults)
    assert not any(summary["invariants"].values()), summary["invariants"]
    assert summary["yarn"]["am_attempts"].get("am_expired", 0) >= 5
    assert [e for e in events if e["event"] == CONTAINER_LOST]
    assert _requests_accounted(events) > 5


def test_an_rm_that_was_paused_does_not_expire_the_ams_it_could_not_hear(tmp_path: Path) -> None:
    # The RM frozen for 24 s (a chaos pause: a stopped process) with AMs
    # expiring after 20 s of silence: their heartbeats waited on the RM
    # itself, so when it thaws none of them has been silent by its own
    # fault, and none may expire. (The pause stays under the submitter's
    # 1 wall s delivery wait, 25 s at x25: on sim a submit it stops waiting
    # for is dropped, not delivered late.)
    faults = [{"at": 150.0, "action": "pause", "target": "resourcemanager", "duration": 24.0}]
    summary, events = _run(tmp_path, "yarn_failover", duration=260.0, yarn_am_expiry=20.0, faults=faults)
    assert not any(summary["invariants"].values()), summary["invariants"]
    (pause,) = [f for f in summary["faults"] if f["kind"] == "pause"]
    assert pause["target"] == "resourcemanager"
    assert not [e for e in events if e["event"] == AM_EXPIRED], summary["yarn"]["am_attempts"]
    # The AMs kept going once the RM was back: jobs scheduled after the pause.
    assert [e for e in events if e["event"] == JOB_SCHEDULED and e["t"] > 180.0]
    assert _requests_accounted(events) > 5


def test_an_rm_deposed_at_the_end_with_no_successor_reports_its_jobs_pending(tmp_path: Path) -> None:
    # Both RMs cut off from the coordinator at 244 s until past the end:
    # the active one's lease runs out, it steps down (dropping its books)
    # and nobody is elected before the run ends. The applications it held
    # not yet fully started are reported pending by it, not lost.
    cut = [{"at": 244.0, "action": "partition", "target": rm, "peer": "coordinator", "duration": 80.0}
           for rm in ("rm-0", "rm-1")]
    summary, events = _run(tmp_path, "yarn_ha", duration=300.0, faults=cut)
    assert not any(summary["invariants"].values()), summary["invariants"]
    (down,) = [e for e in events if e["event"] == RM_STEPPED_DOWN]
    assert [e["rm"] for e in events if e["event"] == RM_ELECTED and e["t"] > 244.0] == []
    deposed = {e["job_id"] for e in events if e["event"] == JOB_PENDING and e.get("deposed")}
    assert deposed and all(e["actor"] == down["rm"] for e in events if e["event"] == JOB_PENDING and e.get("deposed"))
    j = summary["jobs"]
    assert j["submitted"] == j["scheduled"] + j["pending"] + j["abandoned"] + j["rejected"]
