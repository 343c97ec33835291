"""Scheduling plugins by name, and profiles built from names.

The registry plays upstream's ``NewInTreeRegistry()`` plus its
out-of-tree hook: every built-in plugin is listed once here, a scenario
script adds its own with ``register_plugin(name, factory)``, and a profile
names plugins rather than importing them. A factory takes the plugin's
arguments as keywords (the scenario's per-plugin table) and returns an
object with a ``name`` and the extension-point methods of
``framework`` (pre_filter, filter, ...).

Contract: an unknown plugin name, or arguments a factory rejects, raise
``ValueError`` whose message names the plugin, so the scenario parser can
turn it into a one-line error naming file and key.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from .profile import Profile
from .plugins.balanced_allocation import NodeResourcesBalancedAllocation
from .plugins.binder import DefaultBinder
from .plugins.coscheduling import Coscheduling
from .plugins.device_share import DeviceShare
from .plugins.default_preemption import DefaultPreemption
from .plugins.interpod_affinity import InterPodAffinity
from .plugins.least_pods import LeastPods
from .plugins.node_affinity import NodeAffinity
from .plugins.node_unschedulable import NodeUnschedulable
from .plugins.resources_fit import NodeResourcesFit
from .plugins.taint_toleration import TaintToleration
from .plugins.topology_spread import PodTopologySpread

PluginFactory = Callable[..., Any]

_BUILTIN: dict[str, PluginFactory] = {
    "NodeUnschedulable": NodeUnschedulable,
    "TaintToleration": TaintToleration,
    "NodeAffinity": NodeAffinity,
    "NodeResourcesFit": NodeResourcesFit,
    "PodTopologySpread": PodTopologySpread,
    "InterPodAffinity": InterPodAffinity,
    "NodeResourcesBalancedAllocation": NodeResourcesBalancedAllocation,
    "DefaultPreemption": DefaultPreemption,
    "DefaultBinder": DefaultBinder,
    "LeastPods": LeastPods,  # Swarm's spread strategy (not upstream's, not in the default set)
    # scheduler-plugins' gang scheduling (out of tree): enabled for a scenario with gang job classes
    "Coscheduling": Coscheduling,
    # GPUs as devices (a GPU-sharing scheduler's Filter, Score and Reserve): enabled in a cell with devices
    "DeviceShare": DeviceShare,
}
_REGISTRY: dict[str, PluginFactory] = dict(_BUILTIN)

# Upstream's default multiPoint set (pkg/scheduler/apis/config/v1/default_plugins.go),
# in its order, less what schedlab does not model (SchedulingGates, NodeName,
# NodePorts, the volume plugins, ImageLocality; PrioritySort is the queue's).
DEFAULT_PLUGINS: tuple[str, ...] = (
    "NodeUnschedulable",
    "TaintToleration",
    "NodeAffinity",
    "NodeResourcesFit",
    "PodTopologySpread",
    "InterPodAffinity",
    "DefaultPreemption",
    "NodeResourcesBalancedAllocation",
    "DefaultBinder",
)
DEFAULT_WEIGHTS: Mapping[str, int] = {
    "TaintToleration": 3,
    "NodeAffinity": 2,
    "NodeResourcesFit": 1,
    "PodTopologySpread": 2,
    "InterPodAffinity": 2,
    "NodeResourcesBalancedAllocation": 1,
}


def register_plugin(name: str, factory: PluginFactory, *, replace: bool = False) -> None:
    """Make ``name`` usable in profiles. Re-registering a name needs
    ``replace=True`` (a scenario script run twice in one process may pass it)."""
    if not name or not isinstance(name, str):
        raise ValueError(f"plugin name must be a non-empty string (got {name!r})")
    if name in _REGISTRY and not replace and _REGISTRY[name] is not factory:
        raise ValueError(f"plugin {name} is already registered")
    _REGISTRY[name] = factory


def unregister_plugin(name: str) -> None:
    """Forget a user plugin (tests); built-ins stay."""
    if name not in _BUILTIN:
        _REGISTRY.pop(name, None)


def plugin_names() -> list[str]:
    return sorted(_REGISTRY)


def user_plugins(names: Sequence[str]) -> dict[str, PluginFactory]:
    """The factories of the named plugins a scenario script registered (not
    built in): what must travel with a scheduler to another process, where
    the script's ``register_plugin`` never ran."""
    return {n: _REGISTRY[n] for n in names if n in _REGISTRY and _BUILTIN.get(n) is not _REGISTRY[n]}


def make_plugin(name: str, args: Mapping[str, Any] | None = None) -> Any:
    """Instantiate plugin ``name`` with keyword ``args``."""
    factory = _REGISTRY.get(name)
    if factory is None:
        raise ValueError(f"unknown scheduling plugin {name!r} (known: {', '.join(plugin_names())})")
    try:
        plugin = factory(**dict(args or {}))
    except TypeError as e:
        raise ValueError(f"plugin {name}: bad arguments ({e})") from None
    except ValueError as e:
        raise ValueError(f"plugin {name}: {e}") from None
    if getattr(plugin, "name", None) != name:
        try:
            plugin.name = name
        except AttributeError:
            raise ValueError(f"plugin {name}: the factory's object has no settable name") from None
    return plugin


def build_profile(
    name: str,
    plugins: Sequence[str],
    *,
    weights: Mapping[str, int] | None = None,
    plugin_args: Mapping[str, Mapping[str, Any]] | None = None,
    percentage_of_nodes_to_score: int | None = None,
) -> Profile:
    """A profile of the named plugins, each filed under every extension
    point it implements, in the order given. ``weights`` for Score plugins
    (default 1); ``plugin_args`` per plugin name."""
    args = dict(plugin_args or {})
    for extra in sorted(set(args) - set(plugins)):
        raise ValueError(f"plugin {extra}: arguments given but the plugin is not enabled in profile {name}")
    for extra in sorted(set(weights or {}) - set(plugins)):
        raise ValueError(f"plugin {extra}: weight given but the plugin is not enabled in profile {name}")
    seen: set[str] = set()
    for p in plugins:
        if p in seen:
            raise ValueError(f"plugin {p}: listed twice in profile {name}")
        seen.add(p)
    built = [make_plugin(p, args.get(p)) for p in plugins]
    return Profile.of(name, built, weights, percentage_of_nodes_to_score)


def default_profile(
    name: str = "default-scheduler",
    *,
    weights: Mapping[str, int] | None = None,
    plugin_args: Mapping[str, Mapping[str, Any]] | None = None,
    enable: Sequence[str] = (),
    disable: Sequence[str] = (),
    percentage_of_nodes_to_score: int | None = None,
) -> Profile:
    """Upstream's default profile (DEFAULT_PLUGINS with DEFAULT_WEIGHTS),
    with ``enable`` appended (user plugins), ``disable`` removed, and
    ``weights`` overriding."""
    names = list(DEFAULT_PLUGINS)
    for p in disable:
        if p not in names:
            raise ValueError(f"plugin {p}: cannot disable, it is not in the default profile")
    names = [p for p in names if p not in set(disable)] + [p for p in enable if p not in names]
    w = {k: v for k, v in DEFAULT_WEIGHTS.items() if k in names}
    w.update(weights or {})
    return build_profile(name, names, weights=w, plugin_args=plugin_args, percentage_of_nodes_to_score=percentage_of_nodes_to_score)
