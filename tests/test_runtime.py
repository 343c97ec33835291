"""Driver-side helpers of actors/ray_engine.py on the session's Ray."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.ray


def test_up_leaves_out_members_still_starting(ray_session: None, tmp_path: Path) -> None:
    import ray

    from schedlab.actors.engines import ray_engine

    gate = tmp_path / "open"

    def start() -> None:  # a start call that returns when the test says so
        while not os.path.exists(gate):
            time.sleep(0.01)

    ref = ray.remote(num_cpus=0)(start).remote()
    live = {0: "replica-0", 1: "replica-1", 2: "replica-2"}
    starting = {1: ref}
    assert ray_engine.up(live, starting) == {0: "replica-0", 2: "replica-2"} and 1 in starting
    gate.touch()
    ray.get(ref, timeout=60)
    assert ray_engine.up(live, starting) == live and starting == {}
