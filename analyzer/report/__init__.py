"""Renderers for `loglens explain`: one analysis dict in, one string out.

The analysis engine owns the facts; this package only decides how they look. Every
renderer takes the same plain dict (the JSON contract, schema ``loglens.explain/1``) so
the JSON output is the single source of truth and the human formats can never disagree
with it.
The helpers they share (sanitising hostile log text, durations, labels) are in `common`.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from analyzer.errors import UsageError

__all__ = ["FormatType", "render"]


class FormatType(StrEnum):
    """Output formats of `loglens explain`; a str enum so typer can offer it as a choice."""

    TEXT = "text"
    JSON = "json"
    MARKDOWN = "markdown"


def render(
    report: Mapping[str, Any],
    fmt: FormatType | str,
    *,
    color: bool = False,
    width: int = 100,
) -> str:
    """Render `report` in `fmt`; `color` and `width` only matter for the text format."""
    try:
        kind = FormatType(fmt)
    except ValueError:
        choices = ", ".join(f.value for f in FormatType)
        raise UsageError(f"unknown output format {fmt!r} (choose one of: {choices})") from None
    # Imported lazily: the JSON path must not pay for importing rich.
    if kind is FormatType.JSON:
        from analyzer.report.jsonfmt import render_json

        return render_json(report)
    if kind is FormatType.MARKDOWN:
        from analyzer.report.markdown import render_markdown

        return render_markdown(report)
    from analyzer.report.text import render_text

    return render_text(report, color=color, width=width)
