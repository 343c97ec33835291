"""schedlab from Python: run a scenario, or open a finished run, and read
its tables.

    import schedlab

    run = schedlab.run("quickstart", engine="sim", seed=3, duration=600,
                       overrides={"metrics.sample_interval": 2.0})
    run.summary["jobs"]["scheduled"]      # summary.json, as a dict
    jobs = run.jobs()                     # one row per job (a Table)
    df = jobs.to_pandas()                 # with the analysis extra: pip install 'schedlab[analysis]'

    old = schedlab.load("runs/quickstart-20261122-150000")   # any run directory

``schedlab.run``, ``schedlab.load`` and ``schedlab.Run`` are these, reached
lazily from the package root (importing schedlab imports neither Ray nor
this module). The tables and what each column means are in
``schedlab.actors.analysis.tables``; ``table.describe()`` prints them.
"""
from __future__ import annotations

import copy
import json
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from schedlab.actors.analysis import tables
from schedlab.actors.analysis.run_info import RunSetup
from schedlab.actors.analysis.saved_run import NotARun
from schedlab.actors.common.event_files import EVENT_FILES, events_file, export_jsonl, read_events
from schedlab.api import kinds
from schedlab.schedulers.scenario.parse import Scenario, ScenarioError, parse_comparison
from schedlab.schedulers.scenario.toml_table import read_text

__all__ = ["NotARun", "Run", "ScenarioError", "load", "run"]

TABLES = ("jobs", "tasks", "samples", "devices", "events")


class Run:
    """A finished run: its directory (``path``) and the tables read from
    its files. ``schedlab.run`` returns one; ``Run.open(path)`` (or
    ``schedlab.load``) opens any run directory a ``schedlab run``, compare
    or sweep wrote.

    A Run made by ``schedlab.run`` without ``out=`` lives in a temporary
    directory that is deleted when the Run is garbage collected (or the
    interpreter exits): pass ``out=`` to keep the files, or ``export`` the
    tables you want."""

    def __init__(self, path: str | Path, summary: dict | None = None, _tmp: tempfile.TemporaryDirectory | None = None) -> None:
        self.path = Path(path)
        self._summary = summary
        self._tmp = _tmp  # kept alive as long as the Run: it deletes the directory when collected
        self._events: list[dict] | None = None

    @classmethod
    def open(cls, path: str | Path) -> Run:
        """The run in directory ``path``; NotARun (one line) when it has no
        run.json and events.jsonl."""
        d = Path(path)
        kind = kinds.of_out(d)
        if kind.execute is None:  # several runs: open each
            raise NotARun(f"{d}: {kind.what}, not one run: open one of {', '.join(p.name for p in kinds.comparison_runs(d))}")
        return cls(d)

    def sites(self) -> dict[str, Run]:
        """A federation's sites by name, each a run of its own (its tables
        are theirs); empty for one cell."""
        if not kinds.kind("federation").fn("is_out")(self.path):
            return {}
        from schedlab.actors.federation.saved_run import site_dirs

        return {d.name: Run(d, None, self._tmp) for d in site_dirs(self.path)}  # they live in its directory

    def __repr__(self) -> str:
        try:
            s = self.summary
        except NotARun:
            return f"<Run (unfinished) at {self.path}>"
        return f"<Run {s['scenario']} ({s.get('architecture', s.get('kind'))}, {s['engine']}, seed {s['seed']}) at {self.path}>"

    @property
    def summary(self) -> dict:
        """summary.json as a dict (every key: docs/reference/summary.md)."""
        if self._summary is None:
            f = self.path / "summary.json"
            if not f.is_file():
                raise NotARun(f"{f}: missing (the run did not finish)")
            try:
                self._summary = json.loads(read_text(f, "summary.json"))
            except (ScenarioError, ValueError) as e:
                raise NotARun(f"{f}: not a summary ({type(e).__name__}: {e})") from None
        return self._summary

    def _read_events(self) -> list[dict]:
        if self._events is None:
            if self.sites():
                raise NotARun(f"{self.path}: a federation: its tables are its sites' (Run.sites())")
            f = self.path
            try:
                f = events_file(self.path)
                self._events = read_events(f)
            except (OSError, UnicodeDecodeError, ValueError) as e:
                raise NotARun(f"{f}: not UTF-8 JSON lines ({type(e).__name__}: {str(e)[:200]})") from None
        return self._events

    def events(self) -> tables.Table:
        """Every event (t, event, actor, fields), in file order."""
        return tables.events_table(self._read_events())

    def jobs(self) -> tables.Table:
        """One row per submitted job: class, submit, first attempt, fully
        scheduled, completion, tasks, attempts, claims, conflicts,
        preemptions, status (``tables.JOBS`` defines each)."""
        return tables.jobs(self._read_events())

    def tasks(self) -> tables.Table:
        """One row per task launch, with how it ended (``tables.TASKS``)."""
        return tables.tasks(self._read_events())

    def samples(self) -> tables.Table:
        """The utilization time series within the run (``tables.SAMPLES``):
        its mean cpu is the summary's utilization.cpu_mean."""
        try:
            duration = self.summary["emulated_seconds"]
        except NotARun:  # a run that did not finish: every sample from t = 0
            duration = None
        return tables.samples(self._read_events(), duration)

    def devices(self) -> tables.Table:
        """Device allocation and fragmentation over the run, per model
        (``tables.DEVICES``; empty when the cell has no [cell] devices):
        their means are the summary's ``devices``."""
        try:
            setup = RunSetup.read(self.path / "run.json")
            duration = self.summary["emulated_seconds"]
        except (OSError, ValueError, KeyError, TypeError, ScenarioError) as e:
            raise NotARun(f"{self.path}: no run.json and summary.json to measure devices by ({type(e).__name__}: {e})") from None
        return tables.devices(self._read_events(), setup.cell(), duration)

    def table(self, name: str) -> tables.Table:
        """A table by name: jobs, tasks, samples, devices or events."""
        if name not in TABLES:
            raise ValueError(f"no table {name!r} (one of {', '.join(TABLES)})")
        return getattr(self, name)()

    def export(self, out: str | Path | None = None, fmt: str = "csv", which: tuple[str, ...] = TABLES) -> list[Path]:
        """Write the tables as ``<name>.csv`` or ``<name>.parquet`` into
        ``out`` (default: the run's directory); returns the files. Parquet
        needs pyarrow (the analysis extra); ImportError says so before
        anything is written. ``fmt="jsonl"`` writes the events alone, as
        plain JSON lines (``events.jsonl``: a compressed run's events
        decompressed, line for line); ``which`` does not apply."""
        if fmt == "jsonl":
            dest = Path(out) if out is not None else self.path
            dest.mkdir(parents=True, exist_ok=True)
            src = events_file(self.path)
            if src.resolve() == (dest / EVENT_FILES["jsonl"]).resolve():
                return [src]  # already plain, where asked
            export_jsonl(self.path, dest / EVENT_FILES["jsonl"])
            return [dest / EVENT_FILES["jsonl"]]
        if fmt not in tables.FORMATS:
            raise ValueError(f"unknown format {fmt!r} (one of {', '.join(tables.FORMATS)})")
        if fmt == "parquet":
            tables.need("pyarrow.parquet")
        dest = Path(out) if out is not None else self.path
        dest.mkdir(parents=True, exist_ok=True)
        return [self.table(name).write(dest / f"{name}.{fmt}", fmt) for name in which]


def load(path: str | Path) -> Run:
    """The run in directory ``path`` (``Run.open``)."""
    return Run.open(path)


def run(scenario: str | Path | Mapping[str, Any], *, engine: str | None = None, seed: int | None = None,
        out: str | Path | None = None, overrides: Mapping[str, Any] | None = None, address: str | None = None,
        **settings: Any) -> Run:
    """Run one scenario and return the finished Run.

    ``scenario``: a TOML file's path, the name of a shipped one
    (``"quickstart"``, ``"paper/omega_service_tjob"``), or the scenario
    itself as a dict shaped like the TOML; a federation file (``[[sites]]``)
    runs all its sites, whose tables the Run's ``sites()`` hold. ``engine``: ``"sim"`` (virtual
    clock, deterministic, no Ray) or ``"ray"`` (live); default the
    scenario's own (``ray`` unless it says). ``seed`` overrides the
    scenario's. ``**settings`` set top-level keys (``duration=600``,
    ``time_scale=20``; ``architecture=NAME`` picks one architecture of a
    comparison file); ``overrides`` sets any value by its dotted path, as
    ``--set`` does, arrays by index, the value as given:
    ``{"workload.classes.0.cpu": 2.0, "workload.prefill_utilization": 0.5}``.
    ``out``: the run directory (default: a temporary one, see ``Run``);
    ``address``: a Ray cluster to join (live engine only).

    Every input is checked before anything starts: ScenarioError (one line:
    file, key, problem) for a bad one. A live run that cannot reach its
    cluster raises ``schedlab.actors.engines.ClusterUnreachable``."""
    kind, spec = prepare(scenario, engine=engine, seed=seed, overrides=overrides, address=address, **settings)
    from schedlab.actors import interrupt

    tmp = tempfile.TemporaryDirectory(prefix="schedlab-run-") if out is None else None
    where = Path(tmp.name) if tmp is not None else Path(out)  # type: ignore[arg-type]
    try:
        # As on the command line: Ctrl-C stops the run at its next safe point
        # (its actors killed, a Ray it started shut down) and raises
        # schedlab.actors.interrupt.Interrupted.
        with interrupt.deferred():
            summary = kind.fn("execute")(spec, where, address=address)
    except BaseException:
        if tmp is not None:
            tmp.cleanup()
        raise
    return Run(where, summary, tmp)


def build_scenario(scenario: str | Path | Mapping[str, Any], *, engine: str | None = None, seed: int | None = None,
                   overrides: Mapping[str, Any] | None = None, address: str | None = None, **settings: Any) -> Scenario:
    """The validated Scenario ``run`` would run (same arguments); one cell's
    only (ScenarioError for a federation)."""
    kind, spec = prepare(scenario, engine=engine, seed=seed, overrides=overrides, address=address, **settings)
    if not isinstance(spec, Scenario):
        raise ScenarioError(f"scenario: {kind.what}, not one cell: schedlab.run runs it")
    return spec


def prepare(scenario: str | Path | Mapping[str, Any], *, engine: str | None = None, seed: int | None = None,
            overrides: Mapping[str, Any] | None = None, address: str | None = None,
            **settings: Any) -> tuple[kinds.RunKind, Any]:
    """What ``run`` would run (same arguments), checked, and its kind
    (``api.kinds``): one cell's Scenario, or a federation. A comparison
    file runs one of its architectures (``architecture=NAME``)."""
    from schedlab.actors.engines.limits import limits_for
    from schedlab.api.scenario_files import load_data, resolve, set_value

    if isinstance(scenario, Mapping):
        data, source = copy.deepcopy(dict(scenario)), "<dict>"
    elif isinstance(scenario, (str, Path)):
        data, source = load_data(scenario, None), str(resolve(scenario))
    else:
        raise ScenarioError(f"scenario: a path, a shipped scenario's name or a dict (got {type(scenario).__name__})")
    if overrides is not None and not isinstance(overrides, Mapping):
        raise ScenarioError(f"overrides: a dict of dotted key -> value (got {type(overrides).__name__})")
    overrides = dict(overrides or {})
    for key in settings:
        if key in overrides:
            raise ScenarioError(f"{source}: {key}: given both as a keyword and in overrides")
    arch = settings.pop("architecture", None)
    for key, value in [*settings.items(), *overrides.items()]:
        if not isinstance(key, str) or not key or "" in key.split("."):
            raise ScenarioError(f"overrides: {key!r}: not a dotted key (e.g. metrics.sample_interval)")
        set_value(data, key, _plain(value), what=f"{source}: override")
    for key, value in (("seed", seed), ("engine", engine)):
        if value is not None:
            data[key] = _plain(value)
    limits = limits_for(address)
    if "architectures" in data:
        archs = data["architectures"]
        if arch is None:
            raise ScenarioError(f"{source}: architectures: this scenario compares {archs!r}; pick one with architecture=...")
        if not isinstance(archs, list) or arch not in archs:
            raise ScenarioError(f"{source}: architecture: {arch!r} is not one this scenario compares ({archs!r})")
        data["architectures"] = [arch]
        return kinds.kind("cell"), parse_comparison(data, source, limits)[0]
    if arch is not None:
        data["architecture"] = arch
    kind = kinds.of_data(data, source)
    return kind, kind.fn("parse")(data, source, limits)


def _plain(value: Any) -> Any:
    """``value`` as TOML would give it: numpy scalars and arrays (a sweep's
    ``np.linspace``) become Python numbers and lists; a copy, so the
    caller's objects are never changed."""
    import numpy as np

    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return copy.deepcopy(value)
