"""JSON output: the analysis dict verbatim, for scripts and CI.

No reshaping happens here on purpose: the dict *is* the contract (``loglens.explain/1``),
and ``json.loads(render_json(r)) == r`` must hold so tools can rely on it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any


def finite(value: Any) -> Any:
    """`value` with NaN and infinities as the strings "NaN", "Infinity", "-Infinity".

    json.dumps writes them bare, which is not JSON: jq and every strict parser refuse the
    whole document. A log can say `loss nan` or `kwarg=inf`; that must not break the output.
    """
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def dumps(value: Any, **options: Any) -> str:
    """json.dumps that always writes valid JSON (see `finite`)."""
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError:
        return json.dumps(finite(value), allow_nan=False, **options)


def render_json(report: Mapping[str, Any]) -> str:
    """Pretty JSON in the engine's key order; non-ASCII kept readable (tqdm bars, CJK)."""
    data = report if isinstance(report, dict) else dict(report)
    return dumps(data, indent=2, ensure_ascii=False) + "\n"
