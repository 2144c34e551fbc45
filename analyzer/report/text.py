"""Terminal output: what a person on call reads first, in 80 columns.

Order follows the questions asked during an incident: what happened (headline), why
(root cause + fix), what else broke because of it (cascade), how far the job got
(timeline), and which scary-looking warnings are actually harmless.

Every piece of log text goes through `rich.text.Text`, never through markup parsing, so a
line containing ``[bold]`` or ``[/red]`` is printed as written.
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from rich import box
from rich.console import Console, RenderableType
from rich.padding import Padding
from rich.rule import Rule
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from analyzer.report.common import (
    clean,
    count,
    human_duration,
    items,
    line_text,
    section,
    shorten,
    timeline_times,
    who,
)
from analyzer.report.timeline import job_timeline, lanes_label

VERDICT_STYLE = {"crash": "red", "hang": "red", "healthy": "green", "in_progress": "yellow"}

ROOT_TEXT_MAX = 300  # the root-cause line: enough for the whole message in most cases
LINE_TEXT_MAX = 200  # symptoms, warnings, excerpt lines
PROSE_MAX = 600  # summary / remediation written by the knowledge base
REASON_MAX = 120  # why a symptom belongs to the cascade
MAX_CHILDREN = 25  # cascade children before "… and N more"
MAX_PHASES = 30  # timeline rows
MAX_WARNINGS = 15  # non-benign warnings shown
MAX_BENIGN = 10  # benign warnings shown
MAX_CONTEXT = 20  # excerpt lines shown

LINE_STYLE = "cyan"
RANK_STYLE = "magenta"


def render_text(report: Mapping[str, Any], *, color: bool = False, width: int = 100) -> str:
    """Lay the report out with rich into a string; ANSI colour only when `color`."""
    buf = io.StringIO()
    console = Console(
        file=buf,
        width=max(width, 20),
        height=25,  # an explicit size stops rich from probing the real terminal
        color_system="standard" if color else None,
        force_terminal=color,
        force_jupyter=False,
        force_interactive=False,
        legacy_windows=False,
        markup=False,
        emoji=False,
        highlight=False,
    )
    for renderable in _sections(report):
        console.print(renderable)
    # Rich pads table rows to the cell width; trailing blanks only hurt copy-paste.
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines()) + "\n"


def _sections(report: Mapping[str, Any]) -> list[RenderableType]:
    """All sections in reading order; empty ones are left out rather than shown blank."""
    out: list[RenderableType] = [*_headline(report)]
    root = section(report, "root_cause")
    if root is not None:
        out += _root_cause(report, root)
    else:
        out += _status(report)
    out += _cascade(report, root)
    out += _last_activity(report)
    out += _timeline(report)
    out += _warnings(report)
    out += _context(report)
    out += _footer(report)
    return out


def _title(name: str, note: str = "") -> Text:
    """A section heading; the blank line before it keeps sections visually apart."""
    text = Text("\n")
    text.append(name, style="bold underline")
    if note:
        text.append(f"  {note}", style="dim")
    return text


def _indent(renderable: RenderableType) -> Padding:
    """Indent section bodies under their heading."""
    return Padding(renderable, (0, 0, 0, 2))


def _lineno(value: object) -> str:
    """`L1234`, the form every section uses to point into the log."""
    return f"L{count(value)}"


def _rank(value: object) -> str | None:
    """A rank as an int-looking label, or None when the line has no rank."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


# ------------------------------------------------------------------------- sections


def _headline(report: Mapping[str, Any]) -> list[RenderableType]:
    """The one-sentence verdict, coloured by severity, and what file it is about."""
    verdict = line_text(report.get("verdict") or "unknown", 40)
    style = VERDICT_STYLE.get(verdict, "bold")
    headline = line_text(report.get("headline") or verdict, ROOT_TEXT_MAX)
    head = Text(headline, style=f"bold {style}")
    sub = Text(style="dim")
    sub.append(f"verdict: {verdict.replace('_', ' ')} · {count(report.get('lines')):,} lines")
    name = report.get("file")
    if not name:
        return [head, sub]
    # the file on a line of its own: a long path wraps there, not in the middle of the verdict
    return [head, sub, Text(line_text(name, 400), style="dim")]


def _root_cause(report: Mapping[str, Any], root: Mapping[str, Any]) -> list[RenderableType]:
    """Category, place, the offending line, and what to do about it."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column(overflow="fold")

    category = line_text(root.get("category") or "unknown", 80)
    system = line_text(root.get("system") or "", 40)
    cat = Text(category, style="bold")
    if system:
        cat.append(f" ({system})", style="dim")
    grid.add_row("category", cat)

    where = []
    if (rank := _rank(root.get("rank"))) is not None:
        where.append(f"rank {rank}")
    if root.get("process"):
        where.append(f"process {line_text(root.get('process'), 60)}")
    if where:
        grid.add_row("where", Text(" · ".join(where), style=RANK_STYLE))
    if root.get("timestamp"):
        grid.add_row("time", Text(line_text(root.get("timestamp"), 60)))
    last = section(report, "last_phase")
    if last is not None and last.get("phase"):
        grid.add_row("during", Text(_phase_label(last)))

    line = Text(_lineno(root.get("line")), style=LINE_STYLE)
    line.append("  ")
    line.append(line_text(root.get("text"), ROOT_TEXT_MAX), style="red")
    grid.add_row("line", line)
    detail = root.get("detail")
    if isinstance(detail, Mapping) and detail.get("text"):
        why = Text(_lineno(detail.get("line")), style=LINE_STYLE)
        why.append("  ")
        why.append(line_text(detail.get("text"), ROOT_TEXT_MAX))
        grid.add_row("detail", why)

    if root.get("summary"):
        grid.add_row(
            "summary", Text(clean(shorten(str(root["summary"]), PROSE_MAX), keep_newlines=True))
        )
    if root.get("remediation"):
        fix = clean(shorten(str(root["remediation"]), PROSE_MAX), keep_newlines=True)
        grid.add_row("fix", Text(fix, style="green"))
    if root.get("signature"):
        grid.add_row("signature", Text(line_text(root.get("signature"), 80), style="dim"))
    sure = section(report, "confidence")
    if sure is not None and sure.get("level"):
        grid.add_row("confidence", Text(f"{line_text(sure.get('level'), 10)} · "
                                        f"{line_text(sure.get('reason'), PROSE_MAX)}",
                                        style="dim"))
        rivals = items(report, "candidates")
        if sure.get("level") != "high" and rivals:
            alt = Text(_lineno(rivals[0].get("line")), style=LINE_STYLE)
            alt.append("  ")
            alt.append(line_text(rivals[0].get("text"), ROOT_TEXT_MAX))
            alt.append(f"  ({line_text(rivals[0].get('rule'), 120)})", style="dim")
            grid.add_row("runner-up", alt)
    return [_title("Root cause"), _indent(grid)]


def _phase_label(last: Mapping[str, Any]) -> str:
    """`load_weights (5/8 shards)`: the phase reached and how far into it."""
    label = line_text(last.get("phase"), 80)
    if last.get("progress"):
        label += f" ({line_text(last.get('progress'), 80)})"
    return label


def _status(report: Mapping[str, Any]) -> list[RenderableType]:
    """Without a root cause, say plainly what that means for this verdict."""
    verdict = str(report.get("verdict") or "")
    messages = {
        "healthy": ("No failure found.", "green"),
        "in_progress": ("No failure found so far; the job was still running.", "yellow"),
        "hang": ("No error line found: the job stopped making progress.", "red"),
        "crash": ("The job failed, but no root-cause line was identified.", "red"),
    }
    message, style = messages.get(verdict, ("No failure found.", "bold"))
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column(overflow="fold")
    last = section(report, "last_phase")
    if last is not None and last.get("phase"):
        label = "stuck in" if verdict == "hang" else "reached"
        grid.add_row(label, Text(_phase_label(last), style="bold"))
    else:
        grid.add_row("reached", Text("no phase recognised", style="dim"))
    return [_title("Status"), _indent(Text(message, style=f"bold {style}")), _indent(grid)]


def _cascade(report: Mapping[str, Any], root: Mapping[str, Any] | None) -> list[RenderableType]:
    """Root cause on top, the failures it triggered below: shows what to ignore."""
    symptoms = items(report, "symptoms")
    if not symptoms:
        return []
    if root is not None:
        label = Text(_lineno(root.get("line")), style=f"bold {LINE_STYLE}")
        if (rank := _rank(root.get("rank"))) is not None:
            label.append(f" [rank {rank}]", style=RANK_STYLE)
        label.append(" ")
        label.append(line_text(root.get("text"), LINE_TEXT_MAX), style="bold red")
    else:
        label = Text("(no root cause identified)", style="dim")
    tree = Tree(label, guide_style="dim")
    for symptom in symptoms[:MAX_CHILDREN]:
        child = Text(_lineno(symptom.get("line")), style=LINE_STYLE)
        if (rank := _rank(symptom.get("rank"))) is not None:
            child.append(f" [rank {rank}]", style=RANK_STYLE)
        child.append(" ")
        child.append(line_text(symptom.get("text"), LINE_TEXT_MAX))
        if symptom.get("reason"):
            child.append(f" — {line_text(symptom.get('reason'), REASON_MAX)}", style="dim italic")
        tree.add(child)
    rest = symptoms[MAX_CHILDREN:]
    if rest:
        tree.add(Text(f"… and {len(rest):,} more{_top_reasons(rest)}", style="dim"))
    note = f"{len(symptoms):,} downstream symptom{'s' if len(symptoms) != 1 else ''}"
    return [_title("Cascade", note), _indent(tree)]


def _top_reasons(rest: Sequence[Mapping[str, Any]]) -> str:
    """Summarise the hidden symptoms by reason so the cap does not hide a pattern."""
    reasons = Counter(line_text(s.get("reason"), 60) for s in rest if s.get("reason"))
    if not reasons:
        return ""
    top = ", ".join(f"{n:,}× {r}" for r, n in reasons.most_common(3))
    return f" ({top})"


def _last_activity(report: Mapping[str, Any]) -> list[RenderableType]:
    """For a hang: where each rank was last heard from, the first to go silent on top."""
    rows = items(report, "last_activity")
    if not rows:
        return []
    out: list[RenderableType] = [_title("Last activity", "first to go silent on top")]
    for row in rows[:16]:
        label = who(row.get("rank"), row.get("process"))
        stamp = str(row.get("timestamp") or "")[11:19]
        out.append(_indent(Text(f"{label:<14} {stamp:<8} L{row.get('line')}  "
                                + line_text(row.get("text") or "", 400))))
    return out


def _timeline(report: Mapping[str, Any]) -> list[RenderableType]:
    """One table for the job: each phase once, the failing phase marked, laggards named."""
    timeline = job_timeline(report)
    rows = timeline.rows
    if not rows:
        return []
    date, starts = timeline_times([{"start": row.start} for row in rows])
    lanes = sorted({lane for row in rows for lane in row.lanes})
    note = " · ".join(x for x in (f"times on {date}" if date else "",
                                   lanes_label(lanes) if lanes else "") if x)
    out: list[RenderableType] = [_title("Timeline", note)]
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column("phase", overflow="fold")
    table.add_column("start", no_wrap=True)
    table.add_column("duration", justify="right", no_wrap=True)
    whoms = ["" if len(row.lanes) == len(lanes) else lanes_label(row.lanes) for row in rows]
    if any(whoms):  # which lanes, only where not every lane went through the phase
        table.add_column("who", overflow="fold")
    table.add_column("progress", overflow="fold")
    for row, start, whom in zip(rows[:MAX_PHASES], starts, whoms, strict=False):
        duration = human_duration(row.seconds)
        if row.open and duration != "—":
            duration += "+"
        progress = Text(line_text(row.progress or "", 80))
        if row.state:
            mark = f"✗ {row.state} here" + (f" ({row.where})" if row.where else "")
            progress = Text(mark, style="bold red") + (Text(" · ") + progress
                                                       if row.progress else Text(""))
        cells = [Text(line_text(row.phase, 80), style="bold red" if row.state else ""),
                 Text(start), Text(duration), *([Text(whom)] if any(whoms) else []), progress]
        table.add_row(*cells)
    if len(rows) > MAX_PHASES:
        table.caption = f"… and {len(rows) - MAX_PHASES:,} more phases (see --format json)"
        table.caption_justify = "left"
    out.append(_indent(table))
    for line in timeline.notes:
        out.append(_indent(Text(line, style="yellow")))
    if any(row.open for row in rows[:MAX_PHASES]):
        out.append(_indent(Text("+ phase still open at the end of the log", style="dim")))
    return out


def _warnings(report: Mapping[str, Any]) -> list[RenderableType]:
    """Real warnings first, then the known-harmless ones, labelled so nobody chases them."""
    warnings = items(report, "warnings")
    if not warnings:
        return []
    real = [w for w in warnings if not w.get("benign")]
    benign = [w for w in warnings if w.get("benign")]
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True, style=LINE_STYLE)
    grid.add_column(no_wrap=True, justify="right")
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for group, cap, tag in ((real, MAX_WARNINGS, ""), (benign, MAX_BENIGN, "benign")):
        for warning in group[:cap]:
            n = count(warning.get("count")) or 1
            text = Text(
                line_text(warning.get("text"), LINE_TEXT_MAX), style="dim" if tag else "yellow"
            )
            if warning.get("id"):
                text.append(f" ({line_text(warning.get('id'), 60)})", style="dim")
            grid.add_row(
                _lineno(warning.get("line")),
                f"×{n:,}",
                Text(tag, style="green") if tag else Text("warning", style="yellow"),
                text,
            )
        if len(group) > cap:
            label = "benign warnings" if tag else "warnings"
            grid.add_row("", "", "", Text(f"… and {len(group) - cap:,} more {label}", style="dim"))
    note = f"{len(real):,} to check, {len(benign):,} known benign"
    return [_title("Warnings", note), _indent(grid)]


def _context(report: Mapping[str, Any]) -> list[RenderableType]:
    """The first excerpt (the root cause's surroundings), windowed on its marked line."""
    excerpts = items(report, "excerpts")
    if not excerpts:
        return []
    excerpt = excerpts[0]
    lines = [ln for ln in excerpt.get("lines") or [] if isinstance(ln, Mapping)]
    if not lines:
        return []
    start = 0
    if len(lines) > MAX_CONTEXT:
        marked = next((i for i, ln in enumerate(lines) if ln.get("mark")), 0)
        start = max(0, min(marked - MAX_CONTEXT // 3, len(lines) - MAX_CONTEXT))
    shown = lines[start : start + MAX_CONTEXT]
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(no_wrap=True, justify="right", style=LINE_STYLE)
    grid.add_column(overflow="fold")
    for ln in shown:
        mark = bool(ln.get("mark"))
        grid.add_row(
            Text(">" if mark else " ", style="bold red"),
            str(count(ln.get("line"))),
            Text(line_text(ln.get("text"), LINE_TEXT_MAX), style="bold" if mark else ""),
        )
    hidden = len(lines) - len(shown)
    note = f"{line_text(excerpt.get('title') or 'excerpt', 80)}"
    out: list[RenderableType] = [_title("Context", note), _indent(grid)]
    if hidden or len(excerpts) > 1:
        more = []
        if hidden:
            more.append(f"{hidden:,} more lines")
        if len(excerpts) > 1:
            more.append(f"{len(excerpts) - 1:,} more excerpts")
        out.append(_indent(Text(f"… {', '.join(more)} in --format markdown", style="dim")))
    return out


def _footer(report: Mapping[str, Any]) -> list[RenderableType]:
    """How much of the log loglens understood: low event counts mean unknown formats."""
    stats = section(report, "stats") or {}
    parts = [
        f"{count(report.get('lines')):,} lines",
        f"{count(stats.get('events')):,} events",
        f"{count(stats.get('plain_lines')):,} plain lines",
    ]
    if count(stats.get("replaced_lines")):
        parts.append(f"{count(stats.get('replaced_lines')):,} lines with invalid bytes")
    if count(stats.get("truncated_lines")):
        parts.append(f"{count(stats.get('truncated_lines')):,} truncated lines")
    sources = stats.get("sources")
    if isinstance(sources, list) and len(sources) > 1:
        names = ", ".join(line_text(s, 60) for s in sources[:5])
        if len(sources) > 5:
            names += f", … {len(sources) - 5} more"
        parts.append(f"sources: {names}")
    return [Text(""), Rule(style="dim"), Text(" · ".join(parts), style="dim")]
