"""Reading TOML files and TOML-shaped tables with errors that name the file,
the key and the problem.

Shared by every section parser (``schedulers.scenario`` and the per-architecture
sections) and by every command that reads a TOML file (``read_toml``); nothing
here knows what a scenario is.
"""
from __future__ import annotations

import math
import re
import tomllib
from pathlib import Path
from typing import Any, Callable

from schedlab.schedulers.model.workload import DIST_KINDS, Dist


class ScenarioError(ValueError):
    """A scenario is malformed; str() is the one-line message for the user."""


NL = b"\n"
MAX_FILE_BYTES = 16 << 20  # a scenario or plan is a few KB; this only stops /dev/zero and mistakes


def read_toml(path: str | Path, what: str = "scenario") -> dict:
    """The TOML file at ``path`` as a dict, or ScenarioError with one line
    naming the file, where in it and the problem.

    The one loader of every TOML file the CLI reads (scenarios for run,
    compare, sweep; chaos plans), so every way a file can be unreadable
    (missing, a directory, too big, not UTF-8, not TOML) is refused the same
    way, as bad input, before anything starts."""
    text = read_text(path, what)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{path}: not valid TOML ({e})") from None


def read_text(path: str | Path, what: str) -> str:
    """A UTF-8 text file (an optional UTF-8 byte-order mark is dropped), or
    ScenarioError naming the file and, for bytes that are not UTF-8, the key
    on the offending line and its position. Reads at most MAX_FILE_BYTES, so
    a device or a huge file cannot stall the command."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise ScenarioError(f"{path}: cannot read {what} ({e.strerror or e})") from None
    if len(raw) > MAX_FILE_BYTES:
        raise ScenarioError(f"{path}: <file>: larger than {MAX_FILE_BYTES >> 20} MiB; is this a {what} file?")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ScenarioError(f"{path}: {_not_utf8(raw, e.start)}; save the {what} as UTF-8 text") from None


def _not_utf8(raw: bytes, at: int) -> str:
    """``KEY: not UTF-8 text (byte 0xNN at line L, column C)``: KEY is the one
    assigned on the offending line, else ``<file>``."""
    line_start = raw.rfind(NL, 0, at) + 1
    line_end = raw.find(NL, at)
    line = raw[line_start:line_end if line_end >= 0 else len(raw)].decode("utf-8", "replace")
    key = re.match(r"\s*([A-Za-z0-9_.\-]+)\s*=", line)
    where = f"line {raw.count(NL, 0, at) + 1}, column {at - line_start + 1}"
    utf16 = ": a UTF-16 byte-order mark" if at == 0 and raw[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
    return f"{key.group(1) if key else '<file>'}: not UTF-8 text (byte 0x{raw[at]:02x} at {where}{utf16})"


class Table:
    """A TOML table being read: remembers which keys were consumed so leftover
    (unknown) keys can be reported, and prefixes errors with the key path."""

    def __init__(self, data: Any, path: str, source: str) -> None:
        self.source = source
        self.path = path
        if not isinstance(data, dict):
            self.fail(path, f"must be a table, got {type(data).__name__}")
        self.data: dict = data
        self.used: set[str] = set()

    def key(self, k: str) -> str:
        return f"{self.path}.{k}" if self.path else k

    def fail(self, key: str, problem: str) -> None:
        raise ScenarioError(f"{self.source}: {key or '<top level>'}: {problem}")

    def get(self, k: str, kind: type | tuple[type, ...], default: Any = ..., check: Callable[[Any], str | None] | None = None) -> Any:
        self.used.add(k)
        if k not in self.data:
            if default is ...:
                self.fail(self.key(k), "is required")
            return default
        v = self.data[k]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        # bool is an int in Python; a TOML `true` where a number belongs is a mistake.
        if isinstance(v, bool) and bool not in kinds:
            self.fail(self.key(k), f"expected {_names(kinds)}, got bool")
        if float in kinds and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)
        if not isinstance(v, kinds):
            self.fail(self.key(k), f"expected {_names(kinds)}, got {type(v).__name__}")
        if isinstance(v, float) and not math.isfinite(v):
            self.fail(self.key(k), "must be finite")
        if check is not None:
            problem = check(v)
            if problem:
                self.fail(self.key(k), f"{problem} (got {v!r})")
        return v

    def sub(self, k: str, default: Any = ...) -> Table:
        v = self.get(k, dict, {} if default is not ... else ...)
        return Table(v, self.key(k), self.source)

    def names(self, k: str, known: set[str], what: str) -> list[str]:
        """A non-empty list of names, each one of ``known``."""
        names = self.get(k, list, check=lambda v: None if v else f"must name at least one {what}")
        for n in names:
            if not isinstance(n, str) or n not in known:
                self.fail(self.key(k), f"unknown {what} {n!r}")
        return names

    def done(self) -> None:
        extra = sorted(set(self.data) - self.used)
        if extra:
            self.fail(self.key(extra[0]), "unknown key")


def _names(kinds: tuple[type, ...]) -> str:
    return " or ".join("number" if t is float else t.__name__ for t in kinds)


def positive(v: float) -> str | None:
    return None if v > 0 else "must be > 0"


def non_negative(v: float) -> str | None:
    return None if v >= 0 else "must be >= 0"


def fraction(v: float) -> str | None:
    return None if 0 <= v < 1 else "must be in [0, 1)"


def one_of(options: tuple[str, ...]) -> Callable[[str], str | None]:
    return lambda v: None if v in options else f"must be one of {', '.join(options)}"


# The keys of a distribution table besides ``dist``, by its ``dist``: what
# read_dist reads (tests/test_reference.py holds the two together), and what
# the key reference lists under "Distribution tables".
DIST_KEYS: dict[str, tuple[tuple[str, str], ...]] = {
    "constant": (("value", "the value, > 0"),),
    "exponential": (("mean", "the mean, > 0"),),
    "lognormal": (("mean", "the mean, > 0"), ("sigma", "sigma of the underlying normal, > 0 (its mu makes the mean `mean`)")),
    "uniform": (("low", "the lowest value, > 0"), ("high", "the highest, >= low")),
    "empirical": (("values", "the values drawn from, numbers > 0"),
                  ("weights", "optional: one non-negative weight per value, not all zero (default: equal)")),
}


def read_dist(t: Table, k: str, bounded: bool = False, default: Any = ...) -> Dist:
    """A number means constant; a table names the distribution (its keys: ``DIST_KEYS``)."""
    if k not in t.data and default is not ...:
        t.used.add(k)
        return default
    raw = t.get(k, (float, dict))
    key = t.key(k)
    if isinstance(raw, float):
        if raw <= 0:
            t.fail(key, f"must be > 0 (got {raw!r})")
        return Dist("constant", value=raw)
    d = Table(raw, key, t.source)
    kind = d.get("dist", str, check=one_of(DIST_KINDS))
    if kind == "constant":
        dist = Dist("constant", value=d.get("value", float, check=positive))
    elif kind == "exponential":
        dist = Dist("exponential", mean=d.get("mean", float, check=positive))
    elif kind == "lognormal":
        dist = Dist("lognormal", mean=d.get("mean", float, check=positive), sigma=d.get("sigma", float, check=positive))
    elif kind == "uniform":
        low = d.get("low", float, check=positive)
        high = d.get("high", float, check=lambda v: None if v >= low else "must be >= low")
        dist = Dist("uniform", low=low, high=high)
    else:
        values = d.get("values", list, check=lambda v: None if v else "must not be empty")
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0 for x in values):
            d.fail(d.key("values"), "must be a list of numbers > 0")
        weights = d.get("weights", list, default=[])
        if weights and (len(weights) != len(values) or not all(isinstance(w, (int, float)) and w >= 0 for w in weights) or sum(weights) <= 0):
            d.fail(d.key("weights"), "must be one non-negative number per value, not all zero")
        dist = Dist("empirical", values=tuple(float(x) for x in values), weights=tuple(float(w) for w in weights))
    d.done()
    if bounded and math.isinf(dist.maximum()):
        t.fail(key, f"{kind} is unbounded; a request needs constant, uniform or empirical")
    return dist


def table_array(t: Table, k: str) -> list[Table]:
    raw = t.get(k, list, check=lambda v: None if v else "must not be empty")
    return [Table(x, f"{t.key(k)}[{i}]", t.source) for i, x in enumerate(raw)]


def check_deciders(t: Table, k: str, specs: tuple, job_classes: list[str], what: str) -> None:
    """Scheduler-like entries (with ``name`` and ``classes``) have unique
    names and together serve every job class."""
    if len({s.name for s in specs}) != len(specs):
        t.fail(t.key(k), f"{what} names must be unique")
    served = {c for s in specs for c in s.classes}
    for n in job_classes:
        if n not in served:
            t.fail(t.key(k), f"no {what} serves job class {n!r}")
