"""Reading a finished run back from its OUT directory.

A run writes ``run.json`` (what the events alone do not say: the cell's
capacities, machines per host actor), ``events.jsonl`` and, with a
replicated coordinator, each replica's applied log under ``coordinator/``.
``check_saved`` recomputes the invariants from those files alone.
"""
from __future__ import annotations

from pathlib import Path


from schedlab.actors.analysis.invariants import invariants
from schedlab.actors.analysis.run_info import RunSetup
from schedlab.actors.common.event_files import events_file, has_events, read_events
from schedlab.actors.coordinator.raft_disk import read_applied
from schedlab.actors.analysis.stats import by_event
from schedlab.schedulers.scenario.toml_table import ScenarioError


class NotARun(ValueError):
    """The directory is not a finished schedlab run; str() is one line."""


def check_saved(out: str | Path) -> dict[str, int]:
    """The invariants recomputed from ``out``'s files; NotARun (one line) when
    they are missing or cannot be read, never a traceback."""
    d = Path(out)
    if not (d / "run.json").is_file() or not has_events(d):
        raise NotARun(f"{d}: not a schedlab run directory (no run.json and events.jsonl)")
    try:
        setup = RunSetup.read(d / "run.json")
        cell = setup.cell()
    except ScenarioError as e:
        raise NotARun(str(e)) from None
    except (ValueError, KeyError, TypeError) as e:  # JSONDecodeError is a ValueError
        raise NotARun(f"{d / 'run.json'}: not a run.json ({type(e).__name__}: {e})") from None
    try:
        ev = by_event(read_events(d))
    except (UnicodeDecodeError, ValueError, OSError) as e:  # gzip's BadGzipFile is an OSError
        raise NotARun(f"{events_file(d)}: not UTF-8 JSON lines ({type(e).__name__}: {str(e)[:200]})") from None
    applied = None
    replicas = setup.replicas
    if replicas > 1 and (d / "coordinator").is_dir():
        # Dead replicas too: their disks hold what they applied (the run's own
        # check reads them the same way, CoordinatorGroup.applied_everywhere).
        applied = {i: read_applied(d / "coordinator" / f"coordinator-{i}") for i in range(replicas)
                   if (d / "coordinator" / f"coordinator-{i}").is_dir()}
    return invariants(ev, cell, setup.machines_per_actor, applied)
