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

from pathlib import Path

from schedlab.schedulers.model import css_workload as css
from schedlab.schedulers.model.jobs import JobKind
from schedlab.schedulers.model.resources import RESOURCES
from schedlab.schedulers.model.workload import Dist, JobClass, StandingJob
from schedlab.schedulers.scenario.toml_table import Table, one_of, positive, read_text

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


def _dist(t: Table, key: str, path: Path, what: str, make) -> Dist:  # noqa: ANN001 - a () -> Dist
    try:
        return make()
    except ValueError as e:
        t.fail(t.key(key), f"{path}: {what}: {e}")
    raise AssertionError


def read_css(t: Table) -> tuple[tuple[JobClass, ...], tuple[StandingJob, ...], float]:
    """The ``[workload.css]`` table as job classes, the initial cell state's
    standing jobs, and the share of the cell's cpu they may take (CSS's
    prefill cpu limit); ScenarioError (one line: file, key, problem)."""
    folder = _folder(t)
    policy = t.get("policy", str, default="cmb_pbb", check=one_of(css.POLICIES))
    sampling = t.get("sampling", str, default="css", check=one_of(css.SAMPLINGS))
    ia_scale = t.get("interarrival_scale", float, default=1.0, check=positive)
    task_scale = t.get("task_scale", float, default=TASK_SCALE, check=positive)
    caps = {"cpu": t.get("max_cpu", float, default=MAX_CPU, check=positive),
            "mem": t.get("max_mem", float, default=MAX_MEM, check=positive)}
    limit = t.get("prefill_cpu_limit", float, default=0.6, check=lambda v: None if 0 < v <= 1 else "must be in (0, 1]")
    priority = {css.BATCH: t.get("batch_priority", int, default=100), css.SERVICE: t.get("service_priority", int, default=200)}
    interarrival, ia_path = _read(t, folder, "interarrival", css.read_job_distribution)
    tasks, tasks_path = _read(t, folder, "tasks", css.read_job_distribution)
    runtimes, rt_path = _read(t, folder, "runtimes", css.read_job_distribution)
    init, init_path = _read(t, folder, "init_state", css.read_init_state)
    t.done()
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
                        if r in per_task else Dist("constant", value=0.0) for r in RESOURCES)
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
                    tuple({"cpu": j.cpu_per_task, "mem": j.mem_per_task}.get(r, 0.0) for r in RESOURCES),
                    j.end, priority[sid])
        for j in init for sid in [css.scheduler_of(j, policy)])
    return tuple(classes), standing, limit

