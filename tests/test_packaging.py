"""The checkout installs as one package, ``schedlab`` (pyproject
``package-dir``; setup.py finds the subpackages): every package is in the
distribution, and no module reaches for the
folders by their bare names (which would work in the checkout and break in
a wheel, or pick up a user's own ``scripts/``)."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CODE = ("actors", "api", "cli", "experiments", "schedulers", "scripts")
BARE_IMPORT = re.compile(r"(^\s*|[\"';]\s*)(from|import)\s+(actors|api|cli|experiments|schedulers|scripts)\b", re.M)


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_code_folder_is_a_package_of_the_distribution(monkeypatch: pytest.MonkeyPatch) -> None:
    """setup.py computes the list (so a new architecture's packages need no
    line anywhere): every folder with an __init__.py, and the scenarios."""
    found = {"schedlab"}
    for top in CODE:
        for init in (ROOT / top).rglob("__init__.py"):
            found.add(".".join(("schedlab", *init.parent.relative_to(ROOT).parts)))
    for d in [ROOT / "scenarios", *(p for p in (ROOT / "scenarios").rglob("*") if p.is_dir())]:
        if "__pycache__" not in d.parts:
            found.add(".".join(("schedlab", *d.relative_to(ROOT).parts)))
    assert _distributed_packages(monkeypatch) == found
    assert "packages" not in _pyproject()["tool"]["setuptools"], "one list: setup.py's"


def _distributed_packages(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    import runpy

    import setuptools

    got: dict = {}
    monkeypatch.setattr(setuptools, "setup", lambda **kw: got.update(kw))
    runpy.run_path(str(ROOT / "setup.py"))
    return set(got["packages"])


def test_every_folder_of_python_files_is_in_the_distribution(monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder of modules without an ``__init__.py`` works in the checkout
    (a namespace package) and is silently left out of the wheel: the
    federation's live half once was (``schedlab run multicluster`` from an
    installed wheel: ModuleNotFoundError). Judged by the files, not by the
    ``__init__.py`` files the test above starts from."""
    packages = _distributed_packages(monkeypatch)
    missing = sorted({".".join(("schedlab", *f.parent.relative_to(ROOT).parts))
                      for top in (*CODE, "scenarios") for f in (ROOT / top).rglob("*.py")
                      if "__pycache__" not in f.parts} - packages)
    assert not missing, f"folders of .py files the wheel would leave out (add an __init__.py): {missing}"


def test_no_module_imports_a_folder_by_its_bare_name() -> None:
    bad = []
    for top in (*CODE, "tests", "scenarios"):
        for f in (ROOT / top).rglob("*.py"):
            for m in BARE_IMPORT.finditer(f.read_text()):
                line = f.read_text()[: m.start()].count("\n") + 1
                bad.append(f"{f.relative_to(ROOT)}:{line}")
    assert not bad, bad


def test_the_package_root_is_the_checkout_root() -> None:
    import schedlab

    assert Path(schedlab.__file__).resolve().parent == ROOT or (Path(schedlab.__file__).parent / "actors").is_dir()
    assert _pyproject()["tool"]["setuptools"]["package-dir"] == {"schedlab": "."}
    assert _pyproject()["project"]["scripts"]["schedlab"] == "schedlab.cli.main:main"


def _imports(path: Path, package: str) -> set[str]:
    """schedlab modules ``path`` imports, at the top or inside functions."""
    import ast

    out: set[str] = set()
    tree = ast.parse(path.read_text())
    typing_only = {id(n) for top in ast.walk(tree) if isinstance(top, ast.If) and getattr(top.test, "id", "") == "TYPE_CHECKING"
                   for n in ast.walk(top)}  # annotations only: never imported at run time
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("schedlab"):
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)  # "from schedlab.actors.analysis import plots"
        elif isinstance(node, ast.ImportFrom) and node.level:
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            out.add(f"{base}.{node.module}" if node.module else base)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("schedlab"))
    return out


def test_no_import_cycles() -> None:
    """A cycle (cli <-> sweep, report <-> report_sweep were two) makes import
    order matter and hides which module owns what."""
    modules: dict[str, Path] = {}
    for top in CODE:
        for f in (ROOT / top).rglob("*.py"):
            parts = f.relative_to(ROOT).with_suffix("").parts
            name = ".".join(("schedlab", *parts[:-1])) if parts[-1] == "__init__" else ".".join(("schedlab", *parts))
            modules[name] = f
    graph = {m: {i for i in _imports(f, m if f.name == "__init__.py" else m.rsplit(".", 1)[0]) if i in modules and i != m}
             for m, f in modules.items()}
    # Importing a package's submodule runs the package's __init__ first: not an edge back.
    cycles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for n in sorted(graph[m]):
            if m.startswith(n + "."):
                continue
            if state.get(n) == 1:
                cycles.append(stack[stack.index(n):] + [n])
            elif n not in state:
                visit(n, stack + [n])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, cycles
