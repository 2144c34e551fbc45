"""Each causal rule on a short real-format log (cases in tests/cases/rules.toml)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from analyzer import api

CASES = tomllib.loads((Path(__file__).parent / "cases" / "rules.toml").read_text("utf-8"))["case"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_rule_case(case: dict, tmp_path: Path) -> None:
    log = tmp_path / "case.log"
    log.write_text(case["log"].lstrip("\n"), encoding="utf-8")
    report = api.explain([str(log)], excerpts=False)
    assert report["verdict"] == case["verdict"], report["headline"]
    rc = report["root_cause"]
    if "root" in case:
        assert rc is not None and case["root"] in rc["text"], rc
    elif case["verdict"] in ("healthy", "in_progress"):
        assert rc is None
    if "rank" in case:
        assert rc is not None and rc["rank"] == case["rank"]
    if "category" in case:
        assert rc is not None and rc["category"] == case["category"]
    if "detail" in case:
        assert rc is not None and case["detail"] in (rc.get("detail") or {}).get("text", ""), rc
    if "phase" in case:
        assert (report["last_phase"] or {}).get("phase") == case["phase"]
    texts = [s["text"] for s in report["symptoms"]]
    for symptom in case.get("symptoms", []):
        assert rc is None or symptom not in rc["text"]
        assert any(symptom in t for t in texts), f"{symptom!r} not listed as a symptom"


def test_several_files_are_merged_by_time(tmp_path: Path) -> None:
    """One log per rank: the earliest primary error by time wins, whatever the file order."""
    (tmp_path / "rank0.log").write_text(
        "[2025-05-12 09:14:11 TP0] Init torch distributed begin.\n"
        "[2025-05-12 09:25:02 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/srv/sglang/srt/managers/scheduler.py", line 1, in event_loop_normal\n'
        "    self.run_batch()\n"
        "RuntimeError: Something else failed later\n", encoding="utf-8")
    (tmp_path / "rank1.log").write_text(
        "[2025-05-12 09:14:11 TP1] Init torch distributed begin.\n"
        "[2025-05-12 09:25:00 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/srv/sglang/srt/managers/scheduler.py", line 1, in event_loop_normal\n'
        "    self.run_batch()\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n",
        encoding="utf-8")
    report = api.explain([str(tmp_path)], excerpts=False)
    rc = report["root_cause"]
    assert rc["file"].endswith("rank1.log") and rc["line"] == 5 and rc["rank"] == 1
    assert any(s["file"].endswith("rank0.log") for s in report["symptoms"])
