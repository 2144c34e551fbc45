"""torchelastic's ChildFailedError "Root Cause" summary, folded from grammars/elastic.lark rows."""

from __future__ import annotations

import functools
import re
import signal
from typing import Any

from lark import Lark, Token, Transformer

from analyzer.model import bounded_int
from analyzer.parse.rows import (
    TEXT_ROW,
    Json,
    Row,
    cached_rows,
    clean_lines,
    load_grammar,
    strip_token,
    token_kids,
)


class _ElasticRows(Transformer[Token, Any]):
    """Rows from grammars/elastic.lark."""

    def start(self, rows: list[Row]) -> list[Row]:
        return rows

    def line(self, kids: list[Any]) -> Row:
        if not kids:
            return Row("blank", -1, ())
        kind, data = kids[0]
        return Row(kind, -1, data)

    def border(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "border", ()

    def section_rule(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "rule", ()

    def title(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "title", (strip_token(kids[0]),)

    def failures_head(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "failures_head", ()

    def no_other(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "no_other", ()

    def root_head(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "root_head", ()

    def entry(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "entry", (bounded_int(kids[0]),)

    def rank_field(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        ints = [int(t) for t in kids if isinstance(t, Token) and t.type == "INT"]
        return "field", ("rank", ints[0], ints[1] if len(ints) > 1 else None)

    def exitcode_field(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        k = token_kids(kids)
        pid = k.get("INT")
        return "field", ("exitcode", bounded_int(k["SIGNED_INT"]),
                         bounded_int(pid) if pid else None)

    def text_field(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        k = token_kids(kids)
        return "field", (k["TEXT_KEY"].split(":")[0].strip(), k.get("REST", "").rstrip())

    def text(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "text", ()



@functools.cache
def _elastic_parser() -> Lark:
    return load_grammar("elastic.lark", transformer=_ElasticRows())





def _signal_name(exitcode: int | None) -> str | None:
    """torchelastic reports a death by signal N as exit code -N."""
    if exitcode is None or exitcode >= 0:
        return None
    try:
        return signal.Signals(-exitcode).name
    except ValueError:
        return f"SIG{-exitcode}"


def _failure(index: int) -> Json:
    return {
        "rank": None,
        "local_rank": None,
        "exitcode": None,
        "pid": None,
        "host": None,
        "time": None,
        "signal": None,
        "error_file": None,
        "traceback": None,
        "index": index,
    }


_FB_ENTRY = re.compile(r"\[(\d+)\]:")
_FB_FIELD = re.compile(r"\s+(time|host|rank|exitcode|error_file|traceback|msg)\s*:\s?(.*)")
_FB_INTS = re.compile(r"-?\d+")


def _elastic_fallback_rows(lines: list[str]) -> list[Row]:
    rows: list[Row] = []
    for line in lines:
        s = line.strip()
        if not s:
            rows.append(Row("blank", -1, ()))
        elif len(s) >= 4 and set(s) <= {"=", "*"}:
            rows.append(Row("border", -1, ()))
        elif s.endswith(" FAILED"):
            rows.append(Row("title", -1, (s[: -len(" FAILED")].strip(),)))
        elif s.startswith("Root Cause"):
            rows.append(Row("root_head", -1, ()))
        elif s.endswith("Failures:"):
            rows.append(Row("failures_head", -1, ()))
        elif m := _FB_ENTRY.match(line):
            rows.append(Row("entry", -1, (bounded_int(m[1]),)))
        elif m := _FB_FIELD.match(line):
            key, value = m[1], m[2].rstrip()
            ints: list[int | None] = [bounded_int(x) for x in _FB_INTS.findall(value)]
            ints += [None, None]
            if key in ("rank", "exitcode") and ints[0] is not None:
                rows.append(Row("field", -1, (key, ints[0], ints[1])))
            else:
                rows.append(Row("field", -1, (key, value)))
        else:
            rows.append(TEXT_ROW)
    return rows


def _fold_elastic(lines: list[str], rows: list[Row], parsed_by: str) -> Json:
    binary: str | None = None
    failures: list[Json] = []
    root: Json | None = None
    section = "failures"
    cur: Json | None = None
    tb: list[str] | None = None  # lines of the current failure's traceback field
    closed = False

    def flush() -> None:
        nonlocal tb
        if cur is not None and tb is not None:
            cur["traceback"] = "\n".join(tb).rstrip() or None
        tb = None

    for i, row in enumerate(rows):
        kind, data = row.kind, row.data
        if kind == "field" and cur is not None:
            flush()
            key = data[0]
            if key in ("rank", "exitcode"):
                first, second = data[1], data[2]
                if key == "rank":
                    cur["rank"], cur["local_rank"] = first, second
                else:
                    cur["exitcode"], cur["pid"] = first, second
                    cur["signal"] = _signal_name(first)
            elif key in ("traceback", "msg"):
                tb = [data[1]]
            elif key == "error_file":
                cur["error_file"] = None if data[1] in ("", "<N/A>") else data[1]
            else:
                cur[key] = data[1] or None
        elif kind in ("text", "blank", "field", "title") and tb is not None:
            line = lines[i]
            tb.append(line[2:] if line.startswith("  ") else line.strip())
        else:
            flush()
            if kind == "title" and binary is None:
                binary = data[0]
            elif kind == "failures_head":
                section, cur = "failures", None
            elif kind == "root_head":
                section, cur = "root", None
            elif kind == "entry":
                cur = _failure(i)
                if section == "root" and root is None:
                    root = cur
                else:
                    failures.append(cur)
            elif kind in ("border", "rule", "no_other"):
                cur = None
                if kind == "border" and root is not None:
                    closed = True
    flush()
    return {
        "binary": binary,
        "failures": failures,
        "root_cause": root,
        "truncated": not closed,
        "parsed_by": parsed_by,
    }


def parse_elastic_summary(lines: list[str]) -> Json:
    """torchelastic's "<binary> FAILED" summary: every failure and the root cause.

    `signal` is derived from a negative exit code (-6 -> "SIGABRT"); `traceback` keeps
    a multi-line Python traceback with torchelastic's extra indent removed; `truncated`
    says the closing border after the root cause was not seen.
    """
    clean = clean_lines(lines)
    try:
        return _fold_elastic(clean, cached_rows(_elastic_parser(), clean), "lark")
    except Exception:  # never raise on log input
        try:
            return _fold_elastic(clean, _elastic_fallback_rows(clean), "fallback")
        except Exception:
            return {
                "binary": None,
                "failures": [],
                "root_cause": None,
                "truncated": True,
                "parsed_by": "fallback",
            }


