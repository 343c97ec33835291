"""Active/standby members elected through the coordinator group's lease
(``schedulers.consensus.lease.LeaseMachine``, the group playing ZooKeeper's
part): the campaign a member runs, and how others find the holder.

Any architecture's replicated masters use this one election: each member
campaigns every quarter lease; the holder leads until its lease runs out
unrenewed, a standby wins only once it has (and campaigns again only
then: ``campaign_wait``), and every new holder gets a higher epoch (so whoever talks to the leader can tell a new one). A member
that learns another holds the lease, or whose own lease ran out unrenewed,
steps down.
"""
from __future__ import annotations

from typing import Any, Callable

from schedlab.actors.coordinator.client import CoordinatorClient
from schedlab.actors.engines.runtime import Beside, Runtime
from schedlab.schedulers.consensus.lease import campaign_wait

STOP_POLL_WALL_S = 0.05  # a campaign on its own thread looks this often whether its member stopped


def lease_identity(name: str, incarnation: int) -> str:
    """A member incarnation's identity in the lease: its name, and a number
    no earlier incarnation had."""
    return f"{name}@{incarnation}"


def lease_holder_name(holder: str | None) -> str | None:
    """The actor name of a lease holder's identity."""
    return None if holder is None else holder.split("@", 1)[0]


async def lease_holder_epoch(coord: Any) -> tuple[str | None, int]:
    """(the lease's last holder's actor name, its lease epoch); (None, 0)
    if the group cannot say. The epoch tells a member restarted under the
    same name and elected again from the incarnation one registered with."""
    try:
        holder, epoch, _expires = await coord.query(("leader",), deadline=1.0)
    except Exception:  # the coordinator group is between leaders
        return None, 0
    return lease_holder_name(holder), int(epoch)


async def lease_holder(coord: Any) -> str | None:
    """The actor name of the lease's last holder, None if the group cannot
    say (between leaders) or nobody campaigned yet.

    The last holder even if its lease looks expired: the read may be a
    stale replica's, or the renewal just late, and the member itself
    answers "not the leader" if it no longer leads. Giving up on it here
    would leave callers with no member to reach for as long as the renewal
    is late (seconds after a coordinator failover on a loaded machine), and
    healthy hosts that cannot reach a leader get written off."""
    try:
        holder, _epoch, _expires = await coord.query(("leader",), deadline=1.0)
    except Exception:  # the coordinator group is between leaders
        return None
    return lease_holder_name(holder)


def holds_lease(shell: Any) -> bool:
    """Whether a member that leads (``shell``: ``rt``, ``lease_until``,
    ``lapsed``) still holds its lease. A renewal that is late (a loaded
    machine) makes it refuse every caller meanwhile, and sets ``lapsed``:
    once the renewal lands it must not count that silence against the
    hosts it watches (its watch loop grants them grace)."""
    if shell.rt.now() < shell.lease_until:
        return True
    shell.lapsed = True
    return False


class LeaseCampaign:
    """One member's campaign. ``run`` keeps its shell's ``lease_until``
    (emulated time its lease is known to hold until) and ``leader_hint``
    (who holds it otherwise), and calls ``take_over(epoch)`` when it wins a
    lease with a new epoch, ``step_down()`` when it leads and lost it."""

    def __init__(self, name: str, replicas: int, rt: Runtime, lease_wall_s: float) -> None:
        self.rt = rt
        self.lease_wall_s = lease_wall_s
        self.coord = CoordinatorClient(name, replicas, rt)
        # This incarnation's identity for the lease (as a ZooKeeper session
        # is): a member restarted within its predecessor's lease must not
        # inherit it, and with it an epoch whose soft state died.
        self.me = lease_identity(name, rt.stamp())

    async def run(self, shell: Any, leads: Callable[[], bool], epoch: Callable[[], int],
                  take_over: Callable[[int], None], step_down: Callable[[], None]) -> None:
        """Campaign until the shell stops, beside its event loop
        (``Runtime.beside``): a member busy with a long pass still renews
        on time, as a real one does from its coordination client's own
        thread. What the campaign reads of the shell (``leads``, ``epoch``,
        ``running``) it reads across threads; what it changes besides
        ``lease_until`` and ``leader_hint`` (a float and a name, each
        written whole) it changes on the shell's own loop."""
        await self.rt.beside(lambda beside: self._keep(beside, shell, leads, epoch, take_over, step_down))

    async def _keep(self, beside: Beside, shell: Any, leads: Callable[[], bool], epoch: Callable[[], int],
                    take_over: Callable[[int], None], step_down: Callable[[], None]) -> None:
        lease_e = self.lease_wall_s * self.rt.scale
        while shell.running:
            sent = self.rt.now()
            try:
                holder, won, expires = await self.coord.submit(("campaign", self.me, sent, lease_e),
                                                               deadline=self.lease_wall_s)
            except Exception:  # no coordinator leader within a lease: we cannot know we still lead
                holder, won, expires = None, epoch(), 0.0
            if holder == self.me:
                # Counted from when we asked: the lease might have been granted then.
                if leads() and won == epoch():
                    shell.lease_until = sent + lease_e  # a renewal
                else:
                    beside.to_actor(_won, shell, leads, epoch, take_over, won, sent + lease_e)
            else:
                shell.leader_hint = lease_holder_name(holder)
                if leads() and (holder is not None or self.rt.now() >= shell.lease_until):
                    beside.to_actor(_lost, shell, leads, holder, step_down)
            wait = self.rt.wall(campaign_wait(self.me, holder, float(expires), self.rt.now(), lease_e))
            if beside.threaded:  # in steps, so a stopping member's campaign ends promptly
                end = self.rt.wall_clock() + wait
                while shell.running and (left := end - self.rt.wall_clock()) > 0:
                    await beside.nap(min(left, STOP_POLL_WALL_S))
            elif not await shell.nap_wall(wait):
                return


def _won(shell: Any, leads: Callable[[], bool], epoch: Callable[[], int], take_over: Callable[[int], None],
         won: int, until: float) -> None:
    """On the shell's loop: the lease is ours (``won``) until ``until``."""
    shell.lease_until = until
    if not leads() or won != epoch():
        take_over(won)


def _lost(shell: Any, leads: Callable[[], bool], holder: str | None, step_down: Callable[[], None]) -> None:
    """On the shell's loop: another holds the lease, or ours ran out
    unrenewed (looked at again here: a renewal may have landed since)."""
    if leads() and (holder is not None or shell.rt.now() >= shell.lease_until):
        step_down()
