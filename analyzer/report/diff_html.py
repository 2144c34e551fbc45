"""`loglens diff` as one self-contained HTML page: both runs' phases on one time axis.

The page follows the post-mortem's rules (`postmortem_html`): inline CSS and SVG, no script,
a Content-Security-Policy that forbids loading anything, every string from a log
HTML-escaped (`esc`) before it is laid out. It takes the `loglens.diff/1` dict only, and the
words of each cell come from the same helpers as the text and Markdown reports, so the three
formats cannot tell different stories.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from analyzer.report.common import human_duration
from analyzer.report.diff_text import (
    KIND_LABEL,
    MAX_ARGS,
    MAX_ONE_SIDED,
    MAX_SIGS,
    _changes,
    _delta,
    _end,
    _lead,
    _list,
    _map,
    _mark,
    _metric_rows,
    _number,
    _offset,
    _ratio,
    _root,
    _root_line,
    _seen,
    _sig_count,
    _sig_line,
    _sig_name,
    _took,
    _value,
    setting,
)
from analyzer.report.html_charts import RED, VERDICT_COLORS, esc, num, phase_color
from analyzer.report.postmortem_html import CSP, CSS

LABEL_W, RIGHT, TOP, LANE_H, BAR_H, WIDTH = 70, 48, 34, 34, 20, 1100
MARK_COLORS = {"failed": RED, "stuck": RED, "not_reached": "#9e9e9e", "slower": "#e65100",
               "faster": "#2e7d32"}
EXTRA_CSS = """
table.diff{border-collapse:collapse;width:100%;font-size:14px}
table.diff th,table.diff td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:left;
vertical-align:top}
table.diff td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.mark-failed,.mark-stuck{color:#c62828;font-weight:600}
.mark-slower{color:#e65100}
.mark-faster{color:#2e7d32}
.mark-not_reached,.mark-new{color:var(--dim)}
.runs{display:grid;grid-template-columns:1fr 1fr;gap:14px}
.run{border-left:5px solid;padding:4px 12px}
"""


def render_diff_html(diff: Mapping[str, Any]) -> str:
    """The whole page."""
    headline = str(diff.get("headline") or "loglens diff")
    body = [_header(diff, headline), _phases_section(diff), _config_section(diff),
            _outcome_section(diff), _signatures_section(diff), _metrics_section(diff),
            f"<footer class=\"small dim\">{esc(diff.get('generator'), 60)} · "
            f"{esc(diff.get('schema'), 40)}</footer>"]
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"
            "<meta name=\"referrer\" content=\"no-referrer\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<meta name=\"color-scheme\" content=\"light\">\n"
            f"<title>{esc('loglens diff: ' + headline, 300)}</title>\n"
            f"<style>{CSS}{EXTRA_CSS}</style>\n</head>\n"
            "<body>\n<main>\n" + "\n".join(p for p in body if p) + "\n</main>\n</body>\n</html>\n")


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[int] = ()
           ) -> str:
    """A table of already-escaped cells."""
    out = ["<table class=\"diff\"><thead><tr>"
           + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"]
    for row in rows:
        cells = "".join(f"<td class=\"num\">{c}</td>" if j in numeric else f"<td>{c}</td>"
                        for j, c in enumerate(row))
        out.append(f"<tr>{cells}</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _header(diff: Mapping[str, Any], headline: str) -> str:
    b_verdict = str(_map(diff.get("b")).get("verdict") or "unknown")
    color = VERDICT_COLORS.get(b_verdict, "#455a64")
    runs = []
    for label in ("a", "b"):
        run = _map(diff.get(label))
        run_color = VERDICT_COLORS.get(str(run.get("verdict")), "#455a64")
        runs.append(f"<div class=\"run\" style=\"border-color:{run_color}\"><b>{label.upper()}"
                    f"</b> <span class=\"file\">{esc(run.get('file'), 300)}</span><br>"
                    f"{esc(_end(run), 300)}</div>")
    return (f"<header class=\"top card\" style=\"border-top-color:{color}\">"
            f"<div class=\"small dim\">loglens diff · A is the baseline</div>"
            f"<h1>{esc(headline, 600)}</h1><div class=\"runs\">{''.join(runs)}</div></header>")


def _phases_section(diff: Mapping[str, Any]) -> str:
    rows = _list(_map(diff.get("phases")).get("rows"))
    if not rows:
        return ""
    svg = phases_svg(rows)
    table = _table(
        ["phase", "A start", "A took", "B start", "B took", "delta", ""],
        [[esc(r.get("phase"), 40), esc(_offset(r.get("a"))), esc(_took(r.get("a"))),
          esc(_offset(r.get("b"))), esc(_took(r.get("b"))), esc(_delta(r)), _mark_cell(r)]
         for r in rows], numeric=(1, 2, 3, 4, 5))
    return (f"<section class=\"card\"><h2>Phases <span class=\"dim small\">time since each "
            f"run's first line, on one axis</span></h2>{svg}{table}</section>")


def _mark_cell(row: Mapping[str, Any]) -> str:
    mark = str(row.get("mark") or "")
    if not mark:
        return ""
    return f"<span class=\"mark-{esc(mark, 20)}\">{esc(_mark(row))}</span>"


def phases_svg(rows: Sequence[Mapping[str, Any]]) -> str:
    """Two lanes, A over B, each phase a bar at its offset from its run's start; a phase
    still open at the end of its log is drawn to its run's last line, hatched."""
    spans: dict[str, list[tuple[str, float, float, bool, str | None]]] = {"a": [], "b": []}
    for r in rows:
        for side in ("a", "b"):
            s = r.get(side)
            if not isinstance(s, Mapping) or not isinstance(s.get("offset"), int | float):
                continue
            start = float(s["offset"])
            took = s.get("seconds")
            length = float(took) if isinstance(took, int | float) else 0.0
            spans[side].append((str(r.get("phase") or ""), start, start + length,
                                bool(s.get("open")), str(r.get("mark") or "") or None))
    ends = [e for side in spans.values() for (_, _, e, _, _) in side]
    if not ends:
        return ""
    hi = max(max(ends), 1.0) * 1.04
    plot_w = WIDTH - LABEL_W - RIGHT
    height = TOP + 2 * LANE_H + 26

    def x(t: float) -> float:
        return LABEL_W + plot_w * t / hi

    extra: dict[str, str] = {}
    out = [f"<svg class=\"gantt\" viewBox=\"0 0 {WIDTH} {height}\" width=\"100%\" "
           f"role=\"img\" aria-label=\"phases of A and B\" xmlns=\"http://www.w3.org/2000/svg\">",
           "<defs><pattern id=\"open\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
           "patternTransform=\"rotate(45)\"><rect width=\"3\" height=\"6\" fill=\"#fff\" "
           "opacity=\".45\"/></pattern></defs>"]
    for k in range(6):  # the shared axis: 0 .. the longer run
        t = hi * k / 5
        out.append(f"<line x1=\"{num(x(t))}\" y1=\"{TOP - 6}\" x2=\"{num(x(t))}\" "
                   f"y2=\"{TOP + 2 * LANE_H}\" stroke=\"#e3e7ee\"/>"
                   f"<text x=\"{num(x(t))}\" y=\"{TOP - 10}\" font-size=\"11\" fill=\"#5f6b7a\" "
                   f"text-anchor=\"middle\">+{esc(human_duration(t), 20)}</text>")
    for lane, side in enumerate(("a", "b")):
        y = TOP + lane * LANE_H + (LANE_H - BAR_H) / 2
        out.append(f"<text x=\"8\" y=\"{num(y + BAR_H * 0.75)}\" font-size=\"14\" "
                   f"font-weight=\"600\">{side.upper()}</text>")
        for phase, start, end, still_open, mark in spans[side]:
            w = max(x(end) - x(start), 2.0)
            title = f"{side.upper()} {phase}: +{human_duration(start)}, took " + (
                human_duration(end - start) + ("+" if still_open else ""))
            stroke = MARK_COLORS.get(mark or "", "none") if side == "b" else "none"
            out.append(f"<rect x=\"{num(x(start))}\" y=\"{num(y)}\" width=\"{num(w)}\" "
                       f"height=\"{BAR_H}\" rx=\"3\" fill=\"{phase_color(phase, extra)}\" "
                       f"stroke=\"{stroke}\" stroke-width=\"2\"><title>{esc(title, 200)}"
                       f"</title></rect>")
            if still_open:
                out.append(f"<rect x=\"{num(x(start))}\" y=\"{num(y)}\" width=\"{num(w)}\" "
                           f"height=\"{BAR_H}\" rx=\"3\" fill=\"url(#open)\"/>")
            if mark in ("failed", "stuck") and side == "b":
                out.append(f"<text x=\"{num(x(end) + 4)}\" y=\"{num(y + BAR_H * 0.75)}\" "
                           f"font-size=\"13\" fill=\"{RED}\">✗ {esc(phase, 40)}</text>")
            elif w > 60:
                out.append(f"<text x=\"{num(x(start) + 4)}\" y=\"{num(y + BAR_H * 0.72)}\" "
                           f"font-size=\"11\" fill=\"#fff\">{esc(phase, 30)}</text>")
    legend = sorted({p for side in spans.values() for (p, *_rest) in side})
    lx = LABEL_W
    for phase in legend:
        out.append(f"<rect x=\"{num(lx)}\" y=\"{height - 16}\" width=\"10\" height=\"10\" "
                   f"fill=\"{phase_color(phase, extra)}\"/><text x=\"{num(lx + 14)}\" "
                   f"y=\"{height - 7}\" font-size=\"11\">{esc(phase, 30)}</text>")
        lx += 24 + 7 * len(phase)
    out.append("</svg>")
    return "".join(out)


def _config_section(diff: Mapping[str, Any]) -> str:
    both, one, noise = _changes(diff)
    if not (both or one or noise):
        return ""
    parts = ["<section class=\"card\"><h2>Configuration <span class=\"dim small\">A → B"
             "</span></h2>"]
    if both:
        def shown(c: Mapping[str, Any], side: str) -> str:
            missing = "not set" if c.get("section") == "env" else "not printed"
            return f"<code>{esc(_value(c.get(side), missing))}</code>"
        parts.append(_table(["setting", "A", "B"],
                            [[f"<code>{esc(setting(c))}</code>", shown(c, "a"), shown(c, "b")]
                             for c in both[:MAX_ARGS]]))
    for side, name in (("b", "B"), ("a", "A")):
        only = [c for c in one if c.get(side) is not None]
        if only:
            items = ", ".join(f"<code>{esc(setting(c))}</code> {esc(_value(c.get(side), ''))}"
                              for c in only[:MAX_ONE_SIDED])
            more = f", … {len(only) - MAX_ONE_SIDED} more" if len(only) > MAX_ONE_SIDED else ""
            parts.append(f"<p class=\"small\">Only {name} printed: {items}{more}</p>")
    if noise:
        parts.append("<p class=\"small dim\">Differ in every run (ignored): " + ", ".join(
            f"<code>{esc(setting(c))}</code>" for c in noise[:MAX_ONE_SIDED]) + "</p>")
    parts.append("</section>")
    return "".join(parts)


def _outcome_section(diff: Mapping[str, Any]) -> str:
    items = []
    for label in ("a", "b"):
        run = _map(diff.get(label))
        text = f"<b>{label.upper()}</b>: {esc(_end(run), 300)}"
        if (root := _root(run)) is not None:
            text += f": {esc(root, 200)}"
        if (line := _root_line(run)) is not None:
            text += f"<br><code>{esc(line, 400)}</code>"
        items.append(f"<li>{text}</li>")
    for extra in (_seen(diff), _lead(diff)):
        if extra:
            items.append(f"<li>{esc(extra, 400)}</li>")
    return f"<section class=\"card\"><h2>Outcome</h2><ul>{''.join(items)}</ul></section>"


def _signatures_section(diff: Mapping[str, Any]) -> str:
    sigs = _map(diff.get("signatures"))
    rows: list[tuple[str, Mapping[str, Any]]] = []
    for group, label in (("new", "new in B"), ("gone", "gone in B"), ("changed", "count")):
        rows += [(label, s) for s in _list(sigs.get(group))]
    if not rows:
        return ""
    table = _table(["", "kind", "count", "line", "signature / message"],
                   [[esc(label), esc(KIND_LABEL.get(str(s.get("kind")), s.get("kind"))),
                     esc(_sig_count(label, s)), esc(_sig_line(label, s)),
                     f"<code>{esc(_sig_name(s))}</code>"] for label, s in rows[:MAX_SIGS * 2]],
                   numeric=(2, 3))
    return f"<section class=\"card\"><h2>Signatures</h2>{table}</section>"


def _metrics_section(diff: Mapping[str, Any]) -> str:
    rows = _metric_rows(diff)
    if not rows:
        return ""

    def value(r: Mapping[str, Any], side: str) -> str:
        return esc(_number(r.get(side)) + (f" {r.get('unit')}" if r.get("unit") else ""), 60)

    table = _table(["metric", "A", "B", "B/A"],
                   [[esc(f"{r.get('name')} ({r.get('stat')})", 80), value(r, "a"),
                     value(r, "b"), esc(_ratio(r))] for r in rows], numeric=(1, 2, 3))
    return (f"<section class=\"card\"><h2>Metrics <span class=\"dim small\">where both runs "
            f"print them</span></h2>{table}</section>")
