"""Make a signature's advice concrete with the numbers this log printed."""

from __future__ import annotations

from typing import Any

from analyzer.model import bounded_float


def _num(value: Any) -> float | None:
    try:
        return bounded_float(str(value).replace(",", ""))
    except (TypeError, ValueError):
        return None


def concrete(category: str | None, groups: dict[str, str], config: dict[str, Any],
             base: str | None) -> str | None:
    """The remediation text, with values from the log appended where they sharpen it."""
    notes: list[str] = []
    mfs = _num(groups.get("mem_fraction_static") or config.get("mem_fraction_static"))
    util = _num(config.get("gpu_memory_utilization"))
    if category == "kv_cache_insufficient":
        max_len = _num(groups.get("max_model_len"))
        kv_tokens = _num(groups.get("kv_tokens"))
        if max_len and kv_tokens:
            notes.append(f"this log: max_model_len {int(max_len)} > KV capacity {int(kv_tokens)} "
                         f"tokens; use --max-model-len {int(kv_tokens)} or less, or give the KV "
                         "cache more memory")
        if mfs is not None:
            notes.append(f"this log: --mem-fraction-static {mfs:g}; try {min(mfs + 0.1, 0.95):.2f}")
        if util is not None:
            notes.append(f"this log: --gpu-memory-utilization {util:g}; try "
                         f"{min(util + 0.05, 0.98):.2f}")
    elif category == "gpu_oom":
        if mfs is not None:
            notes.append(f"this log: --mem-fraction-static {mfs:g}; try {max(mfs - 0.05, 0.1):.2f} "
                         "to leave room for activations and CUDA graphs")
        if util is not None:
            notes.append(f"this log: --gpu-memory-utilization {util:g}; try "
                         f"{max(util - 0.05, 0.1):.2f}")
    elif category == "config_error":
        heads, tp = _num(groups.get("heads")), _num(groups.get("tp"))
        if heads and tp:
            divisors = [d for d in (1, 2, 4, 8, 16) if heads % d == 0]
            notes.append(f"this log: {int(heads)} heads, TP {int(tp)}; valid TP sizes: "
                         + ", ".join(str(d) for d in divisors))
    if not notes:
        return base
    text = "; ".join(notes)
    return (base.rstrip(".") + ". " if base else "") + text[0].upper() + text[1:] + "."
