"""schedlab: emulate cluster-scheduler architectures live on Ray.

The checkout's root is the package's root: ``actors/``, ``schedulers/`` and
``scripts/`` install as ``schedlab.actors``, ``schedlab.schedulers`` and
``schedlab.scripts`` (pyproject ``package-dir``), ``scenarios/`` as package
data. Nothing else installs at the top level.
"""
from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("schedlab")
except PackageNotFoundError:  # imported from a checkout that was never installed
    __version__ = "0+unknown"

# The Python API (schedlab.scripts.api), imported on first use: importing
# schedlab stays cheap and never imports Ray.
_API = ("run", "load", "Run", "NotARun", "ScenarioError")


def __getattr__(name: str) -> object:
    if name in _API:
        from schedlab.scripts import api

        return getattr(api, name)
    raise AttributeError(f"module 'schedlab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])
