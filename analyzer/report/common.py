"""Helpers every renderer shares, so all formats shorten, sanitise and label identically.

Log text is hostile input (50 KB lines, control characters, bidirectional overrides,
markup-looking brackets): `clean`/`shorten`/`line_text` neutralise it before any renderer
lays it out. Durations, timestamps and rank/process labels are formatted here once.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Mapping
from typing import Any

# C0 controls (minus TAB/LF), DEL, C1 controls, lone surrogates and Unicode line
# separators. Any of them would break layout: ESC starts terminal sequences, CR rewinds
# the line, U+2028 splits lines for str.splitlines(), a lone surrogate cannot be encoded.
# Bidirectional controls (U+202A-202E, U+2066-2069, LRM/RLM, ALM) reorder what follows them
# on screen: a line can be made to display differently from what it says (CVE-2021-42574,
# "Trojan Source"). They are shown as their code point, never applied.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff"
                      "\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")


def _picture(match: re.Match[str]) -> str:
    """Map a control character to a visible stand-in (U+2400 control pictures)."""
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "\u2421"
    if 0x200E <= code <= 0x2069 or code == 0x061C:
        return f"<U+{code:04X}>"
    return "\ufffd"


def clean(text: object, *, keep_newlines: bool = False) -> str:
    """Make log text safe to lay out: visible stand-ins for controls, no tabs.

    Log lines keep their one-line shape (a newline becomes ``␤``); prose written by the
    knowledge base may keep its newlines.
    """
    s = "" if text is None else str(text)
    if "\t" in s:
        s = s.expandtabs(4)
    if not keep_newlines and "\n" in s:
        s = s.replace("\r\n", "\n").replace("\n", "\u2424")
    return _CONTROL.sub(_picture, s)


def shorten(text: str, limit: int) -> str:
    """Cut `text` to about `limit` characters, keeping its head and its tail.

    A log line's head carries the timestamp and logger, its tail usually the actual error
    (after a long tensor shape or config dump), so the cut goes in the middle and says
    how much was dropped.
    """
    if len(text) <= limit:
        return text
    marker = f" …[{len(text) - limit:,} chars]… "
    keep = max(limit - len(marker), 2)
    head = (keep * 2) // 3
    tail = keep - head
    return text[:head] + marker + text[len(text) - tail :]


def line_text(text: object, limit: int) -> str:
    """A log line ready for display: shortened first (cheap on 100 KB lines), then cleaned."""
    s = "" if text is None else str(text)
    return clean(shorten(s, limit))


def human_duration(seconds: float | None) -> str:
    """Durations as people say them (`4m13s`, `0.8s`), not as float seconds."""
    if seconds is None or not isinstance(seconds, int | float) or not math.isfinite(seconds):
        return "—"
    sign = "-" if seconds < 0 else ""
    s = abs(float(seconds))
    if s == 0:
        return "0s"
    if s < 0.1:
        return f"{sign}{s * 1000:.0f}ms"
    if s < 10:
        return f"{sign}{s:.1f}s"
    total = int(s)
    if total < 60:
        return f"{sign}{total}s"
    if total < 3600:
        minutes, secs = divmod(total, 60)
        return f"{sign}{minutes}m{secs:02d}s"
    if total < 86400:
        hours, rest = divmod(total, 3600)
        return f"{sign}{hours}h{rest // 60:02d}m"
    days, rest = divmod(total, 86400)
    return f"{sign}{days}d{rest // 3600:02d}h"


_TIMESTAMP = re.compile(r"(?P<date>[^T ]{0,16})[T ](?P<time>\d{1,2}:\d{2}(?::\d{2})?)")


def split_timestamp(ts: object) -> tuple[str, str]:
    """Split an ISO 8601 timestamp into (date, HH:MM:SS), dropping fractions and zone.

    Timeline tables only need the clock time; the date is shown once when all phases
    share it. Unparseable values come back whole as the time part.
    """
    if ts is None:
        return "", ""
    s = line_text(ts, 64)
    m = _TIMESTAMP.match(s)
    if m is None:
        return "", s
    return m["date"], m["time"]


def timeline_times(phases: list[Mapping[str, Any]]) -> tuple[str | None, list[str]]:
    """Start column for a timeline: clock times plus the shared date, or full stamps.

    Returns (shared date or None, one start string per phase).
    """
    parts = [split_timestamp(p.get("start")) for p in phases]
    dates = {d for d, t in parts if t}
    if len(dates) == 1:
        (date,) = dates
        if date:
            return date, [t or "—" for _, t in parts]
    return None, [f"{d} {t}".strip() or "—" for d, t in parts]


def who(rank: object, process: object) -> str:
    """Label a rank/process pair for display: `rank 3 (TP3)`, `TP3`, or `—`."""
    label = []
    if isinstance(rank, int) and not isinstance(rank, bool):
        label.append(f"rank {rank}")
    if process:
        proc = clean(shorten(str(process), 40))
        label.append(f"({proc})" if label else proc)
    return " ".join(label) or "—"


def count(value: object) -> int:
    """An integer stat, tolerating None or junk from a partial engine result."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return int(value)
    return 0


def items(report: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    """The list under `key`, keeping only dict entries: renderers must never crash."""
    value = report.get(key)
    if not isinstance(value, list):
        return []
    return [v for v in value if isinstance(v, Mapping)]


def section(report: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    """The optional dict under `key` (root_cause, last_phase, stats), or None."""
    value = report.get(key)
    return value if isinstance(value, Mapping) else None


# server arguments a reader of a post-mortem wants first (HTML and Markdown pages)
IMPORTANT_ARGS = ("model_path", "model", "model_tag", "served_model_name", "tokenizer_path",
                  "dtype", "quantization", "kv_cache_dtype", "tp_size", "tensor_parallel_size",
                  "pp_size", "pipeline_parallel_size", "dp_size", "data_parallel_size",
                  "ep_size", "nnodes", "node_rank", "mem_fraction_static",
                  "gpu_memory_utilization", "max_model_len", "context_length",
                  "max_num_seqs", "max_running_requests", "max_num_batched_tokens",
                  "chunked_prefill_size", "attention_backend", "enforce_eager",
                  "disable_cuda_graph", "cuda_graph_max_bs", "enable_torch_compile",
                  "speculative_algorithm", "speculative_config", "enable_dp_attention",
                  "host", "port")


def lane_label(rank: Any, process: Any) -> str:
    """`TP3`, `rank 3`, `rank 3 (VllmWorker)`, `main`, `(no rank)` for one lane."""
    proc = str(process) if process else ""
    if isinstance(rank, int) and not isinstance(rank, bool):
        if proc and str(rank) in proc:
            return proc
        return f"rank {rank}" + (f" ({proc})" if proc else "")
    return proc or "(no rank)"


_EPOCH = _dt.datetime(1970, 1, 1)
_LAST = (_dt.datetime.max - _EPOCH).total_seconds() - 1  # - 1: float rounding
_FIRST = (_dt.datetime.min - _EPOCH).total_seconds() + 1


def moment(t: float) -> _dt.datetime:
    """Seconds of the log's own clock back to a datetime, clamped to what datetime holds:
    a log dated 9999-12-31 plus a rounded-up axis tick must draw, not overflow."""
    return _EPOCH + _dt.timedelta(seconds=min(max(t, _FIRST), _LAST))

