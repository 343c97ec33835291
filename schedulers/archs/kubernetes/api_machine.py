"""The Kubernetes control plane's replicated state: the API store
(``api_store.APIStoreMachine``: objects, resource versions, watches) with
the apiserver's verbs on top, as one deterministic state machine the
coordinator group runs (the group plays etcd; the verbs are what
kube-apiserver validates before it writes).

Why the verbs live in the machine: a bind, a kubelet's sync and a node's
write-off each read and write several objects that must agree (the pod,
its node's requested resources, the launches and kills waiting for a
kubelet). Applied in log order on every replica they stay consistent
without a second round of compare-and-swap from the callers.

Objects (kind ``nodes``: ``node-<i>`` -> ``{"i", "req", "ready"}``; kind
``pods``: ``<job>/<task>`` -> ``{"j", "t", "cls", "req", "dur", "prio",
"node", "phase", "created", "n", "kind"}`` (``n``: its job's tasks;
``kind``: its workload's, ``deployment`` or ``job``; a restarted pod also
``restarts`` and ``backoff``), indexed by ``node``, so a scheduler watches
the unbound pods with ``{"node": None}``).

Commands
* ``("create", [[job, task, cls, req, dur, prio, now, tasks, kind[, extra]], ...])`` (``extra``: fields
  only some pods carry, ``pods.PodFactory.row``)
  (``tasks`` and ``kind`` optional: 1, ``job``) -> per pod ``"ok"``,
  ``"exists"`` or ``"done"`` (a Job's task that already succeeded: a
  restarted controller does not run it again).
* ``("bind", [[job, task, node, pod_version[, request]], ...], now)`` -> per bind (``request``: the
  pod's request as bound, with the devices it takes: a device plugin's allocation, written with the
  binding as a GPU-sharing scheduler annotates the pod)
  ``[status, pod_version, node_version]``; status ``ok``, ``conflict``
  (the pod changed since the scheduler read it: its version differs),
  ``bound`` (already on a node), ``gone`` (deleted), ``no_room`` (the node
  can no longer hold it: another scheduler's bind took the room; upstream
  leaves this to the kubelet's admission, which fails the pod; here the
  store refuses the bind, so the loser retries), ``not_ready``.
* ``("rejoin", host, now)``: a restarted kubelet, written off as ``down``
  (its next sync brings it back, empty).
* ``("exchange", host, [[job, task, killed]], now)`` -> ``[launches, kills,
  reset]``: a kubelet's sync, in the shape of Borg's Borglet exchange (so
  the machine hosts and ``BorgletEndpoint`` serve as kubelets unchanged).
  A pod whose run ended follows its kind (``workloads.on_end``): a Job's
  is deleted (Succeeded, its task done) and its room freed; a
  Deployment's (restartPolicy Always) stays bound and is launched again
  on its node, at once or after its CrashLoopBackOff
  (``workloads.crash_loop_backoff``; a restart waiting for its time is
  handed out at the first sync after it). A killed pod (an eviction
  confirmed) is deleted and reported lost (its controller recreates it).
  A host marked down that syncs again is brought back empty (reset).
* ``("down", [host], now)`` -> ``[lost, unpulled]``: the node lifecycle
  controller's write-off: the hosts' nodes NotReady, their pods deleted
  and reported lost (launches never pulled apart).
* ``("evict", [[job, task, node]], now)`` -> per victim ``"killing"``,
  ``"withdrawn"`` (its launch or restart had not been pulled: gone at once) or
  ``"gone"`` (not on that node any more: deleted, or made again and bound
  elsewhere since the scheduler chose it): preemption. A running victim stays on its node (its room
  held) until its kubelet confirms the kill: the preemptor may not land on
  room that is still in use, and a recreated copy may not start while the
  old one runs.

Queries: ``("pending", host)`` -> bool; ``("progress", [job])`` -> per job
the tasks bound to a node or done; ``("lost", cursor)`` -> ``[next,
[[job, task, reason]]]`` (pods a controller must recreate: node lost,
evicted); ``("sample",)`` -> ``[[share per resource], revision]`` (used fraction of ready nodes);
and the store's ``get``, ``list``, ``watch``, ``revision``.
"""
from __future__ import annotations

import collections
from typing import Any

import msgpack
import numpy as np

from schedlab.schedulers.archs.kubernetes.api_store import APIStoreMachine
from schedlab.schedulers.archs.kubernetes.workloads import crash_loop_backoff, on_end
from schedlab.schedulers.model.resources import EPS, used_shares
from schedlab.schedulers.model.wire import held_launches

PODS, NODES = "pods", "nodes"
BOUND, TERMINATING = "Bound", "Terminating"


def pod_name(job: int, task: int) -> str:
    return f"{job}/{task}"


def node_name(i: int) -> str:
    return f"node-{i}"


class KubeAPIMachine:
    def __init__(self, capacity: np.ndarray, machines_per_host: int, standing: list | tuple = (),
                 history: int = 100_000) -> None:
        """``standing``: the run's prefill, [job, task, machine, request]
        each, running from the start (pods bound and holding their room;
        they are nobody's to recreate)."""
        self.capacity = np.asarray(capacity, dtype=np.float64)
        self.k = machines_per_host
        self.store = APIStoreMachine(history=history, indexes={PODS: ("node",)})
        self.to_launch: dict[int, list[list]] = {}  # host -> launches not pulled yet
        self.to_kill: dict[int, list[list[int]]] = {}  # host -> [job, task] evictions not pulled yet
        self.restarting: dict[int, list[list]] = {}  # host -> [due, launch]: restarts in CrashLoopBackOff
        self.lost: list[list] = []  # [job, task, reason]: pods a controller must recreate
        self.down: set[int] = set()  # hosts written off, until they sync again
        self._sampled: tuple[tuple, list] | None = None  # the last sample, by (store revision, down hosts)
        self._requests: tuple[np.ndarray, int] | None = None  # every node's requests, as of a store revision
        self.done: dict[int, set[int]] = {}  # job -> tasks that ran to their end
        req = np.zeros_like(self.capacity)
        pods = []
        for job, task, m, r in standing:
            req[int(m)] += np.asarray(r, dtype=np.float64)
            pods.append(("create", PODS, pod_name(int(job), int(task)),
                         {"j": int(job), "t": int(task), "cls": "", "req": list(r), "dur": float("inf"), "prio": 0,
                          "node": int(m), "phase": "Running", "created": 0.0}))
        self._write([("create", NODES, node_name(i), {"i": i, "req": req[i].tolist(), "ready": True})
                     for i in range(self.capacity.shape[0])] + pods)

    # ------------------------------------------------------------ the store

    def _write(self, ops: list) -> list:
        return self.store.apply(("txn", ops))["results"] if ops else []

    def _get(self, kind: str, name: str) -> tuple[Any, int] | None:
        found = self.store.query(("get", kind, name))
        return None if found is None else (found[0], int(found[1]))

    def _node_op(self, i: int, delta: np.ndarray, value: dict | None = None) -> tuple:
        """The update adding ``delta`` to node ``i``'s requested resources
        (written in the same transaction as the pod's change)."""
        if value is None:
            value, _ = self._get(NODES, node_name(i))  # type: ignore[misc]
        req = np.maximum(np.asarray(value["req"], dtype=np.float64) + delta, 0.0)
        return ("update", NODES, node_name(i), {**value, "req": req.tolist()})

    def _machines(self, host: int) -> range:
        return range(host * self.k, min((host + 1) * self.k, self.capacity.shape[0]))

    def _host(self, machine: int) -> int:
        return machine // self.k

    # ------------------------------------------------------------ commands

    def apply(self, command: Any) -> Any:
        op = command[0]
        if op == "create":
            return self._create(command[1])
        if op == "bind":
            return self._bind(command[1], float(command[2]))
        if op == "exchange":
            return self._exchange(int(command[1]), command[2], float(command[3]))
        if op == "down":
            return self._down([int(h) for h in command[1]], float(command[2]))
        if op == "rejoin":
            return self._down([int(command[1])], float(command[2]))
        if op == "evict":
            return self._evict(command[1], float(command[2]))
        if op == "read":
            return self.query(command[1])  # a read through the log: linearizable
        raise ValueError(f"unknown Kubernetes API command {op!r}")

    def _create(self, pods: list) -> list[str]:
        out = []
        for job, task, cls, req, dur, prio, now, *rest in pods:
            name = pod_name(int(job), int(task))
            if int(task) in self.done.get(int(job), ()):
                out.append("done")
                continue
            if self._get(PODS, name) is not None:
                out.append("exists")
                continue
            self._write([("create", PODS, name, {"j": int(job), "t": int(task), "cls": cls, "req": list(req),
                                                 "dur": float(dur), "prio": int(prio), "node": None,
                                                 "phase": "Pending", "created": float(now),
                                                 "n": int(rest[0]) if rest else 1,
                                                 "kind": str(rest[1]) if len(rest) > 1 else "job",
                                                 **(dict(rest[2]) if len(rest) > 2 else {})})])
            out.append("ok")
        return out

    def _bind(self, binds: list, now: float) -> list[list]:
        out = []
        for job, task, node, expected, *bound_as in binds:
            name, node = pod_name(int(job), int(task)), int(node)
            found = self._get(PODS, name)
            nv = self._get(NODES, node_name(node))
            if found is None:
                out.append(["gone", 0, nv[1] if nv else 0])
                continue
            pod, version = found
            if pod["node"] is not None:
                out.append(["bound", version, nv[1] if nv else 0])
                continue
            if expected is not None and int(expected) != version:
                out.append(["conflict", version, nv[1] if nv else 0])
                continue
            if nv is None or not nv[0]["ready"] or self._host(node) in self.down:
                out.append(["not_ready", version, nv[1] if nv else 0])
                continue
            if bound_as:
                pod = {**pod, "req": list(bound_as[0])}
            req = np.asarray(pod["req"], dtype=np.float64)
            if np.any(np.asarray(nv[0]["req"]) + req > self.capacity[node] + EPS):
                out.append(["no_room", version, nv[1]])
                continue
            (_, pod_version), (_, node_version) = self._write(
                [("update", PODS, name, {**pod, "node": node, "phase": BOUND}), self._node_op(node, req, nv[0])])
            self.to_launch.setdefault(self._host(node), []).append(
                [int(job), int(task), node, list(pod["req"]), float(pod["dur"]), now])
            out.append(["ok", int(pod_version), node_version])
        return out

    def _exchange(self, host: int, finished: list, now: float) -> list:
        kills = self.to_kill.pop(host, [])
        if host in self.down:
            # Written off and back: its pods were reported lost and may run
            # elsewhere now; it starts over empty rather than kill one by one.
            self.down.discard(host)
            for m in self._machines(host):
                self._set_ready(m, True)
            return [self.to_launch.pop(host, []), kills, True]
        for job, task, killed in finished:
            found = self._get(PODS, pod_name(int(job), int(task)))
            if found is None:
                continue
            pod = found[0]
            if pod["node"] is None or self._host(int(pod["node"])) != host:
                continue  # an older copy's report: this pod is elsewhere now
            ending = "replace" if killed else on_end(pod.get("kind", "job"), "completed")
            if ending == "succeeded":  # a Job's pod: done, never run again
                self._delete(pod)
                self.done.setdefault(int(job), set()).add(int(task))
            elif ending == "restart" and pod["phase"] != TERMINATING:
                self._restart(pod, host, now)
            else:
                # An eviction confirmed (or a Deployment's pod that exited
                # while its kill was on its way: being deleted, it is not
                # restarted): gone, its controller makes it again.
                self._delete(pod)
                self.lost.append([int(job), int(task), "evicted" if pod["phase"] == TERMINATING else "killed"])
        due = [r for r in self.restarting.get(host, []) if r[0] <= now]
        if due:
            self.restarting[host] = [r for r in self.restarting[host] if r[0] > now]
            if not self.restarting[host]:
                del self.restarting[host]
            self.to_launch.setdefault(host, []).extend(launch for _due, launch in due)
        return [self.to_launch.pop(host, []), kills, False]

    def _restart(self, pod: dict, host: int, now: float) -> None:
        """restartPolicy Always: the pod stays bound (its room held) and is
        launched again on its node when its CrashLoopBackOff allows: at
        once, or handed out at the first sync after its time."""
        entry = pod.get("backoff")
        at, entry = crash_loop_backoff(None if entry is None else (float(entry[0]), float(entry[1])), now, now)
        self._write([("update", PODS, pod_name(pod["j"], pod["t"]),
                      {**pod, "restarts": int(pod.get("restarts", 0)) + 1, "backoff": list(entry)})])
        launch = [int(pod["j"]), int(pod["t"]), int(pod["node"]), list(pod["req"]), float(pod["dur"]), at]
        if at <= now:
            self.to_launch.setdefault(host, []).append(launch)
        else:
            self.restarting.setdefault(host, []).append([at, launch])

    def _delete(self, pod: dict) -> None:
        ops: list = [("delete", PODS, pod_name(pod["j"], pod["t"]))]
        if pod["node"] is not None:
            ops.append(self._node_op(int(pod["node"]), -np.asarray(pod["req"], dtype=np.float64)))
        self._write(ops)

    def _set_ready(self, node: int, ready: bool) -> None:
        value, _ = self._get(NODES, node_name(node))  # type: ignore[misc]
        if value["ready"] != ready:
            self._write([("update", NODES, node_name(node), {**value, "ready": ready})])

    def _down(self, hosts: list[int], now: float) -> list:
        lost: list[list[int]] = []
        unpulled: list[list[int]] = []
        fresh = sorted(set(hosts) - self.down)  # a host already written off has nothing left to lose
        self.down.update(fresh)
        for host in fresh:
            never_pulled = {(ln[0], ln[1]) for ln in self.to_launch.pop(host, [])}
            never_pulled |= {(ln[0], ln[1]) for _at, ln in self.restarting.pop(host, [])}
            self.to_kill.pop(host, None)
            for m in self._machines(host):
                self._set_ready(m, False)
                for _name, pod, _v in self.store.query(("list", PODS, {"node": m}))["items"]:
                    key = [pod["j"], pod["t"]]
                    self._delete(pod)
                    self.lost.append([*key, "node_lost"])
                    (unpulled if tuple(key) in never_pulled else lost).append(key)
        return [lost, unpulled]

    def _evict(self, victims: list, now: float) -> list[str]:
        out = []
        for job, task, node in victims:
            found = self._get(PODS, pod_name(int(job), int(task)))
            if found is None or found[0]["node"] != int(node):
                out.append("gone")
                continue
            pod = found[0]
            host = self._host(int(pod["node"]))
            queued = self.to_launch.get(host, [])
            waiting = self.restarting.get(host, [])
            held = [ln for ln in queued if ln[0] == pod["j"] and ln[1] == pod["t"]]
            held += [ln for _at, ln in waiting if ln[0] == pod["j"] and ln[1] == pod["t"]]
            if held:
                # Not pulled yet (a launch, or a restart in its backoff): withdrawn, gone at once.
                self.to_launch[host] = [ln for ln in queued if not (ln[0] == pod["j"] and ln[1] == pod["t"])]
                if waiting:
                    self.restarting[host] = [r for r in waiting if not (r[1][0] == pod["j"] and r[1][1] == pod["t"])]
                self._delete(pod)
                self.lost.append([pod["j"], pod["t"], "evicted"])
                out.append("withdrawn")
                continue
            if pod["phase"] != TERMINATING:
                self._write([("update", PODS, pod_name(pod["j"], pod["t"]), {**pod, "phase": TERMINATING})])
                self.to_kill.setdefault(host, []).append([pod["j"], pod["t"]])
            out.append("killing")
        return out

    # ------------------------------------------------------------ queries

    def query(self, command: Any) -> Any:
        op = command[0]
        if op == "pending":
            h = int(command[1])
            return bool(self.to_launch.get(h)) or bool(self.to_kill.get(h)) or h in self.down \
                or bool(self.restarting.get(h))
        if op == "progress":
            bound: dict[int, set[int]] = collections.defaultdict(set)
            for _n, pod, _v in self.store.query(("list", PODS))["items"]:
                if pod["node"] is not None:
                    bound[int(pod["j"])].add(int(pod["t"]))
            return [[int(j), len(self.done.get(int(j), set()) | bound.get(int(j), set()))] for j in command[1]]
        if op == "lost":
            cursor = int(command[1])
            return [len(self.lost), self.lost[cursor:]]
        if op == "sample":
            return self._sample()
        return self.store.query(command)

    def _node_requests(self) -> np.ndarray:
        """Every node's requested resources [M, R], brought up to date from
        the store's node changes since the last call (an informer's watch;
        a relist when the store's history no longer reaches back), instead
        of 10,000 reads per sample."""
        kept = self._requests
        w = None if kept is None else self.store.query(("watch", NODES, kept[1], None))
        if kept is None or w is None or w["gone"]:
            req = np.zeros_like(self.capacity)
            for _name, value, _rev in self.store.query(("list", NODES))["items"]:
                req[int(value["i"])] = value["req"]
            self._requests = (req, self.store.revision)
            return req
        req = kept[0]
        for _rev, _type, _kind, _name, value in w["events"]:
            req[int(value["i"])] = value["req"]
        self._requests = (req, int(w["revision"]))
        return req

    def _sample(self) -> list[Any]:
        """[[share per resource], store revision]: the used fraction of
        ready nodes (the coordinator leader's cell sample)."""
        revision = self.store.revision
        # Kept while the store and the written-off hosts are unchanged: an
        # idle cell's samples were most of its CPU (10,000 node reads each).
        key = (revision, tuple(sorted(self.down)))
        if self._sampled is not None and self._sampled[0] == key:
            return list(self._sampled[1])
        ready = np.ones(self.capacity.shape[0], dtype=bool)
        for h in self.down:
            ready[self._machines(h).start:self._machines(h).stop] = False
        if not ready.any():
            return [[0.0] * self.capacity.shape[1], revision]
        used = self._node_requests()[ready]
        total = self.capacity[ready].sum(axis=0)
        sample = [used_shares(used.sum(axis=0), total), revision]
        self._sampled = (key, sample)
        return list(sample)

    # ------------------------------------------------------------ snapshots

    def waiting(self) -> list[int]:
        """Hosts something waits for: launches or kills not pulled, a reset
        (written off), or a container restart in back-off (rung until it is
        due and pulled); their keeper rings them (``actors.common.doorbell``)."""
        return sorted({h for q in (self.to_launch, self.to_kill, self.restarting) for h, xs in q.items() if xs} | self.down)

    def held_launches(self) -> list[list]:
        """Launches committed and not yet pulled by their hosts."""
        return held_launches(self.to_launch)

    def snapshot(self) -> bytes:
        return msgpack.packb([self.store.snapshot(), sorted(self.to_launch.items()), sorted(self.to_kill.items()),
                              self.lost, sorted(self.down), [[j, sorted(ts)] for j, ts in sorted(self.done.items())],
                              sorted(self.restarting.items())],
                             use_bin_type=True)

    def restore(self, data: bytes) -> None:
        store, launch, kill, lost, down, done, restarting = msgpack.unpackb(data, raw=False)
        self.restarting = {int(h): [[float(at), list(ln)] for at, ln in rs] for h, rs in restarting}
        self.store.restore(store)
        self.to_launch = {int(h): [list(x) for x in ls] for h, ls in launch}
        self.to_kill = {int(h): [list(x) for x in ls] for h, ls in kill}
        self.lost = [list(x) for x in lost]
        self.down = {int(h) for h in down}
        self.done = {int(j): set(ts) for j, ts in done}
        self._sampled = self._requests = None


class KubeAPIMachineFactory:
    """Picklable recipe: every replica builds its own machine from it."""

    def __init__(self, capacity: np.ndarray, machines_per_host: int, standing: list | tuple = ()) -> None:
        self.args = (capacity, machines_per_host, list(standing))

    def __call__(self) -> KubeAPIMachine:
        return KubeAPIMachine(*self.args)
