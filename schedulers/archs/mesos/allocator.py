"""The Mesos master's allocator: who gets the next offer, and the offer books.

Pure (no Ray, no clock: every call takes ``now``). The master actor owns one
``Allocator`` and rebuilds it from scratch after a failover, from what agents
and frameworks report when they re-register: nothing here is persistent.

Accounting, per framework: ``allocated`` = resources of its running tasks +
resources it holds idle (rigid frameworks gathering a gang) + resources in
its outstanding offers, as in Mesos, where offered resources count towards a
framework's share. Per machine: ``free`` is what is neither used, held nor
offered; only registered agents have any.

Who is offered first is an ordering policy (``order_policies``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from schedlab.schedulers.archs.mesos.offer_books import AcceptResult, Account, Launch, Offer, TaskKey  # noqa: F401 (re-exported)
from schedlab.schedulers.archs.mesos.order_policies import OrderPolicy, shares
from schedlab.schedulers.model.resources import EPS

def _rows_of(machines: np.ndarray, wanted: list[int]) -> list[int]:
    """Per machine in ``wanted``, its index in the ascending, distinct
    ``machines``, or -1 where it is not one of them."""
    if not wanted:
        return []
    w = np.asarray(wanted, dtype=np.int64)
    pos = np.searchsorted(machines, w)
    ok = pos < machines.size
    ok[ok] = machines[pos[ok]] == w[ok]
    return np.where(ok, pos, -1).tolist()


class Allocator:
    """The offer books and the allocation rounds over them.

    Cost model (a 10,000-machine cell offers every free machine in one
    offer, several times a second): nothing here walks the machines in
    Python per offer or per round. Refuse filters are one array per
    framework, an accept touches only the rows its launches and holds name
    (the rest of the offer goes back as one array operation), the cell's
    used resources are a running total, and the tasks on a set of machines
    are found through a per-machine index, not by scanning every task."""

    def __init__(self, capacity: np.ndarray, policy: OrderPolicy, granularity: str, offer_timeout: float) -> None:
        if granularity not in ("cell", "agent"):
            raise ValueError(f"granularity must be 'cell' or 'agent', got {granularity!r}")
        self.capacity = np.asarray(capacity, dtype=np.float64)
        self.total = self.capacity.sum(axis=0)
        self.policy = policy
        self.granularity = granularity
        self.offer_timeout = offer_timeout
        m = self.capacity.shape[0]
        self.registered = np.zeros(m, dtype=bool)
        self.free = np.zeros_like(self.capacity)
        self.accounts: dict[str, Account] = {}
        self.offers: dict[int, Offer] = {}
        # framework -> per machine, the instant its refuse filter ends (-inf: none).
        self.refused_until: dict[str, np.ndarray] = {}
        # Only through _put and _pop, which keep the two indexes below in step.
        self.tasks: dict[TaskKey, tuple[str, int, np.ndarray]] = {}
        self._on_machine: dict[int, dict[TaskKey, int]] = {}  # machine -> its tasks -> insertion number
        self._inserted = 0
        self._used = np.zeros_like(self.total)  # sum of the requests in ``tasks``
        self.held: dict[str, dict[int, np.ndarray]] = {}
        self.revoking: set[TaskKey] = set()
        self.next_offer = 1
        self._agent_cursor = 0

    # ------------------------------------------------------------ task books

    def _put(self, key: TaskKey, framework: str, machine: int, req: np.ndarray) -> None:
        """Record a running task. A key already recorded keeps its place in
        ``tasks`` (a dict's order), so it keeps its insertion number too."""
        old = self.tasks.get(key)
        n = self._inserted
        if old is not None:
            n = self._on_machine[old[1]].pop(key)
            self._used -= old[2]
        else:
            self._inserted += 1
        self.tasks[key] = (framework, machine, req)
        self._on_machine.setdefault(machine, {})[key] = n
        self._used += req

    def _pop(self, key: TaskKey) -> tuple[str, int, np.ndarray] | None:
        found = self.tasks.pop(key, None)
        if found is not None:
            del self._on_machine[found[1]][key]
            self._used -= found[2]
        return found

    def tasks_on(self, machines: np.ndarray) -> list[TaskKey]:
        """The tasks running on ``machines``, in the order ``tasks`` holds
        them (what a scan of ``tasks`` would find), without that scan: a
        re-registering agent's hundred machines among a cell's tens of
        thousands of tasks."""
        found: list[tuple[int, TaskKey]] = []
        for m in np.asarray(machines, dtype=np.int64).tolist():
            on = self._on_machine.get(m)
            if on:
                found += [(n, k) for k, n in on.items()]
        found.sort()
        return [k for _, k in found]

    # ------------------------------------------------------------ membership

    def account(self, name: str) -> Account:
        """The framework's account, created on first mention (an agent may
        report a framework's tasks before the framework re-registers)."""
        a = self.accounts.get(name)
        if a is None:
            a = Account(name, len(self.accounts), allocated=np.zeros_like(self.total))
            self.accounts[name] = a
        return a

    def add_framework(self, name: str, weight: float = 1.0, priority: int = 0, guarantee: float = 0.0,
                      wants: bool = True, now: float = 0.0) -> Account:
        a = self.account(name)
        a.weight, a.priority, a.guarantee, a.wants = float(weight), int(priority), float(guarantee), wants
        a.last_offer_at = now
        return a

    def set_wants(self, name: str, wants: bool) -> None:
        """Revive (True) or suppress (False) offers; reviving clears refuse filters."""
        a = self.account(name)
        if wants and not a.wants:
            self.refused_until.pop(name, None)
        a.wants = wants

    def refusals(self, name: str, now: float) -> dict[int, float]:
        """Machines ``name`` refuses at ``now``, with when each filter ends."""
        f = self.refused_until.get(name)
        if f is None:
            return {}
        ms = np.flatnonzero(f > now)
        return dict(zip(ms.tolist(), f[ms].tolist()))

    def add_agent(self, machines: np.ndarray, tasks: list[tuple[TaskKey, str, int, Any]]) -> None:
        """Register an agent's machines with the tasks it reports running
        (a request: anything of R numbers). Re-registering drops what was
        known about those machines first.

        The books come out as ``add_task`` for each task in turn would leave
        them, to the bit (``ufunc.at`` and ``accumulate`` add in that order),
        in a few array operations: a new leader hears every agent of a
        10,000-machine cell at once, tens of thousands of tasks."""
        ms = np.asarray(machines, dtype=np.int64)
        if self.registered[ms].any():
            self.remove_agent(ms)
        self.registered[ms] = True
        self.free[ms] = self.capacity[ms]
        keys = [k for k, _, _, _ in tasks]
        if len(set(keys)) < len(keys) or any(k in self.tasks for k in keys):
            for key, fw, machine, request in tasks:  # a key twice: add_task's overwrite, as it was
                self.add_task(key, fw, machine, request)
            return
        if not tasks:
            return
        fws = [fw for _, fw, _, _ in tasks]
        on = np.fromiter((m for _, _, m, _ in tasks), dtype=np.int64, count=len(tasks))
        reqs = np.asarray([r for _, _, _, r in tasks], dtype=np.float64).reshape(len(tasks), -1)
        np.subtract.at(self.free, on, reqs)
        for fw in dict.fromkeys(fws):  # accounts created in the order add_task would create them
            a = self.account(fw)
            mine = reqs[[i for i, f in enumerate(fws) if f == fw]]
            a.allocated[:] = np.add.accumulate(np.vstack([a.allocated, mine]), axis=0)[-1]
        self._used = np.add.accumulate(np.vstack([self._used, reqs]), axis=0)[-1]
        n0 = self._inserted
        self._inserted += len(keys)
        for i, (key, fw, m) in enumerate(zip(keys, fws, on.tolist())):
            self.tasks[key] = (fw, m, reqs[i])
            self._on_machine.setdefault(m, {})[key] = n0 + i

    def remove_agent(self, machines: np.ndarray) -> list[TaskKey]:
        """An agent is gone: rescind offers touching it, forget its tasks and
        holds. Returns the keys of the tasks that were on it."""
        ms = set(np.asarray(machines, dtype=np.int64).tolist())
        for oid, o in list(self.offers.items()):
            if ms & set(o.machines.tolist()):
                self._close(oid)
        lost = self.tasks_on(np.fromiter(ms, dtype=np.int64))
        for k in lost:
            fw, m, req = self._pop(k)  # type: ignore[misc]
            self.accounts[fw].give_back(req)
        for fw, h in self.held.items():
            for m in ms & set(h):
                self.accounts[fw].give_back(h.pop(m))
        idx = np.fromiter(ms, dtype=np.int64)
        self.registered[idx] = False
        self.free[idx] = 0.0
        return lost

    def add_task(self, key: TaskKey, framework: str, machine: int, request: np.ndarray) -> None:
        req = np.asarray(request, dtype=np.float64)
        self._put(key, framework, int(machine), req)
        self.free[machine] -= req
        self.account(framework).allocated += req

    def release(self, keys: list[TaskKey]) -> int:
        """Tasks ended (finished or killed): their resources are free again.
        Unknown keys are ignored (a report from before a re-registration)."""
        n = 0
        for key in keys:
            found = self._pop(key)
            if found is None:
                continue
            fw, m, req = found
            self.free[m] += req
            self.accounts[fw].give_back(req)
            self.revoking.discard(key)
            n += 1
        return n

    # ------------------------------------------------------------ offering

    def _filtered(self, fw: str, now: float) -> np.ndarray:
        """Per machine: does ``fw`` refuse it at ``now``."""
        f = self.refused_until.get(fw)
        if f is None:
            return np.zeros(self.capacity.shape[0], dtype=bool)
        return f > now

    def _order(self, names: list[str], alloc: np.ndarray | None = None) -> list[str]:
        """``names`` in policy order; ``alloc``: their allocations stacked,
        when the caller keeps them (else read from the accounts)."""
        if not names:
            return []
        accts = [self.accounts[n] for n in names]
        if alloc is None:
            alloc = np.vstack([a.allocated for a in accts])
        order = self.policy(alloc, self.total, np.array([a.weight for a in accts]), np.array([a.priority for a in accts]))
        return [names[i] for i in np.asarray(order).tolist()]

    def _make(self, fw: str, machines: np.ndarray, now: float) -> Offer:
        res = self.free[machines].copy()
        self.free[machines] = 0.0
        a = self.accounts[fw]
        a.allocated += res.sum(axis=0)
        a.last_offer_at = now
        o = Offer(self.next_offer, fw, machines, res, now, now + self.offer_timeout)
        self.next_offer += 1
        self.offers[o.offer_id] = o
        return o

    def allocate(self, now: float) -> list[Offer]:
        """One allocation round: offer what is free to frameworks that want it.

        ``cell`` granularity: each framework without an outstanding offer, in
        policy order, is offered everything free that it has not refused (the
        Omega paper's model of Mesos: one framework at a time sees the whole
        free cell). ``agent``: each agent's free resources go to the first
        framework in policy order not refusing it, re-ordering after every
        offer (progressive filling in agent-sized steps)."""
        wanting = [n for n, a in self.accounts.items() if a.wants]
        made: list[Offer] = []
        if self.granularity == "cell":
            busy = {o.framework for o in self.offers.values()}
            order = self._order([n for n in wanting if n not in busy])
            if not order:
                return made  # the usual round: every framework still holds its offer
            has_free = (self.free > EPS).any(axis=1) & self.registered
            for fw in order:
                rows = np.flatnonzero(has_free & ~self._filtered(fw, now))
                if rows.size:
                    made.append(self._make(fw, rows, now))
                    has_free[rows] = False
            return made
        if not wanting:
            return made
        m = self.capacity.shape[0]
        machines = np.flatnonzero((self.free > EPS).any(axis=1) & self.registered)
        if machines.size == 0:
            return made
        # Start where the last round stopped, so low-numbered agents are not always first.
        machines = np.roll(machines, -int(np.searchsorted(machines, self._agent_cursor % m)))
        # Per machine: which wanting frameworks do not refuse it (one row per machine).
        takers = ~np.stack([self._filtered(fw, now) for fw in wanting], axis=1)[machines]
        index = {fw: i for i, fw in enumerate(wanting)}
        # The policy re-orders after every offer; only the offered
        # framework's row of the allocations changed, so only it is re-read.
        alloc = np.vstack([self.accounts[n].allocated for n in wanting])
        for machine, ok in zip(machines.tolist(), takers.tolist()):
            if any(ok):
                fw = next(fw for fw in self._order(wanting, alloc) if ok[index[fw]])
                made.append(self._make(fw, np.array([machine], dtype=np.int64), now))
                alloc[index[fw]] = self.accounts[fw].allocated
            self._agent_cursor = machine + 1
        return made

    def _close(self, offer_id: int) -> Offer:
        o = self.offers.pop(offer_id)
        self.free[o.machines] += o.resources
        self.accounts[o.framework].give_back(o.resources.sum(axis=0))
        return o

    def decline(self, offer_id: int, framework: str, refuse_seconds: float, now: float) -> bool:
        """Hand an offer back; its machines are not offered to ``framework``
        again for ``refuse_seconds``. False if the offer was already rescinded."""
        o = self.offers.get(offer_id)
        if o is None or o.framework != framework:
            return False
        self._close(offer_id)
        if refuse_seconds > 0:
            f = self.refused_until.get(framework)
            if f is None:
                f = self.refused_until[framework] = np.full(self.capacity.shape[0], -np.inf)
            f[o.machines] = now + refuse_seconds
        return True

    def expire(self, now: float) -> list[Offer]:
        """Rescind every offer past its timeout."""
        return [self._close(oid) for oid, o in list(self.offers.items()) if o.expires_at <= now]

    def rescind_all(self) -> list[Offer]:
        return [self._close(oid) for oid in list(self.offers)]

    def accept(self, offer_id: int | None, framework: str, launches: list[Launch], holds: list[tuple[int, np.ndarray]]) -> AcceptResult:
        """Launch tasks on an offer (and/or on resources the framework holds),
        hold more of the offer, return the rest.

        ``offer_id`` None uses held resources only (a gang launched from the
        slots it gathered); a launch on an offer takes from the offer only:
        what the framework holds on that machine is another job's gathering
        gang, which a task of the offer must not take from under it. A launch
        that does not fit, or repeats a running task, is refused.
        An offer that was rescinded refuses everything (``ok`` False)."""
        n_l, n_h = len(launches), len(holds)
        zero = np.zeros_like(self.total)
        if offer_id is not None:
            o = self.offers.get(offer_id)
            if o is None or o.framework != framework:
                return AcceptResult(False, np.zeros(n_l, bool), np.zeros(n_h, bool), zero)
            self.offers.pop(offer_id)
            machines, remaining = o.machines, o.resources.copy()
        else:
            machines, remaining = np.zeros(0, np.int64), np.zeros((0, self.total.size))
        # The offer's row of each machine a launch or hold names (-1: not in
        # the offer). Only those rows change; the rest go back untouched.
        rows = _rows_of(machines, [ln.machine for ln in launches] + [m for m, _ in holds])
        acct = self.account(framework)
        held = self.held.setdefault(framework, {})
        launched = np.zeros(n_l, dtype=bool)
        for i, ln in enumerate(launches):
            req = np.asarray(ln.request, dtype=np.float64)
            row = rows[i]
            h = held.get(ln.machine, zero) if offer_id is None else zero
            r = remaining[row] if row >= 0 else zero
            if ln.key in self.tasks or np.any(h + r + EPS < req):
                continue
            from_held = np.minimum(h, req)
            if offer_id is None and ln.machine in held:
                held[ln.machine] = h - from_held
                if not (held[ln.machine] > EPS).any():
                    del held[ln.machine]
            if row >= 0:
                remaining[row] = r - (req - from_held)
            # Offered or held resources were already counted as this framework's.
            self._put(ln.key, framework, ln.machine, req)
            launched[i] = True
        kept = np.zeros(n_h, dtype=bool)
        for i, (machine, req) in enumerate(holds):
            req = np.asarray(req, dtype=np.float64)
            row = rows[n_l + i]
            if row < 0 or np.any(remaining[row] + EPS < req):
                continue
            remaining[row] = remaining[row] - req
            held[machine] = held.get(machine, zero) + req
            kept[i] = True
        back = np.maximum(remaining, 0.0)
        self.free[machines] += back  # distinct machines: one add each
        # Summed row after row (accumulate, not sum's pairwise order), as
        # the books always added returns up: the same float dust.
        returned = np.add.accumulate(back, axis=0)[-1] if len(back) else zero
        acct.give_back(returned)
        return AcceptResult(True, launched, kept, returned)

    def unhold(self, framework: str, machine: int, request: np.ndarray) -> None:
        """A framework gives back resources it held (a gang it gave up on)."""
        held = self.held.get(framework, {})
        if machine not in held:
            return
        give = np.minimum(held[machine], np.asarray(request, dtype=np.float64))
        held[machine] -= give
        if not (held[machine] > EPS).any():
            del held[machine]
        self.free[machine] += give
        self.accounts[framework].give_back(give)

    # -------------------------------------------------------- measurements

    def shares(self) -> dict[str, float]:
        names = list(self.accounts)
        if not names:
            return {}
        alloc = np.vstack([self.accounts[n].allocated for n in names])
        return dict(zip(names, shares(alloc, self.total).tolist()))

    def locked(self) -> np.ndarray:
        """Resources sitting in outstanding offers."""
        out = np.zeros_like(self.total)
        for o in self.offers.values():
            out += o.resources.sum(axis=0)
        return out

    def held_total(self) -> np.ndarray:
        out = np.zeros_like(self.total)
        for h in self.held.values():
            for r in h.values():
                out += r
        return out

    def used(self) -> np.ndarray:
        """Resources of the running tasks: a running total, kept by ``_put``
        and ``_pop`` (summing every task at each sample cost 13 ms at
        36,000 tasks). Never below zero: adds and subtracts leave float dust."""
        return np.maximum(self._used, 0.0)

    # ---------------------------------------------------------- revocation

    def starving(self, now: float, timeout: float) -> list[str]:
        """Frameworks below their guarantee that want resources and got no
        offer for ``timeout``: the ones revocation is for."""
        shares = self.shares()
        out = []
        for n, a in self.accounts.items():
            if a.wants and shares[n] + EPS < a.guarantee:
                if a.starving_since is None:
                    a.starving_since = now
                if now - max(a.starving_since, a.last_offer_at) >= timeout:
                    out.append(n)
            else:
                a.starving_since = None
        return out

    def revocations(self, starving: list[str]) -> list[TaskKey]:
        """Tasks to kill so the starving frameworks can reach their
        guarantees: from frameworks above their own guarantee, most recently
        started jobs first, never taking a victim below its guarantee.
        One wave at a time: while earlier revocations are still being carried
        out (their resources not yet released) nothing more is revoked, since
        the shares do not show them yet."""
        if not starving or self.revoking:
            return []
        shares = self.shares()
        need = sum(self.accounts[n].guarantee - shares[n] for n in starving)
        victims = sorted((n for n, a in self.accounts.items() if n not in starving and shares[n] > a.guarantee + EPS),
                         key=lambda n: shares[n] - self.accounts[n].guarantee, reverse=True)
        out: list[TaskKey] = []
        for v in victims:
            room = shares[v] - self.accounts[v].guarantee
            mine = sorted((k for k, (fw, _, _) in self.tasks.items() if fw == v and k not in self.revoking), reverse=True)
            for k in mine:
                if need <= EPS or room <= EPS:
                    break
                req = self.tasks[k][2]
                share = float(np.max(np.where(self.total > 0, req / np.where(self.total > 0, self.total, 1), 0)))
                if share > room + EPS:
                    continue
                out.append(k)
                self.revoking.add(k)
                room -= share
                need -= share
        return out
