"""A scenario script: your own Kubernetes scheduling plugin.

What it shows: how to plug a plugin of your own into a kube-scheduler
profile. It defines ``PreferCheapRack`` (a Score plugin: nodes of one rack,
say the cheap spot capacity, score 100, others 0), registers it by name,
and runs the k8s_spread cell twice on the sim engine, once with the default
profile and once with the plugin added at a high weight; on Ray the plugin
travels to the scheduler's process with its profile.

What to look at: pods per rack of the `plain` deployment, side by side.

    python scenarios/k8s_custom_plugin.py [--engine ray] [--out runs/k8s_custom]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from schedlab.actors.run import run_scenario
from schedlab.schedulers.archs.kubernetes.objects import RACK
from schedlab.schedulers.archs.kubernetes.registry import register_plugin
from schedlab.api.scenario_files import load_scenario

CHEAP = "rack-1"


# --8<-- [start:plugin]
class PreferCheapRack:
    """Score: 100 on the cheap rack's nodes, 0 elsewhere (the framework
    normalises and weighs it with the others)."""

    name = "PreferCheapRack"

    def score_all(self, state, pod, view, nodes: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
        return np.array([100 if view.labels_of(int(i)).get(RACK) == CHEAP else 0 for i in nodes], dtype=np.int64)

    def score(self, state, pod, view, node: int) -> int:  # type: ignore[no-untyped-def]
        return int(self.score_all(state, pod, view, np.array([node]))[0])
# --8<-- [end:plugin]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out", default="runs/k8s_custom_plugin")
    p.add_argument("--engine", default="sim", choices=("sim", "ray"))
    args = p.parse_args()
    register_plugin("PreferCheapRack", PreferCheapRack, replace=True)
    spread = Path(__file__).with_name("k8s_spread.toml")
    runs = {
        "default": [],
        "cheap rack": ['kubernetes.profiles=[{name="default-scheduler", scoring_strategy="MostAllocated", '
                       'plugins=["NodeUnschedulable","TaintToleration","NodeAffinity","NodeResourcesFit",'
                       '"PodTopologySpread","InterPodAffinity","PreferCheapRack","DefaultBinder"], '
                       'weights={PreferCheapRack=10}}]'],
    }
    print(f"{'profile':<12} {'plain pods per rack':<22} {'web pods per rack':<20}")
    for label, sets in runs.items():
        sc = load_scenario(spread, [f"engine=\"{args.engine}\"", *sets])
        s = run_scenario(sc, Path(args.out) / label.replace(" ", "_"))
        racks = s["kubernetes"]["pods_per_rack"]
        print(f"{label:<12} {str(racks['plain']):<22} {str(racks['web']):<20}")


if __name__ == "__main__":
    main()
