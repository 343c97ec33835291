"""Released-task keys survive the host -> master blob, including the
prefill's negative job id and the killed flag."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.model.wire import TASK_BITS, pack_release, task_key, unpack_release, unpack_release_keys

keys = st.lists(st.tuples(st.integers(-1, 2**40), st.integers(0, 2**TASK_BITS - 1), st.booleans()), max_size=50)


@settings(max_examples=200, deadline=None)
@given(keys)
def test_release_keys_round_trip(ks: list[tuple[int, int, bool]]) -> None:
    n = len(ks)
    machines = np.arange(n, dtype=np.int64)
    requests = np.arange(2 * n, dtype=np.float64).reshape(n, 2)
    blob = pack_release(machines, requests, np.array([task_key(*k) for k in ks], dtype=np.int64))
    assert unpack_release_keys(blob) == ks
    m, r = unpack_release(blob)  # Omega's reader ignores the keys
    assert m.tolist() == machines.tolist() and r.tolist() == requests.tolist()
