"""Resources by name ([cell] resources): the declaration, its one-line
refusals, and the pieces that carry a vector of the scenario's width (wire
blobs, samples, Kubernetes' fit filter, HTCondor's slots, Borg's quota).
Every architecture running such a cell is tests/conformance/test_resources.py."""
from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlab.schedulers.archs.borg.quota import QuotaBook
from schedlab.schedulers.archs.htcondor.pool import _share, job_ad, slot_ad, JobAds, MachineAds
from schedlab.schedulers.archs.htcondor.negotiator import fits_requests
from schedlab.schedulers.archs.kubernetes.cluster_view import ClusterView
from schedlab.schedulers.archs.kubernetes.objects import Node, Pod
from schedlab.schedulers.archs.kubernetes.plugins.resources_fit import NodeResourcesFit
from schedlab.schedulers.model.resources import names_problem, sample_fields, sample_shares, used_shares
from schedlab.schedulers.model.wire import pack_claims, pack_delta, unpack_claims, unpack_delta
from schedlab.schedulers.scenario.parse import parse_scenario
from schedlab.schedulers.shared_state.cell import Delta
from schedlab.schedulers.shared_state.commit import Claims
from tests.conftest import scenario_error as _err
from tests.conftest import small_scenario_data
from tests.conformance.scenarios import further_resource_data

ROOT = Path(__file__).resolve().parent.parent


def _gpu_data(**cell: object) -> dict:
    data = small_scenario_data(engine="sim")
    data["cell"]["resources"] = ["cpu", "mem", "gpu"]
    data["cell"]["machine_classes"][1]["gpu"] = 4.0
    data["cell"].update(cell)
    return data



def test_a_declared_resource_is_a_key_of_machine_and_job_classes_defaulting_to_0() -> None:
    data = _gpu_data()
    data["workload"]["classes"][0]["gpu"] = {"dist": "empirical", "values": [1.0, 2.0], "weights": [1, 1]}
    sc = parse_scenario(data, "ok.toml")
    assert sc.cell.resources == ("cpu", "mem", "gpu")
    assert [mc.capacity for mc in sc.cell.machine_classes] == [(4.0, 16.0, 0.0), (8.0, 32.0, 4.0)]
    batch, service = sc.workload.classes
    assert batch.request[2].maximum() == 2.0 and service.request[2].maximum() == 0.0
    assert len(sc.section.schedulers) == 2  # the architecture's section read as before


def test_the_default_is_cpu_and_mem_and_other_names_are_unknown_keys() -> None:
    data = small_scenario_data()
    assert parse_scenario(copy.deepcopy(data), "ok.toml").cell.resources == ("cpu", "mem")
    data["cell"]["machine_classes"][1]["gpu"] = 4.0
    assert _err(data) == "bad.toml: cell.machine_classes[1].gpu: unknown key"


@pytest.mark.parametrize(("names", "problem"), [
    (["mem", "cpu"], "must begin with 'cpu', 'mem'"),
    (["cpu"], "must begin with 'cpu', 'mem'"),
    (["cpu", "mem", "GPU"], "'GPU' is not a resource name"),
    (["cpu", "mem", "gpu", "gpu"], "names a resource twice"),
])
def test_a_bad_declaration_is_one_line_naming_the_key(names: list[str], problem: str) -> None:
    assert names_problem(names) is not None
    assert _err(_gpu_data(resources=names)).startswith(f"bad.toml: cell.resources: {problem}")


@pytest.mark.parametrize("name", ["count", "priority", "band"])  # a machine class's, a job class's, a Borg quota's key
def test_a_resource_may_not_take_the_name_of_a_key_beside_the_per_resource_ones(name: str) -> None:
    assert _err(_gpu_data(resources=["cpu", "mem", name])).startswith(
        f"bad.toml: cell.resources: {name!r} is a key of a table that has a key per resource")


def test_a_task_asking_more_of_it_than_any_machine_has_is_refused() -> None:
    data = _gpu_data()
    data["workload"]["classes"][0]["gpu"] = 5.0
    assert "(cpu=0.5, mem=1, gpu=5) fits no machine class" in _err(data)


def test_yarn_schedules_resource_types_only_with_the_dominant_calculator() -> None:
    data = further_resource_data("yarn", "gpu")
    data["yarn"]["resource_calculator"] = "memory"
    msg = _err(data)
    assert msg.startswith("bad.toml: yarn.resource_calculator: resource types (gpu)") and 'resource_calculator = "dominant"' in msg
    data["yarn"] = {"scheduler": "fair", "rms": 2, "queues": [{"name": "all", "classes": ["batch", "service", "train"]}]}
    assert _err(data).startswith("bad.toml: yarn.fair_policy: resource types (gpu)")


def test_the_cli_refuses_an_architecture_without_resource_types_in_one_line(tmp_path: Path) -> None:
    text = (ROOT / "scenarios/sparrow_sampling.toml").read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace("[cell]", '[cell]\nresources = ["cpu", "mem", "gpu"]', 1))
    r = subprocess.run([sys.executable, "-m", "schedlab", "run", str(bad), "--engine", "sim", "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "bad.toml: cell.resources: architecture 'sparrow' cannot schedule 'gpu'" in lines[0]
    assert not (tmp_path / "o").exists()  # nothing started, nothing written


@given(st.integers(1, 6), st.integers(0, 20), st.integers(-5, 5))
def test_wire_blobs_carry_their_width(width: int, n: int, version: int) -> None:
    rng = np.random.default_rng(n * 7 + width)
    machines, free, seq = rng.integers(0, 100, n), rng.random((n, width)), rng.integers(0, 9, n)
    d = unpack_delta(pack_delta(Delta(version, machines, free, seq)))
    assert d.version == version and d.free.shape == (n, width)
    assert np.array_equal(d.machines, machines) and np.array_equal(d.free, free) and np.array_equal(d.seq, seq)
    c = unpack_claims(pack_claims(Claims(machines, free, seq)))
    assert c.request.shape == (n, width) and np.array_equal(c.request, free)


def test_samples_carry_each_further_resource_and_read_back() -> None:
    fields = sample_fields(used_shares([2.0, 8.0, 3.0, 0.0], [4.0, 16.0, 4.0, 0.0]))
    assert fields == {"cpu": 0.5, "mem": 0.5, "more": [0.75, 0.0]}  # none of a resource in the cell: 0 in use
    assert sample_shares(fields, 4) == [0.5, 0.5, 0.75, 0.0]
    assert "more" not in sample_fields([0.1, 0.2]) and sample_shares({"cpu": 0.1, "mem": 0.2}, 3) == [0.1, 0.2, 0.0]


def test_kubernetes_filters_on_an_extended_resource_and_scores_cpu_and_mem_only() -> None:
    names = ("cpu", "mem", "gpu")
    nodes = [Node(0, "n0", (8.0, 32.0, 0.0)), Node(1, "n1", (8.0, 32.0, 4.0))]
    view = ClusterView(nodes, resources=names)
    fit = NodeResourcesFit("MostAllocated")
    from tests.test_kubernetes_plugins import run_filter, run_score

    want = Pod((1, 0), (1.0, 4.0, 2.0))
    no, yes = run_filter(fit, want, view)
    assert no.reasons == ("Insufficient gpu",) and yes.ok
    # MostAllocated over cpu and mem alone: the same score on both nodes, GPU or not (upstream's default weights).
    raw, _ = run_score(fit, Pod((1, 1), (1.0, 4.0, 0.0)), view)
    assert raw[0] == raw[1]
    weighted = NodeResourcesFit("MostAllocated", resources={"cpu": 1, "mem": 1, "gpu": 1})
    raw, _ = run_score(weighted, want, view, nodes=[1])
    assert raw[0] > run_score(fit, want, view, nodes=[1])[0][0]  # its GPU share now counts


@given(st.integers(0, 16), st.integers(1, 12))
def test_htcondor_splits_a_countable_resource_in_whole_units_over_static_slots(total: int, slots: int) -> None:
    parts = [_share(float(total), slots, i) for i in range(slots)]
    assert sum(parts) == total and all(p == int(p) for p in parts) and max(parts) - min(parts) <= 1
    assert _share(3.0, 2, 0) == 2.0 and _share(1.5, 2, 1) == 0.75


def test_htcondor_matches_a_further_request_only_where_the_slot_has_it() -> None:
    names = ("cpu", "mem", "gpu")
    with_gpu = slot_ad(0, 0, "g", (4.0, 16.0, 2.0), 2, MachineAds(), resources=names)
    without = slot_ad(1, 0, "c", (4.0, 16.0, 0.0), 2, MachineAds(), resources=names)
    assert with_gpu["gpu"] == 1.0 and with_gpu["Totalgpu"] == 2.0 and without["gpu"] == 0.0
    job = job_ad(5, 0, "train", (1.0, 2.0, 1.0), JobAds("u", 0), resources=names)
    assert job["Requestgpu"] == 1.0
    assert fits_requests(job, with_gpu) and not fits_requests(job, without)
    assert "Requestgpu" not in job_ad(5, 1, "web", (1.0, 2.0, 0.0), JobAds("u", 0), resources=names)


def test_borgs_quota_is_a_vector_and_names_the_resource_it_refuses() -> None:
    book = QuotaBook({("u", "batch"): np.array([10.0, 10.0, 1.0])}, resources=("cpu", "mem", "gpu"))
    assert book.admit("u", 100, np.array([1.0, 1.0, 0.0]), 2)[0]
    ok, why = book.admit("u", 100, np.array([1.0, 1.0, 1.0]), 2)
    assert not ok and "would use 2 gpu of 1" in why


def test_htcondor_refuses_a_resource_named_as_a_slot_attribute_and_ignores_non_requests() -> None:
    data = further_resource_data("htcondor", "memory")
    assert _err(data).startswith("bad.toml: cell.resources: 'memory' would be the slot ad's own memory attribute")
    names = ("cpu", "mem", "gpu")
    slot = slot_ad(0, 0, "g", (4.0, 16.0, 2.0), 2, MachineAds(), resources=names)
    job = dict(job_ad(5, 0, "train", (1.0, 2.0, 0.0), JobAds("u", 0), resources=names), RequestedBy='"ops"')
    assert fits_requests(job, slot)  # RequestedBy is an attribute, not a request for "edBy"
    job["requestgpu"] = 3.0  # case does not matter to ClassAds: a request for 3 of the slot's 1
    assert not fits_requests(job, slot)


def test_a_cell_of_too_many_resources_is_refused_and_k8s_names_short_ones_lazily() -> None:
    assert "at most 16" in names_problem(["cpu", "mem", *(f"r{i}" for i in range(15))])
    names = ("cpu", "mem", *(f"r{i}" for i in range(14)))
    view = ClusterView([Node(0, "n0", (1.0,) * 16)], resources=names)
    from tests.test_kubernetes_plugins import run_filter

    st = run_filter(NodeResourcesFit(), Pod((1, 0), (2.0, 0.5, *([0.0] * 13), 2.0)), view)[0]
    assert st.reasons == ("Insufficient cpu", "Insufficient r13")
