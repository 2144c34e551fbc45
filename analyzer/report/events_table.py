"""Stage 4: events as a polars table with a fixed schema."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import polars as pl

from analyzer.model import Event
from analyzer.report.jsonfmt import dumps

EVENT_SCHEMA: dict[str, Any] = {
    "line_start": pl.Int64,
    "line_end": pl.Int64,
    "line_ranges": pl.Utf8,  # JSON [[first, last], ...] when the block is not contiguous
    "timestamp": pl.Utf8,
    "timestamp_inferred": pl.Boolean,
    "system": pl.Utf8,
    "process": pl.Utf8,
    "rank": pl.Utf8,  # JSON object text: {"tp": 3, ...}
    "level": pl.Utf8,
    "kind": pl.Utf8,
    "message": pl.Utf8,
    "fields": pl.Utf8,  # JSON object text (kind-specific)
    "source": pl.Utf8,
}
CHUNK = 50_000


def _row(ev: Event) -> dict[str, Any]:
    rec = ev.as_record()
    rec["rank"] = json.dumps(rec["rank"], sort_keys=True)
    rec["line_ranges"] = json.dumps(rec["line_ranges"]) if rec["line_ranges"] else None
    rec["fields"] = dumps(rec["fields"], ensure_ascii=False, default=str)
    rec["source"] = ev.source
    return rec


def to_frame(events: Iterable[Event]) -> pl.DataFrame:
    """All events as one DataFrame (for small inputs and tests)."""
    return pl.DataFrame([_row(e) for e in events], schema=EVENT_SCHEMA)


def frames(events: Iterable[Event], size: int = CHUNK) -> Iterator[pl.DataFrame]:
    """Events as DataFrames of at most `size` rows: memory stays flat on big inputs."""
    batch: list[dict[str, Any]] = []
    for ev in events:
        batch.append(_row(ev))
        if len(batch) >= size:
            yield pl.DataFrame(batch, schema=EVENT_SCHEMA)
            batch = []
    if batch:
        yield pl.DataFrame(batch, schema=EVENT_SCHEMA)
