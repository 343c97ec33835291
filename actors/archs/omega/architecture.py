"""Omega's live registration: its build; the rest is the generic default
(refused work = transactions that hit a conflict)."""
from __future__ import annotations

from schedlab.actors.arch import Architecture
from schedlab.actors.archs.omega.build import build

ARCHITECTURE = Architecture(name="omega", build=build,
                            refused_means="commits that hit a conflict (a claimed machine changed meanwhile)")
