"""The built-in scheduling plugins, one module each (see ../NOTES.md):
resources_fit (NodeResourcesFit), balanced_allocation
(NodeResourcesBalancedAllocation), node_affinity (NodeAffinity),
node_unschedulable (NodeUnschedulable), taint_toleration
(TaintToleration), topology_spread (PodTopologySpread), interpod_affinity
(InterPodAffinity), default_preemption (DefaultPreemption), binder
(DefaultBinder), least_pods (LeastPods: Swarm's spread, not upstream's).
``normalize`` holds the shared score normalisation. The registry
(../registry.py) names them."""
