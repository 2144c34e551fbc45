"""How each run ended, and what that says about B's failure: did A print the same error (or
warning) earlier and survive it, and which warning, new in B, came before B's failure (the
lead)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from analyzer.compare import phases, signatures

FAILED = ("crash", "hang")
ROOT_KEYS = ("category", "signature", "phase", "line", "rank", "text", "summary",
             "remediation", "timestamp")


def run_summary(data: Mapping[str, Any]) -> dict[str, Any]:
    """One run: its name, verdict, headline, root cause, the phase it ended in, ready time."""
    report = data.get("report") or {}
    root = report.get("root_cause")
    last = report.get("last_phase") or {}
    return {
        "file": str(data.get("name") or report.get("file") or ""),
        "lines": int(report.get("lines") or 0),
        "verdict": str(report.get("verdict") or "unknown"),
        "headline": str(report.get("headline") or ""),
        "model": (data.get("environment") or {}).get("model"),
        "root_cause": ({k: root.get(k) for k in ROOT_KEYS} if isinstance(root, Mapping)
                       else None),
        "last_phase": last.get("phase"),
        "progress": last.get("progress"),
        "ready": phases.reached_ready(data),
        "ready_after": phases.ready_after(data),
    }


def same_failure(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """Both roots the same signature, or (no signature) the same category and message."""
    if not a or not b:
        return False
    if a.get("signature") or b.get("signature"):
        return bool(a.get("signature") == b.get("signature"))
    return bool(a.get("category") == b.get("category") and
                signatures.template(str(a.get("text") or "")) ==
                signatures.template(str(b.get("text") or "")))


def diff_outcome(a: Mapping[str, Any], b: Mapping[str, Any],
                 sigs: Mapping[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Verdicts and causes side by side; for B's failure, whether A printed it and lived."""
    run_a, run_b = run_summary(a), run_summary(b)
    root_a, root_b = run_a["root_cause"], run_b["root_cause"]
    seen: dict[str, Any] | None = None
    if root_b:
        hit = signatures.find_in(a.get("report") or {}, root_b.get("signature"),
                                 root_b.get("text"))
        if hit is not None:
            survived = run_a["verdict"] not in FAILED or not same_failure(root_a, root_b)
            seen = {**hit, "survived": survived}
    lead = None
    b_line = root_b.get("line") if root_b else None
    for item in sigs.get("new") or []:
        if item.get("kind") != "warning":
            continue
        line = item.get("line_b")
        if b_line is None or (isinstance(line, int) and line < b_line):
            lead = item
            break
    return {"a": run_a, "b": run_b, "verdict_changed": run_a["verdict"] != run_b["verdict"],
            "same_root_cause": same_failure(root_a, root_b), "b_failure_seen_in_a": seen,
            "lead": lead}
