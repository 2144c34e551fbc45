"""Where the rows go, one at a time, and which rows an earlier run already wrote.

JSON Lines and CSV are appended and flushed row by row. Parquet cannot be appended, so the
rows go to a journal beside it (`OUT.parquet.partial.jsonl`) and the Parquet file is written
(atomically) at the end from the earlier file, the journal and nothing else; a run that was
killed leaves the journal, which the next run with the same `-o` takes up. Re-running with
the same `-o` skips every job already present with the same path, size and mtime.
"""

from __future__ import annotations

import csv
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from analyzer.errors import InputError
from analyzer.fleet.row import COLUMNS

Key = tuple[str, int | None, float | None]
FORMATS = ("table", "jsonl", "csv", "parquet")


def row_key(row: dict[str, Any]) -> Key:
    mtime = row.get("mtime")
    size = row.get("size")
    return (str(row.get("path")), int(size) if size not in (None, "") else None,
            round(float(mtime), 3) if mtime not in (None, "") else None)


def format_for(output: Path | None, fmt: str | None) -> str:
    """--format, else the output's suffix, else a table for the terminal."""
    if fmt:
        return fmt
    if output is None or str(output) == "-":
        return "table" if output is None else "jsonl"
    suffix = output.suffix.lower()
    return {".parquet": "parquet", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl",
            ".json": "jsonl"}.get(suffix, "jsonl")


def _append(path: Path) -> IO[str]:
    """Open for appending rows; a last line a killed run left without its newline ends
    first, so the next row is not glued to it (and lost with it)."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            cut = f.tell() > 0 and (f.seek(-1, os.SEEK_END), f.read(1))[1] != b"\n"
    except OSError:
        cut = False
    out = path.open("a", encoding="utf-8", newline="")
    if cut:
        out.write("\n")
    return out


def _journal(path: Path) -> Path:
    return path.with_name(path.name + ".partial.jsonl")


def _jsonl_rows(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue  # the last row of a killed run may be cut
            if isinstance(value, dict):
                yield value


def earlier_rows(output: Path | None, fmt: str) -> list[dict[str, Any]]:
    """The rows an earlier run wrote to this output (and its journal), to skip their jobs."""
    if output is None or str(output) == "-" or fmt == "table":
        return []
    found: list[dict[str, Any]] = []
    try:
        if output.exists() and output.stat().st_size:
            if fmt == "jsonl":
                found.extend(_jsonl_rows(output))
            elif fmt == "csv":
                with output.open(encoding="utf-8", newline="") as f:
                    found.extend(dict(r) for r in csv.DictReader(f))
            elif fmt == "parquet":
                import polars as pl

                found.extend(pl.read_parquet(output).to_dicts())
        if fmt == "parquet" and _journal(output).exists():
            found.extend(_jsonl_rows(_journal(output)))
    except (OSError, ValueError) as exc:  # polars raises its own ComputeError (a ValueError?)
        raise InputError(f"{output}: cannot read the earlier scan to resume it: {exc}"
                         ) from None
    except Exception as exc:
        raise InputError(f"{output}: not a scan table this run can resume: {exc}") from None
    return found


def _cell(value: Any) -> Any:
    return "" if value is None else value


class Sink:
    """Takes rows one by one; `close()` finishes the output."""

    def __init__(self, output: Path | None, fmt: str):
        self.output = output
        self.fmt = fmt
        self.rows: list[dict[str, Any]] = []  # kept for the summary (and the table)
        self._file: IO[str] | None = None
        self._csv: Any = None
        to_stdout = output is None or str(output) == "-"
        if fmt == "table":
            return
        if fmt == "parquet":
            if to_stdout:
                raise InputError("a Parquet table needs -o FILE.parquet")
            assert output is not None
            self._file = _append(_journal(output))
        elif to_stdout:
            self._file = sys.stdout
        else:
            assert output is not None
            fresh = not output.exists() or output.stat().st_size == 0
            self._file = _append(output)
            if fmt == "csv":
                self._csv = csv.DictWriter(self._file, fieldnames=list(COLUMNS))
                if fresh:
                    self._csv.writeheader()
        if fmt == "csv" and self._csv is None:
            self._csv = csv.DictWriter(self._file, fieldnames=list(COLUMNS))
            self._csv.writeheader()

    def write(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        if self._file is None:
            return
        if self._csv is not None:
            self._csv.writerow({k: _cell(row.get(k)) for k in COLUMNS})
        else:
            self._file.write(json.dumps(row, ensure_ascii=False) + "\n")
        self._file.flush()

    def close(self) -> None:
        """Finish the output: a Parquet file from the earlier rows and the journal."""
        if self._file is not None and self._file is not sys.stdout:
            self._file.close()
        if self.fmt != "parquet" or self.output is None:
            return
        from analyzer.fleet.table import frame

        journal = _journal(self.output)
        rows = [*self._carried_parquet(), *(_jsonl_rows(journal) if journal.exists() else [])]
        tmp = self.output.with_name(f".{self.output.name}.{os.getpid()}.tmp")
        try:
            frame(rows).write_parquet(tmp)
            tmp.replace(self.output)
        finally:
            tmp.unlink(missing_ok=True)
        journal.unlink(missing_ok=True)

    def _carried_parquet(self) -> list[dict[str, Any]]:
        """The earlier Parquet file's rows (the journal's are read again with this run's)."""
        if self.output is None or not self.output.exists():
            return []
        import polars as pl

        return list(pl.read_parquet(self.output).to_dicts())
