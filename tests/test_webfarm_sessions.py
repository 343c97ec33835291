"""Sessions laid over the request stream (schedulers/archs/webfarm/sessions.py)."""
from __future__ import annotations

import collections

import numpy as np
import pytest

from schedlab.schedulers.archs.webfarm.sessions import assign_sessions
from schedlab.schedulers.model.workload import Dist


def test_every_session_sends_its_drawn_length_and_ends_once() -> None:
    session, last = assign_sessions(2000, Dist("constant", value=5.0), 7, np.random.default_rng(1))
    counts = collections.Counter(session.tolist())
    closed = set(session[last].tolist())
    # Every closed session sent exactly 5; at most 7 are still open at the end.
    assert all(counts[s] == 5 for s in closed)
    assert len(set(counts) - closed) <= 7
    assert last.sum() == len(closed)  # one last request per closed session
    # A session's last request is its final one in the stream.
    final = {s: i for i, s in enumerate(session.tolist())}
    assert all(final[int(session[i])] == i for i in np.flatnonzero(last))


def test_at_most_concurrent_sessions_are_open_at_once() -> None:
    session, last = assign_sessions(3000, Dist("exponential", mean=4.0), 5, np.random.default_rng(2))
    open_: set[int] = set()
    for s, end in zip(session.tolist(), last.tolist()):
        open_.add(s)
        assert len(open_) <= 5
        if end:
            open_.discard(s)


def test_skewed_lengths_give_a_few_long_sessions() -> None:
    session, _ = assign_sessions(20000, Dist("lognormal", mean=10.0, sigma=1.5), 50, np.random.default_rng(3))
    counts = np.array(sorted(collections.Counter(session.tolist()).values()))
    top = counts[-len(counts) // 10:].sum() / counts.sum()
    assert top > 0.35  # the longest 10% of sessions send over a third of the requests


def test_same_seed_same_sessions_and_bad_concurrency_refused() -> None:
    a = assign_sessions(500, Dist("exponential", mean=3.0), 4, np.random.default_rng(9))
    b = assign_sessions(500, Dist("exponential", mean=3.0), 4, np.random.default_rng(9))
    assert (a[0] == b[0]).all() and (a[1] == b[1]).all()
    with pytest.raises(ValueError, match="concurrent"):
        assign_sessions(5, Dist("constant", value=1.0), 0, np.random.default_rng(0))
