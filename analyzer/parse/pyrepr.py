"""One-line repr dumps: `ServerArgs(...)`, `Namespace(...)`, `{...}` and `WorkNCCL(...)`.

Parsed with grammars/pyrepr.lark and grammars/worknccl.lark; a dump cut by a paste still
yields the fields before the cut. Nothing here raises.
"""

from __future__ import annotations

import ast
import functools
import re
from typing import Any

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import UnexpectedInput

from analyzer.model import bounded_int
from analyzer.parse.rows import (
    Json,
    load_grammar,
)


@functools.cache
def _repr_parser() -> Lark:
    return load_grammar("pyrepr.lark", propagate_positions=True)


@functools.cache
def _worknccl_parser() -> Lark:
    return load_grammar("worknccl.lark")


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
