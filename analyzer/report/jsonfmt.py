"""JSON output: the analysis dict verbatim, for scripts and CI.

No reshaping happens here on purpose: the dict *is* the contract (``loglens.explain/1``),
and ``json.loads(render_json(r)) == r`` must hold so tools can rely on it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def render_json(report: Mapping[str, Any]) -> str:
    """Pretty JSON in the engine's key order; non-ASCII kept readable (tqdm bars, CJK)."""
    data = report if isinstance(report, dict) else dict(report)
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
