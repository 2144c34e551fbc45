"""Signatures new in B, gone in B, or printed a very different number of times.

What is counted, per run: every failure signature the analysis matched (as cause, failure
or symptom), every benign or warning signature with its count, and, for lines no signature
knows, their *template*: the message with numbers, hex ids and addresses masked, so
`rank 3` and `rank 5`, or two timestamps, are the same message.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

FACTOR = 5.0  # a count that changed by this factor ...
MIN_DELTA = 5  # ... and by at least this many, is "changed"
MAX_ITEMS = 40  # per list in the output
TEMPLATE_MAX = 160

_HEX = re.compile(r"0x[0-9a-fA-F]+")
_DIGITS = re.compile(r"\d+")
_SPACES = re.compile(r"\s+")
_HEAD = re.compile(r"^\s*(?:\[[^\]]{0,80}\]\s*|\([^)]{0,80}\)\s*)+")


def template(text: str) -> str:
    """A message with its numbers masked: `[N-N-N N:N:N TPN] CUDA out of memory …`."""
    s = _HEAD.sub("", str(text))  # the timestamp/process bracket: not the message
    s = _HEX.sub("\ue000", s)
    s = _DIGITS.sub("#", s).replace("\ue000", "0x#")
    s = _SPACES.sub(" ", s).strip()
    return s[:TEMPLATE_MAX]


def _add(table: dict[str, dict[str, Any]], key: str, *, sig_id: str | None, kind: str,
         line: Any, text: str, n: int = 1, count_max: bool = False) -> None:
    entry = table.get(key)
    if entry is None:
        table[key] = {"key": key, "id": sig_id, "kind": kind, "count": n,
                      "line": line if isinstance(line, int) else None, "text": text}
        return
    entry["count"] = max(entry["count"], n) if count_max else entry["count"] + n
    rank = ("cause", "failure", "symptom", "warning", "error", "benign")
    if kind in rank and (entry["kind"] not in rank or rank.index(kind) < rank.index(entry["kind"])):
        entry["kind"] = kind
    if not entry["text"] and text:
        entry["text"] = text


def census(report: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Every signature id and error/warning template of one explain report, with counts."""
    table: dict[str, dict[str, Any]] = {}
    texts: dict[int, str] = {}
    for w in report.get("warnings") or []:
        if isinstance(w.get("line"), int):
            texts[w["line"]] = str(w.get("text") or "")
    root = report.get("root_cause") or {}
    if isinstance(root.get("line"), int):
        texts[root["line"]] = str(root.get("text") or "")
    for s in report.get("symptoms") or []:
        if isinstance(s.get("line"), int):
            texts.setdefault(s["line"], str(s.get("text") or ""))
    for s in report.get("signatures") or []:
        if s.get("kind") != "failure" or not s.get("id"):
            continue
        _add(table, str(s["id"]), sig_id=str(s["id"]), kind=str(s.get("role") or "failure"),
             line=s.get("line"), text=texts.get(s.get("line", -1), ""))
    for w in report.get("warnings") or []:
        n = int(w.get("count") or 1)
        if w.get("id"):
            _add(table, str(w["id"]), sig_id=str(w["id"]),
                 kind="benign" if w.get("benign") else "warning", line=w.get("line"),
                 text=str(w.get("text") or ""), n=n, count_max=True)
        else:
            _add(table, template(str(w.get("text") or "")), sig_id=None, kind="warning",
                 line=w.get("line"), text=str(w.get("text") or ""), n=n)
    errors = ([root] if root.get("text") and not root.get("signature") else []) + \
        [s for s in report.get("symptoms") or [] if not s.get("signature")]
    for e in errors:
        if e.get("text"):
            _add(table, template(str(e["text"])), sig_id=None,
                 kind="cause" if e is root else "symptom", line=e.get("line"),
                 text=str(e["text"]))
    return table


def _item(key: str, a: Mapping[str, Any] | None, b: Mapping[str, Any] | None
          ) -> dict[str, Any]:
    pick = b or a or {}
    return {"key": key, "id": pick.get("id"), "kind": pick.get("kind"),
            "a": int(a["count"]) if a else 0, "b": int(b["count"]) if b else 0,
            "line_a": a.get("line") if a else None, "line_b": b.get("line") if b else None,
            "text": pick.get("text") or ""}


_KIND_ORDER = {"cause": 0, "failure": 1, "error": 2, "warning": 3, "symptom": 4, "benign": 5}


def _order(item: Mapping[str, Any]) -> tuple[int, int]:
    line = item.get("line_b") or item.get("line_a") or 0
    return (_KIND_ORDER.get(str(item.get("kind")), 9), int(line))


def diff_signatures(report_a: Mapping[str, Any], report_b: Mapping[str, Any], *,
                    factor: float = FACTOR, min_delta: int = MIN_DELTA
                    ) -> dict[str, list[dict[str, Any]]]:
    """`new` (only in B), `gone` (only in A), `changed` (count by `factor` and `min_delta`);
    causes first, then failures, errors, warnings, symptoms, benign ones."""
    a, b = census(report_a), census(report_b)
    new = [_item(k, None, b[k]) for k in b if k not in a]
    gone = [_item(k, a[k], None) for k in a if k not in b]
    changed = []
    for k in a:
        if k in b:
            na, nb = int(a[k]["count"]), int(b[k]["count"])
            if abs(nb - na) >= min_delta and max(na, nb) >= factor * max(min(na, nb), 1):
                changed.append(_item(k, a[k], b[k]))
    return {"new": sorted(new, key=_order)[:MAX_ITEMS],
            "gone": sorted(gone, key=_order)[:MAX_ITEMS],
            "changed": sorted(changed, key=_order)[:MAX_ITEMS]}


def find_in(report: Mapping[str, Any], sig_id: str | None, text: str | None
            ) -> dict[str, Any] | None:
    """Where `report` printed this signature (or this message's template): line, count."""
    table = census(report)
    hit = table.get(sig_id) if sig_id else None
    if hit is None and text:
        hit = table.get(template(text))
    if hit is None:
        return None
    return {"line": hit["line"], "count": hit["count"], "kind": hit["kind"],
            "text": hit["text"]}
