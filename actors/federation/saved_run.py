"""Reading a finished federation back from its OUT directory: its own
``events.jsonl`` and ``summary.json``, and each site's run under
``sites/<name>/`` (an ordinary run directory). ``check_saved`` recomputes the
invariants from those files alone, as ``actors.analysis.saved_run`` does for
one cell: each site's, summed, and the federation's own (``lost_jobs``)."""
from __future__ import annotations

import json
from pathlib import Path

from schedlab.actors.analysis.saved_run import NotARun, check_saved as check_site
from schedlab.actors.common.event_files import has_events, read_events
from schedlab.actors.federation.summary import lost_jobs, routing
from schedlab.schedulers.scenario.toml_table import ScenarioError, read_text


def is_federation_dir(path: Path) -> bool:
    """A federation's OUT: its own events and summary, its sites beneath, and
    no run.json (that would make it one cell's)."""
    return ((path / "sites").is_dir() and has_events(path) and (path / "summary.json").is_file()
            and not (path / "run.json").exists())


def site_dirs(out: Path) -> list[Path]:
    """The sites' run directories, in the federation's site order (its
    summary's), else by name."""
    try:
        names = [s["name"] for s in json.loads(read_text(out / "summary.json", "summary.json"))["sites"]]
    except (ScenarioError, ValueError, KeyError, TypeError) as e:
        raise NotARun(f"{out / 'summary.json'}: not a federation's summary ({type(e).__name__}: {e})") from None
    return [out / "sites" / n for n in names]


def check_saved(out: str | Path) -> dict[str, int]:
    """The federation's invariants recomputed from ``out``'s files (the keys
    its summary's ``invariants`` has); NotARun (one line) when they are
    missing or cannot be read."""
    d = Path(out)
    if not is_federation_dir(d):
        raise NotARun(f"{d}: not a federation's run directory (no sites/, events.jsonl and summary.json)")
    sites = site_dirs(d)
    try:
        events = read_events(d)
        site_events = [read_events(s) for s in sites]
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise NotARun(f"{d}: a federation's events cannot be read ({type(e).__name__}: {str(e)[:200]})") from None
    released, routed, _ = routing(events, site_events)
    total = {"lost_jobs": len(lost_jobs(events, released, routed))}
    for s in sites:
        for name, count in check_site(s).items():
            total[name] = total.get(name, 0) + int(count)
    return total
