"""The trace formats schedlab reads, by name: each a module of
``schedlab.schedulers.traces`` with a ``READER`` that fills a
``Builder`` from what a user downloaded. ``convert`` is what
``schedlab trace convert`` runs.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from schedlab.schedulers.traces.builder import Builder, Select
from schedlab.schedulers.traces.form import Trace, TraceError

# format name -> the module holding its READER.
FORMATS = ("google2019", "google2011", "alibaba2018", "azure2020", "swf", "css")


@dataclass(frozen=True)
class ReadOptions:
    """What some formats need beyond their files: ``seed`` and ``horizon``
    (s) for a format that describes a workload rather than recording one
    (CSS's distributions: the jobs drawn over the horizon); ``machines``
    and ``cpus`` for one that records no machines (an SWF log: its
    MaxNodes header, else this many, of ``cpus`` processors each)."""

    seed: int = 0
    horizon: float = 86_400.0
    machines: int | None = None
    cpus: float | None = None


@dataclass(frozen=True)
class Reader:
    """``read(src, options)``: a Builder filled from ``src`` (a folder of
    the format's tables, or its one file: each reader's docstring says
    which), or TraceError. ``default_tier``: the tier of jobs only tasks name."""

    name: str
    read: Callable[[Path, ReadOptions], Builder]
    default_tier: str


def reader(fmt: str) -> Reader:
    if fmt not in FORMATS:
        raise TraceError(f"unknown trace format {fmt!r}: one of {', '.join(FORMATS)}")
    return importlib.import_module(f"schedlab.schedulers.traces.{fmt}").READER


def convert(src: str | Path, fmt: str, select: Select | None = None, options: ReadOptions | None = None) -> Trace:
    """``src`` read as ``fmt``, selected (default: all of it): the canonical form, or TraceError."""
    r = reader(fmt)
    path = Path(src)
    if not path.exists():
        raise TraceError(f"{path}: no such file or folder")
    return r.read(path, options or ReadOptions()).build(select or Select(), r.default_tier)
