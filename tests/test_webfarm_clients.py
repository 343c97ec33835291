"""The clients' book and the servers' intake: every page gets exactly one
fate (a balancer's refusal, a server's, or the client's timeout), whatever
died or was cut on its way (pages a killed balancer had taken, or had
forwarded over a cut link, included)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.archs.webfarm.clients import ClientBook, Intake, gave_up

TIMEOUT, GRACE = 5.0, 2.0


def test_a_page_a_dead_balancer_took_times_out_at_its_client() -> None:
    """Sent at 10 s, taken by a balancer that died before forwarding it:
    nothing answers; 2 s past its deadline the client fences it, no server
    has it, and its fate is the client's timeout."""
    book, servers = ClientBook(TIMEOUT, GRACE), [Intake(600.0) for _ in range(3)]
    book.sent(7, 10.0)
    assert book.due(16.9) == []
    due = book.due(17.0)
    assert due == [(7, 15.0)]
    taken = {p for s in servers for p in s.fence(due)}
    assert book.fenced([p for p, _ in due], taken) == [7]
    assert book.open == {} and book.due(100.0) == []
    # Its requests reaching a server later (a slow link) are dropped there.
    assert not servers[1].admit(7, 15.0, 14.0)


def test_a_page_a_server_took_in_is_the_servers_even_if_its_ack_was_lost() -> None:
    book, server = ClientBook(TIMEOUT, GRACE), Intake(600.0)
    book.sent(3, 0.0)
    assert server.admit(3, 5.0, 1.0) and server.admit(3, 5.0, 6.0)  # its other requests too
    due = book.due(8.0)
    assert book.fenced([p for p, _ in due], set(server.fence(due))) == []
    assert book.open == {}


def test_an_acknowledged_page_is_never_fenced_and_a_late_refusal_counts_once() -> None:
    book, server = ClientBook(TIMEOUT, GRACE), Intake(600.0)
    book.sent(1, 0.0)
    book.sent(2, 0.0)
    assert server.admit(1, 5.0, 0.5)
    for p in server.acks():
        assert book.answered(p)
    assert server.acks() == []
    due = book.due(7.0)
    assert due == [(2, 5.0)]
    assert book.fenced([2], set(server.fence(due))) == [2]
    # The paused balancer's refusal of page 2 comes after its client gave up.
    assert not book.answered(2)


def test_a_refusal_during_the_fence_does_not_add_a_fate() -> None:
    book = ClientBook(TIMEOUT, GRACE)
    book.sent(4, 0.0)
    due = book.due(7.0)
    assert not book.answered(4)  # the fence decides
    assert book.fenced([p for p, _ in due], set()) == [4]


def test_a_fence_closes_a_page_at_a_server_before_its_requests_come() -> None:
    """At the end of the run the clients fence pages still within their
    timeout: a request on its way must not be taken in after the answer."""
    book, server = ClientBook(TIMEOUT, GRACE), Intake(600.0)
    book.sent(9, 100.0)
    left = book.fence_all()
    assert left == [(9, 105.0)] and server.fence(left) == []
    assert not server.admit(9, 105.0, 101.0)
    assert book.fenced([9], set()) == [9]


def test_bounced_pages_are_sent_again_only_while_their_client_waits() -> None:
    book = ClientBook(TIMEOUT, GRACE)
    book.sent(1, 0.0)
    book.sent(2, 3.0)
    book.bounced([1, 2])
    assert book.resend(6.0) == [2]  # page 1's client gave up at 5 s
    assert book.resend(6.0) == []
    assert [p for p, _ in book.due(7.0)] == [1]


def test_asking_which_pages_a_server_took_closes_none() -> None:
    """Before a bounced page is sent again the clients ask where it is (a
    balancer that died during the call may have forwarded it): the
    question must not stop a request still on its way."""
    s = Intake(600.0)
    assert s.admit(1, 10.0, 1.0)
    assert s.taken([1, 2]) == [1]
    assert s.admit(2, 10.0, 2.0)


def test_the_deadline_rule_is_one() -> None:
    assert not gave_up(10.0, TIMEOUT, 15.0) and gave_up(10.0, TIMEOUT, 15.01)
    s = Intake(600.0)
    assert s.admit(1, 15.0, 15.0) and not s.admit(2, 15.0, 15.01)


def test_intake_forgets_only_what_no_one_can_ask_about() -> None:
    s = Intake(retention=50.0)
    assert s.admit(1, 10.0, 1.0)
    s.fence([(2, 10.0)])
    s.prune(9.0)
    assert 1 in s.seen and 2 in s.closed
    s.prune(11.0)
    assert 2 not in s.closed and not s.admit(2, 10.0, 11.0)  # the deadline refuses it now
    s.prune(61.0)
    assert 1 not in s.seen


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError):
        ClientBook(0.0, 1.0)
    with pytest.raises(ValueError):
        ClientBook(1.0, -1.0)


# Pages' lives, as the protocol sees them. Each page a balancer either
# refused (its refusal may reach the client, late or never) or forwarded to
# one server (its requests may arrive there, late, several times, or never:
# a cut link). Steps happen in time order: arrivals, refusals reaching the
# client, a server's acknowledgements reaching it, the client's expiry
# fencing what is due. The run ends at ``end``: everything left is fenced,
# and requests still on their way may arrive after that.
STEP = st.tuples(st.sampled_from(["arrive", "refusal", "ack", "expire"]), st.integers(0, 5), st.integers(0, 2),
                 st.floats(0.0, 30.0))


@settings(max_examples=120, deadline=None)
@given(st.lists(STEP, max_size=60), st.lists(st.floats(0.0, 10.0), min_size=6, max_size=6),
       st.lists(st.one_of(st.none(), st.integers(0, 2)), min_size=6, max_size=6), st.floats(0.0, 30.0))
def test_every_page_gets_exactly_one_fate(steps: list, released: list[float], routes: list[int | None],
                                          end: float) -> None:
    book, servers = ClientBook(TIMEOUT, GRACE), [Intake(600.0) for _ in range(3)]
    fates: dict[int, set[str]] = {p: set() for p in range(len(released))}
    counted: dict[int, int] = {p: 0 for p in range(len(released))}

    def fate(p: int, what: str) -> None:
        if what not in fates[p]:
            counted[p] += 1
        fates[p].add(what)

    for p, r in enumerate(released):
        book.sent(p, r)
    ended = False
    for kind, p, s, t in sorted(steps, key=lambda x: x[3]):
        if t >= end and not ended:
            ended = True
            left = book.fence_all()
            taken = {q for srv in servers for q in srv.fence(left)}
            for q in book.fenced([q for q, _ in left], taken):
                fate(q, "client")
        if ended and kind != "arrive":
            continue
        if kind == "arrive" and routes[p] is not None:
            if servers[routes[p]].admit(p, released[p] + TIMEOUT, t):
                fate(p, "server")  # the server owns it: scheduled, refused or pending
        elif kind == "refusal" and routes[p] is None:
            if book.answered(p):
                fate(p, "refused")
        elif kind == "ack":
            for q in servers[s].acks():
                book.answered(q)
        elif kind == "expire":
            due = book.due(t)
            taken = {q for srv in servers for q in srv.fence(due)}
            for q in book.fenced([q for q, _ in due], taken):
                fate(q, "client")
    left = book.fence_all()
    taken = {q for srv in servers for q in srv.fence(left)}
    for q in book.fenced([q for q, _ in left], taken):
        fate(q, "client")
    assert all(n == 1 for n in counted.values()), (fates, routes)
    assert book.open == {} and not book.fencing
