"""`loglens diff` for people: the text report (rich, like `explain`'s) and Markdown.

Both take the `loglens.diff/1` dict only (built by `analyzer.compare`), so the human formats
can never disagree with the JSON. Every piece of log text passes through `rich.text.Text`
(never markup) and `common.line_text` (controls neutralised, long lines cut).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

from analyzer.report.common import human_duration, line_text

VALUE_MAX = 60
TEXT_MAX = 160
MAX_ARGS = 30
MAX_ONE_SIDED = 12
MAX_SIGS = 12
MAX_METRICS = 20
SECTIONS = ("model", "versions", "gpus", "args", "env")
MARKS = {"failed": "✗ failed here", "stuck": "✗ stuck here", "not_reached": "✗ never reached",
         "slower": "▲ slower", "faster": "▼ faster", "new": "only in B"}
KIND_LABEL = {"cause": "root cause", "failure": "failure", "symptom": "symptom",
              "warning": "warning", "error": "error", "benign": "benign"}


# ------------------------------------------------------------------------ shared pieces
def _list(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def setting(change: Mapping[str, Any]) -> str:
    """How a difference's key is shown: `--mem-fraction-static`, `NCCL_P2P_DISABLE`."""
    key = str(change.get("key") or "")
    section = change.get("section")
    if section == "args":
        return "--" + key.replace("_", "-")
    if section == "versions":
        return f"{key} version"
    return key


def _value(v: Any, missing: str) -> str:
    return missing if v is None else line_text(v, VALUE_MAX)


def _changes(diff: Mapping[str, Any]) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]],
                                               list[Mapping[str, Any]]]:
    """(changed, printed by one side only, noise) configuration differences."""
    config = _map(diff.get("config"))
    all_changes = [c for s in SECTIONS for c in _list(config.get(s))]
    noise = [c for c in all_changes if c.get("noise")]
    real = [c for c in all_changes if not c.get("noise")]
    both = [c for c in real if c.get("change") == "changed" or c.get("section") == "env"]
    one = [c for c in real if c not in both]
    return both, one, noise


def _offset(side: Mapping[str, Any] | None) -> str:
    if not side:
        return "—"
    off = side.get("offset")
    return "+" + human_duration(off) if isinstance(off, int | float) else "—"


def _took(side: Mapping[str, Any] | None) -> str:
    if not side:
        return "—"
    text = human_duration(side.get("seconds"))
    return text + ("+" if side.get("open") and text != "—" else "")


def _delta(row: Mapping[str, Any]) -> str:
    d = row.get("delta")
    if not isinstance(d, int | float):
        return ""
    text = ("+" if d > 0 else "") + human_duration(d) if d else "0s"
    ratio = row.get("ratio")
    if isinstance(ratio, int | float) and abs(d) >= 10 and (ratio >= 1.5 or ratio <= 0.67):
        text += f" ({ratio:.1f}×)"
    return text


def _mark(row: Mapping[str, Any]) -> str:
    mark = row.get("mark")
    text = MARKS.get(str(mark), "") if mark else ""
    return text


def _end(run: Mapping[str, Any]) -> str:
    verdict = str(run.get("verdict") or "unknown").replace("_", " ")
    parts = [verdict]
    root = run.get("root_cause")
    if isinstance(root, Mapping) and (root.get("phase") or run.get("last_phase")):
        progress = f" ({line_text(run.get('progress'), 60)})" if run.get("progress") else ""
        parts[0] += f" in {line_text(root.get('phase') or run.get('last_phase'), 40)}{progress}"
    elif run.get("ready"):
        after = run.get("ready_after")
        parts.append("reached ready" + (f" in {human_duration(after)}"
                                        if isinstance(after, int | float) else ""))
    elif run.get("last_phase"):
        progress = f" ({line_text(run.get('progress'), 60)})" if run.get("progress") else ""
        parts.append(f"ended in {line_text(run.get('last_phase'), 40)}{progress}")
    return " · ".join(parts)


def _root(run: Mapping[str, Any]) -> str | None:
    root = run.get("root_cause")
    if not isinstance(root, Mapping):
        return None
    what = line_text(root.get("category") or "other", 60)
    if root.get("signature"):
        what += f" ({line_text(root.get('signature'), 60)})"
    if isinstance(root.get("rank"), int):
        what += f" on rank {root['rank']}"
    return what


def _root_line(run: Mapping[str, Any]) -> str | None:
    root = run.get("root_cause")
    if not isinstance(root, Mapping) or not root.get("text"):
        return None
    return f"L{root.get('line')}  {line_text(root.get('text'), TEXT_MAX)}"


def _seen(diff: Mapping[str, Any]) -> str | None:
    """What A did with B's failure."""
    outcome = _map(diff.get("outcome"))
    b = _map(diff.get("b"))
    if not b.get("root_cause"):
        return None
    seen = outcome.get("b_failure_seen_in_a")
    if not isinstance(seen, Mapping):
        return "A never printed B's root-cause error"
    times = f" ×{seen.get('count')}" if (seen.get("count") or 0) > 1 else ""
    tail = "and survived it" if seen.get("survived") else "and died of it too"
    return f"A printed the same error at L{seen.get('line')}{times} {tail}"


def _lead(diff: Mapping[str, Any]) -> str | None:
    lead = _map(diff.get("outcome")).get("lead")
    if not isinstance(lead, Mapping):
        return None
    return (f"new in B before its failure: L{lead.get('line_b')} "
            f"{line_text(lead.get('text') or lead.get('key'), TEXT_MAX)}")


def _sig_rows(diff: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    sigs = _map(diff.get("signatures"))
    rows: list[tuple[str, Mapping[str, Any]]] = []
    for group, label in (("new", "new in B"), ("gone", "gone in B"), ("changed", "count")):
        rows += [(label, s) for s in _list(sigs.get(group))]
    return rows


def _sig_name(s: Mapping[str, Any]) -> str:
    return line_text(s.get("id") or s.get("key") or "", TEXT_MAX)


def _sig_count(label: str, s: Mapping[str, Any]) -> str:
    if label == "count":
        return f"×{s.get('a')} → ×{s.get('b')}"
    return f"×{s.get('b') if label == 'new in B' else s.get('a')}"


def _sig_line(label: str, s: Mapping[str, Any]) -> str:
    line = s.get("line_b") if label != "gone in B" else s.get("line_a")
    return f"L{line}" if line else ""


def _number(v: Any) -> str:
    if not isinstance(v, int | float):
        return "—"
    if float(v).is_integer() and abs(v) >= 100:
        return f"{int(v):,}"
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _metric_rows(diff: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    rows = _list(diff.get("metrics"))
    moved = [r for r in rows if isinstance(r.get("ratio"), int | float)
             and abs(float(r["ratio"]) - 1) >= 0.05]
    same = [r for r in rows if r not in moved]
    return (moved + same)[:MAX_METRICS]


def _ratio(r: Mapping[str, Any]) -> str:
    ratio = r.get("ratio")
    return f"{ratio:.2f}×" if isinstance(ratio, int | float) else "—"


# ----------------------------------------------------------------------------- text
def render_diff_text(diff: Mapping[str, Any], *, color: bool = False, width: int = 100) -> str:
    """The diff laid out with rich; ANSI colour only when `color`."""
    from rich import box
    from rich.console import Console, RenderableType
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    buf = io.StringIO()
    console = Console(file=buf, width=max(width, 40), height=25,
                      color_system="standard" if color else None, force_terminal=color,
                      force_jupyter=False, force_interactive=False, legacy_windows=False,
                      markup=False, emoji=False, highlight=False)

    def title(name: str, note: str = "") -> Text:
        text = Text("\n")
        text.append(name, style="bold underline")
        if note:
            text.append(f"  {note}", style="dim")
        return text

    def indent(r: RenderableType) -> Padding:
        return Padding(r, (0, 0, 0, 2))

    def grid() -> Table:
        g = Table.grid(padding=(0, 2))
        g.add_column(style="dim", no_wrap=True)
        g.add_column(overflow="fold")
        return g

    out: list[RenderableType] = []
    b = _map(diff.get("b"))
    failed = b.get("verdict") in ("crash", "hang")
    out.append(Text(line_text(diff.get("headline") or "", 600),
                    style="bold red" if failed else "bold"))
    files = Table.grid(padding=(0, 2))
    files.add_column(no_wrap=True)
    files.add_column(overflow="fold")
    for label in ("a", "b"):
        run = _map(diff.get(label))
        files.add_row(label.upper(), Text(f"{line_text(run.get('file'), 300)} · "
                                          f"{line_text(run.get('verdict'), 20)} · "
                                          f"{run.get('lines', 0):,} lines", style="dim"))
    out.append(files)

    both, one, noise = _changes(diff)
    if both or one or noise:
        note = f"{len(both)} differ"
        if one:
            note += f" · {len(one)} printed by one run only"
        out.append(title("Configuration", note + " · A → B"))
        if both:
            table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
            table.add_column("setting", overflow="fold")
            table.add_column("A", overflow="fold")
            table.add_column("B", overflow="fold")
            for c in both[:MAX_ARGS]:
                missing = "not set" if c.get("section") == "env" else "not printed"
                table.add_row(Text(setting(c), style="bold"),
                              Text(_value(c.get("a"), missing)),
                              Text(_value(c.get("b"), missing), style="yellow"))
            if len(both) > MAX_ARGS:
                table.caption = f"… and {len(both) - MAX_ARGS} more (see --format json)"
                table.caption_justify = "left"
            out.append(indent(table))
        for side, name in (("b", "B"), ("a", "A")):
            only = [c for c in one if c.get(side) is not None]
            if only:
                shown = ", ".join(f"{setting(c)} {_value(c.get(side), '')}"
                                  for c in only[:MAX_ONE_SIDED])
                more = f", … {len(only) - MAX_ONE_SIDED} more" if len(only) > MAX_ONE_SIDED \
                    else ""
                out.append(indent(Text(f"only {name} printed: {shown}{more}", style="dim")))
        if noise:
            keys = ", ".join(setting(c) for c in noise[:MAX_ONE_SIDED])
            out.append(indent(Text(f"differ in every run (ignored): {keys}", style="dim")))

    phase_rows = _list(_map(diff.get("phases")).get("rows"))
    if phase_rows:
        th = _map(_map(diff.get("phases")).get("thresholds"))
        out.append(title("Phases", f"start from each run's first line · slower: > "
                                   f"{th.get('ratio', 1.5)}× and > "
                                   f"{human_duration(th.get('seconds', 30))}"))
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        table.add_column("phase", overflow="fold")
        table.add_column("A start", justify="right", no_wrap=True)
        table.add_column("A took", justify="right", no_wrap=True)
        table.add_column("B start", justify="right", no_wrap=True)
        table.add_column("B took", justify="right", no_wrap=True)
        table.add_column("delta", justify="right", no_wrap=True)
        table.add_column("", overflow="fold")
        for row in phase_rows:
            mark = _mark(row)
            bad = row.get("mark") in ("failed", "stuck", "not_reached", "slower")
            table.add_row(Text(line_text(row.get("phase"), 40), style="bold red" if bad else ""),
                          _offset(row.get("a")), _took(row.get("a")), _offset(row.get("b")),
                          _took(row.get("b")), _delta(row),
                          Text(mark, style="bold red" if bad else "dim"))
        out.append(indent(table))

    out.append(title("Outcome"))
    g = grid()
    for label in ("a", "b"):
        run = _map(diff.get(label))
        g.add_row(label.upper(), Text(_end(run), style="bold"))
        if (root := _root(run)) is not None:
            g.add_row("", Text(root))
        if (line := _root_line(run)) is not None:
            g.add_row("", Text(line, style="red"))
    for extra in (_seen(diff), _lead(diff)):
        if extra:
            g.add_row("", Text(extra, style="yellow"))
    out.append(indent(g))

    sig_rows = _sig_rows(diff)
    if sig_rows:
        sigs = _map(diff.get("signatures"))
        note = " · ".join(f"{len(_list(sigs.get(k)))} {k}" for k in ("new", "gone", "changed"))
        out.append(title("Signatures", note))
        g = Table.grid(padding=(0, 1))
        for _ in range(4):
            g.add_column(no_wrap=True)
        g.add_column(overflow="fold")
        for label, s in sig_rows[:MAX_SIGS]:
            g.add_row(Text(label, style="yellow" if label == "new in B" else "dim"),
                      Text(KIND_LABEL.get(str(s.get("kind")), str(s.get("kind"))), style="dim"),
                      _sig_count(label, s), Text(_sig_line(label, s), style="cyan"),
                      Text(_sig_name(s)))
        if len(sig_rows) > MAX_SIGS:
            g.add_row("", "", "", "", Text(f"… and {len(sig_rows) - MAX_SIGS} more "
                                           "(see --format json)", style="dim"))
        out.append(indent(g))

    metric_rows = _metric_rows(diff)
    if metric_rows:
        out.append(title("Metrics", "where both runs print them"))
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        table.add_column("metric", overflow="fold")
        table.add_column("A", justify="right", no_wrap=True)
        table.add_column("B", justify="right", no_wrap=True)
        table.add_column("B/A", justify="right", no_wrap=True)
        for r in metric_rows:
            unit = f" {r.get('unit')}" if r.get("unit") else ""
            table.add_row(Text(line_text(f"{r.get('name')} ({r.get('stat')})", 80)),
                          _number(r.get("a")) + unit, _number(r.get("b")) + unit, _ratio(r))
        out.append(indent(table))

    for renderable in out:
        console.print(renderable)
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines()) + "\n"


# ------------------------------------------------------------------------- markdown
def _cell(text: object, limit: int = TEXT_MAX) -> str:
    """A Markdown table cell: one line, pipes and backticks escaped."""
    s = line_text("" if text is None else text, limit)
    return s.replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`")


def _md_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines


def render_diff_markdown(diff: Mapping[str, Any]) -> str:
    """The same story as the text report, as a GitHub/GitLab comment."""
    lines = [f"### loglens diff: {_cell(diff.get('headline'), 600)}", ""]
    for label in ("a", "b"):
        run = _map(diff.get(label))
        lines.append(f"- **{label.upper()}** `{_cell(run.get('file'), 300)}`: "
                     f"{_cell(_end(run))}")
    both, one, noise = _changes(diff)
    if both or one or noise:
        lines += ["", "#### Configuration (A → B)", ""]
        if both:
            rows = [[f"`{_cell(setting(c))}`",
                     _cell(_value(c.get("a"), "not set" if c.get("section") == "env"
                                  else "not printed")),
                     _cell(_value(c.get("b"), "not set" if c.get("section") == "env"
                                  else "not printed"))] for c in both[:MAX_ARGS]]
            lines += _md_table(["setting", "A", "B"], rows)
        for side, name in (("b", "B"), ("a", "A")):
            only = [c for c in one if c.get(side) is not None]
            if only:
                shown = ", ".join(f"{_cell(setting(c))} {_cell(_value(c.get(side), ''))}"
                                  for c in only[:MAX_ONE_SIDED])
                more = f", … {len(only) - MAX_ONE_SIDED} more" if len(only) > MAX_ONE_SIDED \
                    else ""
                lines += ["", f"Only {name} printed: {shown}{more}"]
        if noise:
            lines += ["", "Differ in every run (ignored): "
                      + ", ".join(f"`{_cell(setting(c))}`" for c in noise[:MAX_ONE_SIDED])]
    phase_rows = _list(_map(diff.get("phases")).get("rows"))
    if phase_rows:
        lines += ["", "#### Phases", ""]
        rows = [[_cell(r.get("phase"), 40), _offset(r.get("a")), _took(r.get("a")),
                 _offset(r.get("b")), _took(r.get("b")), _delta(r), _cell(_mark(r))]
                for r in phase_rows]
        lines += _md_table(["phase", "A start", "A took", "B start", "B took", "delta", ""],
                           rows)
    lines += ["", "#### Outcome", ""]
    for label in ("a", "b"):
        run = _map(diff.get(label))
        text = f"- **{label.upper()}**: {_cell(_end(run))}"
        if (root := _root(run)) is not None:
            text += f": {_cell(root)}"
        lines.append(text)
        if (line := _root_line(run)) is not None:
            lines.append(f"  {_cell(line, 300)}")
    for extra in (_seen(diff), _lead(diff)):
        if extra:
            lines.append(f"- {_cell(extra, 300)}")
    sig_rows = _sig_rows(diff)
    if sig_rows:
        lines += ["", "#### Signatures", ""]
        rows = [[label, KIND_LABEL.get(str(s.get("kind")), _cell(s.get("kind"))),
                 _sig_count(label, s), _sig_line(label, s), _cell(_sig_name(s))]
                for label, s in sig_rows[:MAX_SIGS * 2]]
        lines += _md_table(["", "kind", "count", "line", "signature / message"], rows)
    metric_rows = _metric_rows(diff)
    if metric_rows:
        lines += ["", "#### Metrics (where both runs print them)", ""]
        rows = [[_cell(f"{r.get('name')} ({r.get('stat')})", 80),
                 _number(r.get("a")) + (f" {r.get('unit')}" if r.get("unit") else ""),
                 _number(r.get("b")) + (f" {r.get('unit')}" if r.get("unit") else ""),
                 _ratio(r)] for r in metric_rows]
        lines += _md_table(["metric", "A", "B", "B/A"], rows)
    lines += ["", f"<sub>{_cell(diff.get('generator'), 60)} · {_cell(diff.get('schema'), 40)}"
                  "</sub>", ""]
    return "\n".join(lines)
