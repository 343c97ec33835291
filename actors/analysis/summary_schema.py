"""What summary.json holds: every key ``summarize`` writes, its type, unit and
meaning, declared once. The reference page (``api.reference``) is made from
it, and a test holds it to what a run writes, both ways (a key written and
not declared, or declared and not written).

A path is dotted; ``[]`` is every item of a list, ``<name>`` every key of a
map (a job class, a role). The architecture's own section (its name as the
key) is its package's to describe, on its page."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SummaryKey:
    path: str
    type: str  # "int", "float", "str", "bool", "list", "dict", "null", or unions "float|null"
    meaning: str
    unit: str = ""


_WAIT = {"p50": "median", "p90": "90th percentile", "p99": "99th percentile"}


def _waits(path: str, what: str) -> tuple[SummaryKey, ...]:
    return tuple(SummaryKey(f"{path}.{p}", "float|null", f"{what}: {word} (none when no job got that far)", "emulated s")
                 for p, word in _WAIT.items())


SUMMARY: tuple[SummaryKey, ...] = (
    SummaryKey("scenario", "str", "The scenario's name."),
    SummaryKey("architecture", "str", "The architecture the cell ran."),
    SummaryKey("engine", "str", "ray (live) or sim (virtual clock)."),
    SummaryKey("seed", "int", "The seed every random draw derived from."),
    SummaryKey("time_scale", "float", "Emulated seconds per wall second (a live run's pace).", "emulated s per wall s"),
    SummaryKey("emulated_seconds", "float", "How long the run lasted.", "emulated s"),
    SummaryKey("wall_seconds", "float", "How long it took: live, measured; on sim, what it would have taken live "
               "(the virtual clock's), so the file is the same on every machine.", "wall s"),
    SummaryKey("cell.machines", "int", "Machines in the cell."),
    SummaryKey("cell.machines_per_actor", "int", "Machines one host actor carried."),
    SummaryKey("cell.host_actors", "int", "Host actors started for them."),
    SummaryKey("cell.resources", "list", "Its resource dimensions ([cell] resources): cpu, mem, then any others."),
    SummaryKey("jobs.submitted", "int", "Jobs submitted: submitted = scheduled + abandoned + pending + rejected."),
    SummaryKey("jobs.scheduled", "int", "Jobs with every task placed."),
    SummaryKey("jobs.completed", "int", "Scheduled jobs whose tasks all finished."),
    SummaryKey("jobs.abandoned", "int", "Jobs their scheduler gave up on."),
    SummaryKey("jobs.pending", "int", "Jobs still queued when the run ended."),
    SummaryKey("jobs.rejected", "int", "Jobs refused at admission (a quota, a full queue)."),
    SummaryKey("jobs.failed", "int", "Jobs failed (none in the shared model: the architecture's section says where it has some)."),
    SummaryKey("jobs.prefill_tasks", "int", "Tasks of the standing load placed before the run ([workload] prefill_utilization)."),
    *_waits("wait_time_s.first_attempt", "Submission to the first scheduling attempt (the papers' job wait time)"),
    *_waits("wait_time_s.fully_scheduled", "Submission to the last task placed"),
    *_waits("wait_time_s.by_class.<class>.first_attempt", "The same, for the job class"),
    *_waits("wait_time_s.by_class.<class>.fully_scheduled", "The same, for the job class"),
    SummaryKey("schedulers[].name", "str", "A scheduler (decider) of the architecture."),
    SummaryKey("schedulers[].busyness", "float", "Share of the run it spent thinking (the papers' busyness).", "fraction"),
    SummaryKey("schedulers[].occupancy", "float", "Busyness plus the sync and commit round trips: how much of the run "
               "it was unavailable.", "fraction"),
    SummaryKey("schedulers[].conflict_fraction", "float|null", "Transactions with a conflict per transaction that "
               "committed something (none when every one conflicted)."),
    SummaryKey("schedulers[].transactions.committed", "int", "Transactions that committed at least one claim."),
    SummaryKey("schedulers[].transactions.conflicted", "int", "Transactions with at least one conflicted claim "
               "(one can be both)."),
    SummaryKey("schedulers[].claims.committed", "int", "Claims (a task on a machine) committed."),
    SummaryKey("schedulers[].claims.conflicted", "int", "Claims refused as conflicting."),
    SummaryKey("schedulers[].attempts", "int", "Scheduling attempts (transactions) made."),
    SummaryKey("schedulers[].commit_rtt_wall_ms_p50", "float|null", "Median round trip of a commit.", "wall ms"),
    SummaryKey("utilization.cpu_mean", "float|null", "Mean share of the cell's cpu in use, sampled every "
               "[metrics] sample_interval.", "fraction"),
    SummaryKey("utilization.mem_mean", "float|null", "The same for memory.", "fraction"),
    SummaryKey("utilization.by_resource.<resource>", "float|null", "The same for each resource of cell.resources.", "fraction"),
    SummaryKey("utilization.samples", "int", "Samples taken."),
    SummaryKey("devices", "object|null", "The resource [cell] devices holds as devices, measured over the run from the "
               "tasks' launches and ends (actors.analysis.devices; null: no [cell] devices)."),
    SummaryKey("devices.resource", "str", "Its name."),
    SummaryKey("devices.devices", "int", "Devices in the cell.", "devices"),
    SummaryKey("devices.allocated_mean", "float|null", "Mean share of them held by tasks (a share of one counts its "
               "fraction).", "fraction"),
    SummaryKey("devices.unallocated_mean", "float", "Mean devices' worth free.", "devices"),
    SummaryKey("devices.fragmented_mean", "float", "Mean devices' worth free on machines where a typical task of the "
               "run asking for devices cannot use them (Weng et al., ATC 2023: the expectation over the run's task "
               "shapes).", "devices"),
    SummaryKey("devices.fragmented_share_mean", "float|null", "The same as a share of all devices.", "fraction"),
    SummaryKey("inflation", "object|null", "A workload-inflation run ([workload.inflate]): the counted resource's "
               "allocation as arrivals that never leave pile up (actors.analysis.inflation; null: not one)."),
    SummaryKey("inflation.resource", "str", "The resource whose demand is counted."),
    SummaryKey("inflation.until", "float", "Arrivals stopped once their demand reached this multiple of the cell's."),
    SummaryKey("inflation.arrived", "float", "The demand that arrived within the run, as a share of the cell's.",
               "fraction"),
    SummaryKey("inflation.unallocated_at_full", "float|null", "The share of the cell's resource left unallocated when "
               "the arrived demand reached 100% (null: it never did within the run).", "fraction"),
    SummaryKey("inflation.unallocated_at_end", "float", "The same at the end of the run.", "fraction"),
    SummaryKey("trace", "object|null", "A replayed trace that recorded its real scheduling ([workload.trace]): "
               "the trace's waits and placements beside the replay's, a reference line, not a fidelity claim "
               "(actors.analysis.trace_reference; null: not one)."),
    SummaryKey("trace.by_class.<class>.jobs", "int", "The class's replayed jobs with recorded start times."),
    *_waits("trace.by_class.<class>.recorded_s", "Submission to the last task's first start, as the trace recorded it"),
    *_waits("trace.by_class.<class>.replayed_s", "Submission to every task placed, in this run"),
    SummaryKey("trace.tasks_compared", "int", "Tasks placed in the run whose machine the trace recorded."),
    SummaryKey("trace.same_machine", "float|null", "The share of them placed on the machine the trace recorded "
               "(null: none compared).", "fraction"),
    SummaryKey("gangs", "object|null", "Gang jobs (job classes with gang = true), from the events "
               "(actors.analysis.gangs; null: no gang class)."),
    SummaryKey("gangs.jobs", "int", "Gang jobs submitted."),
    SummaryKey("gangs.scheduled", "int", "Of those, fully placed."),
    SummaryKey("gangs.pending", "int", "Still waiting at the end: starved, or dead-locked against each other."),
    SummaryKey("gangs.start_spread_s.p50", "float|null", "Median time between a whole gang's first and last task "
               "starts (hosts' poll delay for one started together).", "emulated s"),
    SummaryKey("gangs.start_spread_s.max", "float|null", "The largest such spread.", "emulated s"),
    SummaryKey("gangs.releases", "int", "gang_released events: part of a gang that held room let go after its "
               "gang_timeout (repeated: a livelock)."),
    SummaryKey("gangs.released_tasks", "int", "Tasks' holds let go in them.", "tasks"),
    SummaryKey("gangs.released_jobs", "int", "Gang jobs that let go at least once."),
    SummaryKey("devices.by_model.<model>", "object", "The same numbers for each device model's machines ('-': classes "
               "naming no model)."),
    SummaryKey("substrate.rtt_wall_ms_p50", "float", "The engine's actor round trip, measured at the start: median.", "wall ms"),
    SummaryKey("substrate.rtt_wall_ms_p90", "float", "Its 90th percentile.", "wall ms"),
    SummaryKey("substrate.rtt_emulated_s_p50", "float", "The median in emulated time.", "emulated s"),
    SummaryKey("failovers", "list", "One record per leader kill: when it died, when a successor was elected, when "
               "clients were served again (the coordinator's and the architecture's own; see the concepts page)."),
    SummaryKey("faults", "list", "Every fault injected, by the scenario or chaos: at_s, kind, target, role, source, "
               "and what applies (duration_s, delay_s, peer, restart_after_s, was_leader, node, took, skipped)."),
    SummaryKey("invariants.overcommit", "int", "Launches that took a machine over its capacity."),
    SummaryKey("invariants.double_placement", "int", "Tasks running on two machines at once."),
    SummaryKey("invariants.lost_jobs", "int", "Submitted jobs not accounted for."),
    SummaryKey("invariants.split_brain", "int", "Terms in which two replicas were leader."),
    SummaryKey("invariants.lost_commits", "int", "Committed claims that reached no machine, no loss and no dead host; "
               "plus acknowledged coordinator writes missing from a surviving replica."),
    SummaryKey("invariants.applied_twice", "int", "Client requests applied at two log indices on one replica."),
    SummaryKey("invariants.collateral", "int", "Tasks written off on machines no fault touched."),
    SummaryKey("invariants.crashed_loops", "int", "Actors' background loops that died of an error."),
    SummaryKey("coordinator.replicas", "int", "Coordinator replicas (1: the plain cell-state actor)."),
    SummaryKey("coordinator.acknowledged_writes", "int", "Writes a client saw acknowledged."),
    SummaryKey("coordinator.leader_terms", "int", "Raft terms that had a leader."),
    SummaryKey("placement", "dict|null", "On a multi-node Ray cluster: the nodes, and which node each machine host ran on."),
    SummaryKey("warnings", "list", "What the run warns of (a think time shorter than the substrate's round trip, a "
               "Raft timer raised to its wall floor)."),
    SummaryKey("events", "int", "Events the run wrote."),
    SummaryKey("namespace", "str", "The run's Ray namespace (what `schedlab chaos --namespace` joins)."),
    SummaryKey("actors.<role>", "list", "The actors the run started first, by role (the roster faults can name)."),
)
