"""Parsers for the structured multi-line bodies found in crash logs.

The framing stage peels line prefixes and assembles one block; the functions here turn a
block (its prefix-free, ANSI-free lines) into plain dicts:

* `parse_traceback`: Python tracebacks, chains, ExceptionGroups, logging's "Logging error";
* `parse_faulthandler`: "Fatal Python error" thread dumps;
* `parse_cpp_abort`: "terminate called after throwing ..." with c10 "frame #N" lines;
* `parse_native_backtrace`: UCX "==== backtrace (tid: N) ====" dumps;
* `parse_elastic_summary`: torchelastic's ChildFailedError "Root Cause" summary;
* `parse_server_args` / `parse_worknccl`: the one-line repr dumps `ServerArgs(...)`,
  `Namespace(...)`, `{...}` and `WorkNCCL(...) ran for N milliseconds`.

The syntax lives in grammars/*.lark. Crash dumps and elastic summaries use *line*
grammars: every input line becomes one row, and a fold here groups the rows. Pasted logs
lose headers, indentation and endings, so a grammar of whole blocks would reject most real
input; a line grammar plus a forgiving fold degrades one line at a time instead. A line the
grammar rejects (say, two writers interleaved inside it) is demoted to a plain text row and
the parse resumes on the next line.

Nothing here raises. If Lark fails outright, a small regex scan stands in and the result says
`"parsed_by": "fallback"` instead of `"lark"`. Line indexes in results are 0-based indexes
into the list the caller passed.
"""

from __future__ import annotations

import ast
import functools
import re
import signal
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import UnexpectedInput

from analyzer.cache import lark_cache
from analyzer.model import bounded_int
from analyzer.parse.grammars import grammar_dir

Json = dict[str, Any]

__all__ = [
    "grammar_dir",
    "parse_cpp_abort",
    "parse_elastic_summary",
    "parse_faulthandler",
    "parse_native_backtrace",
    "parse_server_args",
    "parse_traceback",
    "parse_worknccl",
]


def _load(name: str, **options: Any) -> Lark:
    """Build one LALR parser; callers cache it, building costs milliseconds."""
    text = (grammar_dir() / name).read_text(encoding="utf-8")
    return Lark(text, parser="lalr", maybe_placeholders=False, cache=lark_cache(name),
                **options)


# ---------------------------------------------------------------------------------------
# Line grammars: rows
# ---------------------------------------------------------------------------------------


class _Row(NamedTuple):
    """One input line as the line grammar saw it."""

    kind: str  # the grammar rule that matched; "blank" for an empty line
    margin: int  # column of an ExceptionGroup margin ("|" or "+"), -1 without one
    data: tuple[Any, ...]


_TEXT_ROW = _Row("text", -1, ())


def _strip(tok: Any) -> str:
    return str(tok).strip()


def _kids(kids: list[Any]) -> dict[str, str]:
    """Tokens of one rule by terminal name (each terminal occurs at most once per line)."""
    return {t.type: str(t) for t in kids if isinstance(t, Token)}


class _DumpRows(Transformer[Token, Any]):
    """Rows from grammars/traceback.lark; runs inside the LALR parser (no tree is built)."""

    def start(self, rows: list[_Row]) -> list[_Row]:
        return rows

    def line(self, kids: list[Any]) -> _Row:
        margin, top = -1, False
        if kids and isinstance(kids[0], Token) and kids[0].type == "MARGIN":
            tok = str(kids[0])
            margin = len(tok) - len(tok.lstrip(" "))
            top = tok.strip() == "+"
            kids = kids[1:]
        if not kids:
            return _Row("blank", margin, ())
        kind, data = kids[0]
        if kind == "group_header":
            data = (top,)
        return _Row(kind, margin, data)

    def tb_header(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        tok = str(kids[0])
        return "tb_header", (tok[: tok.rfind("Traceback (most recent call last):")].strip(),)

    def group_header(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "group_header", (False,)

    def cause_sep(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "cause_sep", ()

    def context_sep(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "context_sep", ()

    def frame(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        k = _kids(kids)
        lineno = k["LINENO"]
        return "frame", (
            k["PATH"].strip()[1:-1],
            bounded_int(lineno) if lineno.isdigit() else 0,
            k.get("REST", "").strip(),
            k["FRAME_HEAD"][:1] in (" ", "\t"),
        )

    def repeated(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "repeated", (bounded_int(_kids(kids)["INT"]),)

    def carets(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "carets", ()

    def exc(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        k = _kids(kids)
        has_sep = "EXC_SEP" in k
        message = k.get("REST", "").rstrip() if has_sep else None
        return "exc", (k["EXC_TYPE"], has_sep, message)

    def logging_error(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "logging_error", ()

    def call_stack(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "call_stack", ()

    def logged_message(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "logged_message", (_kids(kids).get("REST", "").rstrip(),)

    def logged_args(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "logged_args", (_kids(kids).get("REST", "").rstrip(),)

    def group_rule(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        tok = str(kids[0])
        parts = tok.split()
        title = parts[1] if len(parts) >= 3 else None  # "+-+----- 1 -----" / "+------"
        col = tok.find("+")
        if tok.startswith("+-+", col):  # a group's first member: "  +-+---- 1 ----"
            col += 2
        return "group_rule", (col, title)

    def fatal(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "fatal", (_kids(kids).get("REST", ""),)

    def thread_head(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        k = _kids(kids)
        return "thread_head", (k["THREAD_ID"].strip(), k["THREAD_KW"].startswith("Current"))

    def stack_head(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "stack_head", ()

    def ext_modules(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "ext_modules", (_kids(kids).get("REST", "").strip(),)

    def terminate(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        k = _kids(kids)
        cpp_type = k.get("CPP_TYPE")
        return "terminate", (cpp_type[1:-1] if cpp_type else None,)

    def what(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "what", (_kids(kids).get("REST", "").rstrip(),)

    def raised_from(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        k = _kids(kids)
        at = k.get("RAISED_AT")
        return "raised_from", (k["RAISED_FUNC"].strip(), at[4:].strip() if at else None)

    def cpp_frame(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        k = _kids(kids)
        loc = k.get("CPP_LOC", "").strip()[1:-1]  # "0x7f.. in /lib/libc10.so"
        address, _, library = loc.partition(" in ")
        offset = k.get("CPP_OFFSET", "").replace("+", "").strip()
        return "cpp_frame", (
            bounded_int(k["INT"]),
            k.get("CPP_SYMBOL", "").strip() or None,
            offset or None,
            address or None,
            library.strip() or None,
        )

    def bt_head(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "bt_head", (bounded_int(_kids(kids)["INT"]),)

    def bt_frame(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        k = _kids(kids)
        return "bt_frame", (
            bounded_int(k["BT_NUM"]),
            k["BT_ADDR"].strip(),
            k.get("BT_FUNC", "").strip() or None,
            k.get("BT_LOC", "").strip() or None,
        )

    def caught_signal(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        k = _kids(kids)
        return "caught_signal", (bounded_int(k["INT"]), k.get("REST", "").strip())

    def source(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "source", ()

    def text(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "text", ()


class _ElasticRows(Transformer[Token, Any]):
    """Rows from grammars/elastic.lark."""

    def start(self, rows: list[_Row]) -> list[_Row]:
        return rows

    def line(self, kids: list[Any]) -> _Row:
        if not kids:
            return _Row("blank", -1, ())
        kind, data = kids[0]
        return _Row(kind, -1, data)

    def border(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "border", ()

    def section_rule(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "rule", ()

    def title(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "title", (_strip(kids[0]),)

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
        k = _kids(kids)
        pid = k.get("INT")
        return "field", ("exitcode", bounded_int(k["SIGNED_INT"]),
                         bounded_int(pid) if pid else None)

    def text_field(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        k = _kids(kids)
        return "field", (k["TEXT_KEY"].split(":")[0].strip(), k.get("REST", "").rstrip())

    def text(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "text", ()


@functools.cache
def _dump_parser() -> Lark:
    return _load("traceback.lark", transformer=_DumpRows())


@functools.cache
def _elastic_parser() -> Lark:
    return _load("elastic.lark", transformer=_ElasticRows())


def _clean(lines: Iterable[Any]) -> list[str]:
    """Lines as the grammars need them: str, with no line break inside (index-preserving)."""
    out: list[str] = []
    for line in lines:
        s = line if isinstance(line, str) else str(line)
        if "\n" in s or "\r" in s:
            s = s.replace("\r", " ").replace("\n", " ")
        out.append(s)
    return out


_WINDOW = 2048


def _parse_rows(parser: Lark, lines: list[str]) -> list[_Row]:
    """The rows of whole lines; the parser's inline transformer returns them as a list."""
    rows: list[_Row] = parser.parse("\n".join(lines) + "\n")  # type: ignore[assignment]
    return rows


# Rows by line text, per grammar. The line grammar is context-free per line (a star of
# lines, each parsed from the same state), so a line's row never depends on its neighbours:
# the same frame printed by 8 ranks, or by 10,000 repeats of one request error, is parsed
# once. Bounded: cleared when full, lines longer than _CACHED_LINE are not kept.
_ROW_CACHES: dict[int, dict[str, _Row]] = {}
_CACHE_ROWS = 65_536
_CACHED_LINE = 1_024


def _rows(parser: Lark, lines: list[str]) -> list[_Row]:
    """One row per line, each distinct line parsed once (see `_ROW_CACHES`)."""
    cache = _ROW_CACHES.setdefault(id(parser), {})
    todo = list(dict.fromkeys(line for line in lines if line not in cache))
    if todo:
        parsed = _parse_lines(parser, todo)
        if len(cache) + len(todo) > _CACHE_ROWS:
            cache.clear()
        fresh = dict(zip(todo, parsed, strict=True))
        for line, row in fresh.items():
            if len(line) <= _CACHED_LINE:
                cache[line] = row
        return [cache.get(line) or fresh[line] for line in lines]
    return [cache[line] for line in lines]


def _parse_lines(parser: Lark, lines: list[str]) -> list[_Row]:
    """One row per line. A line the grammar rejects becomes a text row.

    The grammar is a star of lines, so every prefix of whole lines parses; an error is
    confined to the line it is reported on. Parsing goes in windows that shrink after an
    error, so a block full of damaged lines costs linear time, not quadratic.
    """
    rows: list[_Row] = []
    start, window, n = 0, _WINDOW, len(lines)
    while start < n:
        chunk = lines[start : start + window]
        try:
            got = _parse_rows(parser, chunk)
        except UnexpectedInput as err:
            bad = getattr(err, "line", -1)
            if not isinstance(bad, int) or not 1 <= bad <= len(chunk):
                raise
            bad -= 1
            if bad:
                rows.extend(_parse_rows(parser, chunk[:bad]))
            rows.append(_TEXT_ROW)
            start += bad + 1
            window = 16
            continue
        rows.extend(got)
        start += len(chunk)
        window = min(window * 4, _WINDOW)
    if len(rows) != n:
        raise RuntimeError("line grammar returned a wrong number of rows")
    return rows


# A deliberately small stand-in for when Lark itself fails: frames, headers, separators
# and exception lines only.
_FB_FRAME = re.compile(r'\s*File "([^"]*)", line (\d+),? in (.*)')
_FB_EXC = re.compile(r"((?:[A-Za-z_]\w*\.)*[A-Z]\w*[a-z]\w*(?:\([\w.]*\))?)(?:(:)\s*(.*))?$")


def _fallback_rows(lines: list[str]) -> list[_Row]:
    rows: list[_Row] = []
    for line in lines:
        s = line.strip()
        if not s:
            rows.append(_Row("blank", -1, ()))
        elif s.endswith("Traceback (most recent call last):"):
            rows.append(_Row("tb_header", -1, ("",)))
        elif s.startswith("The above exception was the direct cause"):
            rows.append(_Row("cause_sep", -1, ()))
        elif s.startswith("During handling of the above exception"):
            rows.append(_Row("context_sep", -1, ()))
        elif "Fatal Python error:" in s:
            rows.append(_Row("fatal", -1, (s.split("Fatal Python error:", 1)[1],)))
        elif m := _FB_FRAME.match(line):
            rows.append(_Row("frame", -1,
                             (m[1], bounded_int(m[2]), m[3].strip(), line[:1] in " \t")))
        elif line[:1] in " \t":
            rows.append(_Row("source", -1, ()))
        elif m := _FB_EXC.match(line):
            rows.append(_Row("exc", -1, (m[1], bool(m[2]), m[3] if m[2] else None)))
        else:
            rows.append(_TEXT_ROW)
    return rows


def _dump_rows(lines: list[str]) -> tuple[list[_Row], str]:
    """Rows of a crash-dump block, and which parser produced them."""
    try:
        return _rows(_dump_parser(), lines), "lark"
    except Exception:  # never raise on log input
        return _fallback_rows(lines), "fallback"


# ---------------------------------------------------------------------------------------
# Python tracebacks
# ---------------------------------------------------------------------------------------

_BARE_SUFFIXES = ("Error", "Exception", "Interrupt", "Exit", "Warning", "Iteration", "Group")

# Row kinds that start some other dump; they end a traceback section.
_FOREIGN_HEADS = frozenset(
    {"fatal", "thread_head", "stack_head", "ext_modules", "terminate", "bt_head"}
)


def _plausible_type(exc_type: str) -> bool:
    """Outside a traceback body (no header or frame above it) a `Name: text` or `Name`
    line is an exception only if the name looks like one (`queue.Empty`,
    `KeyboardInterrupt`), not like "Killed" or a progress bar's "Train: 8%|..."."""
    base = exc_type.split("(", 1)[0]
    return "." in base or base.endswith(_BARE_SUFFIXES)


@dataclass
class _Track:
    """Fold state for one nesting depth (0: top level, 2+: ExceptionGroup members)."""

    target: list[Json]
    depth: int
    cur: Json | None = None
    mode: str = ""  # "", "frames", "message", "swallow", "callstack", "foreign"
    pending: str | None = None  # relation of the next section to the previous one
    last_frame: Json | None = None
    borders: int = 0
    unindented: set[int] = field(default_factory=set)  # frames at column 0 (paste damage)


class _TracebackFold:
    """Groups rows into sections; rules follow CPython's traceback.py output."""

    def __init__(self, lines: list[str], rows: list[_Row]) -> None:
        self.lines = lines
        self.margins = [row.margin for row in rows]
        self.sections: list[Json] = []
        self.groups: list[Json] = []
        self.tracks: dict[int, _Track] = {0: _Track(self.sections, 0)}
        self.group_base: int | None = None
        self.path: list[str] = []
        self.logging_error = False
        self.logged_message: str | None = None
        self.logged_args: str | None = None
        self.call_stack: list[Json] = []

    # -- depth of ExceptionGroup rows ----------------------------------------------------

    def _depth(self, row: _Row) -> int:
        if row.kind == "group_header" and row.data[0]:  # "  + Exception Group Traceback"
            self.group_base = row.margin
            self.path = []
            return 1
        if row.kind == "group_rule":
            col = int(row.data[0])
            if self.group_base is None:
                self.group_base = col - 2
        elif row.margin >= 0:
            col = row.margin
            if self.group_base is None:
                self.group_base = col
        else:
            return 0
        return max(1, (col - self.group_base) // 2 + 1)

    def _track(self, depth: int) -> _Track:
        key = 0 if depth <= 1 else depth
        tr = self.tracks.get(key)
        if tr is None:
            tr = self.tracks[key] = _Track(self.groups, key)
        return tr

    # -- sections ------------------------------------------------------------------------

    def _open(self, tr: _Track, header_index: int | None) -> Json:
        sec: Json = {
            "exc_type": None,
            "message": None,
            "exc_index": None,
            "frames": [],
            "relation": tr.pending,
            "header_index": header_index,
            "_msg": None,
        }
        if tr.depth >= 2:
            sec["depth"] = tr.depth
            sec["path"] = ".".join(self.path[: tr.depth - 1])
        tr.pending = None
        tr.cur = sec
        tr.last_frame = None
        tr.target.append(sec)
        return sec

    def _content(self, i: int) -> str:
        """Line `i` without its ExceptionGroup margin ("    | ")."""
        line, margin = self.lines[i], self.margins[i]
        if margin < 0:
            return line
        line = line[margin + 1 :]
        return line[1:] if line[:1] == " " else line

    def _continue(self, tr: _Track, i: int) -> None:
        if tr.cur is not None and tr.cur["_msg"] is not None:
            tr.cur["_msg"].append(self._content(i).rstrip())

    def _frame(self, tr: _Track, i: int, data: tuple[Any, ...]) -> Json:
        path, lineno, func, indented = data
        frame: Json = {"file": path, "line": lineno, "func": func, "index": i, "source": None}
        if not indented:
            tr.unindented.add(i)
        tr.last_frame = frame
        return frame

    # -- rows ----------------------------------------------------------------------------

    def feed(self, i: int, row: _Row) -> None:
        kind = row.kind
        depth = self._depth(row)
        if kind == "group_rule":
            self._group_rule(depth, row.data[1])
            return
        tr = self._track(depth)
        if tr.mode == "swallow" and self._swallow(tr, i, row):
            return
        if kind in ("tb_header", "group_header"):
            self._open(tr, i)
            tr.mode = "frames"
        elif kind in ("cause_sep", "context_sep"):
            tr.cur = None
            tr.pending = "cause" if kind == "cause_sep" else "context"
            tr.mode = ""
        elif kind == "frame":
            self._on_frame(tr, i, row)
        elif kind == "exc":
            self._on_exc(tr, i, row)
        elif kind == "source":
            self._on_source(tr, i)
        elif kind == "repeated":
            if tr.last_frame is not None and tr.mode in ("frames", "callstack"):
                tr.last_frame["repeated"] = row.data[0]
        elif kind == "blank":
            if tr.mode == "message":
                tr.mode = ""
        elif kind == "logging_error":
            self.logging_error = True
            tr.cur, tr.mode, tr.pending = None, "", None
        elif kind == "call_stack":
            tr.cur, tr.mode, tr.last_frame = None, "callstack", None
        elif kind == "logged_message":
            self.logged_message = row.data[0]
            tr.mode = ""
        elif kind == "logged_args":
            self.logged_args = row.data[0]
            tr.mode = ""
        elif kind in _FOREIGN_HEADS:
            tr.cur, tr.mode = None, "foreign"
        elif kind != "carets":
            self._on_text(tr, i)

    def _group_rule(self, depth: int, title: str | None) -> None:
        parent = self._track(depth - 1)
        if parent.mode in ("message", "swallow"):
            parent.mode = ""
        if title is None:  # "+------------------------------------": the group is closed
            tr = self._track(depth)
            tr.cur, tr.mode = None, ""
            return
        self.path = [*self.path[: max(depth - 2, 0)], title]
        for key in [k for k in self.tracks if k > depth]:
            del self.tracks[key]
        tr = self._track(depth)
        tr.cur, tr.mode, tr.pending, tr.last_frame = None, "", None, None

    def _on_frame(self, tr: _Track, i: int, row: _Row) -> None:
        if tr.mode == "foreign":
            return
        frame = self._frame(tr, i, row.data)
        if tr.mode == "callstack":
            self.call_stack.append(frame)
            return
        if tr.cur is None or tr.cur["exc_index"] is not None:
            self._open(tr, None)
            tr.last_frame = frame
        assert tr.cur is not None
        tr.cur["frames"].append(frame)
        tr.mode = "frames"

    def _on_exc(self, tr: _Track, i: int, row: _Row) -> None:
        if tr.mode == "message":
            self._continue(tr, i)
            return
        exc_type, has_sep, message = row.data
        if tr.mode == "foreign" or (tr.mode != "frames" and not _plausible_type(exc_type)):
            self._on_text(tr, i)
            return
        sec = tr.cur
        if sec is None or sec["exc_index"] is not None:
            sec = self._open(tr, None)
        sec["exc_type"] = exc_type
        sec["exc_index"] = i
        sec["_msg"] = [message] if has_sep else None
        tr.borders = 0
        if not has_sep:
            tr.mode = ""
        elif exc_type.endswith("ChildFailedError"):
            tr.mode = "swallow"  # its message is the elastic summary, frames and all
        else:
            tr.mode = "message"

    def _on_source(self, tr: _Track, i: int) -> None:
        if tr.mode == "message":
            self._continue(tr, i)
        elif tr.mode in ("frames", "callstack"):
            frame = tr.last_frame
            if frame is not None and frame["source"] is None:
                frame["source"] = self._content(i).strip()

    def _on_text(self, tr: _Track, i: int) -> None:
        if tr.mode == "message":
            self._continue(tr, i)
            return
        frame = tr.last_frame
        if (
            tr.mode in ("frames", "callstack")
            and frame is not None
            and frame["source"] is None
            and frame["index"] == i - 1
            and frame["index"] in tr.unindented
        ):
            frame["source"] = self._content(i).strip()  # indentation lost with the frame's

    def _swallow(self, tr: _Track, i: int, row: _Row) -> bool:
        """ChildFailedError's message: the elastic summary up to its closing border."""
        if row.kind == "blank" or row.kind in ("cause_sep", "context_sep"):
            tr.mode = ""
            return row.kind == "blank"
        if row.kind == "tb_header" and not row.data[0] and self.lines[i][:1] == "T":
            tr.mode = ""
            return False
        self._continue(tr, i)
        text = self._content(i).strip()
        if len(text) >= 4 and set(text) <= {"=", "*"}:
            tr.borders += 1
            if tr.borders >= 2:
                tr.mode = ""
        return True

    # -- result --------------------------------------------------------------------------

    def result(self, parsed_by: str) -> Json:
        for sec in (*self.sections, *self.groups):
            msg = sec.pop("_msg")
            if msg is not None:
                sec["message"] = "\n".join(msg).rstrip().lstrip("\n")
        first = next((s for s in self.sections if s["exc_index"] is not None), None)
        last = self.sections[-1] if self.sections else None
        group_first = next((s for s in self.groups if s["exc_index"] is not None), None)
        frame_lists = [s["frames"] for s in (*self.sections, *self.groups)]
        frame_lists.append(self.call_stack)
        return {
            "sections": self.sections,
            "statement_index": first["exc_index"] if first else None,
            "exc_type": first["exc_type"] if first else None,
            "message": first["message"] if first else None,
            "final_exc_type": last["exc_type"] if last else None,
            "final_index": last["exc_index"] if last else None,
            "logging_error": self.logging_error,
            "logged_message": self.logged_message,
            "logged_args": self.logged_args,
            "call_stack": self.call_stack,
            "signal_handler_frames": _signal_handlers(frame_lists),
            "groups": self.groups,
            "group_statement_index": group_first["exc_index"] if group_first else None,
            "parsed_by": parsed_by,
        }


_SIGNAL_WORD = re.compile(
    r"sig(?:nals?|quit|term|int|chld|child|hup|usr[12]|abrt|segv|alrm|pipe|kill|bus|fpe)?"
)


def _is_signal_name(name: str) -> bool:
    """sigquit_handler, _signal_handler, launch_phase_sigquit_handler, handle_sigterm."""
    words = [w for w in name.lower().split("_") if w]
    return any(_SIGNAL_WORD.fullmatch(w) for w in words) and any("handl" in w for w in words)


# A caller line that runs a function it does not name: a generator resumed by next() (torch's
# `_tcp_rendezvous_handler` under `next(rendezvous_iterator)`), a coroutine, a callback.
_INDIRECT_CALL = re.compile(r"\bnext\(|\.send\(|\bawait\b|\byield\b|handler|callback|hook|"
                            r"dispatch|\bfn\(|\bfunc\(")


def _signal_handlers(frame_lists: list[list[Json]]) -> list[str]:
    """Frames that run as signal handlers: named so, or a `*_handler` that the frame
    below did not call (a signal interrupted that line)."""
    found: list[str] = []
    for frames in frame_lists:
        for j, frame in enumerate(frames):
            func = str(frame["func"])
            name = func.rsplit(".", 1)[-1]
            hit = _is_signal_name(name) or name.lower() == "sighandler"
            if not hit and (name == "handler" or name.endswith("_handler")) and j > 0:
                caller_source = str(frames[j - 1].get("source") or "")
                hit = (bool(caller_source) and name not in caller_source
                       and not _INDIRECT_CALL.search(caller_source))
            if hit and func not in found:
                found.append(func)
    return found


def _empty_traceback() -> Json:
    return {
        "sections": [],
        "statement_index": None,
        "exc_type": None,
        "message": None,
        "final_exc_type": None,
        "final_index": None,
        "logging_error": False,
        "logged_message": None,
        "logged_args": None,
        "call_stack": [],
        "signal_handler_frames": [],
        "groups": [],
        "group_statement_index": None,
        "parsed_by": "fallback",
    }


def _fold_traceback(lines: list[str], rows: list[_Row], parsed_by: str) -> Json:
    fold = _TracebackFold(lines, rows)
    for i, row in enumerate(rows):
        fold.feed(i, row)
    return fold.result(parsed_by)


def parse_traceback(lines: list[str]) -> Json:
    """Sections (oldest first), the originating and the final exception of a traceback.

    Handles header-less fragments, frames that lost their indentation, 3.11+ caret
    lines, `raise ... from` / implicit chains, ExceptionGroup trees (members go to
    `groups`, each with `depth` and a `path` like "1.2"), and logging's
    "--- Logging error ---" block (its "Call stack:" frames go to `call_stack`).
    """
    clean = _clean(lines)
    try:
        rows, how = _dump_rows(clean)
        return _fold_traceback(clean, rows, how)
    except Exception:  # never raise on log input
        try:
            return _fold_traceback(clean, _fallback_rows(clean), "fallback")
        except Exception:
            return _empty_traceback()


# ---------------------------------------------------------------------------------------
# faulthandler, C++ terminate, native backtraces
# ---------------------------------------------------------------------------------------


def _fatal_error(text: str) -> str | None:
    """The error named by "Fatal Python error: ...".

    When another writer interleaved with faulthandler, the text can carry its debris:
    'Fatal Python error: "Aborted, line ' (the quote and ", line" of a frame line).
    """
    text = text.strip()
    if text.startswith('"'):
        text = text[1:].split('"', 1)[0].split(",", 1)[0]
    return text.strip() or None


def parse_faulthandler(lines: list[str]) -> Json:
    """The fatal error and each thread's frames (most recent call first) of a dump."""
    clean = _clean(lines)
    error: str | None = None
    error_index: int | None = None
    threads: list[Json] = []
    how = "fallback"
    try:
        rows, how = _dump_rows(clean)
        cur: Json | None = None
        for i, row in enumerate(rows):
            if row.kind == "fatal":
                if error_index is None:
                    error = _fatal_error(str(row.data[0]))
                    error_index = i
            elif row.kind == "thread_head":
                cur = {"id": row.data[0], "current": row.data[1], "frames": [], "index": i}
                threads.append(cur)
            elif row.kind == "stack_head":
                cur = {"id": None, "current": True, "frames": [], "index": i}
                threads.append(cur)
            elif row.kind == "frame":
                if cur is None:  # a fragment that starts inside a thread's stack
                    cur = {"id": None, "current": False, "frames": [], "index": i}
                    threads.append(cur)
                path, lineno, func, _ = row.data
                cur["frames"].append({"file": path, "line": lineno, "func": func, "index": i})
            elif row.kind in ("ext_modules", "tb_header", "terminate", "bt_head"):
                cur = None
    except Exception:  # never raise on log input
        how = "fallback"
    return {"error": error, "error_index": error_index, "threads": threads, "parsed_by": how}


_WHAT_CONTINUES = frozenset({"text", "source", "exc", "carets"})


def parse_cpp_abort(lines: list[str]) -> Json:
    """`terminate called after throwing ...`: the C++ type, what(), and c10 frames.

    `what` keeps the lines that follow "what():" (NCCL appends "Last error:" lines) up
    to "Exception raised from", a frame, or a blank line.
    """
    clean = _clean(lines)
    out: Json = {
        "exc_type": None,
        "terminate_index": None,
        "what": None,
        "what_index": None,
        "raised_from": None,
        "raised_func": None,
        "raised_at": None,
        "raised_index": None,
        "frames": [],
        "parsed_by": "fallback",
    }
    try:
        rows, out["parsed_by"] = _dump_rows(clean)
        what: list[str] | None = None
        for i, row in enumerate(rows):
            kind = row.kind
            if what is not None and kind not in _WHAT_CONTINUES:
                out["what"] = "\n".join(what).rstrip()
                what = None
            if kind == "terminate" and out["terminate_index"] is None:
                out["terminate_index"] = i
                out["exc_type"] = row.data[0]
            elif kind == "what" and out["what_index"] is None:
                out["what_index"] = i
                what = [row.data[0]]
            elif kind == "raised_from" and out["raised_index"] is None:
                func, at = row.data
                out["raised_func"], out["raised_at"], out["raised_index"] = func, at, i
                out["raised_from"] = f"{func} at {at}" if at else func
            elif kind == "cpp_frame":
                no, symbol, offset, address, library = row.data
                out["frames"].append(
                    {
                        "index": i,
                        "frame_no": no,
                        "func": symbol,
                        "offset": offset,
                        "address": address,
                        "library": library,
                    }
                )
            elif what is not None:
                what.append(clean[i].rstrip())
        if what is not None:
            out["what"] = "\n".join(what).rstrip()
    except Exception:  # never raise on log input
        out["parsed_by"] = "fallback"
    return out


# Frames a crash passes through after the fault: the signal delivery and abort path, and
# UCX's own handler. The first frame that is none of these is where the process died.
_SIGNAL_MACHINERY = frozenset(
    {
        "__sigaction",
        "__restore_rt",
        "killpg",
        "kill",
        "raise",
        "abort",
        "gsignal",
        "__GI_raise",
        "__GI_abort",
        "pthread_kill",
        "__pthread_kill",
        "__pthread_kill_implementation",
        "__pthread_kill_internal",
        "__libc_signal_restore_set",
    }
)


def _is_machinery(func: str | None) -> bool:
    if not func:
        return False
    name = func.strip()
    if name.endswith("()"):
        name = name[:-2]
    return name in _SIGNAL_MACHINERY or name.startswith(("ucs_", "ucm_"))


def parse_native_backtrace(lines: list[str]) -> Json:
    """UCX's `==== backtrace (tid: N) ====` frames and the frame where the crash happened.

    Each frame's `index` is its line index; `frame_no` is the number UCX printed.
    `crash_index` is the line index of the first frame that is not signal machinery.
    """
    clean = _clean(lines)
    out: Json = {
        "tid": None,
        "frames": [],
        "crash_index": None,
        "signal": None,
        "signal_text": None,
        "parsed_by": "fallback",
    }
    try:
        rows, out["parsed_by"] = _dump_rows(clean)
        for i, row in enumerate(rows):
            if row.kind == "bt_head" and out["tid"] is None:
                out["tid"] = row.data[0]
            elif row.kind == "caught_signal" and out["signal"] is None:
                out["signal"], out["signal_text"] = row.data[0], row.data[1].strip("() ") or None
            elif row.kind == "bt_frame":
                no, address, func, location = row.data
                out["frames"].append(
                    {
                        "index": i,
                        "frame_no": no,
                        "address": address,
                        "func": func,
                        "location": location,
                    }
                )
        crash = next((f for f in out["frames"] if not _is_machinery(f["func"])), None)
        out["crash_index"] = crash["index"] if crash else None
    except Exception:  # never raise on log input
        out["parsed_by"] = "fallback"
    return out


# ---------------------------------------------------------------------------------------
# torchelastic failure summary
# ---------------------------------------------------------------------------------------


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


def _elastic_fallback_rows(lines: list[str]) -> list[_Row]:
    rows: list[_Row] = []
    for line in lines:
        s = line.strip()
        if not s:
            rows.append(_Row("blank", -1, ()))
        elif len(s) >= 4 and set(s) <= {"=", "*"}:
            rows.append(_Row("border", -1, ()))
        elif s.endswith(" FAILED"):
            rows.append(_Row("title", -1, (s[: -len(" FAILED")].strip(),)))
        elif s.startswith("Root Cause"):
            rows.append(_Row("root_head", -1, ()))
        elif s.endswith("Failures:"):
            rows.append(_Row("failures_head", -1, ()))
        elif m := _FB_ENTRY.match(line):
            rows.append(_Row("entry", -1, (bounded_int(m[1]),)))
        elif m := _FB_FIELD.match(line):
            key, value = m[1], m[2].rstrip()
            ints: list[int | None] = [bounded_int(x) for x in _FB_INTS.findall(value)]
            ints += [None, None]
            if key in ("rank", "exitcode") and ints[0] is not None:
                rows.append(_Row("field", -1, (key, ints[0], ints[1])))
            else:
                rows.append(_Row("field", -1, (key, value)))
        else:
            rows.append(_TEXT_ROW)
    return rows


def _fold_elastic(lines: list[str], rows: list[_Row], parsed_by: str) -> Json:
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
    clean = _clean(lines)
    try:
        return _fold_elastic(clean, _rows(_elastic_parser(), clean), "lark")
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


# ---------------------------------------------------------------------------------------
# One-line repr dumps: ServerArgs(...), Namespace(...), {...}, WorkNCCL(...)
# ---------------------------------------------------------------------------------------


@functools.cache
def _repr_parser() -> Lark:
    return _load("pyrepr.lark", propagate_positions=True)


@functools.cache
def _worknccl_parser() -> Lark:
    return _load("worknccl.lark")


# Lark's names for the anonymous bracket tokens, and the closer each opener needs.
_OPENERS = {"LPAR": ")", "LSQB": "]", "LBRACE": "}"}
_CLOSERS = frozenset({"RPAR", "RSQB", "RBRACE"})


def _parse_cut(parser: Lark, text: str) -> tuple[Tree[Token] | None, bool]:
    """Parse `text`; if it was cut off, parse up to its last complete top-level item.

    Returns the tree (None if nothing complete) and whether the text had to be cut. The
    cut points come from the grammar's own tokens: a top-level comma (close the opener
    there) or the closing bracket of the whole dump (drop trailing junk).
    """
    try:
        return parser.parse(text), False
    except UnexpectedInput:
        pass
    cuts: list[tuple[int, str]] = []
    stack: list[str] = []
    try:
        for tok in parser.parse_interactive(text).iter_parse():
            if tok.type in _OPENERS:
                stack.append(_OPENERS[tok.type])
            elif tok.type in _CLOSERS:
                if stack:
                    stack.pop()
                if not stack and tok.end_pos is not None:
                    cuts.append((tok.end_pos, ""))
            elif tok.type == "COMMA" and len(stack) == 1 and tok.start_pos is not None:
                cuts.append((tok.start_pos, stack[0]))
    except UnexpectedInput:
        pass
    for pos, closer in reversed(cuts[-8:]):
        try:
            return parser.parse(text[:pos] + closer), True
        except UnexpectedInput:
            continue
    return None, True


class _ReprValues(Transformer[Token, Any]):
    """Python values of a repr dump; unknown constructs keep their source text."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self._text = text

    def string(self, kids: list[Any]) -> Any:
        raw = str(kids[0])
        try:
            value = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            return raw
        return value if isinstance(value, str) else raw

    def number(self, kids: list[Any]) -> Any:
        raw = str(kids[0])
        for conv in (lambda s: int(s.replace("_", "")), lambda s: int(s, 0), float):
            try:
                return conv(raw)
            except ValueError:
                continue
        return raw

    def true(self, kids: list[Any]) -> bool:
        return True

    def false(self, kids: list[Any]) -> bool:
        return False

    def none(self, kids: list[Any]) -> None:
        return None

    def ellipsis(self, kids: list[Any]) -> str:
        return "..."

    def opaque(self, kids: list[Any]) -> str:
        return str(kids[0])

    def name(self, kids: list[Any]) -> Any:
        raw = str(kids[0])
        return float(raw) if raw in ("inf", "nan") else raw

    @v_args(meta=True)
    def call(self, meta: Any, kids: list[Any]) -> str:
        return self._text[meta.start_pos : meta.end_pos]

    def kwarg(self, kids: list[Any]) -> tuple[str, Any]:
        return str(kids[0]), kids[1]

    def posarg(self, kids: list[Any]) -> Any:
        return kids[0]

    def list_value(self, kids: list[Any]) -> list[Any]:
        return kids

    def tuple_value(self, kids: list[Any]) -> list[Any]:
        return kids

    def set_value(self, kids: list[Any]) -> list[Any]:
        return kids

    def pair(self, kids: list[Any]) -> tuple[Any, Any]:
        return kids[0], kids[1]

    def dict_value(self, kids: list[Any]) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for key, value in kids:
            try:
                out[key] = value
            except TypeError:  # an unhashable key, e.g. a list
                out[repr(key)] = value
        return out


_REPR_STARTS = ("ServerArgs(", "Namespace(", "{")


def parse_server_args(text: str) -> dict[str, Any]:
    """Values of SGLang's `ServerArgs(...)`, vLLM's `Namespace(...)` or `{...}` dump.

    str/int/float/bool/None/list/dict come back as Python values (tuples and sets as
    lists); other constructs (`<Enum.X: 1>`, `PosixPath('/x')`) as their source text. A
    dump cut off mid-way yields the keys completed before the cut. Never raises.
    """
    try:
        s = str(text).strip()
        if not s.startswith(_REPR_STARTS):
            found = [p for p in (s.find(m) for m in _REPR_STARTS) if p >= 0]
            if found:
                s = s[min(found) :]
        tree, _ = _parse_cut(_repr_parser(), s)
        if tree is None:
            return {}
        values = _ReprValues(s)
        if tree.data == "dict_value":
            return {str(k): v for k, v in values.transform(tree).items()}
        out: dict[str, Any] = {}
        for arg in tree.children[1:]:
            if isinstance(arg, Tree) and arg.data == "kwarg":
                key, value = arg.children
                out[str(key)] = values.transform(value) if isinstance(value, Tree) else value
        return out
    except Exception:  # never raise on log input
        return {}


_WORK_START = re.compile(r"Work[A-Za-z]*\(")
_FB_WORK_FIELD = re.compile(r"([A-Za-z_]\w*(?:\(\w+\))?)=(-?\d+|\w+)")
_FB_RAN = re.compile(r"ran for (\d+) milliseconds")


def parse_worknccl(text: str) -> Json:
    """Fields of `WorkNCCL(SeqNum=.., OpType=.., ..., Timeout(ms)=..) ran for N ms`.

    Ints become int, names str, `TensorShape=[..]` a list; `ran_for_ms` is None when
    the line does not say (or was cut before it). Fields after a cut are missing.
    """
    out: Json = {}
    try:
        s = str(text)
        m = _WORK_START.search(s)
        if m is None:
            return {"ran_for_ms": None, "parsed_by": "fallback"}
        s = s[m.start() :].rstrip()
        tree, _ = _parse_cut(_worknccl_parser(), s)
        if tree is not None:
            ran_for: int | None = None
            for node in tree.iter_subtrees_topdown():  # type: ignore[no-untyped-call]
                if node.data == "field":
                    key, value = node.children
                    out[str(key)] = _work_value(value)
                elif node.data == "ran":
                    ran_for = bounded_int(node.children[0])
            out["ran_for_ms"] = ran_for
            out["parsed_by"] = "lark"
            return out
    except Exception:  # never raise on log input
        pass
    s = str(text)
    for key, value in _FB_WORK_FIELD.findall(s):
        out[key] = bounded_int(value) if value.lstrip("-").isdigit() else value
    ran = _FB_RAN.search(s)
    out["ran_for_ms"] = bounded_int(ran[1]) if ran else None
    out["parsed_by"] = "fallback"
    return out


def _work_value(node: Tree[Token]) -> Any:
    toks = [str(t) for t in node.children]
    if node.data == "int":
        return bounded_int(toks[0])
    if node.data == "ints":
        return [bounded_int(t) for t in toks]
    return toks[0]
