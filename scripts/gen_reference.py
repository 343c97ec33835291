"""Write the docs' reference pages from the code (``schedlab.api.reference``).

    python scripts/gen_reference.py           # rewrite docs/reference/{scenario-keys,cli,events,exit-codes}.md
    python scripts/gen_reference.py --check   # exit 1 naming the pages the code no longer matches
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from schedlab.api.reference import stale, write

DOCS = Path(__file__).resolve().parents[1] / "docs"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true", help="only say which pages are stale (exit 1 if any)")
    args = p.parse_args(argv)
    if args.check:
        bad = stale(DOCS)
        for rel in bad:
            print(f"docs/{rel}: stale (python scripts/gen_reference.py rewrites it)", file=sys.stderr)
        return 1 if bad else 0
    for path in write(DOCS):
        print(f"wrote {path.relative_to(DOCS.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
