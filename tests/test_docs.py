"""The README and the docs site hold together: the README stays a short
way in whose links all lead somewhere, its Quick start is the two commands
CI runs, and every registered architecture has its page on the site, made
from its package's README (one source). The site's own links and includes
are checked by the strict build in .ci/run."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from schedlab.schedulers import arch as registry

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _section(text: str, title: str) -> str:
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start: end if end > 0 else None]


def test_the_readme_is_short_and_has_no_history() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    assert not re.search(r"\b[0-9a-f]{7,40}\b", text), "a commit hash in the README: history goes in the docs"


def test_the_quick_start_is_the_two_commands_ci_runs() -> None:
    blocks = re.findall(r"```bash\n(.*?)```", _section(README.read_text(), "Quick start"), re.S)
    assert [b.strip() for b in blocks] == ["pip install -e . && schedlab run scenarios/quickstart.toml",
                                          "pip install -e '.[dev]' && python -m pytest"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install -q -e '.[dev]'" in ci and "python3 -m pytest" in ci


@pytest.mark.parametrize("doc", [README, *sorted((ROOT / "docs").rglob("*.md"))], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file(doc: Path) -> None:
    text = re.sub(r"```.*?```", "", doc.read_text(), flags=re.S)  # code is not links
    broken = [link for link in LINK.findall(text)
              if "://" not in link and not link.startswith("mailto:") and not (doc.parent / link).exists()]
    assert not broken, f"{doc.relative_to(ROOT)}: {broken}"


@pytest.mark.parametrize("name", registry.names())
def test_every_architecture_has_its_page_from_its_package_readme(name: str) -> None:
    page = ROOT / "docs" / "architectures" / f"{name}.md"
    readme = f"actors/archs/{name}/README.md"
    assert (ROOT / readme).is_file()
    assert f'--8<-- "{readme}"' in page.read_text()
    nav = (ROOT / "mkdocs.yml").read_text()
    assert f"architectures/{name}.md" in nav
    assert f"]({readme})" in README.read_text()  # and a line in the README's table
