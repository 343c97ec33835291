"""A scenario's ``include``: fragments (other TOML files) merged into it.

``include = ["ray-here.toml"]`` at a scenario's top level adds the tables
and values of each named fragment, as if written in the scenario: the way
a scenario uses a ``schedlab calibrate`` table (``[substrate] latency``
measured on this machine, with the ``time_scale`` it was measured for)
without pasting it in.

Contract (``merge``): an included file only *adds*. A key both set is
merged when both are tables; otherwise the two values must be equal, and
a difference is a ScenarioError naming the key and both files. So a
calibrated table made for ``time_scale = 50`` cannot silently be applied
to a scenario run at 20 (its delays, in emulated seconds, would model a
different wall latency); ``--set`` overrides after the merge, on purpose.
A fragment may not include others (one level: what a run reads is in two
files at most). Pure: the caller reads the files.
"""
from __future__ import annotations

import copy
from typing import Any

from schedlab.schedulers.scenario.toml_table import ScenarioError

KEY = "include"


def included(data: dict, source: str) -> list[str]:
    """The file names a scenario's ``include`` lists (a string or a list of
    strings; none when absent), in order."""
    raw = data.get(KEY)
    if raw is None:
        return []
    names = [raw] if isinstance(raw, str) else raw
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
        raise ScenarioError(f"{source}: {KEY}: must be a file name or a list of file names (got {raw!r})")
    return names


def merge(data: dict, fragment: dict, source: str, fragment_source: str) -> dict:
    """``data`` (a scenario, its ``include`` key dropped) with ``fragment``'s
    keys added; ScenarioError when both set one key to different values or
    the fragment has an ``include`` of its own. Neither input is changed."""
    if KEY in fragment:
        raise ScenarioError(f"{fragment_source}: {KEY}: an included file cannot include others")
    out = copy.deepcopy({k: v for k, v in data.items() if k != KEY})
    _add(out, fragment, "", source, fragment_source)
    return out


def _add(into: dict, fragment: dict, path: str, source: str, fragment_source: str) -> None:
    for k, v in fragment.items():
        key = f"{path}.{k}" if path else k
        if k not in into:
            into[k] = copy.deepcopy(v)
        elif isinstance(into[k], dict) and isinstance(v, dict):
            _add(into[k], v, key, source, fragment_source)
        elif not _same(into[k], v):
            raise ScenarioError(
                f"{source}: {key}: {_show(into[k])} here but {_show(v)} in the included {fragment_source}; "
                "an included file only adds (change one, or override with --set)")


def _same(a: Any, b: Any) -> bool:
    """Equal as TOML values (1 and 1.0 alike, as the parser reads them)."""
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        return float(a) == float(b)
    return bool(a == b)


def _show(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."
