"""Renderers for `loglens explain`: facts survive every format, hostile text stays inert.

The report dicts are built by hand so these tests pin the renderers alone, not the
analysis engine.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from analyzer import api
from analyzer.errors import UsageError
from analyzer.report import FormatType, render
from analyzer.report.common import human_duration, shorten
from analyzer.report.markdown import LIMIT

OOM_LINE = (
    "[2024-05-01 12:04:13 TP3] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
    "2.50 GiB. GPU 3 has a total capacity of 79.15 GiB of which 1.02 GiB is free."
)


def _stats(events: int = 812, plain: int = 40) -> dict[str, Any]:
    return {
        "events": events,
        "plain_lines": plain,
        "replaced_lines": 0,
        "truncated_lines": 0,
        "sources": ["server.log"],
    }


def crash_report() -> dict[str, Any]:
    """An OOM on rank 3 during KV-cache allocation, then SIGQUIT/logging errors on 8 ranks."""
    symptoms = []
    for rank in range(8):
        symptoms.append(
            {
                "line": 1300 + rank,
                "text": f"[2024-05-01 12:04:14 TP{rank}] Received sigquit from a child process.",
                "rank": rank,
                "reason": "scheduler killed after the OOM on rank 3",
                "signature": "sglang.sigquit",
            }
        )
    symptoms.append(
        {
            "line": 1320,
            "text": "--- Logging error ---",
            "rank": None,
            "reason": "logging from a dying process; harmless",
            "signature": "python.logging_error",
        }
    )
    phases = [
        {
            "rank": r,
            "process": f"TP{r}",
            "phase": phase,
            "start": start,
            "end": end,
            "seconds": secs,
            "progress": prog,
        }
        for r in range(2)
        for phase, start, end, secs, prog in (
            (
                "load_weights",
                "2024-05-01T12:00:00.120",
                "2024-05-01T12:04:13.000",
                252.88,
                "8/8 shards",
            ),
            ("kv_cache_alloc", "2024-05-01T12:04:13.000", None, 0.8, None),
        )
    ]
    return {
        "schema": "loglens.explain/1",
        "file": "runs/llama-70b/server.log",
        "lines": 1342,
        "verdict": "crash",
        "headline": "Crash: CUDA out of memory on rank 3 during kv_cache_alloc",
        "root_cause": {
            "category": "cuda_oom",
            "line": 1297,
            "text": OOM_LINE,
            "rank": 3,
            "timestamp": "2024-05-01T12:04:13.512",
            "summary": "The KV cache did not fit next to the weights on GPU 3.",
            "remediation": "Lower `--mem-fraction-static` (e.g. 0.80) or raise `--tp-size`.",
            "signature": "torch.cuda_oom",
            "process": "TP3",
            "system": "torch",
        },
        "symptoms": symptoms,
        "phases": phases,
        "last_phase": {"phase": "kv_cache_alloc", "progress": None},
        "signatures": [
            {"id": "torch.cuda_oom", "line": 1297, "kind": "failure"},
            {"id": "sglang.sigquit", "line": 1300, "kind": "failure"},
        ],
        "warnings": [
            {
                "line": 12,
                "text": "WARNING: NCCL_P2P_DISABLE is set",
                "id": None,
                "benign": False,
                "count": 8,
            },
        ],
        "excerpts": [
            {
                "title": "Root cause (L1297)",
                "lines": [
                    {"line": 1295, "text": "Traceback (most recent call last):", "mark": False},
                    {"line": 1296, "text": '  File "scheduler.py", line 88', "mark": False},
                    {"line": 1297, "text": OOM_LINE, "mark": True},
                ],
            }
        ],
        "stats": _stats(),
    }


def hang_report() -> dict[str, Any]:
    """A NCCL watchdog timeout: the job stalled in an all-reduce."""
    report = crash_report()
    report.update(
        verdict="hang",
        headline="Hang: NCCL collective timed out on rank 5 after 600s",
        root_cause={
            "category": "nccl_timeout",
            "line": 2210,
            "text": "[Rank 5] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=41, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600012 ms",
            "rank": 5,
            "timestamp": None,
            "summary": "A collective never completed; another rank probably died or stalled.",
            "remediation": None,
            "signature": "nccl.watchdog_timeout",
            "process": None,
            "system": "nccl",
        },
        symptoms=[],
        warnings=[],
        excerpts=[],
    )
    return report


def healthy_report() -> dict[str, Any]:
    """A server that came up and served; two scary-looking but benign warnings."""
    report = crash_report()
    report.update(
        verdict="healthy",
        headline="Healthy: server ready and serving requests",
        root_cause=None,
        symptoms=[],
        last_phase={"phase": "serving", "progress": "1,204 requests"},
        phases=[
            {
                "rank": None,
                "process": None,
                "phase": "serving",
                "start": "2024-05-01T12:05:00",
                "end": None,
                "seconds": 3723.0,
                "progress": "1,204 requests",
            }
        ],
        warnings=[
            {
                "line": 40,
                "text": "WARNING: The following generation flags are not valid: ['temperature']",
                "id": "vllm.generation_flags",
                "benign": True,
                "count": 1,
            },
            {
                "line": 7,
                "text": "UserWarning: TypedStorage is deprecated",
                "id": "torch.typed_storage",
                "benign": True,
                "count": 3,
            },
            {
                "line": 90,
                "text": "WARNING: slow tokenizer",
                "id": None,
                "benign": False,
                "count": 1,
            },
        ],
        excerpts=[],
    )
    return report


def in_progress_report() -> dict[str, Any]:
    """Still loading weights when the log ends, with a tqdm bar as progress."""
    report = healthy_report()
    report.update(
        verdict="in_progress",
        headline="In progress: loading weights (5/8 shards)",
        last_phase={"phase": "load_weights", "progress": "5/8 shards"},
        phases=[
            {
                "rank": 0,
                "process": None,
                "phase": "load_weights",
                "start": "2024-05-01T12:00:00",
                "end": None,
                "seconds": 97.4,
                "progress": "5/8 ███████▏ 62%",
            }
        ],
        warnings=[],
    )
    return report


HOSTILE_MARKUP = "[red]x[/red] ```evil``` <script>alert(1)</script> | a|b ~~~~ @team #12"


def hostile_report() -> dict[str, Any]:
    """Everything a log can throw at a renderer, at volume (a few MB: keep the suite fast).

    ``<&>`` runs grow five-fold when escaped, so they push the Markdown budget hard.
    """
    huge = HOSTILE_MARKUP + " " + "<&>" * 33_000 + " ```\n~~~~~~\t\x1b[31mend"
    report = crash_report()
    report.update(
        headline="Crash: " + HOSTILE_MARKUP,
        file="/tmp/`weird`|name<b>.log",
        root_cause={**crash_report()["root_cause"], "text": huge, "summary": "<b>" + huge},
        symptoms=[
            {
                "line": 5000 + i,
                "text": (huge if i % 1000 == 0 else f"{HOSTILE_MARKUP} symptom {i}"),
                "rank": i % 8,
                "reason": "<img src=x> " + "<&>" * 100 + f" reason {i % 3}",
                "signature": None,
            }
            for i in range(10_000)
        ],
        phases=[
            {
                "rank": i % 8,
                "process": f"P|{i}",
                "phase": huge if i % 100 == 0 else f"phase|{i}<&>" + "<&>" * 30,
                "start": f"2024-05-0{1 + i % 2}T12:00:{i % 60:02d}",
                "end": None,
                "seconds": float(i),
                "progress": "<&>" * 40,
            }
            for i in range(500)
        ],
        warnings=[
            {
                "line": i,
                "text": huge if i % 50 == 0 else HOSTILE_MARKUP,
                "id": "<x>",
                "benign": bool(i % 2),
                "count": i,
            }
            for i in range(200)
        ],
        excerpts=[
            {
                "title": f"<script>excerpt {j}</script>",
                "lines": [
                    {"line": 10_000 + k, "text": huge if k in (0, 7) else "```", "mark": k == 3}
                    for k in range(300)
                ],
            }
            for j in range(30)
        ],
    )
    return report


ALL = [crash_report, hang_report, healthy_report, in_progress_report, hostile_report]


# ------------------------------------------------------------------------- helpers


def _fenced_blocks_balanced(md: str) -> tuple[bool, str]:
    """Walk the document as CommonMark does; return (all fences closed, text outside)."""
    outside: list[str] = []
    fence: str | None = None
    for line in md.split("\n"):
        m = re.match(r" {0,3}(`{3,}|~{3,})", line)
        if fence is None:
            if m:
                fence = m.group(1)
            else:
                outside.append(line)
        elif (
            m
            and m.group(1)[0] == fence[0]
            and len(m.group(1)) >= len(fence)
            and line.strip() == m.group(1)
        ):
            fence = None
    return fence is None, "\n".join(outside)


def _strip_code_spans(text: str) -> str:
    """Drop inline code spans (backtick runs of equal length), as CommonMark would."""
    return re.sub(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", "", text)


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("make", ALL)
def test_json_round_trips(make: Any) -> None:
    report = make()
    out = render(report, FormatType.JSON)
    assert out.endswith("\n")
    assert json.loads(out) == report
    assert list(json.loads(out)) == list(report)  # engine key order kept


@pytest.mark.parametrize("fmt", list(FormatType))
@pytest.mark.parametrize("make", [crash_report, hang_report])
def test_root_cause_in_every_format(make: Any, fmt: FormatType) -> None:
    report = make()
    root = report["root_cause"]
    out = render(report, fmt, width=200)
    assert str(root["line"]) in out
    # The message itself, not just the line number: the tail that names the error.
    assert root["text"][-60:] in out.replace("\n", " ") or root["text"][-40:] in out


def test_text_crash_sections() -> None:
    out = render(crash_report(), "text", width=100)
    assert "Crash: CUDA out of memory on rank 3 during kv_cache_alloc" in out
    assert "L1297" in out
    assert "cuda_oom" in out and "rank 3" in out
    assert "--mem-fraction-static" in out  # remediation
    assert "L1300 [rank 0] [2024-05-01 12:04:14 TP0] Received sigquit" in out  # cascade
    assert "— scheduler" in out and "killed after the OOM on rank 3" in out
    assert "4m12s" in out and "0.8s+" in out  # durations, open phase marked
    assert "8/8 shards" in out
    assert "1,342 lines" in out and "812 events" in out and "40 plain lines" in out
    assert "\x1b" not in out


def test_text_width_80_and_no_markup_for_all() -> None:
    for make in ALL:
        out = render(make(), FormatType.TEXT, width=80)
        too_wide = [line for line in out.splitlines() if len(line) > 80]
        assert not too_wide, (make.__name__, too_wide[:3])
        assert "\x1b" not in out
    hostile = render(hostile_report(), FormatType.TEXT, width=80)
    assert "[red]x[/red]" in hostile
    assert "<script>" in hostile  # shown literally: a terminal is not a browser
    assert "… and 9,975 more" in hostile
    assert len(hostile) < 60_000  # 100 KB lines are shortened, not folded
    assert "\t" not in hostile


def test_text_colour_is_opt_in() -> None:
    plain = render(crash_report(), "text")
    coloured = render(crash_report(), "text", color=True)
    assert "\x1b[" not in plain
    assert "\x1b[" in coloured and "\x1b[1;31m" in coloured  # bold red crash headline
    assert "\x1b[1;32m" in render(healthy_report(), "text", color=True)  # healthy green
    assert "\x1b[1;33m" in render(in_progress_report(), "text", color=True)


def test_text_healthy_and_in_progress_say_no_failure() -> None:
    healthy = render(healthy_report(), "text")
    assert "No failure found." in healthy
    assert "reached" in healthy and "serving (1,204 requests)" in healthy
    assert "1h02m+" in healthy
    # Non-benign warning before the benign ones, which are labelled as such.
    assert healthy.index("slow tokenizer") < healthy.index("TypedStorage")
    assert re.search(r"L7 +×3 +benign +UserWarning: TypedStorage", healthy)

    running = render(in_progress_report(), "text")
    assert "No failure found so far" in running
    assert "load_weights (5/8 shards)" in running
    assert "███████▏" in running


def test_markdown_crash_layout() -> None:
    md = render(crash_report(), FormatType.MARKDOWN)
    assert md.startswith("### Crash: CUDA out of memory on rank 3 during kv\\_cache\\_alloc\n")
    assert f"~~~~text\n{OOM_LINE}\n~~~~" in md
    assert "**Root cause** (line 1297, rank 3" in md
    assert "- **Remediation:** Lower `--mem-fraction-static`" in md
    assert "#### Timeline (2024-05-01, ranks 0-1)" in md  # one job table, not one per rank
    assert "| phase | start | duration | progress |" in md
    assert "| load\\_weights | 12:00:00 | 4m12s | 8/8 shards |" in md
    assert "| **kv\\_cache\\_alloc** | 12:04:13 | 0.8s+ | **✗ failed here (rank 3)** |" in md
    assert "- L1300 · rank 0 · `[2024-05-01 12:04:14 TP0] Received sigquit" in md
    assert "<details><summary>Root cause (L1297)</summary>" in md
    assert f"> 1297  {OOM_LINE}" in md  # line-numbered, marked
    summary_end = md.index("#### Timeline")
    assert md.index("Remediation") < summary_end < md.index("#### Cascade")
    assert md.index("#### Cascade") < md.index("<details>")


def test_markdown_healthy_and_in_progress() -> None:
    healthy = render(healthy_report(), "markdown")
    assert "**No failure found.** Reached phase `serving` (1,204 requests)." in healthy
    assert healthy.index("slow tokenizer") < healthy.index("**benign**")
    running = render(in_progress_report(), "markdown")
    assert "No failure found so far" in running and "`load_weights` (5/8 shards)" in running


def test_markdown_hostile_is_bounded_and_inert() -> None:
    md = render(hostile_report(), FormatType.MARKDOWN)
    assert len(md) < LIMIT
    balanced, outside = _fenced_blocks_balanced(md)
    assert balanced
    prose = _strip_code_spans(outside)
    assert "<script" not in prose and "<img" not in prose and "<b>" not in prose
    assert "&lt;script&gt;" in prose  # the excerpt titles, escaped
    # Every table row keeps exactly five columns despite `|` in the log text.
    rows = [line for line in outside.split("\n") if line.startswith("| ")]
    assert rows and all(len(re.findall(r"(?<!\\)\|", row)) == 6 for row in rows)
    assert "more symptoms not shown" in md
    assert "not shown" in md.split("<details><summary>&lt;script&gt;excerpt 0")[1]
    assert "\x1b" not in md and "\t" not in md


INFLATED = "<&>" * 40_000  # one shared object: 10,000 copies would cost gigabytes


def _inflated(value: Any) -> Any:
    """Every string replaced by 120 KB of `<&>`: the worst case for escaping and caps."""
    numeric = {"line", "rank", "count", "seconds", "mark", "benign", "events", "plain_lines"}
    if isinstance(value, dict):
        return {k: (v if k in numeric else _inflated(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_inflated(v) for v in value]
    return INFLATED if isinstance(value, str) else value


def test_worst_case_inflation_stays_bounded() -> None:
    report = _inflated(hostile_report())
    md = render(report, FormatType.MARKDOWN)
    assert len(md) < LIMIT
    balanced, outside = _fenced_blocks_balanced(md)
    assert balanced and "<&>" not in _strip_code_spans(outside)
    text = render(report, FormatType.TEXT, width=80)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert len(text) < 100_000


def test_markdown_fence_outruns_log_fences() -> None:
    report = crash_report()
    report["root_cause"]["text"] = "~~~~~~~~ ``` not a fence"
    md = render(report, "markdown")
    assert "~~~~~~~~~text\n~~~~~~~~ ``` not a fence\n~~~~~~~~~\n" in md
    assert _fenced_blocks_balanced(md)[0]


def test_unknown_format_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown output format"):
        render(crash_report(), "html")


def test_helpers() -> None:
    assert human_duration(253.0) == "4m13s"
    assert human_duration(0.8) == "0.8s"
    assert human_duration(42.9) == "42s"
    assert human_duration(3723) == "1h02m"
    assert human_duration(None) == "—"
    assert human_duration(0.004) == "4ms"
    cut = shorten("H" * 1000 + "TAIL", 300)
    assert len(cut) <= 300 and cut.startswith("HHH") and cut.endswith("TAIL")
    assert "chars]" in cut
    assert shorten("short", 300) == "short"


def test_last_phase_progress_belongs_to_that_phase(tmp_path: Path) -> None:
    """A healthy server's last phase is serving: weight loading's "5/5" is not its progress."""

    log = tmp_path / "s.log"
    log.write_text(
        "[2025-05-12 09:14:03 TP0] Load weight begin. avail mem=78.00 GB\n"
        "Loading safetensors checkpoint shards: 100% Completed | 5/5 [00:03<00:00,  1.52it/s]\n"
        "[2025-05-12 09:14:09 TP0] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16\n"
        "[2025-05-12 09:15:40] The server is fired up and ready to roll!\n"
        "[2025-05-12 09:15:41 TP0] Decode batch. #running-req: 1, #token: 40, token usage: 0.00, "
        "cuda graph: True, gen throughput (token/s): 80.00, #queue-req: 0\n", encoding="utf-8")
    report = api.explain([str(log)])
    assert report["verdict"] == "healthy"
    assert report["last_phase"]["phase"] == "serving"
    assert report["last_phase"]["progress"] is None
