"""Lifecycle phases side by side: when each began (from its run's first timestamp), how long
it took, how far its progress got, and a mark where B is slower or stopped.

Each run's phases are first merged across ranks the way the explain report shows them
(`analyzer.report.timeline.job_timeline`), so a TP8 server has one `weight_load` row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from analyzer.report.timeline import JobPhase, epoch, job_timeline

SLOW_RATIO = 1.5  # B slower than A by this factor ...
SLOW_SECONDS = 30.0  # ... and by at least this much, to be marked
READY_PHASES = ("ready", "serving")
UMBRELLA = ("launch",)
UNTIMED = ("ready", "serving", "shutdown")  # open-ended or a moment: no slower/faster


def _origin(data: Mapping[str, Any], rows: list[JobPhase]) -> float | None:
    """The run's first moment: its first timestamp, else its first phase's start."""
    timeline = data.get("timeline") or {}
    first = timeline.get("first_t")
    starts = [e for r in rows if (e := epoch(r.start)) is not None]
    candidates = [t for t in (first if isinstance(first, int | float) else None,
                              min(starts, default=None)) if t is not None]
    return min(candidates) if candidates else None


def side(row: JobPhase, origin: float | None) -> dict[str, Any]:
    """One run's view of one phase."""
    start = epoch(row.start)
    return {"start": row.start,
            "offset": (start - origin) if start is not None and origin is not None else None,
            "seconds": row.seconds, "open": row.open, "progress": row.progress,
            "state": row.state}


def rows_of(data: Mapping[str, Any]) -> tuple[list[JobPhase], float | None]:
    """The run's job-level phases and its first moment (seconds).

    `launch` ends where the next phase begins: the launcher's own span can last until the
    server is ready (an umbrella over the whole start-up), or only until its first child
    speaks, depending on what it prints; compared as it is, it would differ by minutes
    between two identical runs."""
    report = data.get("report") or {}
    rows = job_timeline(report).rows
    for i, row in enumerate(rows[:-1]):
        start, nxt = epoch(row.start), epoch(rows[i + 1].start)
        if row.phase in UMBRELLA and start is not None and nxt is not None and nxt >= start:
            row.seconds, row.open = nxt - start, False
    return rows, _origin(data, rows)


def ready_after(data: Mapping[str, Any]) -> float | None:
    """Seconds from the run's first line to ready (its serving phase), None if never."""
    rows, origin = rows_of(data)
    for row in rows:
        t = epoch(row.start)
        if row.phase in READY_PHASES and origin is not None and t is not None:
            return max(t - origin, 0.0)
    return None


def reached_ready(data: Mapping[str, Any]) -> bool:
    """Whether the run got to ready (a server) at any point."""
    report = data.get("report") or {}
    last = (report.get("last_phase") or {}).get("phase")
    rows, _ = rows_of(data)
    return last in READY_PHASES or any(r.phase in READY_PHASES for r in rows)


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def mark(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None, *, phase: str = "",
         ratio: float = SLOW_RATIO, min_seconds: float = SLOW_SECONDS) -> str | None:
    """`failed`/`stuck` (B's failure happened here), `not_reached` (A got here, B never did),
    `slower`, `faster`, `new` (only B has it), or None."""
    if b is not None and b.get("state"):
        return str(b["state"])
    if a is not None and b is None:
        return "not_reached"
    if a is None:
        return "new" if b is not None else None
    sa, sb = _number(a.get("seconds")), _number(b.get("seconds")) if b is not None else None
    if sa is not None and sb is not None and phase not in UNTIMED:
        if sb - sa > min_seconds and (sa <= 0 or sb / sa > ratio):
            return "slower"
        if sa - sb > min_seconds and (sb <= 0 or sa / sb > ratio):
            return "faster"
    return None


def diff_phases(a: Mapping[str, Any], b: Mapping[str, Any], *, ratio: float = SLOW_RATIO,
                min_seconds: float = SLOW_SECONDS) -> list[dict[str, Any]]:
    """One row per phase either run went through, in A's order (a phase only B has comes
    after the one it followed in B)."""
    rows_a, origin_a = rows_of(a)
    rows_b, origin_b = rows_of(b)
    by_a = {r.phase: side(r, origin_a) for r in rows_a}
    by_b = {r.phase: side(r, origin_b) for r in rows_b}
    order = list(dict.fromkeys(r.phase for r in rows_a))
    for i, r in enumerate(rows_b):
        if r.phase in order:
            continue
        prev = next((rows_b[j].phase for j in range(i - 1, -1, -1)
                     if rows_b[j].phase in order), None)
        order.insert(order.index(prev) + 1 if prev is not None else 0, r.phase)
    out = []
    for name in order:
        sa, sb = by_a.get(name), by_b.get(name)
        delta = rate = None
        da = _number(sa["seconds"]) if sa else None
        db = _number(sb["seconds"]) if sb else None
        if da is not None and db is not None and name not in UNTIMED and \
                not (sb or {}).get("state"):  # a failed phase's "duration" is no duration
            delta = db - da
            rate = round(db / da, 3) if da > 0 else None
        out.append({"phase": name, "a": sa, "b": sb, "delta": delta, "ratio": rate,
                    "mark": mark(sa, sb, phase=name, ratio=ratio, min_seconds=min_seconds)})
    return out


def never_reached(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Phases A reached and B did not."""
    return [str(r["phase"]) for r in rows if r["mark"] == "not_reached"]


def slowest(rows: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The phase B lost the most time in, among those marked slower."""
    slow = [r for r in rows if r["mark"] == "slower" and r["delta"] is not None]
    return max(slow, key=lambda r: float(r["delta"]), default=None)
