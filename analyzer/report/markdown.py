"""Markdown output: a report to paste into a GitHub/GitLab issue.

The reader of an issue wants the answer before the evidence, so the summary (headline,
root-cause line, fix) comes first, then a small timeline and the cascade, and the raw
excerpts last inside collapsed ``<details>`` blocks.

Two hard constraints shape the code:

* GitHub rejects issue bodies over 65,536 characters, so the output stays under
  `LIMIT` characters whatever the input: every list is capped, every line shortened, and
  a running budget drops whole items (never half a code block) and says what was cut.
* Log text is untrusted: it may contain fences, ``|``, ``<script>`` or ``@mentions``.
  Log lines therefore only appear inside code (spans or fences sized to out-run any
  backtick/tilde run in the text); anything else is escaped.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from analyzer.report.common import (
    count,
    human_duration,
    items,
    line_text,
    section,
    timeline_times,
)
from analyzer.report.timeline import job_timeline, lanes_label

LIMIT = 60_000  # the promise: output length in characters stays below this
_BUDGET = LIMIT - 5_000  # room for the footer and "cut" notes added after budgeting
_NOTE_ROOM = 1_000  # kept free by each item so its section's closing note still fits

ROOT_TEXT_MAX = 1_000  # the root-cause line in its code block
LINE_TEXT_MAX = 300  # symptoms and warnings
EXCERPT_LINE_MAX = 400  # one excerpt line
PROSE_MAX = 1_000  # summary / remediation
CELL_MAX = 80  # one timeline cell
# Most a section may take of the budget; excerpts get the rest (at least ~15,000).
TIMELINE_SHARE = 10_000
CASCADE_SHARE = 12_000
WARNINGS_SHARE = 6_000
MAX_SYMPTOMS = 30
MAX_PHASES = 40
MAX_WARNINGS = 30
MAX_EXCERPTS = 8
MAX_EXCERPT_LINES = 60


def render_markdown(report: Mapping[str, Any]) -> str:
    """Build the issue-ready Markdown, summary first, within the `LIMIT` budget."""
    out = _Out(_BUDGET)
    _summary(out, report)  # bounded by construction: every field is shortened
    out.share(TIMELINE_SHARE)
    _timeline(out, report)
    out.share(CASCADE_SHARE)
    _cascade(out, report)
    out.share(WARNINGS_SHARE)
    _warnings(out, report)
    out.share(None)
    _excerpts(out, report)
    _footer(out, report)
    text = out.text()
    # Each piece was checked against the budget before being added; this only guards
    # the promise against a future edit that forgets to.
    assert len(text) < LIMIT, len(text)
    return text


class _Out:
    """Output under construction, with a character budget shared by all sections."""

    def __init__(self, budget: int) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.total = budget
        self.budget = budget

    def share(self, size: int | None) -> None:
        """Give the next section at most `size` more characters (None: all that is left).

        Without shares, 10,000 symptoms would eat the room the excerpts need.
        """
        self.budget = self.total if size is None else min(self.total, self.size + size)

    def fits(self, piece: str, reserve: int = 0) -> bool:
        """Whether `piece` still fits, keeping `reserve` characters for what must follow."""
        return self.size + len(piece) + reserve <= self.budget

    def add(self, piece: str) -> None:
        """Append unconditionally; only for pieces whose size is bounded by construction."""
        self.parts.append(piece)
        self.size += len(piece)

    def text(self) -> str:
        """The assembled document, ending in exactly one newline."""
        return "".join(self.parts).rstrip("\n") + "\n"


# ----------------------------------------------------------------------- escaping

_INLINE_SPECIAL = re.compile(r"([\\`*_\[\]|~#!])")
# A CommonMark code span: a whole backtick run, then the next run of the same length.
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)


def inline(text: object, limit: int = CELL_MAX) -> str:
    """Log-derived text outside code (headline, table cells, titles): inert in Markdown.

    HTML-escaped so ``<script>`` cannot become a tag, Markdown punctuation backslashed so
    nothing turns into emphasis, links or a table-column break (``\\|`` works in GFM cells).
    """
    s = line_text(text, limit)
    s = html.escape(s, quote=False)
    return _INLINE_SPECIAL.sub(r"\\\1", s)


def prose(text: object, limit: int = PROSE_MAX) -> str:
    """Knowledge-base prose (summary, remediation, reason): keep its code spans, defuse HTML.

    Remediations legitimately contain `code spans`; HTML inside them is already inert
    (and entity-escaping it would show ``&lt;`` literally), so only the text between
    code spans is escaped. Backslashes there are doubled: a backslash before a backtick
    would otherwise make Markdown skip a span we left raw, exposing its HTML. Newlines become
    spaces: prose sits in a list item, where a line starting with a fence or ``#`` would
    start a new block.
    """
    s = line_text("" if text is None else str(text), limit).replace("\u2424", " ")
    out: list[str] = []
    pos = 0
    for m in _CODE_SPAN.finditer(s):
        out.append(_escape_prose(s[pos : m.start()]))
        out.append(m.group())
        pos = m.end()
    out.append(_escape_prose(s[pos:]))
    return "".join(out).strip()


def _escape_prose(s: str) -> str:
    """HTML-escape text outside code spans and make its backslashes literal."""
    return html.escape(s.replace("\\", "\\\\"), quote=False)


def code(text: object, limit: int = LINE_TEXT_MAX) -> str:
    """An inline code span that survives any backticks inside `text`."""
    s = line_text(text, limit)
    if not s:
        return ""
    longest = max((len(run) for run in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    if s[0] in "` " or s[-1] in "` ":
        s = f" {s} "
    return f"{fence}{s}{fence}"


def fence_for(body: str) -> str:
    """A tilde fence longer than any tilde run in `body`, so no content line closes it."""
    longest = max((len(run) for run in re.findall(r"~+", body)), default=0)
    return "~" * max(4, longest + 1)


def code_block(body: str, lang: str = "text") -> str:
    """A fenced block around `body` (already cleaned, one log line per line)."""
    fence = fence_for(body)
    return f"{fence}{lang}\n{body}\n{fence}\n"


def _plural(n: int, word: str) -> str:
    """`1 symptom`, `2 symptoms`, with thousands separators."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


# ----------------------------------------------------------------------- sections


def _summary(out: _Out, report: Mapping[str, Any]) -> None:
    """Headline, verdict, root cause line and fix: all a reader may need."""
    verdict = line_text(report.get("verdict") or "unknown", 40)
    headline = report.get("headline") or verdict
    out.add(f"### {inline(headline, 300)}\n\n")
    meta = [f"**Verdict:** {inline(verdict.replace('_', ' '), 40)}"]
    if report.get("file"):
        meta.append(f"**File:** {code(report.get('file'), 200)}")
    meta.append(f"**Lines:** {count(report.get('lines')):,}")
    out.add(" · ".join(meta) + "\n\n")

    root = section(report, "root_cause")
    last = section(report, "last_phase")
    if root is None:
        messages = {
            "healthy": "No failure found.",
            "in_progress": "No failure found so far; the job was still running.",
            "hang": "No error line found: the job stopped making progress.",
            "crash": "The job failed, but no root-cause line was identified.",
        }
        out.add(f"**{messages.get(verdict, 'No failure found.')}**")
        if last is not None and last.get("phase"):
            label = "Stuck in" if verdict == "hang" else "Reached"
            out.add(f" {label} phase {_phase(last)}.")
        out.add("\n\n")
        return

    where = [f"line {count(root.get('line'))}"]
    if isinstance(root.get("rank"), int) and not isinstance(root.get("rank"), bool):
        where.append(f"rank {root['rank']}")
    if root.get("process"):
        where.append(f"process {code(root.get('process'), 60)}")
    if root.get("timestamp"):
        where.append(f"at {code(root.get('timestamp'), 60)}")
    out.add(f"**Root cause** ({', '.join(where)}):\n\n")
    out.add(code_block(line_text(root.get("text"), ROOT_TEXT_MAX)) + "\n")
    rows = [("Category", code(root.get("category") or "unknown", 80))]
    if root.get("system"):
        rows[0] = (rows[0][0], f"{rows[0][1]} ({inline(root.get('system'), 40)})")
    detail = root.get("detail")
    if isinstance(detail, Mapping) and detail.get("text"):
        rows.append(("Detail", f"line {count(detail.get('line'))}: "
                               f"{code(line_text(detail.get('text'), ROOT_TEXT_MAX), 300)}"))
    if last is not None and last.get("phase"):
        rows.append(("During", _phase(last)))
    if root.get("summary"):
        rows.append(("Summary", prose(root.get("summary"))))
    if root.get("remediation"):
        rows.append(("Remediation", prose(root.get("remediation"))))
    if root.get("signature"):
        rows.append(("Signature", code(root.get("signature"), 80)))
    sure = section(report, "confidence")
    if sure is not None and sure.get("level"):
        rows.append(("Confidence", f"{inline(sure.get('level'), 10)}: {prose(sure.get('reason'))}"))
        rivals = items(report, "candidates")
        if sure.get("level") != "high" and rivals:
            rows.append(("Runner-up", f"line {count(rivals[0].get('line'))} "
                         f"{code(rivals[0].get('text'), 200)} ({prose(rivals[0].get('rule'))})"))
    out.add("".join(f"- **{name}:** {value}\n" for name, value in rows) + "\n")


def _phase(last: Mapping[str, Any]) -> str:
    """`` `load_weights` (5/8 shards) ``: a phase name and how far it got."""
    label = code(last.get("phase"), CELL_MAX)
    if last.get("progress"):
        label += f" ({inline(last.get('progress'), CELL_MAX)})"
    return label


def _timeline(out: _Out, report: Mapping[str, Any]) -> None:
    """`| phase | start | duration | who | progress |`: the job's phases once, capped."""
    timeline = job_timeline(report)
    rows = timeline.rows
    if not rows:
        return
    date, starts = timeline_times([{"start": row.start} for row in rows])
    lanes = sorted({lane for row in rows for lane in row.lanes})
    bits = [x for x in (inline(date, 40) if date else "",
                        inline(lanes_label(lanes), CELL_MAX) if lanes else "") if x]
    title = "#### Timeline" + (f" ({', '.join(bits)})" if bits else "") + "\n\n"
    whoms = ["" if len(row.lanes) == len(lanes) else lanes_label(row.lanes) for row in rows]
    if any(whoms):
        header = "| phase | start | duration | who | progress |\n|---|---|---:|---|---|\n"
    else:
        header = "| phase | start | duration | progress |\n|---|---|---:|---|\n"
    if not out.fits(title + header, reserve=_NOTE_ROOM):
        return
    out.add(title + header)
    shown = 0
    for row, start, whom in zip(rows[:MAX_PHASES], starts, whoms, strict=False):
        duration = human_duration(row.seconds)
        if row.open and duration != "—":
            duration += "+"
        progress = inline(row.progress or "", CELL_MAX)
        phase = inline(row.phase, CELL_MAX)
        if row.state:
            mark = f"**✗ {row.state} here" + (f" ({inline(row.where, 40)})" if row.where else "")
            progress = mark + "**" + (f" · {progress}" if progress else "")
            phase = f"**{phase}**"
        cells = [phase, inline(start, 40), inline(duration, 20),
                 *([inline(whom, CELL_MAX)] if any(whoms) else []), progress]
        line = "| " + " | ".join(cells) + " |\n"
        if not out.fits(line, reserve=_NOTE_ROOM):
            break
        out.add(line)
        shown += 1
    notes = [inline(n, CELL_MAX) for n in timeline.notes]
    if shown < len(rows):
        notes.append(f"{_plural(len(rows) - shown, 'more phase')} not shown")
    if any(row.open for row in rows[:shown]):
        notes.append("`+`: phase still open at the end of the log")
    out.add("\n" + ("_" + "; ".join(notes) + "._\n\n" if notes else ""))


def _cascade(out: _Out, report: Mapping[str, Any]) -> None:
    """Symptoms the root cause triggered, as a list; the rest summarised by reason."""
    symptoms = items(report, "symptoms")
    if not symptoms:
        return
    title = f"#### Cascade ({_plural(len(symptoms), 'symptom')})\n\n"
    if not out.fits(title, reserve=_NOTE_ROOM):
        return
    out.add(title)
    shown = 0
    for symptom in symptoms[:MAX_SYMPTOMS]:
        entry = f"- L{count(symptom.get('line'))}"
        rank = symptom.get("rank")
        if isinstance(rank, int) and not isinstance(rank, bool):
            entry += f" · rank {rank}"
        entry += f" · {code(symptom.get('text'), LINE_TEXT_MAX)}"
        if symptom.get("reason"):
            entry += f" — {prose(symptom.get('reason'), 200)}"
        entry += "\n"
        if not out.fits(entry, reserve=_NOTE_ROOM):
            break
        out.add(entry)
        shown += 1
    rest = symptoms[shown:]
    if rest:
        reasons = Counter(line_text(s.get("reason"), 40) for s in rest if s.get("reason"))
        top = ", ".join(f"{n:,}× {inline(r, 40)}" for r, n in reasons.most_common(3))
        out.add(f"- _… and {_plural(len(rest), 'more symptom')} not shown")
        out.add(f" ({top})_\n" if top else "_\n")
    out.add("\n")


def _warnings(out: _Out, report: Mapping[str, Any]) -> None:
    """Warnings in a collapsed block: real ones first, benign ones labelled as such."""
    warnings = items(report, "warnings")
    if not warnings:
        return
    real = [w for w in warnings if not w.get("benign")]
    benign = [w for w in warnings if w.get("benign")]
    summary = (
        f"<details><summary>Warnings: {len(real):,} to check, "
        f"{len(benign):,} known benign</summary>\n\n"
    )
    closing = "\n</details>\n\n"
    if not out.fits(summary + closing, reserve=_NOTE_ROOM):
        return
    out.add(summary)
    shown = 0
    ordered = real + benign
    for warning in ordered[:MAX_WARNINGS]:
        n = count(warning.get("count")) or 1
        entry = f"- L{count(warning.get('line'))}"
        entry += " **benign**" if warning.get("benign") else ""
        entry += f" ×{n:,} {code(warning.get('text'), LINE_TEXT_MAX)}"
        if warning.get("id"):
            entry += f" ({code(warning.get('id'), 60)})"
        entry += "\n"
        if not out.fits(entry, reserve=len(closing) + _NOTE_ROOM):
            break
        out.add(entry)
        shown += 1
    if shown < len(ordered):
        out.add(f"- _… and {_plural(len(ordered) - shown, 'more warning')} not shown_\n")
    out.add(closing)


def _excerpts(out: _Out, report: Mapping[str, Any]) -> None:
    """Each excerpt as a collapsed, line-numbered code block; whole lines only."""
    excerpts = items(report, "excerpts")
    skipped = max(0, len(excerpts) - MAX_EXCERPTS)
    for excerpt in excerpts[:MAX_EXCERPTS]:
        lines = [ln for ln in excerpt.get("lines") or [] if isinstance(ln, Mapping)]
        title = html.escape(line_text(excerpt.get("title") or "Excerpt", 120), quote=False)
        width = len(f"{max((count(ln.get('line')) for ln in lines), default=0)}")
        rows: list[str] = []
        shortened = False
        for ln in lines[:MAX_EXCERPT_LINES]:
            raw = "" if ln.get("text") is None else str(ln.get("text"))
            shortened |= len(raw) > EXCERPT_LINE_MAX
            mark = ">" if ln.get("mark") else " "
            rows.append(
                f"{mark} {count(ln.get('line')):>{width}}  {line_text(raw, EXCERPT_LINE_MAX)}"
            )
        # Drop trailing lines until the whole block fits: a half-written fence would
        # swallow the rest of the issue.
        while True:
            piece = _excerpt_block(title, rows, len(lines), shortened)
            if out.fits(piece, reserve=_NOTE_ROOM) or not rows:
                break
            rows.pop()
        if rows and out.fits(piece, reserve=_NOTE_ROOM):
            out.add(piece)
        else:
            skipped += 1
    if skipped:
        out.add(f"_{_plural(skipped, 'more excerpt')} not shown._\n\n")


def _excerpt_block(title: str, rows: list[str], total: int, shortened: bool) -> str:
    """One `<details>` block; notes say how many lines were left out or shortened."""
    notes = []
    if len(rows) < total:
        notes.append(f"{_plural(total - len(rows), 'more line')} not shown")
    if shortened:
        notes.append(f"lines over {EXCERPT_LINE_MAX} characters shortened in the middle")
    note = f"\n_{'; '.join(notes)}._\n" if notes else ""
    block = code_block("\n".join(rows)) if rows else "_(no lines)_\n"
    return f"<details><summary>{title}</summary>\n\n{block}{note}\n</details>\n\n"


def _footer(out: _Out, report: Mapping[str, Any]) -> None:
    """Parser coverage stats, small print: tells whether loglens understood the log."""
    stats = section(report, "stats") or {}
    parts = [
        f"{count(report.get('lines')):,} lines",
        f"{count(stats.get('events')):,} events",
        f"{count(stats.get('plain_lines')):,} plain lines",
    ]
    for key, label in (("replaced_lines", "with invalid bytes"), ("truncated_lines", "truncated")):
        if count(stats.get(key)):
            parts.append(f"{count(stats.get(key)):,} lines {label}")
    sources = stats.get("sources")
    if isinstance(sources, Sequence) and not isinstance(sources, str) and len(sources) > 1:
        names = ", ".join(inline(s, 60) for s in list(sources)[:5])
        if len(sources) > 5:
            names += f", … {len(sources) - 5:,} more"
        parts.append(f"sources: {names}")
    out.add("<sub>loglens explain · " + " · ".join(parts) + "</sub>\n")
