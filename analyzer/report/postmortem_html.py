"""The post-mortem as one self-contained HTML page: inline CSS and inline SVG, no script.

The page is meant to be attached to a bug ticket and opened from disk, so it fetches
nothing: no script, no font, no image, no stylesheet, and a Content-Security-Policy meta
tag forbids loading anything even if some text slipped through. Log text is hostile input:
every string that came from the log is HTML-escaped (quotes included) before it is laid
out, in text, in attributes and inside SVG ``<text>`` alike; nothing from the log ever
becomes a tag, an attribute name, a URL or a style.

Input is the dict from `analyzer.api.postmortem` (already redacted there).
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

from analyzer.report import IMPORTANT_ARGS, human_duration, line_text, moment
from analyzer.report import lane_label as who

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
W = 1120  # SVG user units; the page is ~1180 px wide, so 1 unit ≈ 1 px on a laptop
PHASE_COLORS = {
    "launch": "#90a4ae", "dist_init": "#7e57c2", "weight_load": "#1e88e5",
    "compile": "#00897b", "kv_cache_alloc": "#f9a825", "cuda_graph_capture": "#8e24aa",
    "warmup": "#6d4c41", "ready": "#43a047", "serving": "#2e7d32", "training": "#3949ab",
    "benchmark": "#3949ab", "shutdown": "#757575",
}
EXTRA_COLORS = ("#00acc1", "#c0ca33", "#f4511e", "#5e35b1", "#6d8764", "#d81b60", "#546e7a")
SERIES_COLORS = ("#1e88e5", "#f4511e", "#43a047", "#8e24aa", "#fdd835", "#00acc1", "#6d4c41",
                 "#d81b60")
VERDICT_COLORS = {"crash": "#c62828", "hang": "#e65100", "healthy": "#2e7d32",
                  "in_progress": "#1565c0"}
RED = "#d32f2f"
SYMPTOM = "#f57c00"
MAX_GANTT_LANES = 64
MAX_EXCERPT_LINES = 80
LINE_MAX = 2000


# --------------------------------------------------------------------------- escaping
def esc(value: object, limit: int = LINE_MAX) -> str:
    """Log text made inert: controls made visible, shortened, then HTML-escaped (quotes too)."""
    return html.escape(line_text("" if value is None else value, limit), quote=True)


_CODE = re.compile(r"`([^`\n]{1,400})`")


def prose(value: object, limit: int = 2000) -> str:
    """Knowledge-base prose: escaped, with `code spans` shown as <code> (inside escaped too)."""
    return _CODE.sub(r"<code>\1</code>", esc(value, limit))


def num(value: float) -> str:
    """A coordinate for SVG: short, finite."""
    if not math.isfinite(value):
        value = 0.0
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.{digits}f}".rstrip("0").rstrip(".")
    return esc(value, 100)


# --------------------------------------------------------------------------- time axis
def _clock(t: float, with_date: bool = False, seconds: bool = True) -> str:
    fmt = ("%m-%d " if with_date else "") + ("%H:%M:%S" if seconds else "%H:%M")
    return moment(t).strftime(fmt)


def _date(t: float) -> str:
    return (moment(t)).strftime("%Y-%m-%d")


TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600,
              43200, 86400, 172800, 604800)


def time_ticks(lo: float, hi: float, target: int = 8) -> list[tuple[float, str]]:
    """Clock-aligned ticks (whole minutes, hours, ...) labelled in the log's own clock."""
    span = max(hi - lo, 1.0)
    step = next((s for s in TIME_STEPS if span / s <= target), TIME_STEPS[-1])
    first = math.ceil(lo / step) * step
    multi_day = _date(lo) != _date(hi)
    ticks: list[tuple[float, str]] = []
    t = float(first)
    while t <= hi + 1e-9 and len(ticks) < 40:
        ticks.append((t, _clock(t, with_date=multi_day and step >= 3600,
                                seconds=step < 60)))
        t += step
    return ticks


def num_ticks(lo: float, hi: float, target: int = 5) -> list[float]:
    """1-2-5 ticks covering [lo, hi]."""
    span = hi - lo
    if span <= 0:
        return [lo]
    raw = span / target
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    out: list[float] = []
    v = first
    while v <= hi + step * 1e-6 and len(out) < 20:
        out.append(round(v, 10))
        v += step
    return out


def _num_label(v: float) -> str:
    if abs(v) >= 10000:
        return f"{v / 1000:g}k"
    return f"{v:g}"


# --------------------------------------------------------------------------- page
def render_html(data: Mapping[str, Any]) -> str:
    """The whole page."""
    report: Mapping[str, Any] = data.get("report") or {}
    verdict = str(report.get("verdict") or "unknown")
    headline = str(report.get("headline") or verdict)
    title = f"loglens post-mortem: {headline}"
    body = [
        _header(data, report, verdict, headline),
        _root_section(report, data),
        _timeline_section(data, report),
        _cascade_section(report),
        _metrics_section(data),
        _environment_section(data),
        _excerpts_section(report),
        _warnings_section(report),
        _redaction_section(data),
        _footer(data, report),
    ]
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"
            "<meta name=\"referrer\" content=\"no-referrer\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<meta name=\"color-scheme\" content=\"light\">\n"
            f"<title>{esc(title, 300)}</title>\n<style>{CSS}</style>\n</head>\n"
            "<body>\n<main>\n" + "\n".join(p for p in body if p) + "\n</main>\n</body>\n</html>\n")


def _header(data: Mapping[str, Any], report: Mapping[str, Any], verdict: str,
            headline: str) -> str:
    color = VERDICT_COLORS.get(verdict, "#455a64")
    timeline = data.get("timeline") or {}
    stats = report.get("stats") or {}
    meta = [f"<span class=\"file\">{esc(report.get('file'), 300)}</span>",
            f"{_int(report.get('lines')):,} lines", f"{_int(stats.get('events')):,} events"]
    lanes = [ln for ln in timeline.get("lanes", []) if ln.get("rank") is not None]
    if lanes:
        meta.append(f"{len({ln['rank'] for ln in lanes})} ranks")
    lo, hi = timeline.get("first_t"), timeline.get("last_t")
    if isinstance(lo, int | float) and isinstance(hi, int | float):
        if hi - lo >= 1:
            meta.append(f"{_date(lo)} {_clock(lo)} → {_clock(hi, _date(lo) != _date(hi))} "
                        f"({human_duration(hi - lo)}, log clock)")
        else:
            meta.append(f"at {_date(lo)} {_clock(lo)} (log clock)")
    warn = ""
    if not (data.get("redaction") or {}).get("enabled"):
        warn = ("<p class=\"unredacted\">Not redacted: this report may contain hostnames, IP "
                "addresses, user names or tokens from the log. Check it before sharing.</p>")
    nav = " ".join(f"<a href=\"#{a}\">{t}</a>" for a, t in (
        ("root-cause", "Root cause"), ("timeline", "Timeline"), ("cascade", "Cascade"),
        ("metrics", "Metrics"), ("environment", "Environment"), ("excerpts", "Excerpts"),
        ("redaction", "Redaction")))
    return (f"<header class=\"top\" style=\"border-top-color:{color}\">"
            f"<nav>{nav}</nav>"
            "<div class=\"brand\">loglens post-mortem</div>"
            f"<div class=\"verdict\" style=\"background:{color}\" id=\"verdict\">"
            f"{esc(verdict.replace('_', ' ').upper(), 40)}</div>"
            f"<h1 id=\"headline\">{esc(headline, 300)}</h1>"
            f"<p class=\"meta\">{' · '.join(meta)}</p>{warn}</header>")


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _root_section(report: Mapping[str, Any], data: Mapping[str, Any]) -> str:
    root = report.get("root_cause")
    last = report.get("last_phase") or {}
    if not isinstance(root, Mapping):
        verdict = report.get("verdict")
        text = {"healthy": "No failure found: the job looks healthy.",
                "in_progress": "No failure found so far: the job was still running when the "
                               "log ended.",
                "hang": "No error line found: the job stopped making progress.",
                }.get(str(verdict), "No root cause was identified.")
        extra = ""
        if last.get("phase"):
            extra = (f" Last phase: <code>{esc(last.get('phase'), 80)}</code>"
                     + (f" ({esc(last.get('progress'), 120)})" if last.get("progress") else "")
                     + ".")
        return (f"<section class=\"card\" id=\"root-cause\"><h2>Summary</h2>"
                f"<p class=\"lead\">{text}{extra}</p></section>")
    facts = [("Line", f"<a href=\"#L{_int(root.get('line'))}\">{_int(root.get('line'))}</a>")]
    if root.get("rank") is not None or root.get("process"):
        facts.append(("Rank / process", esc(who(root.get("rank"), root.get("process")), 80)))
    if root.get("timestamp"):
        facts.append(("Time (log clock)", esc(str(root.get("timestamp")).replace("T", " "), 60)))
    if root.get("phase"):
        facts.append(("Phase", f"<code>{esc(root.get('phase'), 60)}</code>"))
    facts.append(("Category", f"<code>{esc(root.get('category'), 80)}</code>"
                  + (f" <span class=\"dim\">({esc(root.get('system'), 30)})</span>"
                     if root.get("system") else "")))
    if root.get("signature"):
        facts.append(("Signature", f"<code>{esc(root.get('signature'), 100)}</code>"))
    if root.get("file") and len((report.get("stats") or {}).get("sources") or []) > 1:
        facts.append(("File", esc(root.get("file"), 200)))
    grid = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts)
    remedy = ""
    if root.get("remediation"):
        remedy = (f"<div class=\"fix\" id=\"remediation\"><h3>How to fix</h3>"
                  f"<p>{prose(root.get('remediation'))}</p></div>")
    return ("<section class=\"card\" id=\"root-cause\"><h2>Root cause</h2>"
            f"<p class=\"lead\" id=\"root-summary\">{prose(root.get('summary'))}</p>"
            f"<pre class=\"rootline\" id=\"root-text\">{esc(root.get('text'), 4000)}</pre>"
            f"<div class=\"rootgrid\"><dl class=\"facts\">{grid}</dl>{remedy}</div></section>")


# --------------------------------------------------------------------------- Gantt
def _phase_color(phase: str, extra: dict[str, str]) -> str:
    if phase in PHASE_COLORS:
        return PHASE_COLORS[phase]
    if phase not in extra:
        extra[phase] = EXTRA_COLORS[len(extra) % len(EXTRA_COLORS)]
    return extra[phase]


def _span_xy(span: Mapping[str, Any], lane: Mapping[str, Any], tl: Mapping[str, Any],
             use_time: bool) -> tuple[float, float] | None:
    """Start and end of one phase on the axis; an open phase runs to its lane's last event."""
    if use_time:
        a = span.get("t0")
        if a is None:
            return None
        b = span.get("t1")
        if b is None:
            b = lane.get("last_t") if lane.get("last_t") is not None else tl.get("last_t")
        return float(a), max(float(a), float(b if b is not None else a))
    a = span.get("start_line")
    if not isinstance(a, int):
        return None
    b = span.get("end_line") or lane.get("last_line") or tl.get("last_line") or a
    return float(a), max(float(a), float(b))


def _marker_x(marker: Mapping[str, Any], use_time: bool) -> float | None:
    value = marker.get("t") if use_time else marker.get("line")
    return float(value) if isinstance(value, int | float) else None



def _lane_for(marker: Mapping[str, Any], lanes: Sequence[Mapping[str, Any]]) -> int | None:
    rank, proc = marker.get("rank"), marker.get("process")
    if rank is None and not proc:
        return None
    best = None
    for i, lane in enumerate(lanes):
        if rank is not None and lane.get("rank") == rank:
            if proc and lane.get("process") == proc:
                return i
            best = i if best is None else best
        elif rank is None and proc and lane.get("process") == proc:
            return i
    return best


def gantt_svg(tl: Mapping[str, Any], markers: Sequence[Mapping[str, Any]], verdict: str
              ) -> tuple[str, list[str], bool, int]:
    """The per-rank phase chart; returns (svg, phases shown, time axis?, lanes drawn)."""
    all_lanes = [ln for ln in tl.get("lanes", []) if ln.get("spans") or ln.get("rank") is not None]
    lanes = all_lanes[:MAX_GANTT_LANES]
    if not lanes:
        return "", [], False, 0
    spans = [s for ln in lanes for s in ln.get("spans", [])]
    use_time = tl.get("first_t") is not None and all(s.get("t0") is not None for s in spans)
    xs: list[float] = []
    for ln in lanes:
        for s in ln.get("spans", []):
            r = _span_xy(s, ln, tl, use_time)
            if r:
                xs.extend(r)
        a, b = (ln.get("first_t"), ln.get("last_t")) if use_time else (
            ln.get("first_line"), ln.get("last_line"))
        xs.extend(float(v) for v in (a, b) if isinstance(v, int | float))
    root = next((m for m in markers if m.get("kind") == "root"), None)
    for m in markers:
        mx0 = _marker_x(m, use_time)
        if mx0 is not None:
            xs.append(mx0)
    if not xs:
        return "", [], use_time, 0
    lo, hi = min(xs), max(xs)
    if hi - lo < (2.0 if use_time else 4.0):
        hi = lo + (2.0 if use_time else 4.0)
    pad = (hi - lo) * 0.02
    lo, hi = lo - pad, hi + pad
    label_w, right, top, lane_h, bar_h = 190, 28, 60, 28, 18
    plot_w = W - label_w - right
    height = top + lane_h * len(lanes) + 34

    def X(v: float) -> float:
        return label_w + (v - lo) / (hi - lo) * plot_w

    out = [f"<svg class=\"gantt\" id=\"timeline-svg\" viewBox=\"0 0 {W} {height}\" "
           f"width=\"100%\" role=\"img\" aria-label=\"Phase timeline, one lane per rank\">"]
    # axis and grid
    ticks = (time_ticks(lo, hi) if use_time else
             [(v, f"{int(v):,}") for v in num_ticks(lo, hi, 8) if v == int(v)])
    bottom = top + lane_h * len(lanes)
    out.append(f"<rect x=\"{label_w}\" y=\"{top}\" width=\"{plot_w}\" height=\"{bottom - top}\" "
               "class=\"plotbg\"/>")
    for v, label in ticks:
        x = num(X(v))
        out.append(f"<line x1=\"{x}\" y1=\"{top - 4}\" x2=\"{x}\" y2=\"{bottom}\" class=\"grid\"/>"
                   f"<text x=\"{x}\" y=\"{top - 9}\" class=\"tick\" text-anchor=\"middle\">"
                   f"{esc(label, 40)}</text>")
    axis_title = (f"time ({_date(lo + pad)}, log clock)" if use_time else "log line")
    out.append(f"<text x=\"{label_w}\" y=\"{height - 10}\" class=\"axis\">{esc(axis_title)}"
               "</text>")
    out.append(f"<text x=\"{label_w - 12}\" y=\"{top - 34}\" class=\"axis\" "
               "text-anchor=\"end\">rank / process</text>")
    extra: dict[str, str] = {}
    shown: list[str] = []
    for i, ln in enumerate(lanes):
        y = top + i * lane_h
        label = who(ln.get("rank"), ln.get("process"))
        rank_attr = "" if ln.get("rank") is None else str(ln.get("rank"))
        out.append(f"<g class=\"lane\" data-rank=\"{esc(rank_attr, 20)}\" "
                   f"data-process=\"{esc(ln.get('process') or '', 80)}\">")
        if i % 2:
            out.append(f"<rect x=\"0\" y=\"{y}\" width=\"{W}\" height=\"{lane_h}\" "
                       "class=\"zebra\"/>")
        out.append(f"<text x=\"{label_w - 12}\" y=\"{y + lane_h / 2 + 4}\" class=\"lanelabel\" "
                   f"text-anchor=\"end\">{esc(label, 28)}</text>")
        a, b = (ln.get("first_t"), ln.get("last_t")) if use_time else (
            ln.get("first_line"), ln.get("last_line"))
        if isinstance(a, int | float) and isinstance(b, int | float):
            out.append(f"<line x1=\"{num(X(a))}\" y1=\"{y + lane_h / 2}\" x2=\"{num(X(b))}\" "
                       f"y2=\"{y + lane_h / 2}\" class=\"activity\"><title>"
                       f"{esc(label, 60)}: log activity</title></line>")
        for s in ln.get("spans", []):
            r = _span_xy(s, ln, tl, use_time)
            if r is None:
                continue
            phase = str(s.get("phase") or "?")
            color = _phase_color(phase, extra)
            if phase not in shown:
                shown.append(phase)
            x0, x1 = X(r[0]), X(r[1])
            w = max(x1 - x0, 3.0)
            open_ = not s.get("ended")
            dur = (human_duration(r[1] - r[0]) if use_time else f"{int(r[1] - r[0]):,} lines")
            when = (f"{_clock(r[0])} → {_clock(r[1])}" if use_time
                    else f"lines {int(r[0]):,}–{int(r[1]):,}")
            tip = (f"{label} · {phase} · {when} ({dur}{', still open' if open_ else ''})"
                   + (f" · {s.get('progress')}" if s.get("progress") else ""))
            cls = "bar open" if open_ else "bar"
            out.append(f"<rect x=\"{num(x0)}\" y=\"{y + (lane_h - bar_h) / 2}\" width=\"{num(w)}\" "
                       f"height=\"{bar_h}\" rx=\"3\" class=\"{cls}\" fill=\"{color}\">"
                       f"<title>{esc(tip, 400)}</title></rect>")
            text = f"{phase} {dur}" if w > 9 * (len(phase) + len(dur)) else (
                phase if w > 7.5 * len(phase) + 8 else "")
            if text:
                out.append(f"<text x=\"{num(x0 + 5)}\" y=\"{y + lane_h / 2 + 4}\" "
                           f"class=\"barlabel{' dark' if open_ else ''}\">{esc(text, 80)}</text>")
        out.append("</g>")
    # end of log, symptoms, then the failure on top
    end_x = tl.get("last_t") if use_time else tl.get("last_line")
    if verdict in ("hang", "in_progress") and isinstance(end_x, int | float):
        x = num(X(end_x))
        out.append(f"<line x1=\"{x}\" y1=\"{top}\" x2=\"{x}\" y2=\"{bottom}\" class=\"logend\"/>"
                   f"<text x=\"{x}\" y=\"{bottom + 14}\" class=\"tick\" text-anchor=\"end\">"
                   "log ends</text>")
    for m in markers:
        if m.get("kind") != "symptom":
            continue
        mx = _marker_x(m, use_time)
        if mx is None:
            continue
        idx = _lane_for(m, lanes)
        cy = top + idx * lane_h + lane_h / 2 if idx is not None else top - 2
        cx = X(mx)
        tip = f"symptom, line {m.get('line')}: {m.get('label')}"
        out.append(f"<path d=\"M{num(cx)} {num(cy - 6)} l5 6 l-5 6 l-5 -6 z\" class=\"symptom\">"
                   f"<title>{esc(tip, 300)}</title></path>")
    if root is not None:
        rx = _marker_x(root, use_time)
        if rx is not None:
            cx = X(rx)
            idx = _lane_for(root, lanes)
            place = (who(root.get("rank"), root.get("process"))
                     if root.get("rank") is not None or root.get("process") else "")
            label = f"✖ {place + ' failed' if place else 'failure'} · line {root.get('line')}"
            anchor = "end" if cx > W - 220 else "start"
            dx = -6 if anchor == "end" else 6
            out.append(f"<g class=\"failure\" id=\"failure-marker\"><line x1=\"{num(cx)}\" "
                       f"y1=\"{top - 44}\" x2=\"{num(cx)}\" y2=\"{bottom}\" class=\"failline\"/>"
                       f"<text x=\"{num(cx + dx)}\" y=\"{top - 34}\" class=\"faillabel\" "
                       f"text-anchor=\"{anchor}\">{esc(label, 80)}</text>")
            if idx is not None:
                cy = top + idx * lane_h + lane_h / 2
                out.append(f"<circle cx=\"{num(cx)}\" cy=\"{num(cy)}\" r=\"8\" class=\"failpin\"/>"
                           f"<text x=\"{num(cx)}\" y=\"{num(cy + 4)}\" class=\"failx\" "
                           "text-anchor=\"middle\">✕</text>")
            tip = (f"root cause, line {root.get('line')}: {root.get('label')}"
                   + (f" at {root.get('timestamp')}" if root.get("timestamp") else ""))
            out.append(f"<title>{esc(tip, 300)}</title></g>")
    out.append("</svg>")
    return "".join(out), shown, use_time, len(lanes)


def _timeline_section(data: Mapping[str, Any], report: Mapping[str, Any]) -> str:
    tl = data.get("timeline") or {}
    markers = data.get("markers") or []
    svg, shown, use_time, n = gantt_svg(tl, markers, str(report.get("verdict")))
    if not svg:
        return ("<section class=\"card\" id=\"timeline\"><h2>Timeline</h2><p class=\"dim\">"
                "No phase markers or ranked processes in this log, so there is no per-rank "
                "timeline to draw.</p></section>")
    extra: dict[str, str] = {}
    legend = "".join(f"<span class=\"key\"><i style=\"background:{_phase_color(p, extra)}\">"
                     f"</i>{esc(p, 60)}</span>" for p in shown)
    legend += ("<span class=\"key\"><i class=\"k-activity\"></i>log activity</span>"
               "<span class=\"key\"><i class=\"k-open\"></i>phase still open</span>")
    if any(m.get("kind") == "symptom" for m in markers):
        legend += f"<span class=\"key\"><b style=\"color:{SYMPTOM}\">◆</b> symptom</span>"
    if any(m.get("kind") == "root" for m in markers):
        legend += f"<span class=\"key\"><b style=\"color:{RED}\">✖</b> root cause</span>"
    notes = []
    hidden = len([ln for ln in tl.get("lanes", [])
                  if ln.get("spans") or ln.get("rank") is not None]) - n
    hidden += int(tl.get("hidden_lanes") or 0)
    if hidden > 0:
        notes.append(f"{hidden:,} more lanes not drawn")
    if not use_time:
        notes.append("the phases carry no timestamps, so the axis is the log line number")
    note = f"<p class=\"dim small\">{'; '.join(notes)}.</p>" if notes else ""
    table = _phase_table(report)
    return ("<section class=\"card\" id=\"timeline\"><h2>Timeline <span class=\"dim\">"
            "— one lane per rank / process, phases as bars</span></h2>"
            f"<div class=\"chart\">{svg}</div><div class=\"legend\">{legend}</div>{note}"
            f"{table}</section>")


def _phase_table(report: Mapping[str, Any]) -> str:
    phases = [p for p in report.get("phases") or [] if isinstance(p, Mapping)]
    if not phases:
        return ""
    rows = []
    for p in phases[:300]:
        dur = human_duration(p.get("seconds"))
        if p.get("end") is None and dur != "—":
            dur += "+"
        rows.append(f"<tr><td>{esc(who(p.get('rank'), p.get('process')), 60)}</td>"
                    f"<td><code>{esc(p.get('phase'), 60)}</code></td>"
                    f"<td>{esc(p.get('start') or '—', 40)}</td>"
                    f"<td>{esc(p.get('end') or '—', 40)}</td><td class=\"r\">{esc(dur, 20)}</td>"
                    f"<td>{esc(p.get('progress') or '', 120)}</td></tr>")
    return ("<details><summary>Phase table "
            f"({len(phases):,} phases)</summary><table class=\"data\"><thead><tr><th>rank / "
            "process</th><th>phase</th><th>start</th><th>end</th><th>duration</th>"
            f"<th>progress</th></tr></thead><tbody>{''.join(rows)}</tbody></table></details>")


# --------------------------------------------------------------------------- cascade
def _cascade_section(report: Mapping[str, Any]) -> str:
    root = report.get("root_cause")
    symptoms = [s for s in report.get("symptoms") or [] if isinstance(s, Mapping)]
    if not isinstance(root, Mapping) and not symptoms:
        return ""
    items = []
    if isinstance(root, Mapping):
        items.append("<li class=\"cause\"><span class=\"tag\">cause</span>"
                     f"<a class=\"ln\" href=\"#L{_int(root.get('line'))}\">"
                     f"L{_int(root.get('line'))}</a>"
                     f"{_rank_badge(root.get('rank'), root.get('process'))}"
                     f"<code class=\"logtext\">{esc(root.get('text'), 400)}</code></li>")
    for s in symptoms[:40]:
        items.append("<li><span class=\"tag sym\">symptom</span>"
                     f"<span class=\"ln\">L{_int(s.get('line'))}</span>"
                     f"{_rank_badge(s.get('rank'), None)}"
                     f"<code class=\"logtext\">{esc(s.get('text'), 300)}</code>"
                     f"<div class=\"why\">{prose(s.get('reason'), 400)}</div></li>")
    more = (f"<p class=\"dim small\">… and {len(symptoms) - 40:,} more symptoms.</p>"
            if len(symptoms) > 40 else "")
    return ("<section class=\"card\" id=\"cascade\"><h2>Cascade <span class=\"dim\">— the cause "
            f"first, then what it set off</span></h2><ol class=\"cascade\">{''.join(items)}</ol>"
            f"{more}</section>")


def _rank_badge(rank: Any, process: Any) -> str:
    if rank is None and not process:
        return ""
    return f"<span class=\"rank\">{esc(who(rank, process), 40)}</span>"


# --------------------------------------------------------------------------- metrics
def line_chart(chart: Mapping[str, Any], root_t: float | None) -> str:
    """One metric chart: a line per series, axes labelled, the failure time marked."""
    series = [s for s in chart.get("series", []) if s.get("points")][:len(SERIES_COLORS)]
    if not series:
        return ""
    use_time = chart.get("x") == "time"
    w, h, ml, mr, mt, mb = 540, 230, 58, 14, 14, 40
    xs = [p[0] for s in series for p in s["points"]]
    ys = [p[1] for s in series for p in s["points"]]
    x0, x1 = min(xs), max(xs)
    if x1 - x0 <= 0:
        x0, x1 = x0 - 1, x1 + 1
    unit = str(chart.get("unit") or "")
    y_hi = max(ys) if ys else 1.0
    if unit == "%" and y_hi > 40:
        y_hi = 100.0
    y_hi = y_hi * 1.08 if y_hi > 0 else 1.0
    yt = num_ticks(0.0, y_hi, 4)
    y_hi = max(y_hi, yt[-1])
    pw, ph = w - ml - mr, h - mt - mb

    def X(v: float) -> float:
        return float(ml + (v - x0) / (x1 - x0) * pw)

    def Y(v: float) -> float:
        return mt + ph - (v / y_hi) * ph

    out = [f"<svg class=\"metric\" viewBox=\"0 0 {w} {h}\" width=\"100%\" role=\"img\" "
           f"aria-label=\"{esc(chart.get('title'), 80)}\">"
           f"<rect x=\"{ml}\" y=\"{mt}\" width=\"{pw}\" height=\"{ph}\" class=\"plotbg\"/>"]
    for v in yt:
        y = num(Y(v))
        out.append(f"<line x1=\"{ml}\" y1=\"{y}\" x2=\"{ml + pw}\" y2=\"{y}\" class=\"grid\"/>"
                   f"<text x=\"{ml - 6}\" y=\"{num(Y(v) + 4)}\" class=\"tick\" "
                   f"text-anchor=\"end\">{esc(_num_label(v), 20)}</text>")
    ticks = (time_ticks(x0, x1, 5) if use_time else
             [(v, f"{int(v):,}") for v in num_ticks(x0, x1, 5) if v == int(v)])
    for v, label in ticks:
        x = num(X(v))
        out.append(f"<line x1=\"{x}\" y1=\"{mt}\" x2=\"{x}\" y2=\"{mt + ph}\" class=\"grid\"/>"
                   f"<text x=\"{x}\" y=\"{mt + ph + 15}\" class=\"tick\" text-anchor=\"middle\">"
                   f"{esc(label, 30)}</text>")
    out.append(f"<text x=\"{ml}\" y=\"{h - 6}\" class=\"axis\">"
               f"{'time (log clock)' if use_time else 'log line'}</text>"
               f"<text transform=\"translate(13 {mt + ph / 2}) rotate(-90)\" class=\"axis\" "
               f"text-anchor=\"middle\">{esc(unit, 30)}</text>")
    if root_t is not None and use_time and x0 <= root_t <= x1:
        x = num(X(root_t))
        out.append(f"<line x1=\"{x}\" y1=\"{mt}\" x2=\"{x}\" y2=\"{mt + ph}\" class=\"failline\">"
                   "<title>root cause</title></line>")
    for i, s in enumerate(series):
        color = SERIES_COLORS[i % len(SERIES_COLORS)]
        for run in (_decimate(r, x0, x1, pw) for r in _runs(s["points"])):
            if len(run) == 1:
                p = run[0]
                out.append(f"<circle cx=\"{num(X(p[0]))}\" cy=\"{num(Y(p[1]))}\" r=\"2.5\" "
                           f"fill=\"{color}\"/>")
                continue
            pts = " ".join(f"{num(X(p[0]))},{num(Y(p[1]))}" for p in run)
            out.append(f"<polyline points=\"{pts}\" fill=\"none\" stroke=\"{color}\" "
                       f"stroke-width=\"1.8\" stroke-linejoin=\"round\"><title>"
                       f"{esc(s.get('label'), 80)}</title></polyline>")
    out.append("</svg>")
    legend = "".join(
        f"<span class=\"key\"><i style=\"background:{SERIES_COLORS[i % len(SERIES_COLORS)]}\"></i>"
        f"{esc(s.get('label'), 80)} <span class=\"dim\">max {_fmt(s.get('max'))}, last "
        f"{_fmt(s.get('last'))}</span></span>" for i, s in enumerate(series))
    down = any(s.get("downsampled") for s in series)
    note = "<span class=\"dim small\"> (downsampled: peak per bucket)</span>" if down else ""
    return (f"<figure class=\"metricfig\"><figcaption>{esc(chart.get('title'), 80)} "
            f"<span class=\"dim\">({esc(unit, 30)})</span>{note}</figcaption>{''.join(out)}"
            f"<div class=\"legend\">{legend}</div></figure>")


def _runs(points: Sequence[Sequence[float]]) -> list[list[Sequence[float]]]:
    """Split a series where samples stop for a while (vLLM logs stats only while busy).

    A straight line across a gap would draw activity that never happened.
    """
    if len(points) < 3:
        return [list(points)]
    steps = sorted(b[0] - a[0] for a, b in pairwise(points))
    gap = max(steps[len(steps) // 2] * 3.0, 1e-9)
    runs: list[list[Sequence[float]]] = [[points[0]]]
    for a, b in pairwise(points):
        if b[0] - a[0] > gap:
            runs.append([])
        runs[-1].append(b)
    return runs


def _decimate(points: list[Sequence[float]], x0: float, x1: float, width: float
              ) -> list[Sequence[float]]:
    """At most a low and a high point per pixel column: the drawing looks the same, the page
    stays small (a 2,000-point series would otherwise cost ~30 KB per line)."""
    if len(points) <= 2 * width:
        return points
    out: list[Sequence[float]] = []
    col = -1
    lo: Sequence[float] = points[0]
    hi: Sequence[float] = points[0]
    for p in points:
        c = int((p[0] - x0) / ((x1 - x0) or 1.0) * width)
        if c != col:
            if col >= 0:
                out.extend(sorted({id(lo): lo, id(hi): hi}.values(), key=lambda q: q[0]))
            col, lo, hi = c, p, p
        else:
            lo = p if p[1] < lo[1] else lo
            hi = p if p[1] > hi[1] else hi
    out.extend(sorted({id(lo): lo, id(hi): hi}.values(), key=lambda q: q[0]))
    return out


def memory_chart(steps: Sequence[Mapping[str, Any]]) -> str:
    """GPU memory free / used after each start-up step (SGLang `avail mem` lines)."""
    steps = [s for s in steps if s.get("avail_max") is not None or s.get("usage_max") is not None]
    if not steps:
        return ""
    label_w, row_h, top = 300, 26, 8
    vmax = max(max(s.get("avail_max") or 0.0, s.get("usage_max") or 0.0) for s in steps) or 1.0
    plot_w = W - label_w - 190
    height = top + row_h * len(steps) + 8
    out = [f"<svg class=\"memory\" viewBox=\"0 0 {W} {height}\" width=\"100%\" role=\"img\" "
           "aria-label=\"GPU memory per step\">"]
    for i, s in enumerate(steps):
        y = top + i * row_h
        out.append(f"<text x=\"{label_w - 10}\" y=\"{y + 16}\" class=\"lanelabel\" "
                   f"text-anchor=\"end\">{esc(s.get('step'), 44)} "
                   f"<tspan class=\"dimtext\">L{_int(s.get('line'))}</tspan></text>")
        parts = []
        if s.get("avail_max") is not None:
            wv = (s["avail_max"] / vmax) * plot_w
            out.append(f"<rect x=\"{label_w}\" y=\"{y + 4}\" width=\"{num(max(wv, 1))}\" "
                       "height=\"8\" rx=\"2\" class=\"free\"/>")
            rng = (f"{s['avail_min']:.2f}–{s['avail_max']:.2f}" if s.get("avail_min") is not None
                   and s["avail_min"] != s["avail_max"] else f"{s['avail_max']:.2f}")
            parts.append(f"{rng} GB free")
        if s.get("usage_max") is not None:
            wv = (s["usage_max"] / vmax) * plot_w
            out.append(f"<rect x=\"{label_w}\" y=\"{y + 13}\" width=\"{num(max(wv, 1))}\" "
                       "height=\"8\" rx=\"2\" class=\"used\"/>")
            parts.append(f"{s['usage_max']:.2f} GB used")
        who_list = s.get("who") or []
        ranks = f" · {len(who_list)} ranks" if len(who_list) > 1 else ""
        out.append(f"<text x=\"{W - 185}\" y=\"{y + 16}\" class=\"tick\">"
                   f"{esc(' · '.join(parts) + ranks, 80)}</text>")
    out.append("</svg>")
    return ("<figure class=\"wide\"><figcaption>GPU memory per start-up step "
            "<span class=\"dim\">(GB; from <code>avail mem</code> / <code>mem usage</code> "
            "lines)</span></figcaption>" + "".join(out) +
            "<div class=\"legend\"><span class=\"key\"><i class=\"k-free\"></i>free (avail mem)"
            "</span><span class=\"key\"><i class=\"k-used\"></i>used by the step (mem usage)"
            "</span></div></figure>")


def _metrics_section(data: Mapping[str, Any]) -> str:
    metrics = data.get("metrics") or []
    memory = data.get("memory") or {}
    root = next((m for m in data.get("markers") or [] if m.get("kind") == "root"), None)
    root_t = root.get("t") if root else None
    charts = "".join(line_chart(c, root_t) for c in metrics)
    mem = memory_chart(memory.get("steps") or [])
    facts = memory.get("facts") or []
    fact_rows = "".join(f"<tr><td>{esc(f.get('label'), 80)}</td><td>{esc(f.get('value'), 60)}"
                        f"</td><td class=\"r dim\">L{_int(f.get('line'))}</td></tr>"
                        for f in facts)
    fact_table = (f"<table class=\"data narrow\"><thead><tr><th>memory / capacity</th><th>value"
                  f"</th><th>line</th></tr></thead><tbody>{fact_rows}</tbody></table>"
                  if fact_rows else "")
    if not (charts or mem or fact_table):
        return ("<section class=\"card\" id=\"metrics\"><h2>Metrics over time</h2>"
                "<p class=\"dim\">This log has no serving statistics (SGLang batch lines, vLLM "
                "throughput lines) and no per-step memory lines.</p></section>")
    return ("<section class=\"card\" id=\"metrics\"><h2>Metrics over time</h2>"
            f"<div class=\"grid2\">{charts}</div>{mem}{fact_table}</section>")


# --------------------------------------------------------------------------- environment
def _value_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, bool | int | float):
        return str(value)
    return repr(value)


def _environment_section(data: Mapping[str, Any]) -> str:
    env = data.get("environment") or {}
    rows = []
    if env.get("model"):
        rows.append(("Model", f"<code>{esc(env['model'], 200)}</code>", None))
    for v in env.get("versions") or []:
        rows.append((esc(v.get("name"), 40), esc(v.get("value"), 120), v.get("line")))
    for g in env.get("gpus") or []:
        ids = f" <span class=\"dim\">GPU {esc(g.get('ids'), 40)}</span>" if g.get("ids") else ""
        rows.append(("GPU", esc(g.get("name"), 100) + ids, g.get("line")))
    args: Mapping[str, Any] = env.get("args") or {}
    key_args = [k for k in IMPORTANT_ARGS if k in args and args[k] not in (None, "", [], {})]
    table = "".join(f"<tr><th>{k}</th><td>{v}</td><td class=\"r dim\">"
                    f"{'L' + str(line) if isinstance(line, int) else ''}</td></tr>"
                    for k, v, line in rows)
    left = (f"<table class=\"kv\"><tbody>{table}</tbody></table>" if table else
            "<p class=\"dim\">No version banner, <code>collect_env</code> or "
            "<code>check_env</code> output in this log.</p>")
    right = ""
    if key_args:
        trs = "".join(f"<tr><th><code>{esc(k, 60)}</code></th><td>"
                      f"{esc(_value_text(args[k]), 200)}</td></tr>" for k in key_args)
        right = f"<table class=\"kv\"><tbody>{trs}</tbody></table>"
    full = ""
    if args:
        source = ", ".join(esc(s, 40) for s in env.get("args_source") or [])
        trs = "".join(f"<tr><th><code>{esc(k, 80)}</code></th><td>{esc(_value_text(v), 400)}"
                      "</td></tr>" for k, v in args.items())
        full = (f"<details><summary>All parsed server arguments ({len(args):,}; {source})"
                f"</summary><table class=\"kv args\"><tbody>{trs}</tbody></table></details>")
    return ("<section class=\"card\" id=\"environment\"><h2>Environment</h2>"
            f"<div class=\"grid2 env\"><div><h3>Versions &amp; hardware</h3>{left}</div>"
            f"<div><h3>Key server arguments</h3>{right or '<p class=dim>None parsed.</p>'}"
            f"</div></div>{full}</section>")


# --------------------------------------------------------------------------- excerpts
def _excerpts_section(report: Mapping[str, Any]) -> str:
    excerpts = [e for e in report.get("excerpts") or [] if isinstance(e, Mapping)]
    if not excerpts:
        return ""
    blocks = []
    anchored: set[int] = set()
    reasons = {s.get("line"): s.get("reason") for s in report.get("symptoms") or []
               if isinstance(s, Mapping)}
    for ex in excerpts[:10]:
        lines = [ln for ln in ex.get("lines") or [] if isinstance(ln, Mapping)]
        title = str(ex.get("title") or "excerpt")
        marked = [ln.get("line") for ln in lines if ln.get("mark")]
        if title.startswith("symptom") and marked and reasons.get(marked[-1]):
            title = f"symptom at line {marked[-1]}: {reasons[marked[-1]]}"
        elif title == "root cause":
            title = "root cause and the lines before it"
        rows = []
        for ln in lines[:MAX_EXCERPT_LINES]:
            n = _int(ln.get("line"))
            anchor = ""
            if n not in anchored:
                anchored.add(n)
                anchor = f" id=\"L{n}\""
            cls = "row mark" if ln.get("mark") else "row"
            rows.append(f"<div class=\"{cls}\"{anchor}><span class=\"no\">{n}</span>"
                        f"<span class=\"tx\">{esc(ln.get('text'), LINE_MAX)}</span></div>")
        more = (f"<div class=\"row dim\">… {len(lines) - MAX_EXCERPT_LINES:,} more lines</div>"
                if len(lines) > MAX_EXCERPT_LINES else "")
        blocks.append(f"<h3>{esc(title, 300)}</h3><div class=\"code\">"
                      f"{''.join(rows)}{more}</div>")
    return ("<section class=\"card\" id=\"excerpts\"><h2>Log excerpts <span class=\"dim\">— "
            f"error lines highlighted</span></h2>{''.join(blocks)}</section>")


def _warnings_section(report: Mapping[str, Any]) -> str:
    warnings = [w for w in report.get("warnings") or [] if isinstance(w, Mapping)]
    if not warnings:
        return ""
    real = [w for w in warnings if not w.get("benign")]
    benign = [w for w in warnings if w.get("benign")]
    rows = "".join(
        f"<tr><td class=\"r\">L{_int(w.get('line'))}</td>"
        f"<td class=\"r\">×{_int(w.get('count')) or 1}</td>"
        f"<td>{'<span class=tag>benign</span>' if w.get('benign') else ''}</td>"
        f"<td><code class=\"logtext\">{esc(w.get('text'), 400)}</code></td></tr>"
        for w in (real + benign)[:60])
    return (f"<section class=\"card\" id=\"warnings\"><details><summary><h2 class=\"inline\">"
            f"Warnings</h2> {len(real):,} to check, {len(benign):,} known benign</summary>"
            f"<table class=\"data\"><tbody>{rows}</tbody></table></details></section>")


def _redaction_section(data: Mapping[str, Any]) -> str:
    red = data.get("redaction") or {}
    if not red.get("enabled"):
        return ("<section class=\"card\" id=\"redaction\"><h2>Redaction</h2><p>Off "
                "(<code>--no-redact</code>): nothing was replaced.</p></section>")
    summary = [s for s in red.get("summary") or [] if isinstance(s, Mapping)]
    if not summary:
        body = "<p>Nothing in this report needed redacting.</p>"
    else:
        rows = "".join(f"<tr><td>{esc(s.get('label'), 60)}</td><td><code>{esc(s.get('kind'), 30)}"
                       f"</code></td><td class=\"r\">{_int(s.get('distinct'))}</td>"
                       f"<td class=\"r\">{_int(s.get('occurrences'))}</td></tr>" for s in summary)
        body = ("<table class=\"data narrow\"><thead><tr><th>what</th><th>kind</th>"
                "<th>distinct</th><th>replaced</th></tr></thead>"
                f"<tbody>{rows}</tbody></table>")
    return ("<section class=\"card\" id=\"redaction\"><h2>Redaction</h2><p class=\"dim\">"
            "Secrets and identities were replaced before this page was written, with stable "
            "pseudonyms (<code>host-1</code> is the same host everywhere in this report). "
            "Timestamps, versions, rank tags and device ids are kept.</p>"
            f"{body}</section>")


def _footer(data: Mapping[str, Any], report: Mapping[str, Any]) -> str:
    stats = report.get("stats") or {}
    parts = [esc(data.get("generator") or "loglens", 60), esc(report.get("schema"), 60),
             f"{_int(stats.get('plain_lines')):,} plain lines"]
    notes = [esc(n, 200) for n in stats.get("notes") or []][:5]
    note = f"<br>{'<br>'.join(notes)}" if notes else ""
    return (f"<footer>{' · '.join(parts)} · self-contained page: no scripts, nothing loaded "
            f"from the network.{note}</footer>")


CSS = """
:root{--ink:#1d2330;--dim:#5f6b7a;--line:#e3e7ee;--bg:#f5f7fa;--card:#fff;--red:#d32f2f;
--mono:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono","Liberation Mono",monospace}
*{box-sizing:border-box}
html{background:var(--bg)}
body{margin:0;color:var(--ink);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,
"Helvetica Neue",Arial,"Noto Sans",sans-serif}
main{max-width:1200px;margin:0 auto;padding:20px 24px 40px}
h1{font-size:23px;line-height:1.3;margin:6px 0 4px}
h2{font-size:18px;margin:0 0 12px}
h2.inline{display:inline;margin:0}
h3{font-size:14px;margin:14px 0 6px;color:#333;text-transform:none}
code,pre,.logtext{font-family:var(--mono);font-size:13px}
code{background:#eef1f6;border-radius:4px;padding:1px 4px;overflow-wrap:anywhere}
a{color:#1565c0;text-decoration:none}
.dim{color:var(--dim);font-weight:normal}
.small{font-size:13px}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;
padding:18px 22px;margin:14px 0;box-shadow:0 1px 2px rgba(20,30,50,.04)}
header.top{background:var(--card);border:1px solid var(--line);border-top:6px solid;
border-radius:10px;padding:16px 22px 14px;position:relative}
.brand{font-size:12px;letter-spacing:.08em;text-transform:uppercase;color:var(--dim)}
.verdict{position:absolute;right:20px;top:18px;color:#fff;font-weight:700;font-size:13px;
letter-spacing:.06em;padding:4px 12px;border-radius:999px}
.meta{color:var(--dim);margin:4px 0 0;font-size:14px}
nav{position:absolute;right:22px;bottom:12px;font-size:13px}
nav a{margin-left:12px}
header.top{padding-bottom:34px}
.meta .file{font-family:var(--mono);font-size:13px;color:var(--ink)}
.unredacted{background:#fff3e0;border:1px solid #ffb74d;border-radius:6px;padding:6px 10px;
margin:10px 0 0;font-weight:600}
.lead{font-size:16px;margin:0 0 10px}
pre.rootline{background:#fdecea;border-left:4px solid var(--red);padding:10px 12px;margin:0 0 12px;
white-space:pre-wrap;overflow-wrap:anywhere;border-radius:4px;font-weight:600;color:#8e1b1b}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:3px 16px;margin:0 0 8px;
font-size:14px}
dl.facts dt{color:var(--dim)}
dl.facts dd{margin:0}
.fix{background:#e8f5e9;border:1px solid #a5d6a7;border-radius:8px;padding:10px 14px;
align-self:start}
.rootgrid{display:grid;grid-template-columns:minmax(320px,1fr) minmax(360px,1.3fr);gap:6px 24px}
@media (max-width:800px){.rootgrid{grid-template-columns:1fr}}
.fix h3{margin:0 0 4px;color:#1b5e20}
.fix p{margin:0}
.chart{overflow-x:auto}
svg{display:block;height:auto;
font-family:system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif}
svg .plotbg{fill:#fbfcfe;stroke:#d5dbe5}
svg .grid{stroke:#e6eaf0;stroke-width:1}
svg .tick{font-size:12px;fill:#5f6b7a}
svg .axis{font-size:12px;fill:#5f6b7a;font-style:italic}
svg .lanelabel{font-size:13px;fill:#1d2330;font-family:var(--mono)}
svg .dimtext{fill:#8a94a3;font-size:11px}
svg .zebra{fill:#f3f5f9}
svg .activity{stroke:#b0b8c4;stroke-width:2;stroke-dasharray:2 3}
svg .bar{stroke:rgba(0,0,0,.18);stroke-width:1}
svg .bar.open{stroke:#37474f;stroke-dasharray:4 3;fill-opacity:.55}
svg .barlabel{font-size:11.5px;fill:#fff;font-weight:600;pointer-events:none;
paint-order:stroke;stroke:rgba(0,0,0,.35);stroke-width:2px}
svg .barlabel.dark{fill:#263238;stroke:none}
svg .failline{stroke:#d32f2f;stroke-width:2;stroke-dasharray:6 3}
svg .faillabel{font-size:12.5px;font-weight:700;fill:#d32f2f}
svg .failpin{fill:#d32f2f;stroke:#fff;stroke-width:2}
svg .failx{font-size:11px;font-weight:700;fill:#fff}
svg .symptom{fill:#f57c00;stroke:#fff;stroke-width:1}
svg .logend{stroke:#546e7a;stroke-width:1.5;stroke-dasharray:2 3}
svg .free{fill:#1e88e5}
svg .used{fill:#fb8c00}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;font-size:13px;margin:8px 0 0}
.key{display:inline-flex;align-items:center;gap:6px}
.key i{display:inline-block;width:14px;height:10px;border-radius:2px}
.key i.k-activity{height:0;border-top:2px dashed #b0b8c4;border-radius:0}
.key i.k-open{background:#90a4ae;opacity:.6;outline:1px dashed #37474f}
.key i.k-free{background:#1e88e5}
.key i.k-used{background:#fb8c00}
.grid2{display:grid;grid-template-columns:repeat(auto-fit,minmax(460px,1fr));gap:14px 24px}
figure{margin:0}
figcaption{font-weight:600;font-size:14px;margin:0 0 4px}
figure.wide{margin-top:16px}
ol.cascade{list-style:none;padding:0;margin:0}
ol.cascade li{padding:7px 0;border-top:1px solid var(--line);display:flex;flex-wrap:wrap;
gap:4px 10px;align-items:baseline}
ol.cascade li:first-child{border-top:0}
ol.cascade li.cause .logtext{color:#8e1b1b;font-weight:600}
.logtext{overflow-wrap:anywhere;flex:1 1 480px}
.why{flex-basis:100%;color:var(--dim);font-size:13.5px;padding-left:2px}
.tag{font-size:11px;font-weight:700;text-transform:uppercase;letter-spacing:.05em;
background:var(--red);color:#fff;border-radius:4px;padding:1px 6px}
.tag.sym{background:#f57c00}
.ln{font-family:var(--mono);font-size:13px;color:var(--dim);min-width:48px}
.rank{font-size:12px;background:#e8eaf6;color:#283593;border-radius:4px;padding:1px 6px}
table{border-collapse:collapse}
table.data{width:100%;font-size:13.5px;margin-top:8px}
table.data.narrow{width:auto;min-width:420px}
table.data th,table.data td{border-bottom:1px solid var(--line);padding:4px 10px 4px 0;
text-align:left;vertical-align:top}
td.r,th.r{text-align:right}
table.kv{font-size:14px;width:100%}
table.kv th{text-align:left;font-weight:500;color:var(--dim);padding:3px 14px 3px 0;
vertical-align:top;white-space:nowrap}
table.kv td{padding:3px 8px 3px 0;overflow-wrap:anywhere}
table.args{margin-top:8px;columns:2}
details{margin-top:10px}
summary{cursor:pointer;color:#1565c0;font-size:14px}
summary h2.inline{color:var(--ink);font-size:18px}
.code{font-family:var(--mono);font-size:12.5px;background:#fafbfc;border:1px solid var(--line);
border-radius:6px;overflow-x:auto;padding:4px 0}
.code .row{display:flex;white-space:pre-wrap;overflow-wrap:anywhere;padding:0 10px 0 0}
.code .no{flex:0 0 56px;text-align:right;padding-right:12px;color:#9aa4b2;user-select:none}
.code .tx{flex:1 1 auto;min-width:0}
.code .row.mark{background:#fdecea;box-shadow:inset 3px 0 0 var(--red)}
.code .row.mark .tx{color:#8e1b1b;font-weight:600}
.code .row.mark .no{color:var(--red);font-weight:700}
footer{color:var(--dim);font-size:12.5px;text-align:center;margin-top:20px}
@media print{html{background:#fff}.card,header.top{box-shadow:none;break-inside:avoid}}
"""
