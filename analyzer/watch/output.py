"""How watch reports: plain lines, JSON lines, or a live rich table on a terminal."""

from __future__ import annotations

from typing import TYPE_CHECKING

from analyzer.errors import ExitCode
from analyzer.parse.framing import strip_ansi
from analyzer.report.common import line_text

if TYPE_CHECKING:
    from analyzer.watch.loop import Verdict, Watch


import math
import os
import sys
import time
from typing import Any, TextIO

from analyzer.report import FormatType, render
from analyzer.report.common import human_duration
from analyzer.report.jsonfmt import dumps

# --------------------------------------------------------------------------- outputs
MAX_ROWS = 16  # rank rows in the live table


def show(text: str, limit: int = 160) -> str:
    """Log text made safe for any output: no ANSI, no control characters, bounded length.

    A tqdm line redrawn with `\r` shows only its newest state, as a terminal would."""
    text = strip_ansi(text)
    if "\r" in text:
        states = [s for s in text.split("\r") if s.strip()]
        text = states[-1] if states else ""
    return line_text(text, limit)


class Output:
    """Where state changes go; subclasses decide how they look."""

    def start(self, watch: Watch) -> None:
        """Called once before the first poll."""

    def event(self, record: dict[str, Any], text: str) -> None:
        """A state change: a record (for --json) and its one-line text."""

    def failure(self, report: dict[str, Any], *, update: bool) -> None:
        """A root cause was found (or a better one replaced it)."""

    def refresh(self, watch: Watch, now: float) -> None:
        """Called every poll (the live display redraws; line outputs do nothing)."""

    def verdict(self, verdict: Verdict) -> None:
        """The end."""

    def stop(self) -> None:
        """Called once at the end."""


class PlainOutput(Output):
    """One plain line per state change: for CI logs, agents and pipes. No ANSI, no redraws."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.t0 = time.monotonic()

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except BrokenPipeError:
            pass

    def event(self, record: dict[str, Any], text: str) -> None:
        self._write(f"[{time.monotonic() - self.t0:7.1f}s] {text}\n")

    def failure(self, report: dict[str, Any], *, update: bool) -> None:
        title = "better root cause found" if update else "fatal error found"
        self.event({}, f"{title}: {report.get('headline')}")
        self._write(render(report, FormatType.TEXT, color=False, width=100))

    def verdict(self, verdict: Verdict) -> None:
        self.event(verdict.record, verdict.text)
        for line in verdict.details:
            self._write(f"           {line}\n")


class JsonOutput(Output):
    """NDJSON: one object per state change, the verdict object last."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.t0 = time.monotonic()

    def _emit(self, record: dict[str, Any]) -> None:
        rec = {**record, "t": round(time.monotonic() - self.t0, 3)}
        try:
            self.stream.write(dumps(rec, ensure_ascii=False, default=str) + "\n")
            self.stream.flush()
        except BrokenPipeError:
            pass

    def event(self, record: dict[str, Any], text: str) -> None:
        if record:
            self._emit(record)

    def failure(self, report: dict[str, Any], *, update: bool) -> None:
        self._emit({"event": "failure", "update": update, "headline": report.get("headline"),
                    "root_cause": report.get("root_cause"), "report": report})

    def verdict(self, verdict: Verdict) -> None:
        self._emit(verdict.record)


class LiveOutput(Output):
    """A rich Live table on a terminal; events scroll above it."""

    def __init__(self, stream: TextIO, *, color: bool = True) -> None:
        from rich.console import Console

        self.console = Console(file=stream, highlight=False, markup=False,
                               no_color=not color)
        self.color = color
        self.live: Any = None
        self.t0 = time.monotonic()
        self.last_draw = -math.inf

    def start(self, watch: Watch) -> None:
        from rich.live import Live

        self.live = Live(console=self.console, auto_refresh=False, transient=True,
                         redirect_stdout=False, redirect_stderr=False)
        self.live.start()

    def event(self, record: dict[str, Any], text: str) -> None:
        from rich.text import Text

        style = "yellow" if record.get("event") == "warning" and not record.get("benign") else \
            "dim" if record.get("event") in ("warning", "file", "progress") else ""
        self.console.print(Text(f"[{time.monotonic() - self.t0:7.1f}s] {text}", style=style))

    def failure(self, report: dict[str, Any], *, update: bool) -> None:
        from rich.text import Text

        text = render(report, FormatType.TEXT, color=self.color,
                      width=max(min(self.console.width, 160), 60))
        title = "better root cause found" if update else "fatal error found"
        self.console.print(Text(title, style="bold red"))
        self.console.print(Text.from_ansi(text))

    def refresh(self, watch: Watch, now: float) -> None:
        if self.live is None or now - self.last_draw < 0.25:
            return
        self.last_draw = now
        self.live.update(live_table(watch, now), refresh=True)

    def verdict(self, verdict: Verdict) -> None:
        from rich.text import Text

        self.stop()  # the final state is in the verdict; a live region would redraw below it
        style = {int(ExitCode.OK): "bold green", int(ExitCode.FAILED): "bold red"}.get(verdict.code,
                                                                         "bold yellow")
        self.console.print(Text(verdict.text, style=style))
        for line in verdict.details:
            self.console.print(Text("  " + line))

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None


def live_table(watch: Watch, now: float) -> Any:
    """The live display: one row per rank/process, then progress bars and warnings."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    view = watch.view(now)
    phase = watch.job_phase
    elapsed = watch.phase_elapsed(view, phase, now)
    typical = watch.typical.get(phase or "")
    head = Text(f"{watch.name} · ", style="bold")
    head.append(f"{phase or 'waiting for output'}", style="bold cyan")
    if elapsed is not None:
        head.append(f" · {human_duration(elapsed)} so far")
    if typical is not None:
        head.append(f" · usually {human_duration(typical)} here")
    quiet = max(now - watch.last_output, 0.0)
    threshold, _ = watch.stall_threshold(view)
    head.append(f" · quiet {human_duration(quiet)} (stall at {human_duration(threshold)})",
                style="yellow" if quiet > threshold / 2 else "dim")
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for col in ("rank/process", "phase", "in phase", "progress", "rate", "ETA", "last line"):
        table.add_column(col, no_wrap=True, overflow="ellipsis")
    rows = watch.rows(view, now)
    bars = {p.key: p for p in watch.progress.values() if p.key is not None}
    for row in rows[:MAX_ROWS]:
        prog = bars.get(row.key)
        eta = prog.eta(now) if prog else None
        age = human_duration(row.last_age) if row.last_age is not None else "—"
        table.add_row(row.label, row.phase or "—", human_duration(row.phase_seconds),
                      f"{prog.n}/{prog.total}" if prog else "", prog.rate_text() if prog else "",
                      human_duration(eta) if eta is not None else "",
                      Text(f"{age} ago · {show(row.last_text, 80)}"))
    parts: list[Any] = [head, table]
    if len(rows) > MAX_ROWS:
        parts.append(Text(f"… and {len(rows) - MAX_ROWS} more ranks/processes", style="dim"))
    for prog in list(watch.progress.values())[-3:]:
        parts.append(Text(f"progress  {prog.text(now)}", style="cyan"))
    warnings = list(view.warnings.values())[-5:]
    for w in warnings:
        benign = bool(w["benign"] and w["id"])
        parts.append(Text(f"warning L{w['line']} {'benign' if benign else 'check'}: "
                          f"{show(w['text'], 100)}", style="dim" if benign else "yellow"))
    if watch.process is not None:
        parts.append(Text(watch.process.text(), style="dim"))
    if watch.health is not None and watch.health.checks:
        parts.append(Text(f"health {watch.health.text()}", style="dim"))
    return Group(*parts)


def make_output(mode: str, stream: TextIO | None = None) -> Output:
    """`json`, `live` or `plain` output on `stream` (stdout by default)."""
    out = stream or sys.stdout
    if mode == "json":
        return JsonOutput(out)
    if mode == "live":
        return LiveOutput(out, color="NO_COLOR" not in os.environ)
    return PlainOutput(out)


