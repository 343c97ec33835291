"""The scheduler core and configs a parsed ``[yarn]`` section selects
(:class:`spec.YarnSpec` -> the pure cores' own config objects), apart from
the parsing: the ResourceManager shell builds from these, and a restarted
RM builds the same core again."""
from __future__ import annotations

import numpy as np
from schedlab.schedulers.placement.device_claims import DeviceView
from schedlab.schedulers.archs.yarn.app_master import AMConfig
from schedlab.schedulers.archs.yarn.capacity import (
    CapacityConfig,
    CapacityPreemption,
    CapacityScheduler,
)
from schedlab.schedulers.archs.yarn.fair import (
    FairConfig,
    FairPreemption,
    FairScheduler,
)
from schedlab.schedulers.archs.yarn.fifo import FifoConfig, FifoScheduler
from schedlab.schedulers.archs.yarn.locality import LocalityDelay
from schedlab.schedulers.archs.yarn.queues import QueueTree
from schedlab.schedulers.archs.yarn.rm_books import RMConfig
from schedlab.schedulers.archs.yarn.scheduler import ClusterState, YarnScheduler
from schedlab.schedulers.archs.yarn.queue_section import YarnQueueSpec
from schedlab.schedulers.archs.yarn.spec import YarnSpec


def queue_tree(spec: YarnSpec) -> QueueTree:
    return QueueTree.build(spec.queue_specs(), check_capacity=spec.scheduler == "capacity", width=len(spec.am))


def scheduler_config(spec: YarnSpec, n_nodes: int) -> CapacityConfig | FairConfig | FifoConfig:
    """The selected scheduler's config (Fair's locality thresholds become
    counts of missed opportunities on a cluster of ``n_nodes``)."""
    if spec.scheduler == "capacity":
        return CapacityConfig(
            locality=LocalityDelay(spec.node_locality_delay, spec.rack_locality_additional_delay),
            resource_calculator=spec.resource_calculator,
            assign_multiple=spec.assign_multiple,
            max_assign=spec.max_assign,
            max_off_switch_per_heartbeat=spec.max_off_switch_per_heartbeat,
            global_scheduling=spec.global_scheduling,
            preemption=CapacityPreemption(
                enabled=spec.preemption,
                max_wait_before_kill=spec.max_wait_before_kill,
                total_preemption_per_round=spec.total_preemption_per_round,
                max_ignored_over_capacity=spec.max_ignored_over_capacity,
                natural_termination_factor=spec.natural_termination_factor,
            ),
        )
    if spec.scheduler == "fair":
        return FairConfig(
            policy=spec.fair_policy,
            locality=LocalityDelay.from_fractions(spec.locality_threshold_node, spec.locality_threshold_rack, n_nodes),
            assign_multiple=spec.assign_multiple,
            max_assign=spec.max_assign,
            global_scheduling=spec.global_scheduling,
            preemption=FairPreemption(
                enabled=spec.preemption,
                min_share_preemption_timeout=spec.min_share_preemption_timeout,
                fair_share_preemption_timeout=spec.fair_share_preemption_timeout,
                fair_share_preemption_threshold=spec.fair_share_preemption_threshold,
            ),
        )
    return FifoConfig(max_assign=spec.max_assign if spec.assign_multiple else 1)


def rm_config(spec: YarnSpec) -> RMConfig:
    return RMConfig(max_am_attempts=spec.max_am_attempts, global_scheduling=spec.global_scheduling)


def am_config(queue: YarnQueueSpec) -> AMConfig:
    """How the AMs of ``queue``'s applications ask: by their data's
    machines when ``data_replicas`` > 0."""
    return AMConfig(locality=queue.data_replicas > 0, relax_locality=queue.relax_locality)


def build_scheduler(spec: YarnSpec, capacity: np.ndarray, rack_of: np.ndarray,
                    devices: DeviceView | None = None) -> YarnScheduler:
    """The scheduler core ``spec`` selects over a fresh ClusterState of
    ``capacity`` [M, R] and ``rack_of`` [M] (``model.cluster.Cell``'s
    ``capacity`` and ``rack``); ``devices``: global scheduling's device
    policy for containers asking for devices."""
    state = ClusterState(capacity, rack_of, queue_tree(spec))
    state.devices = devices
    cfg = scheduler_config(spec, state.n_nodes)
    if isinstance(cfg, CapacityConfig):
        return CapacityScheduler(state, cfg)
    if isinstance(cfg, FairConfig):
        return FairScheduler(state, cfg)
    return FifoScheduler(state, cfg)
