"""A site's queue as the federation tracks it (site_queue.py)."""
from __future__ import annotations

from schedlab.schedulers.federation.site_queue import SiteQueue


def test_waiting_jobs_leave_when_the_site_reports_them_and_their_waits_are_published() -> None:
    q = SiteQueue(1, capacity=4.0, wait_window=100.0)
    for j, t in ((1, 0.0), (2, 1.0), (3, 2.0)):
        q.handed(j, t, 10.0)
    assert q.length() == 3 and q.work() == 30.0 and q.load() == 0.75
    q.left([(2, 5.0), (1, 9.0)], cursor=2)
    assert q.cursor == 2 and q.length() == 1
    pub = q.publication(10.0)
    assert (pub.site, pub.queue_length, pub.queued_work, pub.capacity) == (1, 1, 10.0, 4.0)
    assert pub.recent_wait_p50 == 4.0  # waits 4 and 9: nearest-rank median


def test_a_report_that_overtakes_the_hand_over_does_not_leave_a_ghost() -> None:
    q = SiteQueue(0, capacity=1.0)
    q.left([(7, 3.0)], cursor=1)
    q.handed(7, 2.0, 5.0)
    assert q.length() == 0 and not q.gone
