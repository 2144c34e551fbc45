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
    if "phase" in case:
        assert (report["last_phase"] or {}).get("phase") == case["phase"]
    texts = [s["text"] for s in report["symptoms"]]
    for symptom in case.get("symptoms", []):
        assert rc is None or symptom not in rc["text"]
        assert any(symptom in t for t in texts), f"{symptom!r} not listed as a symptom"
