"""`loglens diff A B`: what changed between the run that worked and the run that did not.

Kept out of cli/__init__.py like `report`: that module only calls `register(app)`. Imports
of the analyzer and the renderers happen inside the command, so `loglens --help` and the
other commands do not pay for them.
"""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from analyzer.cli.help import epilog
from analyzer.cli.options import Rules, Year, atomic, refuse_inputs, rule_dirs, text_width


class DiffFormat(StrEnum):
    """Output formats of `loglens diff`."""

    TEXT = "text"
    MARKDOWN = "markdown"
    JSON = "json"
    HTML = "html"


SUFFIXES = {".json": DiffFormat.JSON, ".md": DiffFormat.MARKDOWN,
            ".markdown": DiffFormat.MARKDOWN, ".html": DiffFormat.HTML, ".htm": DiffFormat.HTML}
Run = Annotated[str, typer.Argument(
    help="A log file, .gz file, directory of per-rank logs, or - for stdin.",
    show_default=False)]


def register(app: typer.Typer) -> None:
    """Add `diff` to the `loglens` app."""
    app.command("diff", epilog=epilog("diff"))(diff)


def diff(
    a: Run,
    b: Run,
    format: Annotated[DiffFormat | None, typer.Option(
        "--format", "-f", help="text (the default), markdown, json or html (one page, both "
        "runs' phases on one axis); with -o, the file's extension chooses (.json, .md, "
        ".html).")] = None,
    output: Annotated[Path | None, typer.Option("-o", "--output", metavar="FILE",
                                                help="Write here.")] = None,
    rules: Rules = None,
    year: Year = None,
    color: Annotated[bool | None, typer.Option(help="Force colour on/off.", metavar="")] = None,
) -> None:
    """Compare two runs: config, phases, outcome, signatures, metrics; A is the baseline."""
    fmt = format or (SUFFIXES.get(output.suffix.lower(), DiffFormat.TEXT) if output
                     else DiffFormat.TEXT)
    if output is not None:
        refuse_inputs(output, [a, b])
    from analyzer.compare import build, inputs  # here: --help need not load the analyzer

    inputs.check_names(a, b)
    dirs = rule_dirs(rules)
    run_a = inputs.load(a, rules=dirs, year=year)
    run_b = inputs.load(b, rules=dirs, year=year)
    for run in (run_a, run_b):
        for note in (run.get("report") or {}).get("stats", {}).get("notes", []):
            typer.echo(f"loglens: warning: {run['name']}: {note}", err=True)
    result = build.diff(run_a, run_b)
    if fmt == DiffFormat.JSON:
        from analyzer.report.jsonfmt import render_json

        text = render_json(result)
    elif fmt == DiffFormat.HTML:
        from analyzer.report.diff_html import render_diff_html

        text = render_diff_html(result)
    elif fmt == DiffFormat.MARKDOWN:
        from analyzer.report.diff_text import render_diff_markdown

        text = render_diff_markdown(result)
    else:
        from analyzer.report.diff_text import render_diff_text

        use_color = color if color is not None else (
            sys.stdout.isatty() and output is None and "NO_COLOR" not in os.environ)
        text = render_diff_text(result, color=use_color, width=text_width())
    if output is None or str(output) == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        with atomic(output) as out:
            out.write(text.encode("utf-8"))
