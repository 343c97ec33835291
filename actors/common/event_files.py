"""A run's events on disk: one JSON object per line, plain (``events.jsonl``,
the default) or gzip-compressed (``events.jsonl.gz``, ``[metrics] events =
"jsonl.gz"``), and the one reader every analysis goes through.

Why compressed JSON lines and not a binary or columnar format: measured on
a 6-emulated-hour sim soak (`schedlab soak --engine sim --hours 6`, 134,753 events, 21.3 MB of JSON lines),
msgpack was 21% smaller (16.7 MB) and 30% faster to parse, while gzip at
level 3 made the JSON lines 8.3x smaller (2.6 MB) for 84 ms of CPU and
needs no re-encoding: the collector compresses the lines the actors already
render. The file stays readable by every tool a user already has (``zcat |
jq``, ``pandas.read_json(..., lines=True, compression="gzip")``) and is
written and read as a stream. What bounds a long run is memory, not parsing
(~4 us an event): ``iter_events`` shares the keys and the short strings
every event repeats (names, kinds, actors), which halves a run's events in
memory (142 MB -> 66 MB for that soak)."""
from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import IO, Any, Iterator

from schedlab.schedulers.scenario.section_fields import EVENT_FORMATS

# The file a run writes, by ``[metrics] events`` value.
EVENT_FILES = {fmt: f"events.{fmt}" for fmt in EVENT_FORMATS}
GZIP_LEVEL = 3  # 8.3x smaller than plain on a soak's events, ~4 ms of CPU per MB

_SHARED_STR_MAX = 48  # strings up to this long are shared between events (names, not payloads)


class NoEvents(FileNotFoundError):
    """The directory holds no events file in any known format."""


def events_file(run: str | Path) -> Path:
    """The events file of the run directory ``run`` (whichever format it was
    written in); raises ``NoEvents`` naming the directory when there is none."""
    d = Path(run)
    for name in EVENT_FILES.values():
        if (d / name).is_file():
            return d / name
    raise NoEvents(f"{d}: no events file ({' or '.join(EVENT_FILES.values())})")


def has_events(run: str | Path) -> bool:
    return any((Path(run) / name).is_file() for name in EVENT_FILES.values())


def open_for_append(path: str | Path) -> IO[str]:
    """A text stream the collector writes lines to; gzip when the name ends in .gz."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    if p.suffix == ".gz":
        return gzip.open(p, "wt", encoding="utf-8", compresslevel=GZIP_LEVEL)
    return p.open("w", encoding="utf-8")


def _open_for_read(path: Path) -> IO[str]:
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8")


def iter_events(path: str | Path) -> Iterator[dict[str, Any]]:
    """The events of an events file (or of the run directory holding one), in
    file order, one at a time. Keys and short string values are shared
    across events (one object per distinct string), so a run's events held
    in memory cost about half of what ``json.loads`` per line makes."""
    p = Path(path)
    if p.is_dir():
        p = events_file(p)
    shared: dict[str, str] = {}
    share = shared.setdefault

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        return {share(k, k): (share(v, v) if v.__class__ is str and len(v) <= _SHARED_STR_MAX else v) for k, v in items}

    decode = json.JSONDecoder(object_pairs_hook=pairs).decode
    with _open_for_read(p) as f:
        try:
            for line in f:
                if line.strip():
                    yield decode(line)
        except EOFError as e:  # a compressed file whose writer died before closing it
            raise ValueError(f"{p}: cut short ({e})") from None


def read_events(path: str | Path) -> list[dict[str, Any]]:
    """Every event of an events file (or of a run directory), in file order."""
    return list(iter_events(path))


def export_jsonl(run: str | Path, dest: str | Path) -> int:
    """Write the run's events as plain JSON lines to ``dest``, line for line
    as the actors rendered them; returns the number of events."""
    src = events_file(run)
    n = 0
    with _open_for_read(src) as f, Path(dest).open("w", encoding="utf-8") as out:
        for line in f:
            if line.strip():
                out.write(line if line.endswith("\n") else line + "\n")
                n += 1
    return n
