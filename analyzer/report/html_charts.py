"""The post-mortem page's pictures: inline SVG Gantt timeline and metric charts, no script.

Everything from the log is escaped by `esc` before it lands in SVG `<text>` or a `<title>`;
coordinates go through `num`, so a NaN or infinite metric cannot produce broken markup.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

from analyzer.report.common import human_duration, line_text, moment
from analyzer.report.common import lane_label as who

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
def clock(t: float, with_date: bool = False, seconds: bool = True) -> str:
    fmt = ("%m-%d " if with_date else "") + ("%H:%M:%S" if seconds else "%H:%M")
    return moment(t).strftime(fmt)


def date_text(t: float) -> str:
    return (moment(t)).strftime("%Y-%m-%d")


TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600,
              43200, 86400, 172800, 604800)


def time_ticks(lo: float, hi: float, target: int = 8) -> list[tuple[float, str]]:
    """Clock-aligned ticks (whole minutes, hours, ...) labelled in the log's own clock."""
    span = max(hi - lo, 1.0)
    step = next((s for s in TIME_STEPS if span / s <= target), TIME_STEPS[-1])
    first = math.ceil(lo / step) * step
    multi_day = date_text(lo) != date_text(hi)
    ticks: list[tuple[float, str]] = []
    t = float(first)
    while t <= hi + 1e-9 and len(ticks) < 40:
        ticks.append((t, clock(t, with_date=multi_day and step >= 3600,
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


def as_int(value: Any) -> int:
    """A count from the report dict for display; anything else (a bool, None, text) is 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# --------------------------------------------------------------------------- Gantt
def phase_color(phase: str, extra: dict[str, str]) -> str:
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
    axis_title = (f"time ({date_text(lo + pad)}, log clock)" if use_time else "log line")
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
            color = phase_color(phase, extra)
            if phase not in shown:
                shown.append(phase)
            x0, x1 = X(r[0]), X(r[1])
            w = max(x1 - x0, 3.0)
            open_ = not s.get("ended")
            dur = (human_duration(r[1] - r[0]) if use_time else f"{int(r[1] - r[0]):,} lines")
            when = (f"{clock(r[0])} → {clock(r[1])}" if use_time
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
                   f"<tspan class=\"dimtext\">L{as_int(s.get('line'))}</tspan></text>")
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


