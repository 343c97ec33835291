"""Run every kind of shipped scenario from an installed wheel, short, on sim.

Run by ``.ci/run`` with the wheel's virtual environment, from a directory
outside the checkout: one single-cell scenario of every registered
architecture, a comparison and a federation. A module the wheel left out
(a folder without ``__init__.py``) fails here as it would for a user.
The kinds are read from the shipped files themselves through the run-kind
table (``schedlab.api.kinds``), so a new architecture or file kind is
covered without a line here. Each OUT is then checked (``schedlab check``),
and a tool and a benchmark run as subcommands (the experiments and scripts
packages are in the wheel).
"""
from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import schedlab
from schedlab.api import kinds as run_kinds
from schedlab.schedulers import arch

SHIPPED = Path(schedlab.__file__).resolve().parent / "scenarios"
BIN = Path(sys.executable).parent  # the wheel's environment, not whatever PATH finds first
SHORT = ["--engine", "sim", "-q", "--set", "duration=60"]


def kinds() -> tuple[dict[str, str], list[str], list[str]]:
    """(first single-cell scenario per architecture, comparisons, federations), by shipped name."""
    single: dict[str, tuple[bool, str]] = {}
    compare: list[str] = []
    federation: list[str] = []
    for p in sorted(SHIPPED.rglob("*.toml")):
        name = p.relative_to(SHIPPED).with_suffix("").as_posix()
        data = tomllib.loads(p.read_text(encoding="utf-8"))
        kind = run_kinds.of_data(data, name).name
        if kind == "federation":
            federation.append(name)
        elif kind == "comparison":
            compare.append(name)
        elif "architecture" in data and "include" not in data:
            # one without faults where there is one: what a short run can show
            single[data["architecture"]] = min(single.get(data["architecture"], (True, "~")), ("faults" in data, name))
    return {a: n for a, (_, n) in single.items()}, compare, federation


def run(cmd: list[str]) -> None:
    print("$ schedlab", " ".join(cmd), flush=True)
    subprocess.run([str(BIN / "schedlab"), *cmd], check=True)


def main(out: Path) -> int:
    single, compare, federation = kinds()
    missing = [a for a in arch.names() if a not in single]
    assert not missing, f"registered architectures with no shipped single-cell scenario: {missing}"
    assert compare and federation, "no comparison or federation shipped"
    for name in arch.names():
        run(["run", single[name], *SHORT, "--out", str(out / name)])
        assert (out / name / "summary.json").stat().st_size > 0
    run(["compare", compare[0], *SHORT, "--out", str(out / "compare")])
    run(["run", federation[0], *SHORT, "--out", str(out / "federation")])
    for d in (arch.names()[0], "compare", "federation"):
        run(["check", str(out / d)])
    # A shipped trace sample, from the wheel's own files: converted, described.
    run(["trace", "convert", str(SHIPPED / "traces" / "google2011"), "--format", "google2011", "--out", str(out / "g.npz")])
    run(["trace", "info", str(out / "g.npz")])
    run(["binpack", "--items", "10", "--trials", "1"])
    run(["bench", "--help"])  # every benchmark the wheel carries, by name
    print(f"ran {len(single)} architectures, comparison {compare[0]}, federation {federation[0]}; checked each kind")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
