"""Write the small cluster-trace samples shipped in scenarios/traces/: for
each format schedlab reads, a folder of files in the exact schema of the
published trace (made up, seeded, by ``schedulers.traces.samples``) and its
conversion (``<format>_sample.npz``, what the shipped replay scenarios
read). They are NOT the traces: docs/how-to/traces.md says where the real
ones are and how large.

    python scripts/make_trace_samples.py [--out scenarios/traces]
"""
from __future__ import annotations

import argparse
import importlib
import shutil
from pathlib import Path

from schedlab.schedulers.traces.readers import convert

HERE = Path(__file__).resolve().parents[1]
# format -> what its sample holds (small: the whole set ships in the wheel)
SAMPLES = {
    "google2019": {"machines": 40, "jobs": 300, "hours": 6.0},
    "google2011": {"machines": 40, "jobs": 300, "hours": 6.0},
    "alibaba2018": {"machines": 40, "jobs": 120, "hours": 6.0},
    "azure2020": {"machines": 40, "jobs": 400, "hours": 6.0},
}


def write_all(out: Path) -> list[Path]:
    written = []
    for fmt, size in SAMPLES.items():
        src = out / fmt
        shutil.rmtree(src, ignore_errors=True)
        importlib.import_module(f"schedlab.schedulers.traces.samples.{fmt}").write(src, seed=0, gz=True, **size)
        npz = out / f"{fmt}_sample.npz"
        convert(src, fmt).save(npz)
        written += [src, npz]
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE / "scenarios" / "traces")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for p in write_all(args.out):
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
