"""Line grammars: every line of a block becomes one row (the first step of every dump parser).

Pasted logs lose headers, indentation and endings, so a grammar of whole blocks would reject
most real input; a line grammar (grammars/traceback.lark, grammars/elastic.lark) plus a
forgiving fold degrades one line at a time instead. A line the grammar rejects (two writers
interleaved inside it, say) is demoted to a plain text row and the parse resumes on the next
line. If Lark fails outright, a small regex scan stands in (`"parsed_by": "fallback"`).
Rows are cached by line text: the same frame printed by 8 ranks is parsed once.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any, NamedTuple

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedInput

from analyzer.cache import lark_cache
from analyzer.model import bounded_int
from analyzer.parse.grammars import grammar_dir

Json = dict[str, Any]


def load_grammar(name: str, **options: Any) -> Lark:
    """Build one LALR parser; callers cache it, building costs milliseconds."""
    text = (grammar_dir() / name).read_text(encoding="utf-8")
    return Lark(text, parser="lalr", maybe_placeholders=False, cache=lark_cache(name),
                **options)


# ---------------------------------------------------------------------------------------
# Line grammars: rows
# ---------------------------------------------------------------------------------------


class Row(NamedTuple):
    """One input line as the line grammar saw it."""

    kind: str  # the grammar rule that matched; "blank" for an empty line
    margin: int  # column of an ExceptionGroup margin ("|" or "+"), -1 without one
    data: tuple[Any, ...]


TEXT_ROW = Row("text", -1, ())


def strip_token(tok: Any) -> str:
    return str(tok).strip()


def token_kids(kids: list[Any]) -> dict[str, str]:
    """Tokens of one rule by terminal name (each terminal occurs at most once per line)."""
    return {t.type: str(t) for t in kids if isinstance(t, Token)}


class _DumpRows(Transformer[Token, Any]):
    """Rows from grammars/traceback.lark; runs inside the LALR parser (no tree is built)."""

    def start(self, rows: list[Row]) -> list[Row]:
        return rows

    def line(self, kids: list[Any]) -> Row:
        margin, top = -1, False
        if kids and isinstance(kids[0], Token) and kids[0].type == "MARGIN":
            tok = str(kids[0])
            margin = len(tok) - len(tok.lstrip(" "))
            top = tok.strip() == "+"
            kids = kids[1:]
        if not kids:
            return Row("blank", margin, ())
        kind, data = kids[0]
        if kind == "group_header":
            data = (top,)
        return Row(kind, margin, data)

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
        k = token_kids(kids)
        lineno = k["LINENO"]
        return "frame", (
            k["PATH"].strip()[1:-1],
            bounded_int(lineno) if lineno.isdigit() else 0,
            k.get("REST", "").strip(),
            k["FRAME_HEAD"][:1] in (" ", "\t"),
        )

    def repeated(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "repeated", (bounded_int(token_kids(kids)["INT"]),)

    def carets(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "carets", ()

    def exc(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        k = token_kids(kids)
        has_sep = "EXC_SEP" in k
        message = k.get("REST", "").rstrip() if has_sep else None
        return "exc", (k["EXC_TYPE"], has_sep, message)

    def logging_error(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "logging_error", ()

    def call_stack(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "call_stack", ()

    def logged_message(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "logged_message", (token_kids(kids).get("REST", "").rstrip(),)

    def logged_args(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "logged_args", (token_kids(kids).get("REST", "").rstrip(),)

    def group_rule(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        tok = str(kids[0])
        parts = tok.split()
        title = parts[1] if len(parts) >= 3 else None  # "+-+----- 1 -----" / "+------"
        col = tok.find("+")
        if tok.startswith("+-+", col):  # a group's first member: "  +-+---- 1 ----"
            col += 2
        return "group_rule", (col, title)

    def fatal(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "fatal", (token_kids(kids).get("REST", ""),)

    def thread_head(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        k = token_kids(kids)
        return "thread_head", (k["THREAD_ID"].strip(), k["THREAD_KW"].startswith("Current"))

    def stack_head(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "stack_head", ()

    def ext_modules(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "ext_modules", (token_kids(kids).get("REST", "").strip(),)

    def terminate(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        k = token_kids(kids)
        cpp_type = k.get("CPP_TYPE")
        return "terminate", (cpp_type[1:-1] if cpp_type else None,)

    def what(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "what", (token_kids(kids).get("REST", "").rstrip(),)

    def raised_from(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        k = token_kids(kids)
        at = k.get("RAISED_AT")
        return "raised_from", (k["RAISED_FUNC"].strip(), at[4:].strip() if at else None)

    def cpp_frame(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        k = token_kids(kids)
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
        return "bt_head", (bounded_int(token_kids(kids)["INT"]),)

    def bt_frame(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        k = token_kids(kids)
        return "bt_frame", (
            bounded_int(k["BT_NUM"]),
            k["BT_ADDR"].strip(),
            k.get("BT_FUNC", "").strip() or None,
            k.get("BT_LOC", "").strip() or None,
        )

    def caught_signal(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        k = token_kids(kids)
        return "caught_signal", (bounded_int(k["INT"]), k.get("REST", "").strip())

    def source(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "source", ()

    def text(self, kids: list[Any]) -> tuple[str, tuple[Any, ...]]:
        return "text", ()


@functools.cache
def dump_parser() -> Lark:
    return load_grammar("traceback.lark", transformer=_DumpRows())



def clean_lines(lines: Iterable[Any]) -> list[str]:
    """Lines as the grammars need them: str, with no line break inside (index-preserving)."""
    out: list[str] = []
    for line in lines:
        s = line if isinstance(line, str) else str(line)
        if "\n" in s or "\r" in s:
            s = s.replace("\r", " ").replace("\n", " ")
        out.append(s)
    return out


_WINDOW = 2048


def _parse_rows(parser: Lark, lines: list[str]) -> list[Row]:
    """The rows of whole lines; the parser's inline transformer returns them as a list."""
    rows: list[Row] = parser.parse("\n".join(lines) + "\n")  # type: ignore[assignment]
    return rows


# Rows by line text, per grammar. The line grammar is context-free per line (a star of
# lines, each parsed from the same state), so a line's row never depends on its neighbours:
# the same frame printed by 8 ranks, or by 10,000 repeats of one request error, is parsed
# once. Bounded: cleared when full, lines longer than _CACHED_LINE are not kept.
ROW_CACHES: dict[int, dict[str, Row]] = {}
_CACHE_ROWS = 65_536
_CACHED_LINE = 1_024


def cached_rows(parser: Lark, lines: list[str]) -> list[Row]:
    """One row per line, each distinct line parsed once (see `ROW_CACHES`)."""
    cache = ROW_CACHES.setdefault(id(parser), {})
    todo = list(dict.fromkeys(line for line in lines if line not in cache))
    if todo:
        parsed = parse_lines(parser, todo)
        if len(cache) + len(todo) > _CACHE_ROWS:
            cache.clear()
        fresh = dict(zip(todo, parsed, strict=True))
        for line, row in fresh.items():
            if len(line) <= _CACHED_LINE:
                cache[line] = row
        return [cache.get(line) or fresh[line] for line in lines]
    return [cache[line] for line in lines]


def parse_lines(parser: Lark, lines: list[str]) -> list[Row]:
    """One row per line. A line the grammar rejects becomes a text row.

    The grammar is a star of lines, so every prefix of whole lines parses; an error is
    confined to the line it is reported on. Parsing goes in windows that shrink after an
    error, so a block full of damaged lines costs linear time, not quadratic.
    """
    rows: list[Row] = []
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
            rows.append(TEXT_ROW)
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


def fallback_rows(lines: list[str]) -> list[Row]:
    rows: list[Row] = []
    for line in lines:
        s = line.strip()
        if not s:
            rows.append(Row("blank", -1, ()))
        elif s.endswith("Traceback (most recent call last):"):
            rows.append(Row("tb_header", -1, ("",)))
        elif s.startswith("The above exception was the direct cause"):
            rows.append(Row("cause_sep", -1, ()))
        elif s.startswith("During handling of the above exception"):
            rows.append(Row("context_sep", -1, ()))
        elif "Fatal Python error:" in s:
            rows.append(Row("fatal", -1, (s.split("Fatal Python error:", 1)[1],)))
        elif m := _FB_FRAME.match(line):
            rows.append(Row("frame", -1,
                             (m[1], bounded_int(m[2]), m[3].strip(), line[:1] in " \t")))
        elif line[:1] in " \t":
            rows.append(Row("source", -1, ()))
        elif m := _FB_EXC.match(line):
            rows.append(Row("exc", -1, (m[1], bool(m[2]), m[3] if m[2] else None)))
        else:
            rows.append(TEXT_ROW)
    return rows


def dump_rows(lines: list[str]) -> tuple[list[Row], str]:
    """Rows of a crash-dump block, and which parser produced them."""
    try:
        return cached_rows(dump_parser(), lines), "lark"
    except Exception:  # never raise on log input
        return fallback_rows(lines), "fallback"


