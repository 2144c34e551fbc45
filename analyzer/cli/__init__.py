"""The `loglens` command: a thin typer layer over `analyzer.api`.

Exit codes: 0 the analysis ran (whatever the verdict); 1 `--fail-on` matched the verdict;
2 unusable input or arguments; 3 `watch` stalled or timed out; 70 an internal error (a bug:
please report it).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from analyzer.cli.diff import register as register_diff
from analyzer.cli.help import epilog
from analyzer.cli.options import (
    Files,
    Rules,
    Year,
    atomic,
    refuse_inputs,
    rule_dirs,
    text_width,
)
from analyzer.cli.report import register as register_report
from analyzer.cli.scan import register as register_scan
from analyzer.cli.watch import register as register_watch
from analyzer.errors import EXIT_BAD_INPUT, EXIT_FAIL_ON, ExitCode, LoglensError, UsageError
from analyzer.report import FormatType, render
from analyzer.report.jsonfmt import dumps

EXIT_INTERNAL = ExitCode.INTERNAL


def _version(value: bool) -> None:
    if value:
        from analyzer.version import version

        typer.echo(version())
        raise typer.Exit(0)


app = typer.Typer(
    add_completion=True, no_args_is_help=True, pretty_exceptions_enable=False,
    help="Log forensics for LLM serving and distributed GPU jobs (SGLang, vLLM, NCCL, PyTorch).",
)


class EventFormat(StrEnum):
    """Output formats of `loglens events`."""

    TABLE = "table"
    JSONL = "jsonl"
    CSV = "csv"
    PARQUET = "parquet"




def _fail(message: str, code: int = EXIT_BAD_INPUT) -> None:
    typer.echo(f"loglens: {message}", err=True)
    raise typer.Exit(code)


@app.command(epilog=epilog("explain"))
def explain(
    files: Files,
    format: Annotated[FormatType | None, typer.Option(
        "--format", "-f", help="text (the default, also when piped), json, or markdown; "
        "with -o, the file's extension chooses (.json, .md).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Short for --format json.",
                                           metavar="")] = False,
    rules: Rules = None,
    fail_on: Annotated[str | None, typer.Option(
        metavar="VERDICTS",
        help="Comma list of verdicts that make the exit code 1, e.g. crash,hang.")] = None,
    output: Annotated[Path | None, typer.Option("-o", "--output", metavar="FILE",
                                                help="Write here.")] = None,
    year: Year = None,
    color: Annotated[bool | None, typer.Option(help="Force colour on/off.", metavar="")] = None,
    redact: Annotated[bool | None, typer.Option(
        metavar="", help="Replace secrets, hosts, IPs and user names (default: on for "
             "markdown, which is made for pasting into a ticket; off for text and json).")] = None,
) -> None:
    """Root cause, the cascade it started, a per-rank phase timeline, and the fix."""
    fmt = format or (FormatType.JSON if json_out else _format_for(output))
    wanted = {v.strip() for v in (fail_on or "").split(",") if v.strip()}
    bad = wanted - {"crash", "hang", "healthy", "in_progress", "unknown"}
    if bad:
        raise UsageError(f"--fail-on: unknown verdict(s): {', '.join(sorted(bad))}")
    if output is not None:
        refuse_inputs(output, files)
    from analyzer import api  # here, not at the top: --help need not load the analyzer

    report = api.explain(files, rules=rule_dirs(rules), year=year)
    if redact if redact is not None else fmt == FormatType.MARKDOWN:
        from analyzer.report.redact import Redactor  # only for a redacted report

        redactor = Redactor()
        report = {k: (v if k == "schema" else redactor.value(k, v)) for k, v in report.items()}
    for note in report["stats"].get("notes", []):
        typer.echo(f"loglens: warning: {note}", err=True)
    use_color = color if color is not None else (sys.stdout.isatty() and output is None
                                                 and "NO_COLOR" not in os.environ)
    width = text_width() if fmt == FormatType.TEXT else 100
    text = render(report, fmt, color=use_color, width=width)
    _write(text, output)
    if report["verdict"] in wanted:
        raise typer.Exit(EXIT_FAIL_ON)


@app.command(epilog=epilog("events"))
def events(
    files: Files,
    format: Annotated[EventFormat, typer.Option("--format", "-f")] = EventFormat.JSONL,
    output: Annotated[Path | None, typer.Option("-o", "--output",
                                                help="Write here (required for parquet).")] = None,
    year: Year = None,
) -> None:
    """The parsed events: one per line or multi-line block (tracebacks come out whole)."""
    if output is not None:
        refuse_inputs(output, files)
    notes: list[str] = []
    from analyzer import api

    stream = api.events(files, year, notes)
    if format == EventFormat.PARQUET:
        if output is None:
            raise UsageError("--format parquet needs -o FILE")
        _write_parquet(stream, output)
        for note in notes:
            typer.echo(f"loglens: warning: {note}", err=True)
        return
    with contextlib.ExitStack() as stack:
        if output is None:
            out: Any = sys.stdout
        else:
            out = io.TextIOWrapper(stack.enter_context(atomic(output)), encoding="utf-8")
            stack.callback(out.flush)
        try:
            if format == EventFormat.JSONL:
                for ev in stream:
                    rec: dict[str, Any] = ev.as_record()
                    out.write(dumps(rec, ensure_ascii=False, default=str) + "\n")
            elif format == EventFormat.CSV:
                first = True
                for frame in _event_frames(stream):
                    out.write(frame.write_csv(include_header=first))
                    first = False
            else:
                _table(stream, out)
        finally:
            for note in notes:
                typer.echo(f"loglens: warning: {note}", err=True)


def _write_parquet(stream: Any, output: Path) -> None:
    """Chunks go to temporary parquet parts, then polars' streaming engine joins them: memory
    stays at one chunk however many events there are."""
    import tempfile

    import polars as pl

    with tempfile.TemporaryDirectory(prefix=".loglens-", dir=output.parent or None) as tmp:
        parts = []
        for i, frame in enumerate(_event_frames(stream)):
            part = Path(tmp) / f"part-{i:06d}.parquet"
            frame.write_parquet(part)
            parts.append(str(part))
        joined = Path(tmp) / "events.parquet"
        if parts:
            pl.scan_parquet(parts).sink_parquet(joined)
        else:
            event_frames_empty().write_parquet(joined)
        with atomic(output) as out, open(joined, "rb") as src:
            shutil.copyfileobj(src, out, 1 << 20)


def _event_frames(stream: Any) -> Any:
    from analyzer.report.events_table import frames  # polars: only for `loglens events`

    return frames(stream)


def event_frames_empty() -> Any:
    """An empty events table with the right columns."""
    from analyzer.report.events_table import to_frame

    return to_frame([])


def _table(stream: Any, out: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table("lines", "time", "system", "rank", "process", "level", "kind", "message",
                  show_lines=False)
    for ev in stream:
        lines = str(ev.line_start) if ev.line_start == ev.line_end else \
            f"{ev.line_start}-{ev.line_end}"
        rank = ",".join(f"{k}{v}" for k, v in ev.rank.items())
        table.add_row(lines, (ev.timestamp or "")[5:19], ev.system, rank, ev.process or "",
                      ev.level or "", ev.kind, ev.message[:200])
    Console(file=out, width=160, markup=False).print(table)


class RuleKind(StrEnum):
    """What `loglens rules --kind` can list."""

    FAILURE = "failure"
    SYMPTOM = "symptom"
    BENIGN = "benign"
    MARKER = "marker"


@app.command("rules", epilog=epilog("rules"))
def list_rules(
    rules: Rules = None,
    kind: Annotated[RuleKind | None, typer.Option(
        help="Only this kind: failure, symptom, benign or marker.")] = None,
) -> None:
    """List the signatures and phase markers loglens knows, with their meaning."""
    from analyzer.knowledge import load as load_knowledge

    k = load_knowledge(rule_dirs(rules))
    if kind in (None, "failure", "symptom", "benign"):
        for s in k.signatures:
            if kind and s.kind != kind:
                continue
            cat = f" [{s.category}]" if s.category else ""
            typer.echo(f"{s.id:45} {s.kind:8}{cat}  {s.summary[:90]}")
    if kind in (None, "marker"):
        for m in k.markers:
            typer.echo(f"{m.id:45} marker   [{m.phase}/{m.edge}]  {m.summary[:80]}")


OUTPUT_FORMATS = {".json": FormatType.JSON, ".md": FormatType.MARKDOWN,
                  ".markdown": FormatType.MARKDOWN}


def _format_for(output: Path | None) -> FormatType:
    """Text, as gh, kubectl and ruff keep their format when piped; an -o file's extension
    may ask for JSON or Markdown."""
    if output is None:
        return FormatType.TEXT
    return OUTPUT_FORMATS.get(output.suffix.lower(), FormatType.TEXT)


def _write(text: str, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        with atomic(output) as out:
            out.write(text.encode("utf-8"))


register_watch(app)
register_report(app)
register_diff(app)
register_scan(app)


@app.callback()
def _root(version: Annotated[bool, typer.Option(
        "--version", "-V", callback=_version, is_eager=True, metavar="",
        help="Print loglens' version and exit.")] = False) -> None:
    """Log forensics for LLM serving and distributed GPU jobs (SGLang, vLLM, NCCL, PyTorch)."""


def main() -> None:
    """Console entry point: every failure becomes one line on stderr and an exit code."""
    try:
        argv = sys.argv[1:]
        if argv[:1] == ["explain"] and "--help" not in argv:  # no analyzer for other commands
            from analyzer.scan.split import explain_target

            if explain_target(argv) is not None:  # a big file's reader starts while we parse
                from analyzer.scan.producer import prestart

                prestart(argv)
        rv = app(standalone_mode=False)
        sys.exit(rv if isinstance(rv, int) else 0)
    except LoglensError as exc:
        typer.echo(f"loglens: {exc}", err=True)
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, BrokenPipeError):
        sys.exit(130)
    except Exception as exc:  # usage errors from the argument parser, and anything unexpected
        format_message = getattr(exc, "format_message", None)
        if type(exc).__name__ == "NoArgsIsHelpError":
            sys.exit(0)  # `loglens` alone: the help it printed is the answer
        if callable(format_message):  # typer's (vendored click) usage/parameter errors
            message = format_message()
            if message:
                typer.echo(f"loglens: {message}", err=True)
            sys.exit(getattr(exc, "exit_code", EXIT_BAD_INPUT) or EXIT_BAD_INPUT)
        if type(exc).__name__ == "Abort":
            sys.exit(130)
        typer.echo(f"loglens: internal error: {type(exc).__name__}: {exc} "
                   "(please report it with the input that caused it)", err=True)
        sys.exit(EXIT_INTERNAL)
