"""`loglens report` and `loglens redact`: attach a log's story, not its secrets, to a ticket.

Kept out of cli.py so the post-mortem commands stay one self-contained piece; cli.py only
calls `register(app)`.
"""

from __future__ import annotations

import codecs
import contextlib
import gzip
import io
import os
import stat
import sys
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import IO, Annotated

import typer

from analyzer.cli.help import epilog
from analyzer.cli.options import Rules, atomic, refuse_inputs, rule_dirs
from analyzer.errors import InputError, UsageError

GZIP_MAGIC = b"\x1f\x8b"
MAX_LINE_CHUNK = 1 << 20  # a line longer than this is redacted in 1 MiB pieces


class ReportFormat(StrEnum):
    """Output formats of `loglens report`."""

    HTML = "html"
    MARKDOWN = "markdown"


ReportFiles = Annotated[list[str], typer.Argument(
    help="Log files, .gz files, directories of per-rank logs, or - for stdin.",
    show_default=False)]


def register(app: typer.Typer) -> None:
    """Add `report` and `redact` to the `loglens` app."""
    app.command("report", epilog=epilog("report"))(report)
    app.command("redact", epilog=epilog("redact"))(redact)


def report(
    files: ReportFiles,
    output: Annotated[Path | None, typer.Option(
        "-o", "--output", help="Write here (- for stdout). Required for HTML on a terminal.",
        show_default=False)] = None,
    format: Annotated[ReportFormat, typer.Option(
        "--format", "-f", help="html (one self-contained page) or markdown (a ticket comment)."
    )] = ReportFormat.HTML,
    no_redact: Annotated[bool, typer.Option(
        "--no-redact", metavar="",
        help="Keep hostnames, IPs, user names and tokens (not for sharing).")
    ] = False,
    rules: Rules = None,
    year: Annotated[int | None, typer.Option(
        help="Year for timestamps that have none; default: from the log or file mtime.")
    ] = None,
) -> None:
    """A post-mortem for a bug ticket: verdict, cause, per-rank timeline, metrics; redacted."""
    from analyzer import api
    from analyzer.report.postmortem_html import render_html
    from analyzer.report.postmortem_md import render_markdown

    to_stdout = output is None or str(output) == "-"
    if to_stdout and format == ReportFormat.HTML and sys.stdout.isatty():
        raise UsageError("an HTML report needs -o FILE (e.g. -o report.html), or -o - to "
                         "print it")
    if output is not None and not to_stdout:
        refuse_inputs(output, files)
    data = api.postmortem(files, redact=not no_redact, rules=rule_dirs(rules),
                          year=year)
    text = render_html(data) if format == ReportFormat.HTML else render_markdown(data)
    if to_stdout:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        assert output is not None
        with atomic(output) as out:
            out.write(text.encode("utf-8"))
    rep = data["report"]
    where = "stdout" if to_stdout else str(output)
    typer.echo(f"loglens: wrote {where}: {rep.get('headline')}; redacted: "
               f"{data['redaction']['line']}", err=True)


def redact(
    file: Annotated[str, typer.Argument(help="The log to redact (a file, .gz, or - for stdin).",
                                        show_default=False)],
    output: Annotated[Path, typer.Option(
        "-o", "--output", help="Where to write the redacted copy (- for stdout; .gz "
                               "compresses).", show_default=False)],
) -> None:
    """Write a redacted copy of a whole log (streaming; the input is never modified)."""
    from analyzer.report.redact import Redactor
    from analyzer.sources.source import Source

    to_stdout = str(output) == "-"
    source = None if file == "-" else Path(file)
    if source is not None:
        _check_input(source, file)
        if stat.S_ISREG(source.stat().st_mode):  # the same refusals as explain: empty,
            Source(file, source).probe()  # binary, bzip2/xz/zstd/zip/tar (exit 2)
        if not to_stdout:
            refuse_inputs(output, [file])
    redactor = Redactor()
    if source is not None and stat.S_ISREG(source.stat().st_mode):
        with _read(source) as lines:  # first pass: learn hostnames, so early lines get them
            for line in lines:
                redactor.learn(line.rstrip("\r\n"))
    if to_stdout:
        with _read(source) as lines:
            count = _write(redactor.lines(lines), sys.stdout.buffer)
        sys.stdout.buffer.flush()
    else:
        with _read(source) as lines, atomic(output) as raw:
            if str(output).endswith(".gz"):
                with gzip.GzipFile(fileobj=raw, mode="wb") as zipped:
                    count = _write(redactor.lines(lines), zipped)
            else:
                count = _write(redactor.lines(lines), raw)
    where = "stdout" if to_stdout else str(output)
    typer.echo(f"loglens: redacted {file} -> {where} ({count:,} lines): "
               f"{redactor.summary_line()}", err=True)


# ------------------------------------------------------------------------------ helpers
def _write(lines: Iterator[str], sink: IO[bytes] | gzip.GzipFile) -> int:
    """Write redacted lines back in the input's bytes; return how many lines ended."""
    count = 0
    for line in lines:
        sink.write(line.encode("utf-8", "surrogateescape"))
        count += line.endswith("\n")
    return count


def _check_input(path: Path, shown: str) -> None:
    """One clear line for a missing, unreadable or directory input."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise InputError(f"{shown}: no such file") from None
    except OSError as exc:
        raise InputError(f"{shown}: {exc.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        raise UsageError(f"{shown} is a directory; redact one file at a time")
    if not os.access(path, os.R_OK):
        raise InputError(f"{shown}: permission denied")


@contextlib.contextmanager
def _read(path: Path | None) -> Iterator[Iterator[str]]:
    """Lines of a file, .gz file or stdin, undecodable bytes kept as they are.

    `surrogateescape` round-trips every byte, so everything that is not redacted is
    written back byte for byte.
    """
    with contextlib.ExitStack() as stack:
        if path is None:
            text = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8",
                                    errors="surrogateescape", newline="")
            stack.callback(text.detach)  # leave stdin itself open
            yield _chunks(text)
            return
        try:
            raw = stack.enter_context(open(path, "rb"))
        except OSError as exc:
            raise InputError(f"{path}: {exc.strerror}") from None
        magic = raw.read(2)
        raw.seek(0)
        if magic == GZIP_MAGIC:
            unzipped = gzip.GzipFile(fileobj=raw, mode="rb")
            stack.callback(unzipped.close)
            text = io.TextIOWrapper(unzipped, encoding="utf-8", errors="surrogateescape",
                                    newline="")
        elif magic in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):  # written back as UTF-8
            text = io.TextIOWrapper(raw, encoding="utf-16", errors="replace", newline="")
        else:
            text = io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape",
                                    newline="")
        yield _chunks(text)


def _chunks(text: io.TextIOWrapper) -> Iterator[str]:
    try:
        while True:
            line = text.readline(MAX_LINE_CHUNK)
            if not line:
                return
            yield line
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise InputError(f"cannot read the input: {exc}") from None


