"""`loglens scan`: many logs into one table, with a summary on the terminal.

A thin shell over `analyzer.fleet`: it lists the jobs, skips those an earlier run with the
same -o already wrote, streams the engine's rows into the sink, shows progress on a terminal
(plain lines otherwise) and prints the summary. Heavy imports happen inside the command.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from analyzer.cli.help import epilog
from analyzer.cli.options import Rules, Year, refuse_inputs, rule_dirs, text_width
from analyzer.errors import EXIT_BAD_INPUT, EXIT_FAIL_ON, InputError, UsageError

PROGRESS_EVERY = 10.0  # seconds between plain progress lines when stderr is no terminal


class ScanFormat(StrEnum):
    TABLE = "table"
    JSONL = "jsonl"
    CSV = "csv"
    PARQUET = "parquet"


class Engine(StrEnum):
    LOCAL = "local"
    RAY = "ray"


def register(app: typer.Typer) -> None:
    """Add `scan` to the `loglens` app."""
    app.command("scan", epilog=epilog("scan"))(scan)


def _since(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise UsageError(f"--since: not a date (YYYY-MM-DD or YYYY-MM-DDTHH:MM): {value!r}"
                         ) from None


def scan(
    paths: Annotated[list[str], typer.Argument(
        help="Log files, directories (recursively: *.log *.txt *.out *.err, .gz, names "
             "without an extension), globs, or - for a list of paths on stdin.",
        show_default=False)],
    output: Annotated[Path | None, typer.Option(
        "-o", "--output", help="Write the table here (- for stdout); re-running with the same "
        "file reads only the logs not in it yet.", show_default=False)] = None,
    format: Annotated[ScanFormat | None, typer.Option(
        "--format", "-f", help="table (the terminal), jsonl, csv or parquet; default: from "
        "-o's suffix, else table.", show_default=False)] = None,
    engine: Annotated[Engine, typer.Option(
        help="local (a process pool on this machine) or ray (Ray Data; pip install "
             "'loglens[ray]').")] = Engine.LOCAL,
    jobs: Annotated[int | None, typer.Option(
        "--jobs", "-j", help="Worker processes (default: every core).", show_default=False)
    ] = None,
    group_by_dir: Annotated[bool, typer.Option(
        "--group-by-dir", help="One row per directory: its logs analysed together as one "
        "job (one log per rank), as `explain DIR` does.")] = False,
    since: Annotated[str | None, typer.Option(
        help="Only logs modified at or after this date (YYYY-MM-DD[THH:MM]).",
        show_default=False)] = None,
    no_redact: Annotated[bool, typer.Option(
        "--no-redact", help="Keep real host names and texts (not for sharing).")] = False,
    fail_on: Annotated[str | None, typer.Option(
        "--fail-on", metavar="VERDICTS",
        help="Exit 1 if any log's verdict is one of these (comma-separated).")] = None,
    rules: Rules = None,
    year: Year = None,
) -> None:
    """A fleet of job logs into one table: verdict, cause, versions, hosts; with a summary."""
    from analyzer.fleet import rows as engine_rows
    from analyzer.fleet.inputs import jobs as list_jobs
    from analyzer.fleet.inputs import read_path_list
    from analyzer.fleet.sink import Sink, earlier_rows, format_for, row_key
    from analyzer.fleet.table import summary, typed
    from analyzer.report.scan_text import render_rows, render_summary

    wanted = {v.strip() for v in (fail_on or "").split(",") if v.strip()}
    bad = wanted - {"crash", "hang", "healthy", "in_progress", "unknown"}
    if bad:
        raise UsageError(f"--fail-on: unknown verdict(s): {', '.join(sorted(bad))}")
    if jobs is not None and jobs < 1:
        raise UsageError("--jobs must be at least 1")
    fmt = format_for(output, format.value if format else None)
    if fmt == "table" and output is not None and str(output) != "-":
        raise UsageError("--format table is for the terminal; write jsonl, csv or parquet "
                         "with -o")
    named = list(paths)
    if "-" in named:
        named = [p for p in named if p != "-"] + read_path_list(sys.stdin)
    if not named:
        raise InputError("no input given (name log files, directories, globs, or - with "
                         "paths on stdin)")
    if output is not None and str(output) != "-":
        refuse_inputs(output, named)
    todo = list_jobs(named, group_by_dir=group_by_dir, since=_since(since))
    earlier = earlier_rows(output, fmt)
    done = {row_key(r) for r in earlier}
    fresh = [j for j in todo if (j.path, j.size if j.size >= 0 else None,
                                 round(j.mtime, 3) if j.mtime else None) not in done]
    if earlier:
        typer.echo(f"loglens: {len(todo) - len(fresh)} of {len(todo)} logs already in "
                   f"{output}; reading {len(fresh)}", err=True)
    if not todo:
        raise InputError("no log files found in " + ", ".join(named[:3]))

    sink = Sink(output, fmt)
    start = time.perf_counter()
    progress = _Progress(len(fresh), sum(max(j.size, 0) for j in fresh))
    try:
        for row in engine_rows(fresh, engine=engine.value, n_workers=jobs,
                               rules=rule_dirs(rules), redact=not no_redact, year=year):
            sink.write(row)
            progress.advance(row)
    finally:
        progress.stop()
        sink.close()
    seconds = time.perf_counter() - start
    rows = [*map(typed, earlier), *sink.rows]
    width = text_width()
    color = sys.stdout.isatty() and "NO_COLOR" not in os.environ
    stats = summary(rows)
    report_to = sys.stdout if fmt == "table" else sys.stderr
    if fmt == "table":
        sys.stdout.write(render_rows(rows, width=width, color=color))
    report_to.write(render_summary(stats, seconds=seconds, read=len(sink.rows),
                                   read_bytes=sum(int(r.get("size") or 0) for r in sink.rows),
                                   width=width,
                                   color=report_to.isatty() and "NO_COLOR" not in os.environ))
    if rows and stats["errors"] == len(rows):
        raise typer.Exit(EXIT_BAD_INPUT)  # not one input could be read
    if any(r.get("verdict") in wanted for r in rows):
        raise typer.Exit(EXIT_FAIL_ON)


class _Progress:
    """A rich bar (logs done, MB/s, ETA) when stderr is a terminal, else a plain line every
    PROGRESS_EVERY seconds; nothing for a single log."""

    def __init__(self, total: int, total_bytes: int) -> None:
        self.total, self.total_bytes = total, total_bytes
        self.done = self.bytes = 0
        self.start = self.last = time.perf_counter()
        self.bar: Any = None
        self.task: Any = None
        if total > 1 and sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(TextColumn("scanning"), BarColumn(), MofNCompleteColumn(),
                                TextColumn("{task.fields[rate]}"), TimeRemainingColumn(),
                                console=Console(stderr=True), transient=True)
            self.task = self.bar.add_task("scan", total=total, rate="")
            self.bar.start()

    def advance(self, row: dict[str, Any]) -> None:
        self.done += 1
        self.bytes += int(row.get("size") or 0)
        now = time.perf_counter()
        rate = f"{self.bytes / 1e6 / max(now - self.start, 1e-9):.1f} MB/s"
        if self.bar is not None:
            self.bar.update(self.task, advance=1, rate=rate)
        elif self.total > 1 and now - self.last >= PROGRESS_EVERY:
            self.last = now
            typer.echo(f"loglens: scanned {self.done}/{self.total} logs, {rate}", err=True)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
