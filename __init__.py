"""schedlab: emulate cluster-scheduler architectures live on Ray.

The checkout's root is the package's root: each code folder installs as
``schedlab.<folder>`` (pyproject ``package-dir``): ``schedulers`` (pure),
``actors`` (the live halves and engines), ``api`` (the Python API, also
reached from here), ``cli`` (the ``schedlab`` command), ``experiments``
(reproduction, soak, cross-checks) and ``scripts`` (benchmarks and helper
scripts); ``scenarios/`` as package data. Nothing else installs at the top
level.
"""
from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("schedlab")
except PackageNotFoundError:  # imported from a checkout that was never installed
    __version__ = "0+unknown"

# The Python API (schedlab.api), imported on first use: importing
# schedlab stays cheap and never imports Ray.
_API = ("run", "load", "Run", "NotARun", "ScenarioError")


def __getattr__(name: str) -> object:
    if name in _API:
        from schedlab import api

        return getattr(api, name)
    raise AttributeError(f"module 'schedlab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])
