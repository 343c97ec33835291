"""The building blocks of a report, shared by the run/comparison report
(``schedlab.api.report``) and the sweep report (``report_sweep``): the
error, plot and figure records, and the markdown they become."""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Events = dict[str, list[dict]]


class ReportError(Exception):
    """DIR cannot be reported on; the one-line message names it."""


@dataclass(frozen=True)
class Skip:
    """Why a plot was left out (its data is absent from this run)."""
    reason: str


@dataclass(frozen=True)
class PlotSpec:
    name: str
    title: str
    how: str  # one sentence on how to read the plot
    extract: Callable[[dict, Events], Any]  # plot data, or Skip
    draw: Callable[[Any, Path], None]


@dataclass(frozen=True)
class Figure:
    title: str
    png: str | None  # relative to report.md; None when skipped
    text: str  # how to read it, or why it was skipped
    extra: str = ""  # markdown under the plot


def load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ReportError(f"{path}: cannot read: {e}") from e


def md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def figure_md(f: Figure, level: str) -> str:
    if f.png is None:
        return f"{level} {f.title}\n\n*Skipped: {f.text}.*\n"
    return f"{level} {f.title}\n\n![{f.title}]({f.png})\n\n{f.text}\n" + (f"\n{f.extra}" if f.extra else "")
