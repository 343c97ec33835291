"""Sparrow's own events (the shared ones: schedlab.schedulers.events.shared)."""
from __future__ import annotations

from schedlab.schedulers.events.contract import EventType, req

SPARROW_JOB = EventType("sparrow_job", "a scheduler took a job", (
    req("job_id", "int", "the job"), req("long", "bool", "judged long (hybrid: routed centrally)"),
    req("estimate", "float|null", "its estimated duration (null: none)", "s"), req("tasks", "int", "its tasks", "tasks"),
    req("routed", "str", "how it was routed")))
SPARROW_PLACED = EventType("sparrow_placed", "a job's tasks were all placed", (
    req("job_id", "int", "the job"), req("tasks", "int", "its tasks", "tasks"), req("probes", "int", "probes sent"),
    req("messages", "int", "messages it cost")))
SPARROW_STEAL = EventType("sparrow_steal", "a node monitor stole queued entries from another", (
    req("thief", "int", "the stealing host"), req("victim", "int", "the host stolen from"), req("entries", "int", "entries stolen")))
SPARROW_NODEMON = EventType("sparrow_nodemon", "a node monitor's counters at the end", (
    req("host", "int", "the host actor"), req("get_task", "int", "getTask calls"), req("cancels", "int", "probes cancelled"),
    req("retries", "int", "retries"), req("steals", "int", "steals"), req("stolen", "int", "entries stolen"),
    req("steal_messages", "int", "messages steals cost"), req("probes", "int", "probes received"), req("slots", "int", "its slots")))

EVENTS = (SPARROW_JOB, SPARROW_PLACED, SPARROW_STEAL, SPARROW_NODEMON)
