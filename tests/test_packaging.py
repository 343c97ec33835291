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
    (a namespace package) and is silently left out of the wheel (its users
    get ModuleNotFoundError from an installed wheel). Judged by the files,
    not by the ``__init__.py`` files the test above starts from."""
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
    """A cycle (say cli <-> sweep) makes import order matter and hides which
    module owns what."""
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


IMPURE_MODULES = ("ray", "psutil", "time", "socket", "subprocess")
IMPURE_CALLS = {("os", "environ"), ("os", "getenv"), ("os", "sysconf"), ("os", "cpu_count"), ("os", "getloadavg")}


def _impurities(path: Path, package: str) -> list[str]:
    """What keeps ``path`` from being pure (DESIGN: no Ray, no clock, no I/O,
    nothing read from the machine): imports of the live half, the scripts,
    Ray or a clock; reads of the environment or the machine."""
    import ast

    out = [f"imports {m}" for m in sorted(_imports(path, package))
           if m.startswith(("schedlab.actors", "schedlab.scripts"))]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [f"imports {a.name}" for a in node.names if a.name.split(".")[0] in IMPURE_MODULES]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module.split(".")[0] in IMPURE_MODULES:
                out.append(f"imports {node.module}")
            if node.module == "os":
                out += [f"imports os.{a.name}" for a in node.names if ("os", a.name) in IMPURE_CALLS]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and (node.value.id, node.attr) in IMPURE_CALLS:
            out.append(f"reads {node.value.id}.{node.attr} (line {node.lineno})")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("/proc/"):
            out.append(f"reads {node.value} (line {node.lineno})")
    return out


def test_the_pure_half_imports_no_live_code_and_reads_no_machine() -> None:
    """Decisions under schedulers/ must run anywhere, unchanged, with no Ray
    and no machine behind them: what the machine or the environment says
    (memory, RAY_ADDRESS) is read by the caller and passed in as a value."""
    found = {}
    for f in sorted((ROOT / "schedulers").rglob("*.py")):
        parts = f.relative_to(ROOT).with_suffix("").parts
        package = ".".join(("schedlab", *parts[:-1]))
        if bad := _impurities(f, package):
            found[str(f.relative_to(ROOT))] = bad
    assert not found, found


def test_the_purity_check_can_fail(tmp_path: Path) -> None:
    """The check above sees each kind of impurity (it is not vacuous)."""
    f = tmp_path / "m.py"
    f.write_text("import os\nimport ray\nfrom schedlab.actors import engines\nfrom time import monotonic\n"
                 "def f():\n    return os.environ.get('X'), os.sysconf('SC_PAGE_SIZE'), open('/proc/meminfo')\n")
    got = _impurities(f, "schedlab.schedulers")
    assert sorted(got) == sorted(["imports schedlab.actors", "imports schedlab.actors.engines", "imports ray", "imports time",
                                  "reads os.environ (line 6)", "reads os.sysconf (line 6)", "reads /proc/meminfo (line 6)"])
