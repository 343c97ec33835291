"""The shared events: those every architecture writes (jobs, scheduling
attempts, tasks on machines, samples) and those of the machinery every run
has (machine hosts, the coordinator group, faults, the driver). The generic
summary, invariants, tables and reports read only these.

Units: ``s`` is emulated seconds, ``ms`` wall milliseconds. A task is named
``[job, task]``; a placed one ``[job, task, machine]``; a job id is negative
for a standing (prefill) task's job. Each architecture declares its own
events in its ``schedulers/archs/<name>/events.py`` (registered on its
``ArchSpec.events``); ``schedlab.schedulers.events.declared()`` lists all.
"""
from __future__ import annotations

from schedlab.schedulers.events.contract import EventType, opt, req

# ---------------------------------------------------------------- jobs

JOB_SUBMITTED = EventType("job_submitted", "the submitter released a job to the scheduler it is routed to (wait times count from here)", (
    req("job_id", "int", "the job"),
    req("job_class", "str", "its workload class"),
    req("kind", "str", "batch or service"),
    req("tasks", "int", "how many tasks it has", "tasks"),
    req("request", "list", "one task's request, one number per resource dimension"),
    req("scheduler", "str", "the actor it was routed to"),
    opt("models", "list", "any model", "the device models its tasks may run on ([cell] devices)"),
    opt("gang_timeout", "float", "not a gang", "a gang job: how long part of it may be held (its class's gang_timeout)", "s"),
))
JOB_ATTEMPT = EventType("job_attempt", "a scheduler tried to place a job (first=true: its first try, where wait time ends)", (
    req("job_id", "int", "the job"),
    req("attempt", "int", "which try, from 1"),
    req("first", "bool", "the job's first attempt by anyone"),
    req("scheduler", "str", "who tried"),
))
JOB_SCHEDULED = EventType("job_scheduled", "every task of a job is placed (fully scheduled)", (
    req("job_id", "int", "the job"),
    req("scheduler", "str", "who placed its last task"),
    req("attempts", "int", "attempts it took"),
    opt("recovered", "bool", "an original report: the job was placed before this event's writer took over",
        "re-reported by a scheduler that restarted or took over and found it placed (the summary prefers originals)"),
))
JOB_PENDING = EventType("job_pending", "at the end of the run the job still waits for some of its tasks to be placed", (
    req("job_id", "int", "the job"),
    req("scheduler", "str", "who holds it"),
    req("unplaced", "int", "tasks still unplaced", "tasks"),
    opt("attempts", "int", "the scheduler does not count attempts", "attempts made"),
    opt("orphaned", "bool", "its scheduler reported it", "true: its scheduler was dead at the end; the submitter reports it"),
    opt("in_flight", "bool", "its scheduler had it", "true: its delivery was still unanswered at the end (a paused or slowed "
        "scheduler); the submitter reports it"),
    opt("deposed", "bool", "its scheduler was leading at the end", "true: reported by a deposed leader"),
    opt("evicting", "bool", "no eviction is under way for it", "true: waiting for victims it preempted to go"),
))
JOB_ABANDONED = EventType("job_abandoned", "a scheduler gave up on a job for good", (
    req("job_id", "int", "the job"),
    req("scheduler", "str", "who gave up"),
    opt("attempts", "int", "the scheduler does not count attempts", "attempts made"),
    opt("unplaced", "int", "the reason says what was left", "tasks left unplaced", "tasks"),
    opt("reason", "str", "it ran out of attempts", "why"),
    opt("recovered", "bool", "an original report", "true: re-reported after a restart"),
))
JOB_REJECTED = EventType("job_rejected", "a job was refused at admission (over quota, no partition, full, ...)", (
    req("job_id", "int", "the job"),
    req("reason", "str", "why"),
    opt("scheduler", "str", "the front end that refused it does not schedule", "who refused it"),
    opt("gave_up_at", "float", "refused when logged", "when its client gave up (logged later, once no server was found to hold it)", "s"),
))
JOBS_FINAL = EventType("jobs_final", "a replicated control plane's last leader's record of every job's fate "
                       "(covers jobs whose own events died with a killed leader)", (
    req("scheduled", "list", "job ids fully placed"),
    req("queued", "list", "job ids still waiting"),
))

# ---------------------------------------------------------------- scheduling attempts

TXN = EventType("txn", "one scheduling decision and its outcome: claims made, committed and, where the state is shared, refused", (
    req("scheduler", "str", "who decided"),
    req("job_id", "int", "the job (-1: a decision over many jobs, e.g. a negotiation cycle)"),
    req("claims", "int", "tasks it tried to place", "tasks"),
    req("committed", "int", "of them placed", "tasks"),
    opt("conflicted", "int", "0: nothing can conflict (one decider owns the state it decides on)",
        "of them refused by the shared state's commit", "tasks"),
    req("think", "float", "time spent deciding (busyness)", "s"),
    opt("span", "float", "the attempt took its think time only", "the whole attempt, sync and commit included; it began at t - span", "s"),
    opt("rtt_ms", "float", "0: no commit round trip (the decider commits where it decides)", "the commit's round trip", "ms"),
    req("placed", "list", "[task, machine] per placed task"),
    opt("outbox", "str", "the hosts pull their launches from the decider's state store",
        "the actor holding the launches until their hosts pull them (a kill there loses them)"),
    opt("priority", "int", "the scheduler has no priorities", "the job's priority"),
    opt("held", "int", "no offers were held", "offers the framework kept for later"),
    opt("reused", "bool", "a fresh claim", "true: started on a claim reused from an earlier job"),
    opt("reason", "str", "not refused", "why the claim was refused"),
    opt("cycle", "int", "not a negotiation cycle", "the negotiation cycle's number"),
))
PREEMPTED = EventType("preempted", "running work was evicted to place other work; one event per decision (victims) "
                      "or per victim (its own job and task)", (
    opt("job_id", "int", "the event names an application (app)", "the preempting job (victims given) or the victim's job"),
    opt("priority", "int", "no priorities", "its priority"),
    opt("victims", "list", "the event is about one victim, named by its own fields", "[job, task, machine] per evicted task"),
    opt("scheduler", "str", "the core's own event", "who preempted"),
    opt("task", "int", "a decision over victims", "the victim task"),
    opt("by_job", "int", "not said", "the preemptor's job"),
    opt("by_task", "int", "not said", "the preemptor's task"),
    opt("by_priority", "int", "not said", "the preemptor's priority"),
    opt("node", "int", "not said", "the victim's machine"),
    opt("app", "int", "named by job_id", "the victim's application"),
    opt("container", "int", "not a container", "the victim container"),
    opt("queue", "str", "no queues", "the victim's leaf queue"),
    opt("am", "bool", "not a container", "the victim was an application master"),
    opt("at", "float", "at t", "when the core decided", "s"),
))
SCHEDULER_START = EventType("scheduler_start", "a scheduler or framework started", (
    opt("seed", "int", "it draws no random numbers", "its random seed"),
    opt("policy", "str", "the default", "its placement policy"),
    opt("framework", "str", "not a framework", "the framework's name"),
    opt("mode", "str", "not a framework", "how it takes offers"),
))
SCHEDULER_RECOVERED = EventType("scheduler_recovered", "a restarted or new leading scheduler rebuilt its jobs from durable state", (
    req("jobs", "int", "jobs it rebuilt"),
    opt("already_placed", "int", "not counted", "of them already placed"),
    opt("queued", "int", "not counted", "of them queued again"),
    opt("requeued", "int", "not counted", "of them requeued"),
    opt("running", "int", "not counted", "of them running"),
    opt("finished", "int", "not counted", "of them finished"),
    opt("idle", "int", "not counted", "of them idle"),
    opt("replaced", "int", "not counted", "tasks placed again"),
    opt("scheduled", "int", "not counted", "of them scheduled"),
))
RECOVER_FAILED = EventType("recover_failed", "handing a restarted scheduler its jobs failed", (
    req("scheduler", "str", "the scheduler"),
    req("error", "str", "what failed"),
))
COMMITS_DROPPED = EventType("commits_dropped", "a control plane that stopped leading or stopped with the run, "
                            "or whose host re-registered without them, dropped launches no host had pulled", (
    req("holder", "str", "who held them"),
    opt("epoch", "int", "the reason says why", "the epoch it led in"),
    opt("reason", "str", "it was deposed", "why ('run ended': still held for their hosts when the run stopped; "
                                              "'agent re-registered': its host came back without them)"),
    req("tasks", "list", "[job, task, machine] per dropped launch"),
    opt("from_disk", "bool", "the holder was alive at the end", "the holder was a replica dead at the end, its "
                                                                "state replayed from its disk by the driver"),
))
WRITTEN_OFF_FINAL = EventType("written_off_final", "a replicated control plane's record of placements taken back "
                              "(machine written off, preempted before launch)", (
    req("tasks", "list", "[job, task, machine, at_s] per placement taken back"),
))
NODE_REGISTERED = EventType("node_registered", "a machine host registered with a (new) controller, reporting its running tasks", (
    req("host", "int", "the host actor"),
    req("tasks", "int", "tasks it runs", "tasks"),
))

# ---------------------------------------------------------------- tasks on machines

TASKS_LAUNCHED = EventType("tasks_launched", "a host started tasks", (
    req("host", "int", "the host actor"),
    req("prefill", "bool", "standing tasks of the prefill, not the workload"),
    req("tasks", "list", "[job, task, machine, *request, start_s] per task"),
))
TASKS_COMPLETED = EventType("tasks_completed", "tasks finished on a host", (
    req("host", "int", "the host actor"),
    req("tasks", "list", "[job, task, machine, end_s] per task"),
))
TASKS_KILLED = EventType("tasks_killed", "a host killed tasks (preempted, revoked, written off)", (
    req("host", "int", "the host actor"),
    req("tasks", "list", "[job, task, machine] per task"),
    opt("reason", "str", "killed on a scheduler's command", "why (written_off: the host was written off)"),
))
TASKS_LOST = EventType("tasks_lost", "a scheduler learned tasks were lost (machine down, revoked, never pulled) and requeued their jobs", (
    req("framework", "str", "the scheduler that lost them"),
    req("reason", "str", "why (machine_down, revoked, ...)"),
    req("tasks", "list", "[job, task] per task"),
    req("requeued_jobs", "list", "job ids queued again"),
))
GANG_RELEASED = EventType("gang_released", "part of a gang that held room while waiting for the rest let go of it "
                          "(its wait timed out, or a member was rejected); the gang is tried again", (
    req("job_id", "int", "the gang's job"),
    req("tasks", "int", "tasks of it that let go", "tasks"),
    req("scheduler", "str", "who held them"),
))
MACHINES_DOWN = EventType("machines_down", "host actors were written off (silent too long) or rejoined as new", (
    req("hosts", "list", "host actor indices"),
    req("tasks_lost", "int", "tasks running there", "tasks"),
    req("lost", "list", "[job, task] per task running there"),
    req("unpulled", "int", "launches never pulled", "tasks"),
    opt("timeout_s", "float", "the host's own rejoin (no watcher judged it)", "how long a silence the watcher allowed", "s"),
))
HOST_RESET = EventType("host_reset", "a written-off host learned it was and dropped its tasks", (
    req("host", "int", "the host actor"),
    req("tasks", "int", "tasks it dropped", "tasks"),
))
OVERCOMMIT = EventType("overcommit", "a host found a machine used beyond its capacity (an invariant violation)", (
    req("machine", "int", "the machine"),
    req("used", "list", "its use per dimension"),
    req("capacity", "list", "its capacity per dimension"),
))
DOUBLE_LAUNCH = EventType("double_launch", "a host was asked to start a task already running (an invariant violation)", (
    req("job_id", "int", "the job"),
    req("task", "int", "the task"),
    req("machine", "int", "the machine"),
))
EXCHANGE_FAILED = EventType("exchange_failed", "a host's exchange with its control plane failed (it retries)", (
    req("host", "int", "the host actor"),
    req("error", "str", "what failed"),
))
WATCH_DISRUPTED = EventType("watch_disrupted", "a host watcher entered or left disruption mode (too many silent hosts to write off)", (
    req("on", "bool", "entered (true) or left"),
    req("silent", "int", "silent hosts"),
    req("live", "int", "live hosts"),
    req("share", "float", "the silent share that triggers it"),
))
CELL_SAMPLE = EventType("cell_sample", "the cell's utilization, sampled", (
    req("cpu", "float", "share of cpu in use (0..1)"),
    req("mem", "float", "share of memory in use (0..1)"),
    opt("more", "list", "the cell declares only cpu and mem",
        "share in use (0..1) of each further resource [cell] resources declares, in its order"),
    req("version", "int", "the state's version (commits so far)"),
))

# ---------------------------------------------------------------- the run's machinery

ACTOR_STARTED = EventType("actor_started", "an actor (or a restarted incarnation) started", ())
ACTOR_LOST = EventType("actor_lost", "an actor died before the driver stopped it", (
    req("lost", "str", "which (its Ray actor id; before this field existed the id was written as ``actor`` and overwritten by the stamp)"),
    req("error", "str", "how it was lost"),
))
LOOP_CRASHED = EventType("loop_crashed", "an actor's background loop raised", (
    req("loop", "str", "which loop"),
    req("error", "str", "the exception"),
))
FAULT = EventType("fault", "a fault was carried out (or skipped)", (
    req("at_s", "float|null", "when it was due (null: noticed, not planned, e.g. a node that died)", "s"),
    req("kind", "str", "the action: kill, restart, pause, slow, partition, kill_leader, node_down, ..."),
    req("target", "str|list|null", "whom (a partition: one side)"),
    opt("source", "str", "noticed by the driver, not planned", "who asked: plan, chaos script, monkey"),
    opt("role", "str", "not known", "the target's role"),
    opt("node", "str", "not a node's death", "the cluster node"),
    opt("was_leader", "bool", "the role elects no leader", "the target led its role"),
    opt("term", "int|null", "the role elects no leader", "the leader's term when killed"),
    opt("restart_after_s", "float", "not restarted", "back after", "s"),
    opt("duration_s", "float", "not a timed fault", "how long", "s"),
    opt("delay_s", "float", "not a slow-down", "added latency", "s"),
    opt("peer", "list", "not a partition", "the partition's other side"),
    opt("skipped", "str", "carried out", "why it was not carried out"),
    opt("waited_s", "float", "on time", "how late (waited for a leader)", "s"),
    opt("took", "list", "not a node kill", "the actors placed on the killed node and running then (each dies with it)"),
))
FAILOVER = EventType("failover", "a role whose leader was killed has a new leader", (
    req("role", "str", "the role"),
    req("old_leader", "str", "the killed leader"),
    req("new_leader", "str", "its successor"),
    req("term", "int", "the successor's term or epoch"),
))
RAFT_ROLE = EventType("raft_role", "a coordinator replica changed role", (
    req("replica", "int", "the replica"),
    req("term", "int", "its term"),
    req("role", "str", "follower, candidate or leader"),
    req("leader", "int|null", "the leader it knows"),
    req("commit_index", "int", "its commit index"),
))
REPLICA_START = EventType("replica_start", "a coordinator replica started (or restarted from its disk)", (
    req("replica", "int", "the replica"),
    req("term", "int", "its term"),
    req("log_last", "int", "its last log index"),
))
COORD_ACK = EventType("coord_ack", "a client's write to the coordinator group was acknowledged", (
    req("client", "str", "the writer"),
    req("request_id", "int", "its request"),
    req("kind", "str", "what was written (commit, ...)"),
    req("replica", "int", "the replica that answered"),
    req("tries", "int", "attempts it took"),
))

EVENTS: tuple[EventType, ...] = tuple(v for v in globals().values() if isinstance(v, EventType))
