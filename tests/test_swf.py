"""The Standard Workload Format: reading its 18 fields, refusing malformed
lines in one line, and the synthetic sample (deterministic, users
over-estimating their run times)."""
from __future__ import annotations

import pytest

from schedlab.schedulers.model.swf import SwfError, read_swf, synthetic_swf

SAMPLE = """; a header comment
1 0 10 3600 16 -1 -1 16 7200 -1 1 3 1 -1 1 1 -1 -1
2 60 -1 120 -1 -1 -1 4 -1 -1 1 5 1 -1 2 1 -1 -1   ; requested time unknown
3 70 -1 -1 8 -1 -1 8 600 -1 5 5 1 -1 1 1 -1 -1
4 90 -1 30 2 -1 -1 -1 60 -1 1 7 1 -1 1 2 -1 -1
"""


def test_the_fields_a_scheduler_needs() -> None:
    jobs = read_swf(SAMPLE)
    assert [j.job for j in jobs] == [1, 2, 4]  # job 3 never ran (run time -1)
    a, b, c = jobs
    assert (a.submit, a.run, a.procs, a.req_time, a.user, a.queue) == (0.0, 3600.0, 16, 7200.0, 3, 1)
    assert b.req_time == 120.0  # unknown: its run time
    assert c.procs == 2 and c.partition == 2  # requested processors unknown: the allocated ones


@pytest.mark.parametrize("line,words", [
    ("1 0 10 3600 16", "line 1: 5 fields"),
    ("1 0 10 36x0 16 -1 -1 16 7200 -1 1 3 1 -1 1 1 -1 -1", "line 1: field 4 (run): not a number: '36x0'"),
    ("1 -5 10 3600 16 -1 -1 16 7200 -1 1 3 1 -1 1 1 -1 -1", "line 1: field 2 (submit): must be >= 0"),
])
def test_a_malformed_line_is_refused_naming_line_and_field(line: str, words: str) -> None:
    with pytest.raises(SwfError) as e:
        read_swf(line, "w.swf")
    assert str(e.value).startswith("w.swf: ") and words in str(e.value) and "\n" not in str(e.value)


def test_the_synthetic_sample_is_deterministic_and_over_estimated() -> None:
    text = synthetic_swf(500, seed=3, nodes=64)
    assert text == synthetic_swf(500, seed=3, nodes=64) != synthetic_swf(500, seed=4, nodes=64)
    jobs = read_swf(text)
    assert len(jobs) == 500
    assert all(1 <= j.procs <= 64 and (j.procs & (j.procs - 1)) == 0 for j in jobs)
    assert all(j.req_time >= j.run for j in jobs)  # a job ends by its limit
    ratio = sorted(j.req_time / j.run for j in jobs)
    assert 2.0 < ratio[len(ratio) // 2] < 4.0  # users over-estimate, about 3x at the median
    assert all(b.submit >= a.submit for a, b in zip(jobs, jobs[1:]))
