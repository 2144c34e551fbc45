"""The job-level timeline that text and Markdown show (analyzer/report/timeline.py)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from analyzer.report import FormatType, render
from analyzer.report.timeline import job_timeline, lanes_label


def row(rank: int | None, phase: str, start: str | None, end: str | None,
        seconds: float | None = None, progress: str | None = None,
        process: str | None = None) -> dict[str, Any]:
    return {"rank": rank, "process": process, "phase": phase, "start": start, "end": end,
            "seconds": seconds, "progress": progress}


def report(phases: list[dict[str, Any]], verdict: str = "crash",
           root: dict[str, Any] | None = None, last: str | None = None) -> dict[str, Any]:
    return {"verdict": verdict, "phases": phases, "root_cause": root,
            "last_phase": {"phase": last, "progress": None} if last else None}


# The shape of the seed TP8 OOM log: eight identical ranks, a rank-less progress bar row of
# the same phase, a launcher row with no end, and a failure in a phase that printed no marker.
SEED = [
    *(r for k in range(8) for r in (
        row(k, "dist_init", "2026-02-22T23:13:52", "2026-02-22T23:13:57", 5.0, process=f"TP{k}"),
        row(k, "weight_load", "2026-02-22T23:14:01", "2026-02-22T23:19:13", 312.0,
            process=f"TP{k}"))),
    row(None, "weight_load", "2026-02-22T23:14:01", "2026-02-22T23:14:01", 0.0,
        "Loading safetensors checkpoint shards: 64/64"),
    row(None, "launch", "2026-02-22T23:13:41", None, process="main"),
]
SEED_ROOT = {"phase": "kv_cache_alloc", "rank": 3, "process": "TP3",
             "timestamp": "2026-02-22T23:19:14"}


def test_each_phase_once_in_time_order_with_the_failing_phase_marked() -> None:
    tl = job_timeline(report(SEED, root=SEED_ROOT, last="kv_cache_alloc"))
    assert [r.phase for r in tl.rows] == ["launch", "dist_init", "weight_load", "kv_cache_alloc"]
    launch, dist, weights, kv = tl.rows
    assert dist.seconds == 5.0 and dist.lanes == weights.lanes
    assert launch.seconds == 11.0  # until dist_init began: no "—" for the launcher
    assert weights.seconds == 312.0 and weights.lanes == [f"rank {k}" for k in range(8)]
    assert weights.progress == "Loading safetensors checkpoint shards: 64/64"  # no 0 s copy
    assert (kv.state, kv.where, kv.start) == ("failed", "rank 3", "2026-02-22T23:19:14")
    assert [r.state for r in tl.rows[:3]] == [None, None, None]
    assert tl.notes == []


def test_text_shows_one_table_not_one_per_rank() -> None:
    text = render(report(SEED, root=SEED_ROOT, last="kv_cache_alloc"), FormatType.TEXT)
    section = text[text.index("Timeline"):]
    assert "ranks 0-7, main" in section.splitlines()[0]
    assert section.count("weight_load") == 1
    assert "✗ failed here (rank 3)" in section


def test_a_hang_is_stuck_and_healthy_marks_nothing() -> None:
    hang = job_timeline(report(SEED, verdict="hang", root={"phase": "weight_load"}))
    assert [(r.phase, r.state) for r in hang.rows if r.state] == [("weight_load", "stuck")]
    healthy = job_timeline(report(SEED, verdict="healthy", last="weight_load"))
    assert all(r.state is None for r in healthy.rows)


def test_ranks_left_behind_are_named_only_for_a_failure() -> None:
    phases = [row(k, "weight_load", "2026-01-01T00:00:00", "2026-01-01T00:01:00", 60.0)
              for k in range(4)]
    phases += [row(k, "cuda_graph_capture", "2026-01-01T00:01:00", None, 5.0) for k in (0, 1, 3)]
    tl = job_timeline(report(phases, root={"phase": "cuda_graph_capture", "rank": 0}))
    assert tl.notes == ["rank 2 last seen in weight_load"]
    assert job_timeline(report(phases, verdict="healthy")).notes == []


def test_a_phase_only_rank_0_logs_does_not_make_the_others_laggards() -> None:
    phases = [row(k, "weight_load", "2026-01-01T00:00:00", "2026-01-01T00:01:00", 60.0)
              for k in range(8)]
    phases.append(row(0, "warmup", "2026-01-01T00:01:00", None, 2.0))
    assert job_timeline(report(phases, root={"phase": "warmup", "rank": 0})).notes == []


def test_lane_labels() -> None:
    assert lanes_label(["rank 0", "rank 1", "rank 2", "rank 5", "main"]) == "ranks 0-2, 5, main"
    assert lanes_label(["rank 4"]) == "rank 4"
    assert lanes_label(["a", "b", "c", "d"]) == "a, b, +2 more"


STAMP = st.one_of(st.none(), st.text(max_size=12),
                  st.datetimes().map(lambda d: d.isoformat()))


@given(st.lists(st.builds(row, st.one_of(st.none(), st.integers(-2, 9)),
                          st.sampled_from(["launch", "weight_load", "serving", ""]), STAMP, STAMP,
                          st.one_of(st.none(), st.floats(allow_nan=True))), max_size=12),
       st.sampled_from(["crash", "hang", "healthy", "in_progress"]))
def test_any_phases_give_a_timeline_without_negative_durations(
        phases: list[dict[str, Any]], verdict: str) -> None:
    tl = job_timeline(report(phases, verdict=verdict, root={"phase": "serving"}))
    assert all(r.seconds is None or r.seconds >= 0 for r in tl.rows)
    assert len({r.phase for r in tl.rows}) == len(tl.rows)
    render(report(phases, verdict=verdict), FormatType.TEXT)
    render(report(phases, verdict=verdict), FormatType.MARKDOWN)
