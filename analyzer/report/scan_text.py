"""The terminal side of `loglens scan`: the table of jobs fitted to the width, and the summary
(counts by verdict, category and signature, each with an example path). Log text goes
through `rich.text.Text`, never through markup, as in the explain renderer."""

from __future__ import annotations

import io
import os
from collections.abc import Mapping, Sequence
from typing import Any

from rich import box
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from analyzer.report.common import clean, human_duration

VERDICT_STYLE = {"crash": "bold red", "hang": "bold yellow", "healthy": "green",
                 "in_progress": "cyan", "unknown": "dim"}
TABLE_ROWS = 200  # beyond this the table is a wall; the summary and -o are the way


def _console(buf: io.StringIO, width: int, color: bool) -> Console:
    return Console(file=buf, width=max(width, 40), height=25,
                   color_system="standard" if color else None, force_terminal=color,
                   force_jupyter=False, force_interactive=False, legacy_windows=False,
                   markup=False, emoji=False, highlight=False)


def _out(renderables: Sequence[RenderableType], width: int, color: bool) -> str:
    buf = io.StringIO()
    console = _console(buf, width, color)
    for r in renderables:
        console.print(r)
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines()) + "\n"


def common_dir(paths: Sequence[str]) -> str:
    """The directory every path is under ('' for one path or none shared), so the table
    shows what tells the logs apart, not the same long prefix on every row."""
    dirs = [os.path.dirname(p) for p in paths]
    if len(paths) < 2:
        return ""
    try:
        common = os.path.commonpath(dirs) if all(dirs) else ""
    except ValueError:  # absolute and relative paths mixed
        return ""
    return common


def _shown(path: object, common: str) -> str:
    text = str(path)
    return os.path.relpath(text, common) if common and text.startswith(common) else text


def render_rows(rows: Sequence[Mapping[str, Any]], *, width: int = 100,
                color: bool = False) -> str:
    """One line per job: path, verdict, category, where, the root cause's text."""
    common = common_dir([str(r.get("path")) for r in rows])
    table = Table(box=box.SIMPLE_HEAD, expand=True, pad_edge=False,
                  title=f"under {common}/" if common else None, title_justify="left")
    table.add_column("path", overflow="fold", ratio=3)
    table.add_column("verdict", no_wrap=True)
    table.add_column("category", no_wrap=True)
    table.add_column("phase", no_wrap=True)
    table.add_column("root cause", overflow="ellipsis", no_wrap=True, ratio=4)
    shown = sorted(rows, key=lambda r: str(r.get("path")))[:TABLE_ROWS]
    for r in shown:
        verdict = str(r.get("verdict") or "error")
        cause = (f"error: {r['error']}" if r.get("error")
                 else f"{r.get('root_line')}: {clean(r.get('root_text')).strip()}"
                 if r.get("root_line") is not None else "")
        table.add_row(Text(_shown(r.get("path"), common)),
                      Text(verdict, style=VERDICT_STYLE.get(verdict, "bold magenta")),
                      Text(str(r.get("category") or "")), Text(str(r.get("root_phase")
                                                                   or r.get("last_phase") or "")),
                      Text(cause))
    parts: list[RenderableType] = [table]
    if len(rows) > TABLE_ROWS:
        parts.append(Text(f"... {len(rows) - TABLE_ROWS} more rows (write them with -o)",
                          style="dim"))
    return _out(parts, width, color)


def render_summary(summary: Mapping[str, Any], *, seconds: float, read: int, read_bytes: int,
                   width: int = 100, color: bool = False) -> str:
    """Counts by verdict, category and signature, each with an example path; `read`: how
    many of the rows this run analysed (the rest an earlier run with the same -o wrote)."""
    total, errors = summary["total"], summary["errors"]
    mb = read_bytes / 1e6
    rate = (f" ({read / seconds:.0f} logs/s, {mb / seconds:.1f} MB/s)"
            if seconds > 0 and read > 1 else "")
    earlier = f"; {total - read} from the earlier scan" if total > read else ""
    head = Text(f"{total} logs: {read} read ({mb:.1f} MB) in {human_duration(seconds)}{rate}"
                f"{earlier}{f'; {errors} unreadable' if errors else ''}", style="bold")
    common = common_dir([e["example"] for key in ("verdicts", "categories", "signatures")
                         for e in summary[key]])
    parts: list[RenderableType] = [head]
    if common:
        parts.append(Text(f"examples under {common}/", style="dim"))
    for title, key in (("verdict", "verdicts"), ("category", "categories"),
                       ("signature", "signatures")):
        entries = summary[key]
        if not entries:
            continue
        t = Table(box=box.SIMPLE_HEAD, pad_edge=False, expand=False)
        t.add_column(title, no_wrap=True)
        t.add_column("logs", justify="right")
        t.add_column("example", overflow="fold")
        for e in entries[:15]:
            style = VERDICT_STYLE.get(e["value"], "") if key == "verdicts" else ""
            t.add_row(Text(e["value"], style=style), str(e["count"]),
                      Text(_shown(e["example"], common)))
        if len(entries) > 15:
            t.add_row(Text(f"... {len(entries) - 15} more", style="dim"), "", "")
        parts.append(t)
    for e in summary.get("error_examples", []):
        parts.append(Text(f"unreadable: {e['path']}: {e['error']}", style="red"))
    return _out(parts, width, color)
