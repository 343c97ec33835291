"""The summary's job accounting: one fate per submitted job."""
from __future__ import annotations


def test_a_job_scheduled_once_stays_scheduled_if_it_later_fails() -> None:
    """A YARN application whose AM failed for good after every task had
    started is reported abandoned by an RM that restarted since; the job
    was scheduled, and counts once."""
    from schedlab.actors.analysis.summary import job_fates

    sub = [{"job_id": j, "kind": "batch", "tasks": 1, "t": 0.0} for j in (1, 2, 3)]
    ev = {"job_submitted": sub, "job_scheduled": [{"job_id": 1, "t": 5.0}],
          "job_abandoned": [{"job_id": 1, "t": 9.0}, {"job_id": 2, "t": 9.0}, {"job_id": 3, "t": 9.0}],
          "jobs_final": [{"scheduled": [3], "t": 10.0}], "job_pending": [{"job_id": 2, "t": 10.0}]}
    f = job_fates(ev)
    assert set(f.scheduled) == {1} and f.final_placed == {3} and f.abandoned == {2} and f.pending == set()
