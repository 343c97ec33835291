"""Keep a run's directory when one of its invariants failed.

A run that breaks an invariant is the only evidence of a rare bug (one
that shows in a few runs out of many); if it ran in a temporary directory
(the benchmark, a test's tmp_path) the evidence is deleted with it. Every
entry point that runs into a throw-away directory calls ``keep_if_bad``
with the run's invariants: a clean run keeps nothing, a bad one is copied
(run.json, events.jsonl, summary.json, the coordinator's logs) to
``$SCHEDLAB_KEEP_RUNS`` (default /tmp/schedlab-failed-runs) under
``<label>-<time>``, and the caller prints or asserts the returned path.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from pathlib import Path

KEEP_ENV = "SCHEDLAB_KEEP_RUNS"


def violated(invariants: dict[str, int]) -> dict[str, int]:
    """The invariants a run broke (non-zero counts), in their order."""
    return {k: v for k, v in invariants.items() if v}


def keep_root() -> Path:
    """Where kept runs go: $SCHEDLAB_KEEP_RUNS, else a fixed place under the
    system's temporary directory (outside any test's or script's own)."""
    return Path(os.environ.get(KEEP_ENV) or Path(tempfile.gettempdir()) / "schedlab-failed-runs")


def keep_if_bad(out: str | Path, invariants: dict[str, int], label: str) -> Path | None:
    """Copy ``out`` to a new directory under ``keep_root()`` if any of
    ``invariants`` is non-zero and return that path; None (nothing copied)
    for a clean run. ``label`` (a test or configuration name) starts the
    directory's name, made safe for a file name; the wall time and a
    counter make it unique, so repeated failures never overwrite each other."""
    if not violated(invariants):
        return None
    root = keep_root()
    root.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", label).strip("_")[:120] or "run"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(1000):
        dest = root / (f"{stem}-{stamp}" + (f"-{n}" if n else ""))
        try:
            dest.mkdir()
        except FileExistsError:
            continue
        shutil.copytree(out, dest, dirs_exist_ok=True)
        return dest
    raise FileExistsError(f"no free name for {stem}-{stamp} under {root}")
