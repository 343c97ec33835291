"""``[workload.css]``: a scenario's workload read from the input files of
CSS (google/cluster-scheduler-simulator, the lightweight simulator of
Schwarzkopf et al., EuroSys 2013), instead of ``[[workload.classes]]``.

```toml
[workload.css]
dir = "css-example"        # CSS's traces/ folder: next to the scenario file, else the copy shipped with schedlab
policy = "cmb_pbb"         # how init-state rows split into batch and service
sampling = "css"           # CSS's quantile-table draws; "empirical": each data point equally likely
```

It makes two job classes, ``batch`` (scheduler id 0) and ``service`` (1),
and the standing load of the initial cell state; what CSS does with the files
and what is reproduced is in ``schedulers.model.css_workload``. Both classes
are finite jobs (CSS's service jobs end after their runtime, so they are not
schedlab's run-forever ``kind = "service"``); ``service`` has a production
priority, ``batch`` a batch one (``batch_priority``, ``service_priority``), so an
architecture that routes jobs by priority band keeps CSS's two workloads apart.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from schedlab.schedulers.model import css_workload as css
from schedlab.schedulers.model.jobs import JobKind
from schedlab.schedulers.model.resources import DEFAULT
from schedlab.schedulers.model.workload import Dist, JobClass, StandingJob
from schedlab.schedulers.scenario.fields import Field, parse_fields
from schedlab.schedulers.scenario.toml_table import Table, positive, read_text

FILES = {  # key -> CSS's own path inside its traces/ folder
    "interarrival": "job-distribution-traces/example_interarrival_cmb.log",
    "tasks": "job-distribution-traces/example_csizes_cmb.log",
    "runtimes": "job-distribution-traces/example_runtimes_cmb.log",
    "init_state": "example-init-cluster-state.log",
}
SHIPPED = Path(__file__).resolve().parents[2] / "scenarios" / "paper"  # where css-example/ ships
TASK_SCALE = 0.7  # CSS multiplies every drawn task shape by this
MAX_CPU, MAX_MEM = 3.9, 15.9  # CSS's caps for its 4-cpu, 16 GB machines


def base_dirs(source: str, shipped: Path = SHIPPED) -> list[Path]:
    """Where a relative input path is looked for: the scenario file's folder
    (``source`` may carry a sweep point's ``[k=v]`` after the path), else the
    current directory; then the folder schedlab ships the input in."""
    path = Path(source.split(" [", 1)[0])
    first = path.parent if path.is_file() else Path.cwd()
    return [first, shipped]


def input_file(t: Table, key: str, shipped: Path = SHIPPED) -> Path:
    """The file ``t[key]`` names, looked for where ``base_dirs`` says, or
    ScenarioError naming the key and where it looked."""
    raw = t.get(key, str, check=lambda v: None if v.strip() else "must not be empty")
    tried = [Path(raw)] if Path(raw).is_absolute() else [b / raw for b in base_dirs(t.source, shipped)]
    for p in tried:
        if p.is_file():
            return p
    t.fail(t.key(key), f"no file {raw!r} (looked in {', '.join(str(p.parent) for p in tried)})")
    raise AssertionError  # fail raises


def _folder(t: Table) -> Path:
    raw = t.get("dir", str, default="css-example", check=lambda v: None if v.strip() else "must not be empty")
    tried = [Path(raw)] if Path(raw).is_absolute() else [b / raw for b in base_dirs(t.source)]
    for d in tried:
        if d.is_dir():
            return d
    t.fail(t.key("dir"), f"no folder {raw!r} (looked in {', '.join(str(d) for d in tried)})")
    raise AssertionError  # fail raises


def _read(t: Table, folder: Path, key: str, reader):  # noqa: ANN001 - one of css_workload's readers
    name = t.get(key, str, default=FILES[key])
    path = folder / name
    text = read_text(path, "CSS input")
    try:
        return reader(text), path
    except css.CssFormatError as e:
        t.fail(t.key(key), f"{path}: {e}")
    raise AssertionError


def _file(key: str, reader: Callable[[str], Any], doc: str) -> Field:
    """A CSS input file in the folder, read (and parsed) in its turn: (data, path)."""
    return Field(key, str, FILES[key], nested=True, read=lambda t, got: _read(t, got["dir"], key, reader),
                 doc=f"{doc}, in the folder.")


# [workload.css], in the order its keys are read (each input file is read
# when its key is).
CSS_FIELDS = (
    Field("dir", str, "css-example", nested=True, read=lambda t, got: _folder(t),
          doc="CSS's traces/ folder: next to the scenario file, else the copy shipped with schedlab."),
    Field("policy", str, "cmb_pbb", choices=css.POLICIES, doc="How the initial cell state's rows split into batch and service."),
    Field("sampling", str, "css", choices=css.SAMPLINGS,
          doc="css: CSS's quantile-table draws; empirical: each data point equally likely."),
    Field("interarrival_scale", float, 1.0, check=positive, doc="Multiplies every drawn interarrival time."),
    Field("task_scale", float, TASK_SCALE, check=positive, doc="Multiplies every drawn task shape (CSS's own factor)."),
    Field("max_cpu", float, MAX_CPU, check=positive, doc="A drawn task's cpu stays below this."),
    Field("max_mem", float, MAX_MEM, check=positive, doc="A drawn task's mem stays below this."),
    Field("prefill_cpu_limit", float, 0.6, check=lambda v: None if 0 < v <= 1 else "must be in (0, 1]",
          schema={"exclusiveMinimum": 0, "maximum": 1}, doc="Share of the cell's cpu the initial state's jobs may take."),
    Field("batch_priority", int, 100, doc="The batch class's priority."),
    Field("service_priority", int, 200, doc="The service class's priority."),
    _file("interarrival", css.read_job_distribution, "Interarrival times per scheduler id"),
    _file("tasks", css.read_job_distribution, "Tasks per job per scheduler id"),
    _file("runtimes", css.read_job_distribution, "Run times per scheduler id"),
    _file("init_state", css.read_init_state, "The initial cell state"),
)


def _dist(t: Table, key: str, path: Path, what: str, make) -> Dist:  # noqa: ANN001 - a () -> Dist
    try:
        return make()
    except ValueError as e:
        t.fail(t.key(key), f"{path}: {what}: {e}")
    raise AssertionError


def read_css(t: Table, resources: tuple[str, ...] = DEFAULT) -> tuple[tuple[JobClass, ...], tuple[StandingJob, ...], float]:
    """The ``[workload.css]`` table as job classes, the initial cell state's
    standing jobs, and the share of the cell's cpu they may take (CSS's
    prefill cpu limit); ScenarioError (one line: file, key, problem). CSS
    knows cpu and mem: a further resource of ``resources`` is 0 in every task."""
    v = parse_fields(t, CSS_FIELDS)
    t.done()
    policy, sampling, ia_scale, task_scale = v["policy"], v["sampling"], v["interarrival_scale"], v["task_scale"]
    caps = {"cpu": v["max_cpu"], "mem": v["max_mem"]}
    limit = v["prefill_cpu_limit"]
    priority = {css.BATCH: v["batch_priority"], css.SERVICE: v["service_priority"]}
    (interarrival, ia_path), (tasks, tasks_path) = v["interarrival"], v["tasks"]
    (runtimes, rt_path), (init, init_path) = v["runtimes"], v["init_state"]
    by_split = css.split(init, policy)

    classes = []
    for sid in interarrival:
        name = css.SCHEDULERS[sid]
        for key, data, path in (("tasks", tasks, tasks_path), ("runtimes", runtimes, rt_path)):
            if sid not in data:
                t.fail(t.key(key), f"{path}: no data points for scheduler id {sid} ({name}), which "
                                   f"{ia_path.name} has interarrival times for")
        shapes = by_split[css.shapes_for(sid, sampling)]
        if not shapes:
            t.fail(t.key("init_state"), f"{init_path}: no {css.SCHEDULERS[css.shapes_for(sid, sampling)]} job "
                                        f"(by {policy}) to draw {name} task shapes from")
        per_task = {"cpu": [j.cpu_per_task for j in shapes], "mem": [j.mem_per_task for j in shapes]}
        request = tuple(_dist(t, "init_state", init_path, f"{name} task {r}",
                              lambda r=r: css.sampler(per_task[r], sampling, task_scale, below=caps[r]))
                        if r in per_task else Dist("constant", value=0.0) for r in resources)
        classes.append(JobClass(
            name=name,
            kind=JobKind.BATCH,  # finite: CSS's service jobs end after their runtime too
            interarrival=_dist(t, "interarrival", ia_path, name, lambda: css.sampler(interarrival[sid], sampling, ia_scale)),
            tasks=_dist(t, "tasks", tasks_path, name, lambda: css.sampler(tasks[sid], sampling)),
            duration=_dist(t, "runtimes", rt_path, name, lambda: css.sampler(runtimes[sid], sampling, above=0.0)),
            request=request,
            priority=priority[sid],
            one_duration=True,
        ))
    standing = tuple(
        StandingJob(css.SCHEDULERS[sid], j.tasks,
                    tuple({"cpu": j.cpu_per_task, "mem": j.mem_per_task}.get(r, 0.0) for r in resources),
                    j.end, priority[sid])
        for j in init for sid in [css.scheduler_of(j, policy)])
    return tuple(classes), standing, limit

