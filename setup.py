"""The package list, computed; everything else is in pyproject.toml.

The folders at the top of the checkout install as ``schedlab.<folder>``
(pyproject's ``package-dir``), and setuptools' declarative ``find`` cannot
prefix names, so the subpackages are found here: a new architecture's two
packages need no line anywhere else."""
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
# The code folders (each installs as schedlab.<folder>); tests/test_packaging.py keeps the same list.
TOPS = ("actors", "api", "cli", "experiments", "schedulers", "scripts")
CODE = find_packages(where=str(HERE), include=[f"{top}{tail}" for top in TOPS for tail in ("", ".*")])
SCENARIOS = ["scenarios", *(".".join(p.relative_to(HERE).parts) for p in sorted((HERE / "scenarios").rglob("*"))
                             if p.is_dir() and "__pycache__" not in p.parts)]



class BuildPy(build_py):
    """The package's root is the checkout's: leave this file out of it."""

    def find_package_modules(self, package: str, package_dir: str) -> list:
        return [m for m in super().find_package_modules(package, package_dir) if (m[0], m[1]) != ("schedlab", "setup")]


setup(packages=["schedlab", *(f"schedlab.{p}" for p in sorted(CODE) + SCENARIOS)], cmdclass={"build_py": BuildPy})
