"""The checkout installs as one package, ``schedlab`` (pyproject
``package-dir``): every subpackage is listed, and no module reaches for the
folders by their bare names (which would work in the checkout and break in
a wheel, or pick up a user's own ``scripts/``)."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODE = ("actors", "schedulers", "scripts")
BARE_IMPORT = re.compile(r"^\s*(from|import)\s+(actors|schedulers|scripts)\b", re.M)


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_code_folder_is_a_listed_package() -> None:
    listed = set(_pyproject()["tool"]["setuptools"]["packages"])
    found = {"schedlab"}
    for top in CODE:
        for init in (ROOT / top).rglob("__init__.py"):
            found.add(".".join(("schedlab", *init.parent.relative_to(ROOT).parts)))
    for d in [ROOT / "scenarios", *(p for p in (ROOT / "scenarios").rglob("*") if p.is_dir())]:
        if "__pycache__" not in d.parts:
            found.add(".".join(("schedlab", *d.relative_to(ROOT).parts)))
    assert found == listed, {"unlisted": sorted(found - listed), "listed but missing": sorted(listed - found)}


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
    assert _pyproject()["project"]["scripts"]["schedlab"] == "schedlab.scripts.cli:main"
