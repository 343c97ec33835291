"""The experiments and benchmarks are ``schedlab`` subcommands
(``cli.tools``): every tool module with a ``main`` is one, every benchmark
script is one, and the command hands a tool its own arguments."""
from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from schedlab.cli import tools
from schedlab.cli.main import build_parser, main

ROOT = Path(__file__).resolve().parents[1]


def _has_main(path: Path) -> bool:
    return any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in ast.parse(path.read_text()).body)


def test_every_experiment_and_benchmark_with_a_main_is_a_subcommand() -> None:
    experiments = {"schedlab." + ".".join(f.relative_to(ROOT).with_suffix("").parts)
                   for f in (ROOT / "experiments").rglob("*.py") if _has_main(f)}  # experiments/paper/ too
    assert experiments == {t.module for t in tools.TOOLS}
    benches = {f"schedlab.scripts.{f.stem}" for f in (ROOT / "scripts").glob("bench*.py")}
    assert benches == {b.module for b in tools.BENCHES}
    for t in (*tools.TOOLS, *tools.BENCHES):
        assert callable(importlib.import_module(t.module).main), t


def test_help_lists_every_tool() -> None:
    listed = build_parser().format_help()
    for name in tools.names():
        assert f"    {name} " in listed, name


def test_a_tool_gets_its_own_arguments_and_names_itself(capsys: pytest.CaptureFixture) -> None:
    assert main(["binpack", "--items", "10", "--trials", "1", "--seed", "3"]) == 0
    assert "first_fit" in capsys.readouterr().out
    assert main(["binpack", "--no-such-option"]) == 2
    assert "--no-such-option" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["soak", "--help"])
    assert e.value.code == 0 and capsys.readouterr().out.startswith("usage: schedlab soak ")


def test_an_unknown_benchmark_is_refused_in_one_line(capsys: pytest.CaptureFixture) -> None:
    assert main(["bench", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope: not a benchmark" in err and "sim" in err
