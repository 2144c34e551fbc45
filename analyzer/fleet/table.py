"""The fleet table as a polars DataFrame, and the summary of it: counts by verdict, category
and signature, each with an example path (what a fleet question starts from)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import polars as pl

from analyzer.fleet.row import COLUMNS

DTYPES: dict[str, Any] = {"str": pl.Utf8, "int": pl.Int64, "float": pl.Float64}
SCHEMA = {name: DTYPES[kind] for name, kind in COLUMNS.items()}


def typed(row: dict[str, Any]) -> dict[str, Any]:
    """A row read back from CSV has strings (empty: missing): typed as the schema says."""
    out: dict[str, Any] = {}
    for name, kind in COLUMNS.items():
        v = row.get(name)
        if v == "" or v is None:
            out[name] = None
        elif kind == "int" and not isinstance(v, int):
            out[name] = int(float(v))
        elif kind == "float" and not isinstance(v, float):
            out[name] = float(v)
        elif kind == "str" and not isinstance(v, str):
            out[name] = str(v)
        else:
            out[name] = v
    return out


def frame(rows: Iterable[dict[str, Any]]) -> pl.DataFrame:
    """The rows as a DataFrame with the fixed column order and types."""
    return pl.DataFrame([typed(r) for r in rows], schema=SCHEMA, orient="row")


def summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """{total, errors, verdicts, categories, signatures}: each count list is
    [{value, count, example}] by count, the example the first path (in path order)."""
    ordered = sorted(rows, key=lambda r: str(r.get("path")))

    def counts(col: str, where: Any = None) -> list[dict[str, Any]]:
        c: Counter[str] = Counter()
        example: dict[str, str] = {}
        for r in ordered:
            v = r.get(col)
            if v is None or (where is not None and not where(r)):
                continue
            c[str(v)] += 1
            example.setdefault(str(v), str(r.get("path")))
        return [{"value": v, "count": n, "example": example[v]}
                for v, n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))]

    failed = {"crash", "hang"}
    return {
        "total": len(rows),
        "errors": sum(1 for r in rows if r.get("error")),
        "bytes": sum(int(r.get("size") or 0) for r in rows),
        "verdicts": counts("verdict"),
        "categories": counts("category", lambda r: r.get("verdict") in failed),
        "signatures": counts("signature", lambda r: r.get("verdict") in failed),
        "error_examples": [{"path": r["path"], "error": r["error"]}
                           for r in ordered if r.get("error")][:5],
    }
