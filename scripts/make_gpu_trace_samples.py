"""Write the small GPU-trace samples shipped in scenarios/workloads/: files in
the exact schemas of Alibaba's published traces (openb 2023: a node list and
a pod list, CSV with headers; PAI 2020: machine spec, job and task tables,
headerless CSV), with made-up rows (seeded), for tests and examples. They are
NOT the traces: the shapes mix below is illustrative (the real openb default
pod list is 8,152 pods on 1,523 nodes; see docs/concepts/gpu-traces.md for
where the real files are).

    python scripts/make_gpu_trace_samples.py [--out scenarios/workloads]
"""
from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

MODELS = ("V100M32", "V100M16", "T4", "A10")


def openb(out: Path, rng: np.random.Generator) -> None:
    nodes = []
    for i in range(64):
        if i < 8:
            nodes.append((f"openb-node-{i:04d}", 96000, 393216, 0, "nan"))  # CPU-only
        else:
            model = MODELS[i % len(MODELS)]
            gpus = 8 if model.startswith("V100") or i % 3 else 4
            nodes.append((f"openb-node-{i:04d}", 96000 if gpus == 8 else 64000, 786432 if gpus == 8 else 262144, gpus, model))
    with open(out / "openb_node_list_sample.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(("sn", "cpu_milli", "memory_mib", "gpu", "model"))
        w.writerows(nodes)
    kinds = ["cpu", "share", "one", "two", "four", "eight"]
    weights = [0.13, 0.37, 0.40, 0.04, 0.03, 0.03]
    t = 9_000_000
    rows = []
    for i in range(1200):
        kind = kinds[int(rng.choice(len(kinds), p=weights))]
        n = {"cpu": 0, "share": 1, "one": 1, "two": 2, "four": 4, "eight": 8}[kind]
        milli = int(rng.choice([100, 200, 250, 300, 500, 700])) if kind == "share" else (1000 if n else 0)
        # At most 12 cores per GPU asked: every pod fits an 8-GPU node (96 cores), as every pod of the real lists fits a node.
        cpu = min(int(rng.choice([2000, 4000, 8000, 16000])) * max(1, n), 12000 * max(1, n))
        mem = int(cpu / 1000 * rng.choice([2048, 4096, 8192]))
        spec = "|".join(sorted(rng.choice(MODELS, size=int(rng.integers(1, 3)), replace=False))) if n and rng.random() < 0.1 else "nan"
        t += int(rng.exponential(60))
        run = int(rng.lognormal(8, 1.2))
        phase = "Succeeded" if rng.random() < 0.8 else ("Running" if rng.random() < 0.5 else "Failed")
        rows.append((f"openb-pod-{i:04d}", cpu, mem, n, milli, spec, rng.choice(["LS", "BE", "Burstable"]), phase,
                     t, t + run, t + int(rng.integers(0, 5))))
    with open(out / "openb_pod_list_sample.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
                    "creation_time", "deletion_time", "scheduled_time"))
        w.writerows(rows)


def pai(out: Path, rng: np.random.Generator) -> None:
    with open(out / "pai_machine_spec_sample.csv", "w", newline="") as f:
        w = csv.writer(f)
        for i in range(16):
            model = ("V100", "P100", "T4", "MISC")[i % 4]
            w.writerow((f"m{i:05d}", model if i % 8 else "", 96 if i % 8 else 64, 512 if i % 8 else 256, 8 if i % 8 else 0))
    jobs, tasks = [], []
    t = 5_000_000
    for j in range(120):
        t += int(rng.exponential(120))
        name = f"job{j:06d}"
        run = int(rng.lognormal(7, 1.0))
        status = "Terminated" if rng.random() < 0.85 else "Failed"
        jobs.append((name, f"inst{j:06d}", f"user{int(rng.integers(20)):03d}", status, t, t + run))
        for k, task in enumerate(["worker", "ps"][: 1 + int(rng.random() < 0.3)]):
            gpu = "" if task == "ps" else int(rng.choice([25, 50, 100, 100, 200, 800]))
            model = "" if gpu == "" else ("V100", "P100", "T4", "MISC")[int(rng.integers(4))]
            tasks.append((name, task, int(rng.choice([1, 1, 2, 4])), status, t + k, t + run, int(rng.choice([200, 600, 1200])),
                          int(rng.choice([8, 29, 60])), gpu, model))
    with open(out / "pai_job_table_sample.csv", "w", newline="") as f:
        csv.writer(f).writerows(jobs)
    with open(out / "pai_task_table_sample.csv", "w", newline="") as f:
        csv.writer(f).writerows(tasks)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "scenarios" / "workloads")
    ap.add_argument("--seed", type=int, default=2023)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    openb(a.out, rng)
    pai(a.out, rng)
    print(f"wrote the samples under {a.out}")


if __name__ == "__main__":
    main()
