"""Kubernetes' own events (the shared ones: schedlab.schedulers.events.shared)."""
from __future__ import annotations

from schedlab.schedulers.events.contract import EventType, req

K8S_CYCLE = EventType("k8s_cycle", "a scheduler's scheduling cycles since its last report", (
    req("scheduler", "str", "the scheduler"), req("cycles", "int", "cycles run"), req("bound", "int", "pods bound"),
    req("unschedulable", "int", "pods found unschedulable"), req("waiting", "int", "pods waiting at permit"),
    req("released", "int", "pods released from permit"), req("permit_rejected", "int", "pods rejected at permit"),
    req("bind_failed", "int", "binds that failed"), req("filtered", "dict", "filter plugin -> nodes it filtered out")))
K8S_RELIST = EventType("k8s_relist", "a scheduler's watch was compacted away: it listed everything again", (
    req("scheduler", "str", "the scheduler"), req("compacted", "int", "the revision it had fallen behind")))
PODS_RECREATED = EventType("pods_recreated", "controllers created pods again for tasks lost with their nodes", (
    req("tasks", "list", "[job, task] per pod"),))
PROGRESS_FAILED = EventType("progress_failed", "the controllers' progress write failed", (req("error", "str", "what failed"),))
WATCH_FAILED = EventType("watch_failed", "a scheduler's watch on the API store failed", (
    req("scheduler", "str", "the scheduler"), req("error", "str", "what failed")))

EVENTS = (K8S_CYCLE, K8S_RELIST, PODS_RECREATED, PROGRESS_FAILED, WATCH_FAILED)
