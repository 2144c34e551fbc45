"""Causal rules: separate the primary error from the cascade it started.

RULES run in order over the findings; each is a small function with a docstring saying what
it looks at and why. `choose_root` then applies "the first primary error wins" on what is left.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from .findings import Finding

Rule = Callable[[list[Finding]], None]


def resolved_failures(findings: list[Finding]) -> None:
    """Signal: a failure whose `resolved_by` pattern matches a later line (e.g. an IB port that
    goes 'port error' then 'port active'). Why: a recovered fault is not what killed the job.
    Example: mixed-llmd-ib-port-flap-tp-worker-exception."""
    for i, f in enumerate(findings):
        if f.sig is None or not f.sig.resolved_by or f.kind != "failure":
            continue
        try:
            template = f.sig.resolved_by.format(**{k: re.escape(v) for k, v in f.groups.items()})
            pattern = re.compile(template)
        except (KeyError, IndexError, re.error):
            continue
        for later in findings[i + 1:]:
            if pattern.search(later.clean):
                f.resolved = True
                f.reason = f"recovered later (line {later.line})"
                break


def explained_failures(findings: list[Finding]) -> None:
    """Signal: a failure whose signature `explains` another finding's signature or category
    (host OOM explains 'Killed'; an Xid 31 MMU fault explains the illegal memory access).
    Why: the explained one is the visible effect; the explainer is the cause, wherever it is
    printed (kernel logs are often pasted after the application's). Example:
    torch-xid31-mmu-fault-illegal-memory-access."""
    explainers = [f for f in findings if f.kind == "failure" and f.sig and f.sig.explains
                  and not f.resolved]
    for f in findings:
        if f in explainers or f.tier > 2:
            continue
        for ex in explainers:
            if f.sig_id in ex.sig.explains or (f.category and f.category in ex.sig.explains):  # type: ignore[union-attr]
                f.kind, f.tier = "symptom", 3
                f.reason = f"explained by line {ex.line} ({ex.sig_id})"
                break


RULES: tuple[Rule, ...] = (resolved_failures, explained_failures)
SURVIVED_AFTER = 3  # successful serving lines after an error that show the server outlived it


def survived(findings: list[Finding], alive_after: Callable[[int], int],
             ready_after: Callable[[int], bool]) -> list[Finding]:
    """Signal: the server reached ready, or kept serving requests successfully, after an error.
    Why: an error the process outlived (a failed request, a retried download, an optional
    import) did not kill it; it is reported as a non-fatal error, not as the cause.
    Example: a request that raises in the API server while decode batches go on."""
    out = []
    for f in findings:
        if f.tier > 2 or f.resolved:
            continue
        if ready_after(f.line) or alive_after(f.line) >= SURVIVED_AFTER:
            f.kind, f.tier = "nonfatal", 8
            f.reason = "the server kept running after it (ready or serving lines follow)"
            out.append(f)
    return out


def choose_root(findings: Sequence[Finding], *, by_time: bool = False) -> Finding | None:
    """The first primary error (tier 1) wins; a stand-in (tier 2) only when there is none.

    Within one file "first" is the line order (timestamps are too coarse, and many lines have
    none). Across files (one log per rank) it is the time: the earliest timestamped candidate,
    then file and line order.
    """
    for tier in (1, 2):
        cands = [f for f in findings if f.tier == tier and not f.resolved]
        if cands:
            if by_time:
                return min(cands, key=lambda f: (f.timestamp or "9999", f.seq))
            return min(cands, key=lambda f: f.seq)
    return None


def symptom_reason(f: Finding, root: Finding) -> str:
    """Why a finding is listed under the root cause rather than as a cause of its own."""
    if f.reason:
        return f.reason
    if f.sig is not None and f.sig.id == root.sig_id and f.rank != root.rank:
        where = f"rank {f.rank}" if f.rank is not None else "another process"
        return f"the same on {where}: the ranks stopped together"
    if f.sig is not None and f.sig.kind == "symptom":
        return f.sig.summary.split(";")[0].split(". ")[0]
    if f.line > root.line:
        return "later error: a consequence of the root cause"
    return "earlier than the root cause but not a primary error"
