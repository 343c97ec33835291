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
