"""The Markdown post-mortem (`loglens report --format markdown`): explain's Markdown, then a
monospace timeline chart, the metrics and the environment, within GitHub's comment limit."""

from __future__ import annotations

from typing import Any

from analyzer.report import FormatType, render
from analyzer.report.common import IMPORTANT_ARGS, lane_label, moment
from analyzer.report.markdown import code, code_block, inline

MARKDOWN_LIMIT = 60_000


def render_markdown(data: dict[str, Any]) -> str:
    """The explain Markdown of the (redacted) report, plus a text timeline and redaction note.

    Stays under `MARKDOWN_LIMIT` characters: the appendix is dropped piece by piece when
    the explain part already used most of the room.
    """
    base = render(data["report"], FormatType.MARKDOWN).rstrip("\n") + "\n\n"
    pieces = []
    chart = text_timeline(data.get("timeline") or {}, data.get("markers") or [])
    if chart:
        pieces.append("#### Timeline chart\n\n" + code_block(chart) + "\n")
    metrics = _metrics_table(data.get("metrics") or [])
    if metrics:
        pieces.append(metrics)
    env = _env_markdown(data.get("environment") or {})
    if env:
        pieces.append(env)
    red = data.get("redaction") or {}
    note = ("**Redacted:** " + inline(red.get("line", ""), 600) if red.get("enabled")
            else "**Redacted:** nothing (report made with `--no-redact`)")
    tail = note + f"\n\n<sub>{inline(data.get('generator', 'loglens'), 60)} report</sub>\n"
    room = MARKDOWN_LIMIT - 1 - len(base) - len(tail)
    body = ""
    for piece in pieces:
        if len(body) + len(piece) <= room:
            body += piece
    text = base + body + tail
    if len(text) >= MARKDOWN_LIMIT:  # cannot happen: the explain part stays under 55,000
        text = text[: MARKDOWN_LIMIT - 200] + "\n\n_(cut)_\n"
    return text


PHASE_LETTERS = {"launch": "l", "dist_init": "d", "weight_load": "w", "compile": "c",
                 "kv_cache_alloc": "k", "cuda_graph_capture": "g", "warmup": "u",
                 "ready": "r", "serving": "s", "training": "t", "benchmark": "b",
                 "shutdown": "x"}



def text_timeline(timeline: dict[str, Any], markers: list[dict[str, Any]],
                  width: int = 60, max_lanes: int = 24) -> str:
    """A small monospace Gantt chart: one row per lane, one letter per phase."""
    lanes = [ln for ln in timeline.get("lanes", []) if ln.get("spans")][:max_lanes]
    if not lanes:
        return ""
    use_time = all(s.get("t0") is not None for ln in lanes for s in ln["spans"])
    lo_hi = [_span_range(s, ln, timeline, use_time) for ln in lanes for s in ln["spans"]]
    lo = min(a for a, _ in lo_hi)
    hi = max(b for _, b in lo_hi)
    root = next((m for m in markers if m["kind"] == "root"), None)
    root_x = None
    if root is not None:
        root_x = root.get("t") if use_time else root.get("line")
        if root_x is not None:
            hi = max(hi, root_x)
            lo = min(lo, root_x)
    span = (hi - lo) or 1.0
    letters = dict(PHASE_LETTERS)
    used: dict[str, str] = {}
    rows = []
    label_w = min(max(len(lane_label(ln["rank"], ln["process"])) for ln in lanes), 18)
    for ln in lanes:
        cells = [" "] * width
        for s in ln["spans"]:
            a, b = _span_range(s, ln, timeline, use_time)
            i0 = min(width - 1, int((a - lo) / span * (width - 1)))
            i1 = min(width - 1, max(i0, int((b - lo) / span * (width - 1))))
            ch = letters.setdefault(s["phase"], _free_letter(s["phase"], letters))
            used[s["phase"]] = ch
            for i in range(i0, i1 + 1):
                cells[i] = ch
        if root is not None and root_x is not None and _root_on_lane(root, ln):
            cells[min(width - 1, int((root_x - lo) / span * (width - 1)))] = "X"
        label = lane_label(ln["rank"], ln["process"])[:label_w]
        rows.append(f"{label:<{label_w}} |{''.join(cells)}|")
    left, right = (_clock(lo), _clock(hi)) if use_time else (f"line {int(lo)}", f"line {int(hi)}")
    axis = f"{'':<{label_w}}  {left}{right:>{max(1, width - len(left))}}"
    legend = "  ".join(f"{c}={p}" for p, c in used.items())
    if root is not None and root_x is not None:
        legend += f"  X=failure (line {root['line']})"
    hidden = len([ln for ln in timeline.get("lanes", []) if ln.get("spans")]) - len(lanes)
    more = f"\n({hidden} more lanes not shown)" if hidden > 0 else ""
    return "\n".join([axis, *rows, "", legend]) + more


def _root_on_lane(root: dict[str, Any], lane: dict[str, Any]) -> bool:
    if root.get("rank") is not None:
        return bool(lane["rank"] == root["rank"] and (
            not root.get("process") or not lane["process"] or lane["process"] == root["process"]))
    return bool(root.get("process") and lane["process"] == root["process"])


def _span_range(s: dict[str, Any], lane: dict[str, Any], timeline: dict[str, Any],
                use_time: bool) -> tuple[float, float]:
    """Where a span starts and ends on the axis; open spans run to the lane's last event."""
    if use_time:
        a = float(s["t0"])
        b = s.get("t1")
        if b is None:
            b = lane.get("last_t") or timeline.get("last_t") or a
        return a, max(a, float(b))
    a = float(s["start_line"])
    end = s.get("end_line") or lane.get("last_line") or timeline.get("last_line") or a
    return a, max(a, float(end))


def _free_letter(phase: str, letters: dict[str, str]) -> str:
    taken = set(letters.values()) | {"X"}
    for ch in phase.lower() + "abcdefghijklmnopqrstuvwyz":
        if ch.isalpha() and ch not in taken:
            return ch
    return "?"


def _clock(t: float) -> str:
    return (moment(t)).strftime("%H:%M:%S")


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:,.2f}".rstrip("0").rstrip(".") if abs(v) < 1e6 else f"{v:,.0f}"
    return str(v)


def _metrics_table(metrics: list[dict[str, Any]]) -> str:
    rows = []
    for chart in metrics:
        for s in chart["series"][:8]:
            rows.append(f"| {inline(chart['title'], 40)} | {inline(s['label'], 60)} | "
                        f"{_fmt(s['min'])} | {_fmt(s['max'])} | {_fmt(s['last'])} | "
                        f"{inline(s['unit'], 20)} | {s['samples']:,} |")
    if not rows:
        return ""
    head = ("<details><summary>Metrics over time (min / max / last)</summary>\n\n"
            "| chart | series | min | max | last | unit | samples |\n"
            "|---|---|---:|---:|---:|---|---:|\n")
    return head + "\n".join(rows) + "\n\n</details>\n\n"


def _env_markdown(env: dict[str, Any]) -> str:
    rows = []
    if env.get("model"):
        rows.append(f"| model | {inline(env['model'], 120)} |")
    for v in env.get("versions", [])[:20]:
        rows.append(f"| {inline(v['name'], 40)} | {inline(v['value'], 80)} |")
    for g in env.get("gpus", [])[:8]:
        ids = f" (GPU {inline(g['ids'], 40)})" if g.get("ids") else ""
        rows.append(f"| GPU | {inline(g['name'], 80)}{ids} |")
    args = env.get("args") or {}
    shown = [k for k in IMPORTANT_ARGS if k in args and args[k] not in (None, "", [], {})]
    for k in shown[:20]:
        rows.append(f"| {code(k, 40)} | {inline(_arg_text(args[k]), 120)} |")
    if not rows:
        return ""
    return ("<details><summary>Environment</summary>\n\n| item | value |\n|---|---|\n"
            + "\n".join(rows) + "\n\n</details>\n\n")


def _arg_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int | float):
        return _fmt(value) if isinstance(value, float) else str(value)
    return repr(value)
