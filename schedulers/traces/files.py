"""Reading trace files as users download them: a table's shards (a folder
of parts, or files named after the table), gzip or plain, CSV with or
without a header, or newline-delimited JSON (BigQuery's export), one row at
a time with its line number, so a bad value is refused naming the file,
the line and the column.
"""
from __future__ import annotations

import csv
import gzip
import io
import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from schedlab.schedulers.traces.form import TraceError

SUFFIXES = (".csv", ".csv.gz", ".json", ".json.gz", ".jsonl", ".jsonl.gz")


def shards(src: Path, table: str, required: bool = True) -> list[Path]:
    """The files of ``table`` under ``src``, in name order: ``src/table/*``
    (Google 2011's task_events/part-00000-of-00500.csv.gz) or
    ``src/table*`` with a trace suffix (a BigQuery export's
    instance_events-000000000000.json.gz, Alibaba's batch_task.csv)."""
    folder = src / table
    if folder.is_dir():
        found = sorted(p for p in folder.iterdir() if p.name.endswith(SUFFIXES))
    else:
        found = sorted(p for p in src.glob(f"{table}*") if p.is_file() and p.name.endswith(SUFFIXES))
    if required and not found:
        raise TraceError(f"{src}: no {table} files (looked for {folder}/*.csv[.gz] and {src}/{table}*.csv|json[.gz])")
    return found


def open_text(path: Path) -> io.TextIOBase:
    if path.name.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def rows(path: Path, columns: Sequence[str], header: bool) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, {column: value}) for every row of a CSV or JSON-lines
    file. A headerless CSV is read by position (``columns``); a CSV with a
    header must have every column of ``columns`` (others are ignored); a
    JSON line is an object, missing keys are None (BigQuery leaves out
    nulls). A row with too few fields, a header without a column, or a line
    that is not JSON is a TraceError naming file, line and column."""
    name = str(path)
    try:
        with open_text(path) as fh:
            if ".json" in path.name:
                for n, line in enumerate(fh, start=1):
                    if not line.strip():
                        continue
                    try:
                        obj = json.loads(line)
                    except json.JSONDecodeError as e:
                        raise TraceError.at(name, n, None, f"not JSON: {e.msg}") from None
                    if not isinstance(obj, dict):
                        raise TraceError.at(name, n, None, "not a JSON object")
                    yield n, obj
                return
            reader = csv.reader(fh)
            index = list(range(len(columns)))
            first = 1
            if header:
                head = next(reader, None)
                if head is None:
                    raise TraceError.at(name, 1, None, "empty file: a header was expected")
                head = [h.strip() for h in head]
                missing = [c for c in columns if c not in head]
                if missing:
                    raise TraceError.at(name, 1, missing[0], "missing from the header")
                index = [head.index(c) for c in columns]
                first = 2
            need = max(index) + 1 if index else 0
            for n, fields in enumerate(reader, start=first):
                if not fields:
                    continue
                if len(fields) < need:
                    col = columns[next(i for i, k in enumerate(index) if k >= len(fields))]
                    raise TraceError.at(name, n, col, f"missing: the row has {len(fields)} fields, {need} expected")
                yield n, {c: fields[k] for c, k in zip(columns, index)}
    except (OSError, EOFError, UnicodeDecodeError, csv.Error) as e:
        raise TraceError(f"{name}: unreadable: {e}") from None


def _value(row: dict[str, Any], column: str, source: str, line: int, missing: Any) -> Any:
    """The column's raw value, or ``missing`` where it is empty or absent
    (None: it is required, a TraceError)."""
    v = row.get(column)
    if v is None or v == "":
        if missing is None:
            raise TraceError.at(source, line, column, "missing value")
        return None
    return v


def number(row: dict[str, Any], column: str, source: str, line: int, missing: float | None = None) -> float:
    """The column's value as a float. Empty or absent: ``missing`` (None:
    it is required, a TraceError). Not a number: a TraceError naming it."""
    v = _value(row, column, source, line, missing)
    if v is None:
        return float(missing)  # type: ignore[arg-type]  # _value raised if it was None
    if isinstance(v, bool):
        raise TraceError.at(source, line, column, f"not a number: {v!r}")
    if isinstance(v, (int, float)):
        return float(v)
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise TraceError.at(source, line, column, f"not a number: {str(v)[:40]!r}") from None
    if math.isinf(x):
        raise TraceError.at(source, line, column, f"not a finite number: {v!r}")
    return x


def integer(row: dict[str, Any], column: str, source: str, line: int, missing: int | None = None) -> int:
    """The column's value as an int (JSON exports write 64-bit ids as strings)."""
    v = _value(row, column, source, line, missing)
    if v is None:
        return int(missing)  # type: ignore[arg-type]  # _value raised if it was None
    if isinstance(v, bool):
        raise TraceError.at(source, line, column, f"not an integer: {v!r}")
    if isinstance(v, int):
        return v
    try:
        return int(v)
    except (TypeError, ValueError):
        try:
            x = float(v)
        except (TypeError, ValueError):
            x = math.nan
        if math.isfinite(x) and x == int(x):
            return int(x)
        raise TraceError.at(source, line, column, f"not an integer: {str(v)[:40]!r}") from None


class Ordered:
    """Checks that a file's times do not go backwards (a shuffled or
    truncated shard would fold wrongly), naming the first line that does."""

    def __init__(self, source: str, column: str) -> None:
        self.source, self.column, self.last = source, column, -math.inf

    def check(self, t: float, line: int) -> None:
        if t < self.last:
            raise TraceError.at(self.source, line, self.column, f"time {t:g} is before the previous row's {self.last:g}: "
                                                                "the file's rows are out of time order")
        self.last = t
