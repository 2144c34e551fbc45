"""Progress bars as watch follows them: tqdm's counts, rate and ETA from a bar's fields."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from analyzer.analysis.phases import Key
from analyzer.model import SourceLine, bounded_float
from analyzer.parse.blocks import line_event
from analyzer.parse.framing import Framer
from analyzer.report.common import human_duration

DURATION = re.compile(r"^(?:(\d+):)?(\d+):(\d+)$")
BAR_DETAIL = re.compile(r"\s*\([^)]*\)")  # "Capturing batches (bs=384 avail_mem=12.71 GB)"


def _tqdm_seconds(text: str | None) -> float | None:
    """tqdm's `MM:SS` / `H:MM:SS`; None for `?` or `??:??`."""
    if not text:
        return None
    m = DURATION.match(text.strip())
    if not m:
        return None
    h, mi, s = int(m.group(1) or 0), int(m.group(2)), int(m.group(3))
    return float(h * 3600 + mi * 60 + s)


def _tqdm_rate(text: str | None) -> float | None:
    """Items per second from `4.90s/it` or `2.77it/s`; None when tqdm does not know yet."""
    if not text:
        return None
    m = re.match(r"\s*([\d.]+)\s*(s/it|it/s)", text)
    if not m:
        return None
    try:
        value = bounded_float(m.group(1))
    except ValueError:
        return None
    if value <= 0:
        return None
    return value if m.group(2) == "it/s" else 1.0 / value


# --------------------------------------------------------------------------- progress
@dataclass
class Progress:
    """One progress bar (checkpoint shards, CUDA graph batches) as last seen."""

    desc: str
    n: int
    total: int
    seen: float  # monotonic time of the update
    rate: float | None = None  # items per second (tqdm's own, which is in log time)
    remaining: float | None = None  # seconds left at `seen`
    key: Key | None = None
    phase: str | None = None

    @property
    def percent(self) -> int:
        return int(100 * self.n / self.total) if self.total else 0

    def eta(self, now: float) -> float | None:
        """Seconds left now: tqdm's estimate at the update, minus the time since."""
        if self.n >= self.total:
            return 0.0
        left = self.remaining
        if left is None and self.rate:
            left = (self.total - self.n) / self.rate
        return None if left is None else max(left - (now - self.seen), 0.0)

    def rate_text(self) -> str:
        if not self.rate:
            return "—"
        return f"{self.rate:.2f} it/s" if self.rate >= 1 else f"{1 / self.rate:.2f} s/it"

    def as_record(self, now: float) -> dict[str, Any]:
        eta = self.eta(now)
        return {"desc": self.desc, "n": self.n, "total": self.total, "percent": self.percent,
                "items_per_second": self.rate,
                "eta_seconds": None if eta is None else round(eta, 1), "phase": self.phase}

    def text(self, now: float) -> str:
        eta = self.eta(now)
        parts = [f"{self.desc or 'progress'} {self.n}/{self.total} ({self.percent}%)"]
        if self.rate:
            parts.append(self.rate_text())
        if eta is not None and self.n < self.total:
            parts.append(f"ETA {human_duration(eta)}")
        return " · ".join(parts)


def _count(value: Any) -> int:
    """A tqdm count the parser left as int (or, defensively, as text)."""
    if isinstance(value, int):
        return value
    try:
        return int(bounded_float(str(value)))
    except ValueError:
        return 0


def progress_from_fields(fields: dict[str, Any], seen: float) -> Progress:
    """A Progress from the fields `blocks.line_event` parsed out of a tqdm line."""
    elapsed = _tqdm_seconds(fields.get("elapsed"))
    n, total = _count(fields.get("n", 0)), _count(fields.get("total", 0))
    rate = _tqdm_rate(fields.get("rate"))
    if rate is None and elapsed and n:
        rate = n / elapsed
    remaining = _tqdm_seconds(fields.get("remaining"))
    desc = BAR_DETAIL.sub("", str(fields.get("desc") or "")).rstrip(":").strip()
    return Progress(desc=desc, n=n, total=total, seen=seen, rate=rate, remaining=remaining)


def progress_from_text(text: str, seen: float) -> Progress | None:
    """The newest progress state in an unterminated line (a tqdm bar still being redrawn).

    Parsed by the same framing + event code as complete lines (a throwaway framer, so the
    real one's state is untouched)."""
    ev = line_event(Framer().frame(SourceLine(0, text, "-")))
    if ev.kind != "progress" or "n" not in ev.fields:
        return None
    return progress_from_fields(ev.fields, seen)


