"""The options every benchmark shares: ``--json PATH`` (the results as JSON
too) and ``--quick`` (small sizes, what the benchmark's test runs), whose
values replace the parsed options'. Not a benchmark itself (no ``main``)."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def parse_bench_args(ap: argparse.ArgumentParser, argv: list[str] | None, quick: dict[str, Any], quick_help: str) -> argparse.Namespace:
    """Add ``--json`` and ``--quick`` to ``ap``, parse ``argv``, and with
    ``--quick`` set every option named in ``quick`` to its value there."""
    ap.add_argument("--json", type=Path, default=None, metavar="PATH", help="also write the results as JSON to PATH")
    ap.add_argument("--quick", action="store_true", help=quick_help)
    args = ap.parse_args(argv)
    if args.quick:
        for k, v in quick.items():
            setattr(args, k, v)
    return args
