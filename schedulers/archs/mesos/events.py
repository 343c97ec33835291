"""Mesos' own events (the shared ones: schedlab.schedulers.events.shared)."""
from __future__ import annotations

from schedlab.schedulers.events.contract import EventType, req

MASTER_ELECTED = EventType("master_elected", "a master became the leading master", (
    req("master", "str", "the master"), req("epoch", "int", "its epoch")))
MASTER_STEPPED_DOWN = EventType("master_stepped_down", "a master stopped leading", (
    req("master", "str", "the master"), req("epoch", "int", "the epoch it led")))
AGENT_REGISTERED = EventType("agent_registered", "an agent (host) registered with the leading master", (
    req("master", "str", "the master"), req("epoch", "int", "its epoch"), req("host", "int", "the host actor"),
    req("tasks", "int", "tasks it runs", "tasks"), req("reset", "bool", "it was told to drop its tasks")))
FRAMEWORK_REGISTERED = EventType("framework_registered", "a framework registered with the leading master", (
    req("master", "str", "the master"), req("epoch", "int", "its epoch"), req("framework", "str", "the framework")))
REGISTERED = EventType("registered", "a framework or agent learned the leading master", (
    req("role", "str", "framework or agent"), req("who", "str", "which one"),
    req("master", "str", "the master"), req("epoch", "int", "its epoch")))
OFFERS_MADE = EventType("offers_made", "the allocator offered resources", (
    req("offers", "list", "one record per offer"),))
OFFERS_CLOSED = EventType("offers_closed", "offers ended (accepted, declined, rescinded)", (
    req("offers", "list", "one record per offer"),))
REVOKED = EventType("revoked", "the master revoked tasks for a starving framework", (
    req("starving", "str", "the framework starved"), req("victims", "list", "frameworks that lost tasks"),
    req("tasks", "int", "tasks revoked", "tasks")))
TASKS_GONE = EventType("tasks_gone", "a re-registered agent no longer runs tasks the master had", (
    req("master", "str", "the master"), req("host", "int", "the host actor"), req("tasks", "list", "[job, task, machine] per task")))
TASKS_PLACED = EventType("tasks_placed", "a framework placed tasks inside offers", (
    req("scheduler", "str", "the framework"), req("locality", "bool", "on preferred machines"),
    req("tasks", "list", "[job, task, machine] per task")))
JOB_FIRST_SLOT = EventType("job_first_slot", "a framework placed a job's first task", (
    req("job_id", "int", "the job"), req("scheduler", "str", "the framework")))
MESOS_SAMPLE = EventType("mesos_sample", "the allocator's books, sampled", (
    req("epoch", "int", "the master's epoch"), req("shares", "dict", "framework -> dominant share"),
    req("locked", "list", "resources locked in offers, per dimension"), req("held", "list", "resources held by frameworks, per dimension"),
    req("agents", "int", "registered agents"), req("frameworks", "int", "registered frameworks")))

EVENTS = (MASTER_ELECTED, MASTER_STEPPED_DOWN, AGENT_REGISTERED, FRAMEWORK_REGISTERED, REGISTERED, OFFERS_MADE,
          OFFERS_CLOSED, REVOKED, TASKS_GONE, TASKS_PLACED, JOB_FIRST_SLOT, MESOS_SAMPLE)
