"""Golden tests: every real case in corpus/ against its hand-curated expectation.

The expectation (`<case>.expected.json`) comes from the corpus labels and is never generated
by a tool. A case loglens cannot handle yet carries `"known_gap": "<reason>"` and is a strict
xfail, so an unexpected pass forces someone to remove the note.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer import api
from tests.conftest import corpus_logs, expected_for

CASES = corpus_logs()


def test_every_log_has_an_expectation() -> None:
    """A log without an expected file is a failure, not a silent skip."""
    missing = [p.name for p in CASES if not (p.parent / (p.stem + ".expected.json")).exists()]
    assert missing == []
    assert len(CASES) >= 50


@pytest.mark.corpus
@pytest.mark.parametrize("log", CASES, ids=[p.stem for p in CASES])
def test_case(log: Path) -> None:
    exp = expected_for(log)
    if not exp.get("known_gap"):
        check(log, exp)
        return
    try:
        check(log, exp)
    except AssertionError:
        pytest.xfail(exp["known_gap"])
    pytest.fail(f"known gap now handled, remove its note: {exp['known_gap']}")


def check(log: Path, exp: dict) -> None:
    """The case's expectation against `explain` on its log (AssertionError where it differs)."""
    report = api.explain([str(log)], excerpts=False)
    outcome = exp["outcome"]
    if outcome in ("crash", "hang"):
        assert report["verdict"] in ("crash", "hang"), report["headline"]
        rc = report["root_cause"]
        assert rc is not None, "no root cause reported"
        match = exp["root_cause"]["match"]
        assert match in rc["text"], f"root cause line {rc['line']}: {rc['text'][:200]!r}"
        if exp["root_cause"].get("rank") is not None:
            assert rc["rank"] == exp["root_cause"]["rank"]
        for symptom in exp.get("symptoms", []):
            assert symptom not in rc["text"] or symptom in match, f"symptom {symptom!r} chosen as cause"
    else:
        assert report["verdict"] == outcome, report["headline"]
        assert report["root_cause"] is None
