"""The dispatcher's own events (the shared ones: schedlab.schedulers.events.shared)."""
from __future__ import annotations

from schedlab.schedulers.events.contract import EventType, req

HEAD_BLOCKED = EventType("head_blocked", "the queue's head blocked (or unblocked) the queue behind it", (
    req("on", "bool", "blocked (true) or unblocked"), req("heads", "int", "jobs at the head"), req("queued", "int", "jobs queued")))
QUEUE_SAMPLE = EventType("queue_sample", "the dispatcher's queue, sampled", (
    req("queued", "int", "jobs queued"), req("blocked", "bool", "its head blocks it")))
WORKER_REGISTERED = EventType("worker_registered", "a worker (host) registered with the dispatcher", (
    req("host", "int", "the host actor"), req("tasks", "int", "tasks it runs", "tasks")))

EVENTS = (HEAD_BLOCKED, QUEUE_SAMPLE, WORKER_REGISTERED)
