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

from collections.abc import Mapping
from typing import Any

from analyzer.report.common import IMPORTANT_ARGS, human_duration
from analyzer.report.common import lane_label as who
from analyzer.report.html_charts import (
    LINE_MAX,
    RED,
    SYMPTOM,
    VERDICT_COLORS,
    as_int,
    clock,
    date_text,
    esc,
    gantt_svg,
    line_chart,
    memory_chart,
    phase_color,
    prose,
)

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
MAX_EXCERPT_LINES = 80

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
            f"{as_int(report.get('lines')):,} lines", f"{as_int(stats.get('events')):,} events"]
    lanes = [ln for ln in timeline.get("lanes", []) if ln.get("rank") is not None]
    if lanes:
        meta.append(f"{len({ln['rank'] for ln in lanes})} ranks")
    lo, hi = timeline.get("first_t"), timeline.get("last_t")
    if isinstance(lo, int | float) and isinstance(hi, int | float):
        if hi - lo >= 1:
            other_day = date_text(lo) != date_text(hi)
            meta.append(f"{date_text(lo)} {clock(lo)} → {clock(hi, other_day)} "
                        f"({human_duration(hi - lo)}, log clock)")
        else:
            meta.append(f"at {date_text(lo)} {clock(lo)} (log clock)")
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
    facts = [("Line", f"<a href=\"#L{as_int(root.get('line'))}\">{as_int(root.get('line'))}</a>")]
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


def _timeline_section(data: Mapping[str, Any], report: Mapping[str, Any]) -> str:
    tl = data.get("timeline") or {}
    markers = data.get("markers") or []
    svg, shown, use_time, n = gantt_svg(tl, markers, str(report.get("verdict")))
    if not svg:
        return ("<section class=\"card\" id=\"timeline\"><h2>Timeline</h2><p class=\"dim\">"
                "No phase markers or ranked processes in this log, so there is no per-rank "
                "timeline to draw.</p></section>")
    extra: dict[str, str] = {}
    legend = "".join(f"<span class=\"key\"><i style=\"background:{phase_color(p, extra)}\">"
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
                     f"<a class=\"ln\" href=\"#L{as_int(root.get('line'))}\">"
                     f"L{as_int(root.get('line'))}</a>"
                     f"{_rank_badge(root.get('rank'), root.get('process'))}"
                     f"<code class=\"logtext\">{esc(root.get('text'), 400)}</code></li>")
    for s in symptoms[:40]:
        items.append("<li><span class=\"tag sym\">symptom</span>"
                     f"<span class=\"ln\">L{as_int(s.get('line'))}</span>"
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


def _metrics_section(data: Mapping[str, Any]) -> str:
    metrics = data.get("metrics") or []
    memory = data.get("memory") or {}
    root = next((m for m in data.get("markers") or [] if m.get("kind") == "root"), None)
    root_t = root.get("t") if root else None
    charts = "".join(line_chart(c, root_t) for c in metrics)
    mem = memory_chart(memory.get("steps") or [])
    facts = memory.get("facts") or []
    fact_rows = "".join(f"<tr><td>{esc(f.get('label'), 80)}</td><td>{esc(f.get('value'), 60)}"
                        f"</td><td class=\"r dim\">L{as_int(f.get('line'))}</td></tr>"
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
            n = as_int(ln.get("line"))
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
        f"<tr><td class=\"r\">L{as_int(w.get('line'))}</td>"
        f"<td class=\"r\">×{as_int(w.get('count')) or 1}</td>"
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
                       f"</code></td><td class=\"r\">{as_int(s.get('distinct'))}</td>"
                       f"<td class=\"r\">{as_int(s.get('occurrences'))}</td></tr>" for s in summary)
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
             f"{as_int(stats.get('plain_lines')):,} plain lines"]
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
