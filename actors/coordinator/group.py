"""Driver-side handle on a coordinator group: start, find the leader, kill,
restart, wait for convergence, collect applied logs. Used by run.py (and the
fault timeline); actors never use it."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from schedlab.actors import engines
from schedlab.actors.coordinator.raft_disk import applied_state, read_applied
from schedlab.actors.coordinator.replica import CoordinatorReplica, ReplicaConfig, replica_name
from schedlab.actors.coordinator.replica_set import ReplicaSet
from schedlab.schedulers.consensus.statemachine import ExactlyOnce
from schedlab.schedulers.scenario.parse import CoordinatorSpec


class CoordinatorGroup(ReplicaSet):
    def __init__(self, spec: CoordinatorSpec, namespace: str, data_dir: Path, make_sm: Callable[[], Any],
                 rt: Any, metrics: Any, seed: int, sample_interval: float | None, on_spawn: Callable[[Any], Any],
                 replica_cls: type = CoordinatorReplica, extra: dict[str, Any] | None = None) -> None:
        """``replica_cls`` / ``extra``: a replica subclass that also does an
        architecture's work (a replicated master) and the keyword arguments
        it takes besides the base ones."""
        super().__init__()
        self.replica_cls = replica_cls
        self.extra = extra or {}
        self.spec = spec
        self.namespace = namespace
        self.dir = data_dir
        self.make_sm = make_sm
        self.rt = rt
        self.metrics = metrics
        self.seed = seed
        self.sample_interval = sample_interval
        self.on_spawn = on_spawn  # registers the handle for cleanup

    def spawn(self, i: int) -> Any:
        s = self.spec
        cfg = ReplicaConfig(
            index=i, replicas=s.replicas, data_dir=str(self.dir / replica_name(i)), make_state_machine=self.make_sm,
            seed=self.seed, heartbeat_ms=s.heartbeat_ms, election_ms=s.election_ms,
            snapshot_threshold=s.snapshot_threshold, sample_interval=self.sample_interval,
        )
        h = engines.current().spawn(self.replica_cls, replica_name(i), self.namespace, rt=self.rt, cfg=cfg, metrics=self.metrics,
                             **self.extra)
        self.on_spawn(h)
        self.live[i] = h
        return h

    def spawn_all(self) -> list[Any]:
        return [self.spawn(i) for i in range(self.spec.replicas)]

    def start(self, epoch: float, indices: list[int] | None = None) -> None:
        self.epoch = epoch
        hs = [self.live[i] for i in (indices if indices is not None else list(self.live))]
        engines.current().gather([engines.current().call(h, "ready") for h in hs], timeout=120)
        self.push_peers()
        engines.current().gather([engines.current().call(h, "start", epoch) for h in hs])

    def push_peers(self, wait: bool = True) -> None:
        """Tell every live replica the current handle of every other one."""
        refs = [engines.current().call(h, "set_peers", dict(self.live)) for h in self.live.values()]
        if wait:
            engines.current().gather(refs, timeout=30)

    def statuses(self, starting_too: bool = True, within: float = 2.0) -> list[dict]:
        # A replica dying as we ask is not a leader: failures are dropped.
        members = self.live if starting_too else self.up()
        got = engines.current().outcomes([engines.current().call(h, "status") for h in members.values()], timeout=within)
        return [st for st in got if isinstance(st, dict)]

    def leader(self, within: float = 2.0) -> dict | None:
        """The live replica leading the highest term, if there is exactly one
        (of those up: see ReplicaSet.up), of those that answered ``within``
        wall s."""
        st = self.statuses(starting_too=False, within=within)
        if not st:
            return None
        top = max(s["term"] for s in st)
        leaders = [s for s in st if s["role"] == "leader" and s["term"] == top]
        return leaders[0] if len(leaders) == 1 else None

    def lead(self, within: float = 2.0) -> tuple[int, int] | None:
        lead = self.leader(within)
        return (int(lead["replica"]), int(lead["term"])) if lead else None

    def wait_leader(self, timeout: float = 30.0, newer_than: int = -1) -> dict:
        eng = engines.current()
        end = eng.time() + timeout
        while eng.time() < end:
            lead = self.leader()
            if lead is not None and lead["term"] > newer_than:
                return lead
            eng.sleep(0.02)
        raise TimeoutError(f"no coordinator leader within {timeout:g}s")

    def restart(self, i: int) -> None:
        """Same name, same directory: the new incarnation recovers from disk.
        Does not wait for the actor to come up (seconds on a loaded machine):
        Ray runs the queued set_peers and start calls once it exists, and the
        driver's fault timeline must not stall meanwhile."""
        self.kill(i)
        h = self.spawn(i)
        self.push_peers(wait=False)
        self.starting[i] = engines.current().call(h, "start", self.epoch)

    def converge(self, timeout: float = 5.0) -> None:
        """Wait until every live replica applied what the leader committed."""
        eng = engines.current()
        end = eng.time() + timeout
        while eng.time() < end:
            st = self.statuses()
            if st and len({s["last_applied"] for s in st}) == 1:
                return
            eng.sleep(0.05)

    def applied(self) -> dict[int, list[tuple]]:
        """Every live replica's applied record, asked of it."""
        refs = {i: engines.current().call(h, "applied") for i, h in self.live.items()}
        return {i: engines.current().gather([r], timeout=30)[0] for i, r in refs.items()}

    def applied_everywhere(self) -> dict[int, list[tuple]]:
        """``applied`` and every dead replica's record, read from its disk:
        what the checker reads. A write a majority acknowledged is durable
        there even when that majority died in the run's last seconds and the
        survivor had not caught up: it is not lost, a restart recovers it
        (a dead replica's record is a prefix of the log: behind, never wrong)."""
        out = self.applied()
        for i in range(self.spec.replicas):
            if i not in out and (self.dir / replica_name(i)).is_dir():
                out[i] = read_applied(self.dir / replica_name(i))
        return dict(sorted(out.items()))

    def held_by_dead(self) -> dict[str, list[list]]:
        """Launches a dead replica's durable state held for hosts that never
        pulled them, by replica name: its disk's snapshot and log replayed to
        where it had applied (raft_disk.applied_state). A leader killed in the
        run's last seconds with the survivors not yet told its last commits
        leaves those placements committed on a majority's disks and handed
        to nobody: in flight, as a restart would find them, not lost. Live
        replicas say the same of their own state when they stop."""
        out: dict[str, list[list]] = {}
        for i in range(self.spec.replicas):
            d = self.dir / replica_name(i)
            if i in self.live or not d.is_dir():
                continue
            sm = applied_state(d, ExactlyOnce(self.make_sm())).inner
            held = getattr(sm, "held_launches", None)
            if held is not None and (launches := held()):
                out[replica_name(i)] = launches
        return out

    def stop(self) -> list[Any]:
        return engines.current().gather([engines.current().call(h, "stop") for h in self.live.values()], timeout=60)
