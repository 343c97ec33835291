"""Machine failures end to end, without Ray: the replicated cell state machine
writing off a host, the host watch noticing silence, the invariant checker
replaying write-offs, and the scheduler cores resuming lost work."""
from __future__ import annotations

import numpy as np

from schedlab.schedulers.archs.omega.cell_machine import CellStateMachine
from schedlab.actors.analysis.invariants import check_machines
from schedlab.schedulers.events.shared import (
    ACTOR_STARTED, COMMITS_DROPPED, FAULT, HOST_RESET, MACHINES_DOWN, TASKS_LAUNCHED, TASKS_LOST, TXN,
    WRITTEN_OFF_FINAL,
)
from schedlab.schedulers.model.wire import pack_claims, pack_release, pack_tasks, task_key, unpack_delta
from schedlab.schedulers.model.cluster import Cell
from schedlab.schedulers.model.jobs import Job, JobKind
from schedlab.schedulers.archs.mesos.framework import FrameworkCore, FrameworkParams
from schedlab.schedulers.shared_state.commit import Claims, ConflictMode, TxnMode
from schedlab.schedulers.archs.omega.scheduler import OmegaSchedulerCore, SchedulerParams
from schedlab.schedulers.placement.policies import first_fit, get_policy
from schedlab.schedulers.shared_state.cell import LocalCopy, SharedCell

K = 4  # machines per host actor: 8 machines = hosts 0 and 1
CAP = np.tile([4.0, 8.0], (8, 1))
JOB = 7


def new_machine() -> CellStateMachine:
    return CellStateMachine(CAP.copy(), CAP.copy(), ConflictMode.RESOURCE.value, TxnMode.INCREMENTAL.value, K)


def commit(sm: CellStateMachine, placements: list[tuple[int, int]], req: tuple[float, float] = (1.0, 2.0),
           job: int = JOB, now: float = 0.0) -> np.ndarray:
    """Commit (task, machine) pairs of ``job``; returns which were accepted."""
    tasks = np.array([t for t, _ in placements], dtype=np.int64)
    claims = Claims(np.array([m for _, m in placements], dtype=np.int64), np.tile(req, (len(placements), 1)),
                    np.zeros(len(placements), dtype=np.int64))
    accepted, _delta = sm.apply(("commit", pack_claims(claims), 0, job, pack_tasks(tasks, np.full(tasks.size, 10.0)), now))
    return np.frombuffer(accepted, dtype=bool)


def state(sm: CellStateMachine) -> tuple[np.ndarray, np.ndarray]:
    d = unpack_delta(sm.query(("snapshot",)))
    return d.free.copy(), d.seq.copy()


def failed_host_0() -> tuple[CellStateMachine, list]:
    """Tasks 0, 1 on host 0 (handed out), 2, 3 on host 1 (not pulled), then
    task 4 on host 0 committed after the poll (never pulled); host 0 goes down."""
    sm = new_machine()
    assert commit(sm, [(0, 0), (1, 1), (2, 4), (3, 5)]).all()
    launches = sm.apply(("exchange", 0, b""))
    assert sorted((ln[0], ln[1], ln[2]) for ln in launches) == [(JOB, 0, 0), (JOB, 1, 1)]
    assert commit(sm, [(4, 2)]).all()
    return sm, sm.apply(("down", [0], 5.0))


# ------------------------------------------------------------ CellStateMachine


def test_down_writes_off_the_hosts_tasks() -> None:
    sm = new_machine()
    assert commit(sm, [(0, 0), (1, 1), (2, 4), (3, 5)]).all()
    sm.apply(("exchange", 0, b""))
    commit(sm, [(4, 2)])
    _, seq_before = state(sm)
    lost, unpulled = sm.apply(("down", [0], 5.0))
    # Launched tasks died with the host; the launch it never pulled never ran.
    assert sorted(lost) == [[JOB, 0], [JOB, 1]]
    assert unpulled == [[JOB, 4]]
    free, seq = state(sm)
    assert np.all(free[:K] == 0.0)  # a failed machine offers nothing
    assert np.all(seq[:K] > seq_before[:K])  # claims planned on the old rows conflict
    np.testing.assert_array_equal(free[K:], CAP[K:] - np.array([[1, 2], [1, 2], [0, 0], [0, 0]]))
    # Every written-off task, launched or not, is in the lost feed: its scheduler must place it again.
    n, keys = sm.query(("lost", 0))
    assert n == 3 and sorted(keys) == [[JOB, 0], [JOB, 1], [JOB, 4]]
    assert sm.query(("lost", n)) == [3, []]
    cursor, placed, done = sm.query(("recover", [JOB]))
    assert cursor == 3 and placed == {JOB: [2, 3]} and done == []
    assert sm.query(("pending", 0)) is True  # down: the host must poll to come back
    assert sm.query(("pending", 1)) is True  # tasks 2, 3 await host 1's poll


def test_down_host_comes_back_empty_and_ignores_its_stale_release() -> None:
    sm, _ = failed_host_0()
    free0, seq0 = state(sm)
    version0 = sm.cell.version
    # The host reports task 0 finished: it was written off, so this must not count.
    release = pack_release(np.array([0]), np.array([[1.0, 2.0]]), np.array([task_key(JOB, 0)], dtype=np.int64))
    assert sm.apply(("exchange", 0, release)) == {"reset": True, "launches": []}
    free, seq = state(sm)
    np.testing.assert_array_equal(free[:K], CAP[:K])  # back to exactly full capacity
    np.testing.assert_array_equal(seq[:K], seq0[:K] + 1)  # one bump for coming up, none for a release
    assert sm.cell.version == version0 + 1
    np.testing.assert_array_equal(free[K:], free0[K:])  # nothing else moved
    assert sm.down == set() and sm.query(("pending", 0)) is False
    assert sm.apply(("exchange", 0, b"")) == []  # an ordinary poll again


def test_second_down_of_a_down_host_changes_nothing() -> None:
    sm, _ = failed_host_0()
    before = (state(sm), sm.cell.version, sm.query(("lost", 0)), sm.query(("recover", [JOB])))
    assert sm.apply(("down", [0], 9.0)) == [[], []]
    after = (state(sm), sm.cell.version, sm.query(("lost", 0)), sm.query(("recover", [JOB])))
    np.testing.assert_array_equal(before[0][0], after[0][0])
    np.testing.assert_array_equal(before[0][1], after[0][1])
    assert before[1:] == after[1:]


def test_sample_leaves_down_machines_out() -> None:
    sm = new_machine()
    assert commit(sm, [(0, 0)], req=(2.0, 4.0), job=1).all()
    assert commit(sm, [(i, K + i) for i in range(K)], req=(4.0, 4.0), job=2).all()
    (cpu, mem), _ = sm.query(("sample",))
    assert (cpu, mem) == (round(18 / 32, 6), round(20 / 64, 6))  # all 8 machines counted while up
    sm.apply(("down", [0], 1.0))
    (cpu, mem), version = sm.query(("sample",))
    # Host 1 only: cpu full, mem half. Counting host 0 (free 0) as used would give mem 0.75.
    assert (cpu, mem) == (1.0, 0.5)
    assert version == sm.cell.version


def test_snapshot_restore_round_trip() -> None:
    sm, _ = failed_host_0()
    copy = new_machine()
    copy.restore(sm.snapshot())
    assert copy.where == sm.where and copy.placed == sm.placed and copy.lost == sm.lost and copy.down == sm.down
    assert copy.to_launch == sm.to_launch and copy.commits == sm.commits
    for q in [("snapshot",), ("lost", 0), ("recover", [JOB]), ("pending", 0), ("pending", 1), ("sample",)]:
        assert copy.query(q) == sm.query(q), q
    # and the restored copy goes on the same way
    assert copy.apply(("exchange", 0, b"")) == sm.apply(("exchange", 0, b"")) == {"reset": True, "launches": []}
    assert copy.apply(("exchange", 1, b"")) == sm.apply(("exchange", 1, b""))


# ------------------------------------------------------------ check_machines

CELL = Cell(capacity=CAP.copy(), rack=np.zeros(8, dtype=np.int64), machine_class=np.zeros(8, dtype=np.int64), classes=())


def launch(t: float, host: int, job: int, task: int, machine: int, cpu: float) -> dict:
    return {"t": t, "actor": f"machine-host-{host}", "host": host, "tasks": [[job, task, machine, cpu, 1.0, t]]}


def relaunch_events(write_off: tuple[str, dict] | None) -> dict[str, list[dict]]:
    """Task (1, 0) uses 3 cpu on machine 0 (host 0), is relaunched on machine
    4 (host 1) after ``write_off``; the old copy reports done late; then task
    (2, 0) takes 2 cpu on machine 4, which only overflows if (1, 0) still runs there."""
    ev: dict[str, list[dict]] = {
        "tasks_launched": [launch(1.0, 0, 1, 0, 0, 3.0), launch(3.0, 1, 1, 0, 4, 3.0), launch(5.0, 1, 2, 0, 4, 2.0)],
        "tasks_completed": [{"t": 4.0, "tasks": [[1, 0, 0, 4.0]]}],
    }
    if write_off is not None:
        ev.setdefault(write_off[0], []).append(write_off[1])
    return ev


def test_marked_down_host_ends_its_tasks_and_a_late_completion_is_ignored() -> None:
    ev = relaunch_events(("machines_down", {"t": 2.0, "hosts": [0]}))
    # No double placement; the late completion from machine 0 did not end the copy on machine 4.
    assert check_machines(ev, CELL, K) == (1, 0)


def test_a_write_off_recorded_by_a_leader_that_died_before_shipping_it_ends_the_task() -> None:
    """A replicated control plane wrote host 0 off (its record survives:
    written_off_final at the run's end, with when) and its leader died
    before its machines_down event was shipped: the relaunch is no double
    placement (a Borg sim soak, seed 10, counted 4)."""
    record = {"t": 99.0, "tasks": [[1, 0, 0, 2.0]]}
    assert check_machines(relaunch_events((WRITTEN_OFF_FINAL, record)), CELL, K) == (1, 0)


def test_relaunch_without_a_write_off_is_a_double_placement() -> None:
    over, double = check_machines(relaunch_events(None), CELL, K)
    assert double == 1
    assert over == 0  # the relaunch was not counted as running, and the completion ended the original


def test_killed_host_ends_its_tasks() -> None:
    fault = {"t": 2.0, "role": "machine", "kind": "kill", "target": "machine-host-0"}
    assert check_machines(relaunch_events(("fault", fault)), CELL, K) == (1, 0)
    skipped = {**fault, "skipped": True}  # a fault that was not carried out kills nothing
    assert check_machines(relaunch_events(("fault", skipped)), CELL, K)[1] == 1


def test_a_node_kill_kills_the_hosts_it_took_then_whenever_the_driver_notices() -> None:
    """The hosts placed on a killed node die with it: their tasks end at the
    node kill, and a commit to one after it can never launch, though the
    driver logs the host's death later (node_down) or never (the run ended)."""
    from schedlab.actors.analysis.invariants import untraced_commits

    kill = {"t": 2.0, "role": "node", "kind": "kill_node", "target": "node-1", "took": ["machine-host-0"]}
    assert check_machines(relaunch_events(("fault", kill)), CELL, K) == (1, 0)
    assert check_machines(relaunch_events(("fault", {**kill, "took": ["machine-host-1"]})), CELL, K)[1] == 1
    assert untraced_commits({"txn": [txn(10.0, 1, [[1, 5]])], "fault": [{**kill, "took": ["machine-host-1"]}]}, 4) == 0


def test_a_written_off_host_launching_before_its_reset_is_a_zombie_not_a_placement() -> None:
    """Host 0 is written off at t=2 while paused; task (1, 0) is placed again on
    machine 4; host 0 wakes and starts (1, 0) from a reply it got before the
    pause (t=3.5), then learns it was written off and resets (t=4.5). Its
    launches after a reset are placements again."""
    ev = {"tasks_launched": [launch(1.0, 0, 9, 0, 0, 1.0), launch(3.0, 1, 1, 0, 4, 3.0), launch(3.5, 0, 1, 0, 0, 3.0),
                             launch(5.0, 0, 1, 0, 1, 3.0)],
          "machines_down": [{"t": 2.0, "actor": "cell-state", "hosts": [0]}]}
    assert check_machines(ev, CELL, K) == (0, 0)  # no reset yet: both of host 0's launches are a zombie's
    ev[HOST_RESET] = [{"t": 4.5, "actor": "machine-host-0", "host": 0}]
    assert check_machines(ev, CELL, K) == (0, 1)  # t=3.5 ignored; t=5.0 on machine 1 is a real second copy
    ev[TASKS_LAUNCHED].pop()
    assert check_machines(ev, CELL, K) == (0, 0)
    # A restarted host writing itself off (its rejoin) is no zombie: its launches count.
    own = {"tasks_launched": [launch(1.0, 1, 1, 0, 4, 3.0), launch(3.0, 0, 1, 0, 0, 3.0)],
           "machines_down": [{"t": 2.0, "actor": "machine-host-0", "hosts": [0]}]}
    assert check_machines(own, CELL, K) == (0, 1)


def test_a_hosts_own_launch_at_the_instant_it_is_killed_dies_with_it() -> None:
    """Host 0 takes a launch and is killed in the same virtual instant (a
    thawing head answers a poll just as a kill of that host comes due). Its
    event exists, so it was emitted before the kill: the task died with the
    host, and the restarted host, empty, may take new work on that machine."""
    fault = {"t": 2.0, "role": "machine", "kind": "kill", "target": "machine-host-0"}
    restart = {"t": 3.0, "role": "machine", "kind": "restart", "target": "machine-host-0"}
    ev = {"tasks_launched": [launch(2.0, 0, 1, 0, 0, 3.0), launch(4.0, 0, 2, 0, 0, 3.0)], "fault": [fault, restart]}
    assert check_machines(ev, CELL, K) == (0, 0)
    ev[FAULT] = [restart]  # not killed: both run on machine 0 at once
    assert check_machines(ev, CELL, K) == (1, 0)


def test_completion_and_launch_at_the_same_time_reuse_the_slot() -> None:
    ev = {"tasks_launched": [launch(1.0, 0, 1, 0, 0, 4.0), launch(2.0, 0, 1, 1, 0, 4.0)],
          "tasks_completed": [{"t": 2.0, "tasks": [[1, 0, 0, 2.0]]}]}
    assert check_machines(ev, CELL, K) == (0, 0)


def test_a_task_that_ends_at_the_instant_it_launched_ended_after_its_launch() -> None:
    """Host 0's exchange comes back late (its keeper was down) with task (1, 0)
    placed so long ago that its end has passed: the host launches it and ends
    it at its next exchange, which begins at that same instant. The task
    ends after it starts, so the machine is free again: (2, 0), which needs
    the whole machine, fits. Read the other way round (the end first, of a
    task not yet running), (1, 0) would run forever."""
    ev = {"tasks_launched": [launch(5.0, 0, 1, 0, 0, 4.0), launch(6.0, 0, 2, 0, 0, 4.0)],
          "tasks_completed": [{"t": 5.0, "tasks": [[1, 0, 0, 4.5]]}]}
    assert check_machines(ev, CELL, K) == (0, 0)
    # A kill and a relaunch of the same task in one reply: the kill goes first.
    ev = {"tasks_launched": [launch(1.0, 0, 1, 0, 0, 4.0), launch(5.0, 0, 1, 0, 0, 4.0)],
          "tasks_killed": [{"t": 5.0, "tasks": [[1, 0, 0]]}]}
    assert check_machines(ev, CELL, K) == (0, 0)


# ------------------------------------------------------------ scheduler cores


def job(job_id: int, tasks: int) -> Job:
    return Job(job_id, "batch", JobKind.BATCH, 0, 0.0, (1.0, 1.0), (10.0,) * tasks)


def test_omega_resume_queues_only_pending_and_is_not_a_first_attempt() -> None:
    cell = SharedCell(np.full((2, 2), 4.0))
    core = OmegaSchedulerCore(SchedulerParams(name="s", t_job=0.5, t_task=0.1, policy=first_fit),
                              LocalCopy(cell.full()), np.random.default_rng(0))
    jp = core.resume(job(5, 6), np.array([1, 4]))
    assert list(core.queue) == [jp]
    assert core.next_job(0.0) is jp
    assert jp.pending.tolist() == [1, 4] and jp.pending.dtype == np.int64
    assert core.begin_attempt(jp, 3.0) is False  # wait time keeps the original start
    assert core.think_time(jp) == 0.5 + 0.1 * 2


def fw_core() -> FrameworkCore:
    return FrameworkCore(FrameworkParams("fw", 0.1, 0.01, get_policy("first_fit")), 4, np.random.default_rng(0))


def test_framework_resume_with_nothing_pending_waits_for_a_loss() -> None:
    fc = fw_core()
    fc.resume(job(3, 4), np.array([], dtype=np.int64))
    assert 3 in fc.jobs and not fc.wants()
    assert fc.lost([(3, 2)]) == [3]  # the lost task brings the job back
    assert list(fc.queue) == [fc.jobs[3]] and fc.jobs[3].pending.tolist() == [2]


def test_framework_resume_partial_and_full() -> None:
    fc = fw_core()
    fc.resume(job(4, 4), np.array([1, 2]))
    jp = fc.jobs[4]
    assert jp.pending.tolist() == [1, 2] and jp in fc.queue
    assert jp.first_attempt_at is not None and fc.begin(jp, 9.0) is False
    fc.resume(job(5, 3), np.arange(3))  # nothing of it began: its first attempt is still ahead
    assert fc.jobs[5].first_attempt_at is None and fc.begin(fc.jobs[5], 9.0) is True


def txn(t: float, job_id: int, placed: list[list[int]], span: float = 1.0) -> dict:
    return {"event": TXN, "t": t, "job_id": job_id, "committed": len(placed), "placed": placed, "span": span}


def test_every_commit_is_traced_to_a_launch_a_loss_or_its_hosts_death() -> None:
    from schedlab.actors.analysis.invariants import untraced_commits

    ev: dict[str, list[dict]] = {
        # Job 1: task 0 launched where committed; task 1 committed to host 1 (machines 4-7).
        "txn": [txn(10.0, 1, [[0, 0], [1, 5]]), txn(10.0, 2, [[0, 6]])],
        "tasks_launched": [launch(10.5, 0, 1, 0, 0, 1.0), launch(9.5, 1, 2, 0, 6, 1.0)],
    }
    # Task (1, 1) never launched, nothing happened to its host: lost.
    # Job 2's launch was logged before its commit event, within the attempt: fine.
    assert untraced_commits(ev, 4) == 1
    # Its host was killed after the commit: its events may have died with it.
    ev[FAULT] = [{"event": FAULT, "t": 12.0, "role": "machine", "kind": "kill", "target": "machine-host-1"}]
    assert untraced_commits(ev, 4) == 0
    # A kill before the commit, of a host restarted before it too, excuses nothing.
    ev[FAULT][0]["t"] = 8.0
    ev[FAULT].append({"event": FAULT, "t": 8.5, "role": "machine", "kind": "restart", "target": "machine-host-1"})
    ev[ACTOR_STARTED] = [{"event": ACTOR_STARTED, "t": 8.7, "actor": "machine-host-1"}]  # the new incarnation is up
    assert untraced_commits(ev, 4) == 1
    # Written off with its machine and re-queued: accounted for.
    ev[TASKS_LOST] = [{"event": TASKS_LOST, "t": 15.0, "tasks": [[1, 1]]}]
    assert untraced_commits(ev, 4) == 0
    # A launch of the same task on another machine is not this commit's launch.
    del ev[TASKS_LOST]
    ev[TASKS_LAUNCHED].append(launch(11.0, 0, 1, 1, 1, 1.0))
    assert untraced_commits(ev, 4) == 1
    # Borg's replicated write-off record (shipped by the last leader) accounts
    # for it when the leader that wrote the machine off died with its events.
    ev[WRITTEN_OFF_FINAL] = [{"event": WRITTEN_OFF_FINAL, "t": 99.0, "tasks": [[1, 1, 5, 9.5]]}]
    assert untraced_commits(ev, 4) == 0
    ev[WRITTEN_OFF_FINAL][0]["tasks"] = [[1, 1, 5, 8.0]]  # written off before this attempt: not this commit
    assert untraced_commits(ev, 4) == 1
    # A Mesos master that stopped leading dropped it unpulled (its framework
    # may die before reconciling, which would have logged the loss).
    ev[COMMITS_DROPPED] = [{"event": COMMITS_DROPPED, "t": 30.0, "holder": "master-1", "tasks": [[1, 1, 5]]}]
    assert untraced_commits(ev, 4) == 0
    ev[COMMITS_DROPPED][0]["t"] = 8.0  # dropped before this attempt began: not this commit
    assert untraced_commits(ev, 4) == 1


def test_a_commit_to_a_host_already_dead_is_not_lost() -> None:
    """Host 1 is killed at 8; a commit to it at 10 (nobody has noticed yet)
    can never launch and waits for the host to be written off, which the run
    may end before. Once the host was restarted (at 9) and its new
    incarnation started, a commit must launch."""
    from schedlab.actors.analysis.invariants import untraced_commits

    ev: dict[str, list[dict]] = {
        "txn": [txn(10.0, 1, [[1, 5]], span=1.0)],
        "fault": [{"event": FAULT, "t": 8.0, "role": "machine", "kind": "kill", "target": "machine-host-1"}],
    }
    assert untraced_commits(ev, 4) == 0
    ev[FAULT].append({"event": FAULT, "t": 9.0, "role": "machine", "kind": "restart", "target": "machine-host-1"})
    assert untraced_commits(ev, 4) == 0  # asked for, but its new process has not started: nobody to pull it
    ev[ACTOR_STARTED] = [{"event": ACTOR_STARTED, "t": 9.2, "actor": "machine-host-1"}]
    assert untraced_commits(ev, 4) == 1
    # A host killed on another host's behalf excuses nothing here.
    ev[FAULT] = [{"event": FAULT, "t": 8.0, "role": "machine", "kind": "kill", "target": "machine-host-0"}]
    assert untraced_commits(ev, 4) == 1
    # Nor does a host only written off before the commit (paused, it may be alive and pull it).
    ev[FAULT] = []
    ev[MACHINES_DOWN] = [{"event": MACHINES_DOWN, "t": 8.0, "hosts": [1], "actor": "coordinator-0"}]
    assert untraced_commits(ev, 4) == 1


def test_a_commit_dies_with_the_outbox_it_waited_in_killed_before_its_host_pulled() -> None:
    """A head node (or a Mesos master) keeps a launch in its outbox until the
    worker polls: killed first, it takes the commit with it (whoever recovers
    requeues the task). Only a commit that names its ``outbox``, only a kill
    of that actor, and only if the host launched nothing between the commit
    and the kill (a host that pulled since should have got it)."""
    from schedlab.actors.analysis.invariants import untraced_commits

    commit = {**txn(10.0, 1, [[0, 5]], span=0.3), "actor": "framework", "outbox": "head"}
    kill = {"event": FAULT, "t": 10.5, "role": "head", "kind": "kill", "target": "head"}
    ev: dict[str, list[dict]] = {"txn": [commit], "fault": [kill]}
    assert untraced_commits(ev, 4) == 0
    ev[TXN] = [{k: v for k, v in commit.items() if k != "outbox"}]  # in a replicated store: a kill loses nothing
    assert untraced_commits(ev, 4) == 1
    ev[TXN] = [commit]
    ev[FAULT] = [{**kill, "target": "other-head"}]
    assert untraced_commits(ev, 4) == 1
    ev[FAULT] = [{**kill, "kind": "kill_master"}]  # a leader kill is a kill
    assert untraced_commits(ev, 4) == 0
    ev[FAULT] = [{**kill, "t": 9.0}]  # killed before the attempt began: not this commit's fate
    assert untraced_commits(ev, 4) == 1
    ev[FAULT] = [kill]
    ev[TASKS_LAUNCHED] = [launch(10.2, 1, 3, 0, 4, 1.0)]  # host 1 pulled after the commit, before the kill
    assert untraced_commits(ev, 4) == 1
    # A batch logged after the commit but placed before it: the pull was
    # answered before the commit (the host logged it late, as a loaded
    # machine can), so it proves no pull since.
    late_log = launch(10.2, 1, 3, 0, 4, 1.0)
    late_log["tasks"][0][-1] = 9.0
    ev[TASKS_LAUNCHED] = [late_log]
    assert untraced_commits(ev, 4) == 0
    # Placed while the attempt was under way (after it began, before its
    # reply): the pull may have been answered before the commit applied
    # (a Mesos sim soak, seed 10: one commit counted lost).
    late_log["tasks"][0][-1] = 9.9
    assert untraced_commits(ev, 4) == 0


def test_a_read_through_the_log_answers_as_a_query_and_changes_nothing() -> None:
    """A restarted scheduler's recovery reads through the replicated log
    (linearizable: a stale leader cannot answer it)."""
    m = CellStateMachine(np.full((4, 2), 4.0), np.full((4, 2), 4.0), "resource", "incremental", 1)
    before = m.snapshot()
    assert m.apply(("read", ("recover", [1, 2]))) == m.query(("recover", [1, 2]))
    assert m.apply(("read", ("lost", 0))) == m.query(("lost", 0))
    assert m.snapshot() == before


def test_a_done_job_leaves_the_cell_state_and_recovers_as_placed() -> None:
    """The cell state holds jobs in flight, not the run's history: when the
    last task of a job (its commits said how many) finishes, the job leaves
    ``placed`` for ``done``, a restarted scheduler still finds it fully
    placed (not re-queued), and a snapshot carries it to a restored replica.
    A killed task does not count as finished."""
    sm = new_machine()
    n_tasks = 3
    for task, machine in ((0, 0), (1, 1), (2, 4)):
        claims = Claims(np.array([machine]), np.array([[1.0, 2.0]]), np.zeros(1, dtype=np.int64))
        sm.apply(("commit", pack_claims(claims), 0, JOB, pack_tasks(np.array([task]), np.array([10.0])), 0.0, n_tasks))
    sm.apply(("exchange", 0, b""))
    sm.apply(("exchange", 1, b""))

    def release(host: int, rows: list[tuple[int, int, bool]]) -> None:
        keys = np.array([task_key(JOB, t, killed) for t, _m, killed in rows], dtype=np.int64)
        sm.apply(("exchange", host, pack_release(np.array([m for _t, m, _k in rows]), np.tile([1.0, 2.0], (len(rows), 1)), keys)))

    release(0, [(0, 0, False), (1, 1, True)])  # task 1 killed: not finished
    assert sm.query(("recover", [JOB])) == [0, {JOB: [0, 1, 2]}, []]
    release(1, [(2, 4, False)])
    assert JOB in sm.placed and JOB not in sm.done  # task 1 never finished
    # Task 1, placed again and finished: the job is done and leaves the state.
    claims = Claims(np.array([2]), np.array([[1.0, 2.0]]), np.zeros(1, dtype=np.int64))
    sm.apply(("commit", pack_claims(claims), 0, JOB, pack_tasks(np.array([1]), np.array([10.0])), 1.0, n_tasks))
    sm.apply(("exchange", 0, b""))
    release(0, [(1, 2, False)])
    assert JOB not in sm.placed and JOB not in sm.total and JOB not in sm.finished and sm.done == {JOB}
    assert sm.query(("recover", [JOB, JOB + 1])) == [0, {}, [JOB]]
    restored = new_machine()
    restored.restore(sm.snapshot())
    assert restored.done == {JOB} and restored.query(("recover", [JOB])) == sm.query(("recover", [JOB]))
    # The scheduler's core takes a done job as placed, not as a job to run again.
    params = SchedulerParams(name="batch", t_job=0.0, t_task=0.0, policy=first_fit)
    core = OmegaSchedulerCore(params, LocalCopy(sm.cell.full()), np.random.default_rng(0))
    job = Job(JOB, "batch", JobKind.BATCH, 0, 0.0, (1.0, 2.0), (10.0,) * n_tasks)
    got = core.recover([job], 0, {}, [JOB])
    assert [j.job_id for j in got.placed] == [JOB] and got.queued == 0
