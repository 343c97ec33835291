"""YARN's own events (the shared ones: schedlab.schedulers.events.shared).

Most are the ResourceManager core's (``rm_state``: pure, it queues them and
the RM shell emits them); each carries ``at``, the core's clock when it
decided, beside the shell's ``t``."""
from __future__ import annotations

from schedlab.schedulers.events.contract import EventType, opt, req

_AT = req("at", "float", "when the core decided", "s")
_APP = req("app", "int", "the application (its job id)")
_ATTEMPT = req("attempt", "int", "its AM attempt")

APP_SUBMITTED = EventType("app_submitted", "the RM accepted an application", (
    _APP, req("queue", "str", "its leaf queue"), req("user", "str", "its user"), req("tasks", "int", "its tasks", "tasks"),
    req("submitted_at", "float", "when it was submitted", "s"), _AT))
APP_REJECTED = EventType("app_rejected", "the RM refused an application at admission", (
    _APP, req("queue", "str", "the queue it named"), req("reason", "str", "why"), _AT))
_ENDED = (_APP, _ATTEMPT, req("queue", "str", "its leaf queue"), req("finished_tasks", "int", "tasks it finished", "tasks"), _AT)
APP_FINISHED = EventType("app_finished", "an application finished", _ENDED)
APP_FAILED = EventType("app_failed", "an application failed (out of AM attempts)", _ENDED)
APP_KILLED = EventType("app_killed", "an application was killed", _ENDED)
APP_ENDED = {"finished": APP_FINISHED, "failed": APP_FAILED, "killed": APP_KILLED}  # by its final state (rm_books)
APP_RESTORED = EventType("app_restored", "a new RM restored an application from the state store", (_APP, _ATTEMPT, _AT))
APP_RESYNCED = EventType("app_resynced", "an AM resynced with a new RM", (
    _APP, _ATTEMPT, req("asks", "int", "asks it resent"), req("containers", "int", "containers it reported"), _AT))
ASKED = EventType("asked", "an AM asked for containers", (
    _APP, _ATTEMPT, req("tasks", "list", "tasks asked for"), req("refused", "list", "tasks refused"), _AT))
AM_ALLOCATED = EventType("am_allocated", "the scheduler allocated an AM container", (
    _APP, _ATTEMPT, req("container", "int", "the container"), req("node", "int", "its machine"),
    req("wait", "float", "since asked", "s"), _AT))
AM_LAUNCHED = EventType("am_launched", "an AM container started", (
    _APP, _ATTEMPT, req("container", "int", "the container"), req("node", "int", "its machine"),
    req("delay", "float", "since submission", "s"), _AT))
AM_EXITED = EventType("am_exited", "an AM container exited before its application ended", (
    _APP, _ATTEMPT, req("container", "int", "the container"), req("node", "int", "its machine"), _AT))
AM_EXPIRED = EventType("am_expired", "the RM heard nothing from an AM too long", (
    _APP, _ATTEMPT, req("silent", "float", "how long", "s"), _AT))
AM_ATTEMPT = EventType("am_attempt", "an AM attempt failed; the RM starts another or fails the application", (
    _APP, _ATTEMPT, req("reason", "str", "why it failed"), req("counted", "bool", "counts toward the maximum"),
    req("failures", "int", "counted failures so far"), _AT))
CONTAINER_ALLOCATED = EventType("container_allocated", "the scheduler allocated a task's container", (
    _APP, req("task", "int", "the task"), req("container", "int", "the container"), req("node", "int", "its machine"),
    req("queue", "str", "its leaf queue"), req("locality", "str", "node, rack or off_switch"),
    req("latency", "float", "since asked", "s"), _ATTEMPT, _AT))
CONTAINER_LAUNCHED = EventType("container_launched", "a task's container started", (
    _APP, req("task", "int", "the task"), req("container", "int", "the container"), req("node", "int", "its machine"), _AT))
CONTAINER_FINISHED = EventType("container_finished", "a task's container finished", (
    _APP, req("task", "int", "the task"), req("container", "int|null", "the container (null: recovered, id unknown)"),
    req("node", "int", "its machine"), opt("recovered", "bool", "reported by its node", "true: learned while recovering"), _AT))
CONTAINER_RELEASED = EventType("container_released", "an AM released a container", (
    _APP, req("task", "int", "the task"), req("container", "int", "the container"), _ATTEMPT, req("reason", "str", "why"), _AT))
CONTAINER_LOST = EventType("container_lost", "a container was lost with its node", (
    _APP, req("task", "int", "the task"), req("container", "int", "the container"), req("node", "int", "its machine"), _AT))
NODE_LOST = EventType("node_lost", "the RM wrote a node off", (
    req("node", "int", "the machine"), req("containers", "int", "containers lost"), _AT))
NODE_RECOVERED = EventType("node_recovered", "a node re-registered with a new RM", (
    req("node", "int", "the machine"), req("adopted", "int", "containers adopted"), req("killed", "int", "containers killed"), _AT))
RECOVERY_SETTLED = EventType("recovery_settled", "a new RM finished recovering", (
    req("apps", "int", "applications"), req("nodes", "int", "nodes registered"), _AT))
CORE_EVENTS = (APP_SUBMITTED, APP_REJECTED, APP_FINISHED, APP_FAILED, APP_KILLED, APP_RESTORED, APP_RESYNCED, ASKED,
               AM_ALLOCATED, AM_LAUNCHED, AM_EXITED, AM_EXPIRED, AM_ATTEMPT, CONTAINER_ALLOCATED, CONTAINER_LAUNCHED,
               CONTAINER_FINISHED, CONTAINER_RELEASED, CONTAINER_LOST, NODE_LOST, NODE_RECOVERED, RECOVERY_SETTLED)

# The shells' own.
RM_ELECTED = EventType("rm_elected", "a ResourceManager became active", (
    req("rm", "str", "the RM"), req("epoch", "int", "its epoch"), req("rebuilt", "bool", "it rebuilt state from the store")))
RM_STEPPED_DOWN = EventType("rm_stepped_down", "a ResourceManager stopped being active", (
    req("rm", "str", "the RM"), req("epoch", "int", "the epoch it was active in")))
QUEUE_USAGE = EventType("queue_usage", "the scheduler's queues, sampled", (
    req("queues", "list", "{queue, used, pending, entitlement, preemptions} per queue"),))
YARN_BOOKS = EventType("yarn_books", "the RM's open application books at the end", (
    req("rm", "str", "the RM"), req("apps", "list", "one record per open application")))
AM_STARTED = EventType("am_started", "an AM pool started an application master", (
    _APP, _ATTEMPT, req("finished", "int", "tasks already finished", "tasks")))
AM_STOPPED = EventType("am_stopped", "an AM pool stopped an application master", (
    _APP, _ATTEMPT, req("status", "str", "why")))
AM_UNREGISTERED = EventType("am_unregistered", "an application master unregistered (its application done)", (_APP,))
AM_HEARTBEAT_FAILED = EventType("am_heartbeat_failed", "an AM pool's heartbeat to the RM failed", (req("error", "str", "what failed"),))
AM_BOOKS = EventType("am_books", "an AM pool's books at the end", (
    req("pool", "int", "the pool"), req("ams", "list", "one record per AM")))

EVENTS = CORE_EVENTS + (RM_ELECTED, RM_STEPPED_DOWN, QUEUE_USAGE, YARN_BOOKS, AM_STARTED, AM_STOPPED, AM_UNREGISTERED,
                        AM_HEARTBEAT_FAILED, AM_BOOKS)
