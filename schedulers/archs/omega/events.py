"""Omega's own events (the shared ones: schedlab.schedulers.events.shared)."""
from __future__ import annotations

from schedlab.schedulers.events.contract import EventType, req

TASKS_REQUEUED = EventType("tasks_requeued", "a scheduler queued tasks again (lost with their machines)", (
    req("scheduler", "str", "the scheduler"),
    req("tasks", "int", "tasks requeued", "tasks"),
    req("jobs", "int", "jobs they belong to"),
))
COMMIT_FAILED = EventType("commit_failed", "a scheduler's commit to (or sync with) the cell state raised (it retries the job)", (
    req("job_id", "int", "the job"),
    req("error", "str", "what failed"),
))

EVENTS = (TASKS_REQUEUED, COMMIT_FAILED)
