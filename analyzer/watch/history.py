"""Phase durations of earlier starts, kept per model and TP size, so watch knows what is slow."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import statistics
from datetime import datetime
from pathlib import Path
from typing import Any

HISTORY_RUNS = 20


def default_history_dir() -> Path:
    """`$XDG_CACHE_HOME/loglens/history`, else `~/.cache/loglens/history`."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "loglens" / "history"


# --------------------------------------------------------------------------- history
class History:
    """Phase durations of earlier starts, per model + TP size, as small JSON files.

    So the next start can say "weight loading usually takes 5m13s here; 3m02s so far". A
    corrupt or unreadable file is ignored (and replaced on the next write): history is a hint,
    never a reason to fail.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _path(self, key: str) -> Path:
        slug = re.sub(r"[^\w.-]+", "_", key).strip("_")[-60:]
        digest = hashlib.sha1(key.encode("utf-8")).hexdigest()[:12]
        return self.directory / f"{slug}-{digest}.json"

    def runs(self, key: str) -> list[dict[str, Any]]:
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        runs = data.get("runs") if isinstance(data, dict) else None
        return [r for r in runs if isinstance(r, dict)] if isinstance(runs, list) else []

    def typical(self, key: str) -> dict[str, float]:
        """Median duration per phase over the remembered runs."""
        seen: dict[str, list[float]] = {}
        for run in self.runs(key):
            phases = run.get("phases")
            if not isinstance(phases, dict):
                continue
            for phase, secs in phases.items():
                if isinstance(secs, int | float) and math.isfinite(secs) and secs >= 0:
                    seen.setdefault(str(phase), []).append(float(secs))
        return {p: statistics.median(v) for p, v in seen.items()}

    def record(self, key: str, phases: dict[str, float], outcome: str) -> None:
        """Append one run; failures to write are ignored (read-only home, full disk)."""
        if not phases:
            return
        runs = self.runs(key)
        runs.append({"finished": datetime.now().isoformat(timespec="seconds"),
                     "outcome": outcome, "phases": {p: round(s, 1) for p, s in phases.items()}})
        data = {"key": key, "runs": runs[-HISTORY_RUNS:]}
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
            os.replace(tmp, path)
        except OSError:
            pass


