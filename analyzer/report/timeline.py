"""One job-level timeline from the per-lane phases, shared by the text and Markdown reports.

The JSON keeps a row per (rank/process, phase): the contract, and what a script wants. A person
wants one table: each phase once, from the first lane that entered it to the last that left it,
which ranks went through it, how far its progress bar got, and the phase where the job failed
marked in place, even when that phase printed no marker of its own (the failure *is* the first
thing it printed). Lanes that did not keep up with the rest are named below the table, instead
of eight near-identical per-rank tables. Computed from the report dict only, so every format
that uses it shows the same rows.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from analyzer.report.common import clean, items, section, shorten

MAX_LANE_NOTES = 4


@dataclass
class JobPhase:
    """One phase of the job across all its lanes."""

    phase: str
    start: str | None  # ISO timestamp as the report has it
    seconds: float | None
    open: bool = False  # still running at the end of the log
    lanes: list[str] = field(default_factory=list)  # who went through it ("rank 3", "main")
    progress: str | None = None
    state: str | None = None  # "failed" / "stuck": the job's failure happened in this phase
    where: str | None = None  # who failed ("rank 3"), with `state`


@dataclass
class JobTimeline:
    rows: list[JobPhase]
    notes: list[str]  # lanes that fell behind the others


def epoch(stamp: object) -> float | None:
    """Seconds for an ISO timestamp (naive ones read as UTC), None for anything else."""
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        t = _dt.datetime.fromisoformat(stamp)
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.UTC)
    try:
        return t.timestamp()
    except (OverflowError, OSError, ValueError):
        return None


def lanes_label(lanes: Sequence[str]) -> str:
    """`ranks 0-7, main`: ranks as ranges, then other lanes (at most two, then a count)."""
    ranks = sorted({int(x[5:]) for x in lanes if x.startswith("rank ") and x[5:].isdigit()})
    others = [x for x in lanes if not (x.startswith("rank ") and x[5:].isdigit())]
    parts = []
    if ranks:
        parts.append(f"rank {ranks[0]}" if len(ranks) == 1 else "ranks " + ranges(ranks))
    parts += others[:2]
    if len(others) > 2:
        parts.append(f"+{len(others) - 2} more")
    return ", ".join(parts)


def ranges(numbers: Sequence[int]) -> str:
    """`0-3, 5, 7-8` for a sorted list of ints."""
    parts: list[str] = []
    start = prev = numbers[0]
    for n in [*numbers[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        parts.append(f"{start}" if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ", ".join(parts)


def _lane(row: Mapping[str, Any]) -> str | None:
    """`rank 3`, else the process (`main`, `EngineCore`); None for a row nobody claims."""
    rank, process = row.get("rank"), row.get("process")
    if isinstance(rank, int) and not isinstance(rank, bool):
        return f"rank {rank}"
    return clean(shorten(str(process), 40)) if process else None


def _seconds(row: Mapping[str, Any]) -> float | None:
    value = row.get("seconds")
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None


def _merge(name: str, rows: list[Mapping[str, Any]]) -> JobPhase:
    starts = [(e, r["start"]) for r in rows if (e := epoch(r.get("start"))) is not None]
    ends = [e for r in rows if (e := epoch(r.get("end"))) is not None]
    first = min(starts)[1] if starts else next((r.get("start") for r in rows), None)
    seconds: float | None = None
    if starts and ends and max(ends) >= min(starts)[0]:
        seconds = max(ends) - min(starts)[0]
    elif known := [s for r in rows if (s := _seconds(r)) is not None]:
        seconds = max(known)
    still = any(r.get("end") is None and _seconds(r) is not None for r in rows)
    lanes = list(dict.fromkeys(lane for r in rows if (lane := _lane(r)) is not None))
    progress = next((str(r["progress"]) for r in reversed(rows) if r.get("progress")), None)
    return JobPhase(name, first if isinstance(first, str) else None, seconds, still, lanes,
                    progress)


def _ordered(phases: list[Mapping[str, Any]]) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """Phases grouped by name, earliest start first (first appearance where times are missing)."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for row in phases:
        groups.setdefault(str(row.get("phase") or "?"), []).append(row)
    order = list(groups)
    firsts = {name: min((e for r in rows if (e := epoch(r.get("start"))) is not None),
                        default=None) for name, rows in groups.items()}
    if all(v is not None for v in firsts.values()):
        order.sort(key=lambda name: firsts[name] or 0.0)  # stable: ties keep their order
    return [(name, groups[name]) for name in order]


def job_timeline(report: Mapping[str, Any]) -> JobTimeline:
    """The job's phases, each once, with the failing phase marked (see the module docstring)."""
    phases = items(report, "phases")
    rows = [_merge(name, group) for name, group in _ordered(phases)]
    # A phase with a start but no end (the launcher's `launch`) lasted until the next began.
    for row, nxt in pairwise(rows):
        a, b = epoch(row.start), epoch(nxt.start)
        if row.seconds is None and a is not None and b is not None and b >= a:
            row.seconds = b - a
    _mark_failure(report, rows)
    failed = report.get("verdict") in ("crash", "hang")
    return JobTimeline(rows, _behind(phases, rows) if failed else [])


def _mark_failure(report: Mapping[str, Any], rows: list[JobPhase]) -> None:
    verdict = report.get("verdict")
    if verdict not in ("crash", "hang"):
        return
    root = section(report, "root_cause") or {}
    last = section(report, "last_phase") or {}
    name = root.get("phase") or last.get("phase")
    if not isinstance(name, str) or not name:
        return
    target = next((row for row in rows if row.phase == name), None)
    if target is None:  # the failure is the first thing its phase printed
        stamp = root.get("timestamp")
        progress = last.get("progress")
        target = JobPhase(name, stamp if isinstance(stamp, str) else None, None,
                          progress=str(progress) if progress else None)
        rows.append(target)
    target.state = "stuck" if verdict == "hang" else "failed"
    target.where = _lane(root)


def _behind(phases: list[Mapping[str, Any]], rows: list[JobPhase]) -> list[str]:
    """Ranks whose last phase is earlier than the furthest phase other ranks reached.

    Only where at least two ranks reached it: later phases that rank 0 alone logs (a server's
    warmup and ready) say nothing about the other ranks.
    """
    index = {row.phase: i for i, row in enumerate(rows)}
    last: dict[str, int] = {}
    for row in phases:
        lane = _lane(row)
        if lane is None or not lane.startswith("rank "):
            continue
        i = index.get(str(row.get("phase") or "?"), -1)
        last[lane] = max(last.get(lane, -1), i)
    if len(last) < 2:
        return []
    furthest = max(last.values())
    if sum(1 for i in last.values() if i == furthest) < 2:
        return []
    behind: dict[int, list[str]] = {}
    for lane, i in last.items():
        if 0 <= i < furthest:
            behind.setdefault(i, []).append(lane)
    notes = [f"{lanes_label(lanes)} last seen in {rows[i].phase}"
             for i, lanes in sorted(behind.items())]
    return notes[:MAX_LANE_NOTES]
