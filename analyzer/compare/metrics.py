"""Metrics both runs print: serving throughput, running/queued requests and KV-cache usage
(the periodic stats lines), GPU memory at each start-up step, and single figures such as
the KV-cache size in tokens. A metric only one run prints is left out: nothing to compare.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping
from typing import Any

TYPICAL = ("gen", "prompt")  # throughput: the median sample says more than the peak
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def _series_values(data: Mapping[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for chart in data.get("metrics") or []:
        metric = str(chart.get("metric") or "")
        for s in chart.get("series") or []:
            label = str(s.get("label") or metric)
            if s.get("who") and label.endswith(f" ({s['who']})"):
                label = label[: -len(f" ({s['who']})")]
            ys = [float(p[1]) for p in s.get("points") or [] if len(p) > 1
                  and isinstance(p[1], int | float)]
            if not ys:
                continue
            value = statistics.median(ys) if metric in TYPICAL else max(ys)
            key = (metric, label)
            prev = out.get(key)
            if prev is None or value > prev["value"]:  # several emitters: the busiest
                out[key] = {"value": value, "unit": str(s.get("unit") or ""),
                            "stat": "median" if metric in TYPICAL else "max",
                            "title": f"{chart.get('title') or metric}: {label}"}
    return out


def _memory_values(data: Mapping[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    out: dict[tuple[str, str], dict[str, Any]] = {}
    memory = data.get("memory") or {}
    for step in memory.get("steps") or []:
        name = str(step.get("step") or "")
        if isinstance(step.get("avail_min"), int | float):
            out[("avail", name)] = {"value": float(step["avail_min"]), "unit": "GB",
                                    "stat": "min", "title": f"free GPU memory at {name}"}
        if isinstance(step.get("usage_max"), int | float):
            out[("usage", name)] = {"value": float(step["usage_max"]), "unit": "GB",
                                    "stat": "max", "title": f"memory used by {name}"}
    for fact in memory.get("facts") or []:
        value = str(fact.get("value") or "")
        hit = _NUMBER.search(value)
        if hit is None:
            continue
        unit = value[hit.end():].strip()
        label = str(fact.get("label") or "")
        number = float(hit.group().replace(",", ""))
        out[("fact", label)] = {"value": number, "unit": unit, "stat": "value",
                                "title": label}
    return out


def diff_metrics(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[dict[str, Any]]:
    """`{"name", "unit", "stat", "a", "b", "ratio"}` for each metric both runs print."""
    rows = []
    for source, pick in (("series", _series_values), ("memory", _memory_values)):
        va, vb = pick(a), pick(b)
        for key in va:
            if key not in vb:
                continue
            x, y = va[key]["value"], vb[key]["value"]
            rows.append({"name": va[key]["title"], "source": source, "unit": va[key]["unit"],
                         "stat": va[key]["stat"], "a": round(x, 4), "b": round(y, 4),
                         "ratio": round(y / x, 3) if x else None})
    return rows


def notable(rows: list[Mapping[str, Any]], factor: float = 1.25) -> list[Mapping[str, Any]]:
    """Metrics that moved by more than `factor` either way."""
    out = []
    for r in rows:
        a, b = float(r["a"]), float(r["b"])
        lo, hi = min(abs(a), abs(b)), max(abs(a), abs(b))
        if hi > 0 and (lo == 0 or hi / lo >= factor):
            out.append(r)
    return out
