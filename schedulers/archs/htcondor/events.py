"""HTCondor's own events (the shared ones: schedlab.schedulers.events.shared)."""
from __future__ import annotations

from schedlab.schedulers.events.contract import EventType, opt, req

NEGOTIATION_CYCLE = EventType("negotiation_cycle", "the negotiator ran one cycle", (
    req("cycle", "int", "its number"), req("duration", "float", "how long it took", "s"), req("matches", "int", "matches made"),
    req("rejected", "int", "jobs left unmatched"), req("evaluations", "int", "requirement evaluations"),
    req("users", "int", "users considered"), req("pie_spins", "int", "pie spins"), req("idle_jobs", "int", "idle jobs"),
    req("slots", "int", "slots"), req("unclaimed", "int", "unclaimed slots"), req("ignored", "int", "slots ignored"),
    req("users_eup", "dict", "user -> effective user priority")))
JOB_MATCHED = EventType("job_matched", "a schedd heard of a match for a job", (
    req("key", "str", "the job (job.task)"), req("slot", "str", "the slot"), req("wait", "float", "since submission", "s"),
    req("cycle_match", "str", "the cycle and match")))
CLAIM_ACTIVATED = EventType("claim_activated", "a schedd activated a claim on a slot", (
    req("key", "str", "the job (job.task)"), req("slot", "str", "the slot"), req("reused", "bool", "a claim kept from an earlier job"),
    req("match_to_start", "float|null", "from match to start (null: no match, a reused claim)", "s")))
CLAIM_REFUSED = EventType("claim_refused", "a startd refused a claim", (
    req("key", "str", "the job (job.task)"), req("slot", "str", "the slot"), req("reason", "str", "why")))
JOB_EXITED = EventType("job_exited", "a job exited on its slot", (
    req("slot", "str", "the slot"), req("key", "str", "the job (job.task)"), req("schedd", "str", "its schedd"),
    req("ran", "float", "how long it ran (goodput)", "s")))
JOB_VACATED = EventType("job_vacated", "a job was vacated from its slot", (
    req("slot", "str", "the slot"), req("key", "str", "the job (job.task)"), req("schedd", "str", "its schedd"),
    req("ran", "float", "how long it had run (badput)", "s"), opt("reason", "str", "its owner came back", "why")))
JOB_SUSPENDED = EventType("job_suspended", "a job was suspended (its slot's owner came back)", (
    req("slot", "str", "the slot"), req("key", "str", "the job (job.task)"), req("schedd", "str", "its schedd")))
JOB_RESUMED = EventType("job_resumed", "a suspended job resumed", (
    req("slot", "str", "the slot"), req("key", "str", "the job (job.task)"), req("left", "float", "work left", "s")))
JOB_REQUEUED = EventType("job_requeued", "a schedd queued a vacated job again", (
    req("key", "str", "the job (job.task)"), req("ran", "float", "how long it had run", "s"), req("slot", "str", "the slot it left")))
SCHEDD_STATS = EventType("schedd_stats", "a schedd's totals at the end", (
    req("goodput", "float", "work that completed", "s"), req("badput", "float", "work lost to vacates", "s"),
    req("completed", "int", "jobs completed"), req("vacated", "int", "jobs vacated"), req("reuses", "int", "claims reused"),
    req("refusals", "dict", "reason -> claims refused")))
STARTD_COUNTS = EventType("startd_counts", "a startd's counters at the end", (
    req("host", "int", "the host actor"), req("suspended", "int", "suspensions"), req("vacated", "int", "vacates"),
    req("resumed", "int", "resumes"), req("owner_returns", "int", "owner returns"),
    req("stale_notifications", "int", "notifications about claims already gone")))

EVENTS = (NEGOTIATION_CYCLE, JOB_MATCHED, CLAIM_ACTIVATED, CLAIM_REFUSED, JOB_EXITED, JOB_VACATED, JOB_SUSPENDED,
          JOB_RESUMED, JOB_REQUEUED, SCHEDD_STATS, STARTD_COUNTS)
