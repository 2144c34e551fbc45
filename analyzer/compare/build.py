"""Assemble the `loglens.diff/1` dict from two post-mortems (see `analyzer.compare`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from analyzer.compare import SCHEMA, config, headline, metrics, outcome, phases, signatures


def diff(a: Mapping[str, Any], b: Mapping[str, Any], *,
         ratio: float = phases.SLOW_RATIO, min_seconds: float = phases.SLOW_SECONDS
         ) -> dict[str, Any]:
    """Everything that differs between run A (the baseline) and run B."""
    cfg = config.diff_config(a, b)
    rows = phases.diff_phases(a, b, ratio=ratio, min_seconds=min_seconds)
    sigs = signatures.diff_signatures(a.get("report") or {}, b.get("report") or {})
    end = outcome.diff_outcome(a, b, sigs)
    ranked = headline.ranked(cfg, end["b"].get("root_cause"), headline.focus_phase(end, rows))
    return {
        "schema": SCHEMA,
        "generator": str(b.get("generator") or a.get("generator") or ""),
        "headline": headline.headline(cfg, rows, end, sigs),
        "a": end["a"],
        "b": end["b"],
        "config": cfg,
        "leads": [{"section": c["section"], "key": c["key"], "score": c["score"]}
                  for c in ranked if c["score"] > 0][:5],
        "phases": {"rows": rows, "never_reached": phases.never_reached(rows),
                   "thresholds": {"ratio": ratio, "seconds": min_seconds}},
        "outcome": {k: end[k] for k in ("verdict_changed", "same_root_cause",
                                        "b_failure_seen_in_a", "lead")},
        "signatures": sigs,
        "metrics": metrics.diff_metrics(a, b),
    }
