"""``schedlab calibrate``: samples binned into a [substrate] latency table
(schedulers/scenario/calibration.py), the probes' measuring
(actors/calibrate.py, checked on the sim engine, whose latency is known),
and one short live run whose file a scenario reads."""
from __future__ import annotations

import math
import tomllib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.actors import engines
from schedlab.actors.calibrate import measure
from schedlab.actors.engines.sim_engine import SimEngine
from schedlab.schedulers.model.workload import Dist
from schedlab.schedulers.scenario.calibration import (
    dist_toml, empirical, latency_toml, significant, spread, stalled, to_emulated,
)
from schedlab.schedulers.scenario.parse import parse_scenario
from schedlab.cli import main as cli
from schedlab.api.scenario_files import load_scenario
from tests.conftest import small_scenario_data

latencies = st.lists(st.floats(min_value=1e-6, max_value=5.0, allow_nan=False), min_size=1, max_size=300)


def substrate_of(text: str) -> Dist:
    """The latency a scenario reads from this fragment."""
    data = small_scenario_data(substrate=tomllib.loads(text)["substrate"])
    return parse_scenario(data, "calibrated").substrate.latency


@given(latencies)
@settings(max_examples=60, deadline=None)
def test_the_table_keeps_the_samples_count_range_and_mean(samples: list[float]) -> None:
    d = empirical(samples)
    assert d.kind == "empirical" and len(d.values) == len(d.weights) <= 32
    assert sum(d.weights) == len(samples) and all(w > 0 for w in d.weights)
    assert list(d.values) == sorted(d.values)
    assert min(samples) * (1 - 1e-3) <= min(d.values) and max(d.values) <= max(samples) * (1 + 1e-3)
    # Each value is its bin's mean (to 4 digits), so the table's mean is the samples'.
    assert d.expected() == pytest.approx(float(np.mean(samples)), rel=1e-3)


@given(latencies, st.sampled_from([1.0, 20.0, 50.0, 1000.0]))
@settings(max_examples=20, deadline=None)
def test_a_table_in_emulated_seconds_reads_back_as_a_scenario_latency(samples: list[float], scale: float) -> None:
    d = empirical(to_emulated(samples, scale))
    got = substrate_of(latency_toml(d, ["a comment", "", "another"]))
    assert got == d
    assert got.expected() == pytest.approx(float(np.mean(samples)) * scale, rel=1e-3)


def test_binning_is_log_spaced_so_the_tail_keeps_its_detail() -> None:
    body = [0.001] * 991  # 1 ms, and a tail of nine slow messages over two decades
    tail = [0.002, 0.004, 0.008, 0.012, 0.02, 0.03, 0.045, 0.065, 0.1]
    d = empirical(body + tail)
    assert d.values[0] == 0.001 and d.weights[0] == 991
    assert d.values[1:] == tuple(tail)  # every tail sample (>= 1.5x apart) in a bin of its own


def test_one_value_and_equal_samples() -> None:
    assert empirical([0.002]) == Dist("empirical", values=(0.002,), weights=(1.0,))
    assert empirical([0.0031234567] * 5) == Dist("empirical", values=(0.003123,), weights=(5.0,))


def test_spread_percentiles() -> None:
    s = spread([float(i) for i in range(1, 1001)])
    assert (s.n, s.min, s.max, s.mean) == (1000, 1.0, 1000.0, 500.5)
    assert s.p50 == pytest.approx(500.5) and s.p90 == pytest.approx(900.1) and s.p99 == pytest.approx(990.01)
    assert s.p999 == pytest.approx(999.001)
    ms = s.scaled(1e3)
    assert (ms.n, ms.p50) == (1000, pytest.approx(500500.0))


def test_a_stall_that_carries_the_sample_is_told() -> None:
    calm = [0.001] * 950 + [0.004] * 50
    assert not stalled(spread(calm))
    paused = [0.001] * 160 + [0.07] * 40  # one 100 ms pause of the machine caught 40 paced messages
    assert stalled(spread(paused))


@pytest.mark.parametrize("bad", [[], [0.001, 0.0], [-1.0], [math.nan], [math.inf]])
def test_samples_that_are_no_latency_are_refused(bad: list[float]) -> None:
    with pytest.raises(ValueError):
        empirical(bad)
    with pytest.raises(ValueError):
        spread(bad)


def test_units_and_text() -> None:
    assert to_emulated([0.002, 0.004], 50.0) == [0.1, 0.2]
    for scale in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError):
            to_emulated([0.002], scale)
    assert significant(0.000123456) == 0.0001235 and significant(12345.0) == 12340.0
    assert dist_toml(Dist("empirical", values=(0.1, 2.0), weights=(3.0, 1.0))) == \
        '{ dist = "empirical", values = [0.1, 2], weights = [3, 1] }'
    with pytest.raises(ValueError):
        dist_toml(Dist("constant", value=1.0))


def test_a_fragment_carries_the_time_scale_its_table_is_for() -> None:
    d = Dist("empirical", values=(0.1, 2.0), weights=(3.0, 1.0))
    text = latency_toml(d, ["made here"], 50.0)
    assert text.startswith("# made here\ntime_scale = 50\n")
    assert tomllib.loads(text)["time_scale"] == 50 and substrate_of(text) == d
    assert "time_scale" not in tomllib.loads(latency_toml(d))


def test_the_probes_measure_the_sim_engines_known_latency() -> None:
    """One-way = one draw, a round trip = two (request and reply)."""
    eng = SimEngine(scale=1.0, latency=Dist("constant", value=0.003))
    with engines.use(eng):
        eng.connect(None, "calibrate")
        try:
            m = measure(60, senders=2)
        finally:
            eng.shutdown()
    assert len(m.one_way) == len(m.round_trip) == 60
    assert m.one_way == pytest.approx([0.003] * 60) and m.round_trip == pytest.approx([0.006] * 60)


@pytest.mark.parametrize("argv, says", [
    (["--time-scale", "0"], "--time-scale: must be a finite number > 0"),
    (["--time-scale", "nan"], "--time-scale: must be a finite number > 0"),
    (["--time-scale", "50", "--messages", "0"], "--messages: must be between 1 and"),
    (["--time-scale", "50", "--out", "{tmp}"], "--out: {tmp} is a directory"),
    (["--time-scale", "50", "--out", "{tmp}/no/such/x.toml"], "--out: no such directory"),
])
def test_bad_input_is_one_line_and_exit_2(argv: list[str], says: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert cli.main(["calibrate", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: " + says.replace("{tmp}", str(tmp_path)))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.ray
def test_a_live_calibration_writes_a_latency_a_scenario_reads(ray_session: None, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "latency.toml"
    assert cli.main(["calibrate", "--time-scale", "50", "--messages", "60", "--out", str(out)]) == 0
    text = out.read_text()
    assert "EMULATED seconds for time_scale = 50" in text
    d = substrate_of(text)
    assert d.kind == "empirical" and sum(d.weights) == 60
    # Emulated seconds, not wall ms: a typical one-way Ray message here takes
    # 0.1 to 100 wall ms, so its median is 5 ms to 5 s emulated at x50 (single
    # messages may stall far longer on a loaded machine: only the median is bounded).
    assert min(d.values) > 0 and 0.005 <= float(np.median(np.repeat(d.values, np.asarray(d.weights, dtype=int)))) <= 5.0
    printed = capsys.readouterr().out
    assert "one-way, wall ms: p50" in printed and "round trip, wall ms: p50" in printed
    # A scenario at that scale includes the file and runs on the sim engine with it.
    scenario = tmp_path / "here.toml"
    scenario.write_text('include = ["latency.toml"]\n' + (Path(__file__).resolve().parents[1] / "scenarios" / "quickstart.toml").read_text())
    sc = load_scenario(scenario, ["engine=\"sim\""])
    assert sc.substrate.latency == d and sc.time_scale == 50 and sc.engine == "sim"
