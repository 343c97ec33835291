"""SLURM's own events (the shared ones: schedlab.schedulers.events.shared)."""
from __future__ import annotations

from schedlab.schedulers.events.contract import EventType, req

SLURM_START = EventType("slurm_start", "slurmctld started a job", (
    req("job_id", "int", "the job"), req("partition", "str", "its partition"), req("nodes", "int", "nodes allocated"),
    req("backfilled", "bool", "started by backfill"), req("reserved", "float|null", "its reservation's start (null: none)", "s"),
    req("waited", "float", "queued for", "s"), req("first", "bool", "its first start")))
SLURM_END = EventType("slurm_end", "a job ended", (
    req("job_id", "int", "the job"), req("state", "str", "its end state"), req("reason", "str", "why"),
    req("partition", "str", "its partition"), req("account", "str", "its account"), req("nodes", "int", "nodes it had"),
    req("ran", "float", "how long it ran", "s")))
SLURM_QUEUE = EventType("slurm_queue", "slurmctld's queue, sampled", (
    req("queued", "dict", "partition -> jobs queued"), req("running", "int", "jobs running"),
    req("recovering", "bool", "still recovering its state")))
SLURMCTLD_ACTIVE = EventType("slurmctld_active", "a controller became the active slurmctld", (
    req("controller", "str", "the controller"), req("recovering", "bool", "it recovers saved state")))
SLURMCTLD_RESTORED = EventType("slurmctld_restored", "a controller restored its saved state", (
    req("controller", "str", "the controller"), req("jobs", "int", "jobs restored"), req("ended", "int", "of them ended")))
SLURMCTLD_STANDBY = EventType("slurmctld_standby", "a controller went back to standby", (
    req("controller", "str", "the controller"), req("epoch", "int", "the epoch it was active in")))

EVENTS = (SLURM_START, SLURM_END, SLURM_QUEUE, SLURMCTLD_ACTIVE, SLURMCTLD_RESTORED, SLURMCTLD_STANDBY)
