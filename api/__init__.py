"""schedlab from Python: run a scenario (``run``), open a finished run
(``load``, ``Run``) and read its tables; ``schedlab.run`` and the rest are
these, reached lazily from the package root.

What each module holds: ``runs`` (running a scenario, ``Run`` and its
tables), ``scenario_files`` (where a scenario comes from: a path or a
shipped name, ``include`` and ``--set``), ``kinds`` (what kind of run a
file or an OUT directory is: a single cell, a comparison, a federation),
``compare`` (a summary's comparable numbers) and ``report`` (report.md with
plots). The ``schedlab`` command (``schedlab.cli``) is built on these.
"""
from __future__ import annotations

from schedlab.api.runs import TABLES, NotARun, Run, ScenarioError, build_scenario, load, run

__all__ = ["TABLES", "NotARun", "Run", "ScenarioError", "build_scenario", "load", "run"]
