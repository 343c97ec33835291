"""Docs that run: every ``bash`` and ``python`` block in the README and the
docs is executed here, or marked on the line before it as not run here,
with the reason (``<!-- not run: why -->``); every ``toml`` block is a TOML
document a scenario file could hold (it validates against the schema).

How a block runs: in a fresh directory holding the checkout's
``scenarios/`` and ``scripts/``, command by command (backslash
continuations joined, comments dropped), each ``schedlab ...`` command
in-process (``schedlab.cli.main``) and required to exit 0. A ``run``,
``compare`` or ``sweep`` runs on the sim engine for 250 emulated seconds
(its own ``--engine`` and ``--set duration=`` replaced), so a
page's example runs in CI as written, only shorter; a ``python`` command
(a script of the checkout's) runs as written, in its own process. Blocks of one page run
in order in one directory (a later block may read what an earlier wrote).
A ``python`` block runs with ``exec`` in that directory."""
from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import jsonschema
import pytest

from schedlab.cli.main import main
from schedlab.schedulers.scenario.schema import scenario_schema

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted(p for p in (ROOT / "docs").rglob("*.md") if p.parent.name != "reference" or p.name == "scenario-files.md")
# A page that includes a whole file (an architecture's page, its package README) shows that file's blocks.
INCLUDED = sorted({ROOT / m for p in DOCS for m in re.findall(r'^--8<-- "([^":]+)"$', p.read_text(), re.M)})
PAGES = [ROOT / "README.md", *DOCS, *INCLUDED]
BLOCK = re.compile(r"(?:<!-- not run: (?P<why>[^>]+?) -->\n)?```(?P<lang>bash|python|toml)\n(?P<body>.*?)```", re.S)
SHORTENED = ("run", "compare", "sweep")
SHORT = ["--engine", "sim", "--set", "duration=250"]  # long enough for the shipped scenarios' faults
# A block with shell control flow runs in bash, its schedlab shortened the same way by a function.
SHELL_FLOW = re.compile(r"^\s*(for|while|if)\b", re.M)
SHORTENING = ('schedlab() { case "$1" in run|compare|sweep) command schedlab "$@" ' + " ".join(SHORT) +
              ';; *) command schedlab "$@";; esac; }\n')


def _blocks(page: Path) -> list[tuple[str, str, str | None]]:
    return [(m["lang"], m["body"], m["why"]) for m in BLOCK.finditer(page.read_text())]


def _commands(body: str) -> list[str]:
    joined = re.sub(r"\\\n\s*", " ", body)
    out = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            out.append(line)
    return out


def _run_command(line: str) -> None:
    words = shlex.split(line, comments=True)
    if words[0] == "python":  # a script of the checkout's (scenarios/, scripts/), in its own process
        done = subprocess.run([sys.executable, *words[1:]], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{line!r} exited {done.returncode}: {done.stderr[-2000:]}"
        return
    assert words[0] == "schedlab", f"not a schedlab or python command: mark the block not run, with why: {line!r}"
    argv = words[1:]
    if argv[0] in SHORTENED:  # its own engine and duration give way to the short ones (a sweep refuses a key set twice)
        kept: list[str] = []
        for w in argv:
            if kept and ((kept[-1] == "--set" and w.startswith("duration=")) or kept[-1] == "--engine"):
                kept.pop()
            else:
                kept.append(w)
        argv = kept + SHORT
    code = main(argv)
    assert code == 0, f"{line!r} exited {code}"


RUNNABLE = [(page, i) for page in PAGES for i, (lang, _body, why) in enumerate(_blocks(page)) if lang != "toml" and why is None]


def test_every_block_runs_or_says_why_not() -> None:
    """The marks themselves: a reason is a sentence, not a shrug."""
    for page in PAGES:
        for _lang, _body, why in _blocks(page):
            if why is not None:
                assert len(why.split()) >= 3, f"{page.relative_to(ROOT)}: say why a block is not run: {why!r}"


@pytest.mark.parametrize("page", sorted({p for p, _ in RUNNABLE}), ids=lambda p: str(p.relative_to(ROOT)))
def test_a_pages_blocks_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("scenarios", "scripts"):
        (tmp_path / name).symlink_to(ROOT / name)
    monkeypatch.chdir(tmp_path)
    ran = 0
    for lang, body, why in _blocks(page):
        if why is not None or lang == "toml":
            continue
        if lang == "python":
            exec(compile(body, f"{page.name}:python", "exec"), {"__name__": "__docs__"})
        elif SHELL_FLOW.search(body):
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", SHORTENING + body], cwd=tmp_path,
                                  capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, f"{body!r} exited {done.returncode}: {done.stderr[-2000:]}"
        else:
            for line in _commands(body):
                _run_command(line)
        ran += 1
    assert ran > 0


@pytest.mark.parametrize("page", [p for p in PAGES if any(lang == "toml" and why is None for lang, _b, why in _blocks(p))],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_a_pages_toml_is_what_a_scenario_may_hold(page: Path) -> None:
    validator = jsonschema.Draft202012Validator(scenario_schema())
    for lang, body, why in _blocks(page):
        if lang == "toml" and why is None:
            errors = [e.message for e in validator.iter_errors(tomllib.loads(body))]
            assert not errors, errors
