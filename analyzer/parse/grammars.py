"""Load the Lark grammars and turn them into fast head matchers.

The `.lark` files are the single source of truth for every line format. Running a general
parser over millions of ordinary lines is too slow, so for each start rule we *derive* an
anchored regular expression from the grammar itself (`rule_regex`): it finds the head span in
microseconds, and Lark then parses only that span (cached, heads repeat) into fields.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from lark import Lark, Token, Tree
from lark.exceptions import LarkError

from analyzer.cache import lark_cache

WRAPPER_RULES = ("launcher", "kubectl", "kubectl_prefix", "docker_ts", "journald", "compose",
                 "mpirun", "process", "rank", "role", "pdsh", "quote")
HEAD_RULES = ("bracket_ts", "ray_cpp", "vllm", "nccl", "c10", "glog", "oneccl", "neuron_rt",
              "kernel", "uvicorn", "pylog_basic", "pylog_dash", "pylog_level_logger", "level_tag",
              "rich", "hf_log", "nemo", "tag")
MESSAGE_HEAD_RULES = ("msg_deepspeed", "msg_torch_legacy", "msg_level_site", "uvicorn", "nccl")


def grammar_dir() -> Path:
    """Where the grammars are: inside the installed package, else the source tree."""
    package = Path(__file__).resolve().parents[1]  # analyzer/
    for cand in (package / "grammars", package.parent / "grammars"):
        if cand.is_dir():
            return cand
    raise RuntimeError("grammars/ not found next to the analyzer package")


@cache
def load(name: str, starts: tuple[str, ...]) -> Lark:
    """One LALR parser per grammar file; the contextual lexer keeps terminals apart."""
    cache = lark_cache(f"{name}-{'-'.join(starts)}")
    return Lark.open(
        str(grammar_dir() / f"{name}.lark"),
        parser="lalr",
        lexer="contextual",
        start=list(starts),
        maybe_placeholders=False,
        cache=cache,
        cache_grammar=bool(cache),  # rule_regex reads the rules
    )


def rule_regex(parser: Lark, rule: str) -> str:
    """Translate one rule's EBNF into an equivalent regular expression (no named groups).

    Works for the non-recursive rules used for heads; recursion raises ValueError.
    """
    defs = {d[0]: d[2] for d in parser.grammar.rule_defs}
    terms = {t.name: t.pattern.to_regexp() for t in parser.terminals}
    term_defs = {name: tree for name, (tree, _prio) in parser.grammar.term_defs}

    def terminal(name: str) -> str:
        if name in terms:
            return terms[name]
        if name in term_defs:  # declared but not used by the compiled start rules
            return node(term_defs[name], ())
        raise ValueError(f"unknown terminal {name}")

    def node(tree: Any, stack: tuple[str, ...]) -> str:
        if isinstance(tree, Token):
            if tree.type == "STRING":
                return re.escape(str(tree.value)[1:-1].encode().decode("unicode_escape"))
            if tree.type == "REGEXP":
                body = tree.value[1:tree.value.rindex("/")]
                return f"(?:{body})"
            raise ValueError(f"unsupported token {tree!r}")
        if not isinstance(tree, Tree):
            name = getattr(tree, "name", None)
            if name is None:
                raise ValueError(f"unsupported node {tree!r}")
            if getattr(tree, "is_term", False):
                return f"(?:{terminal(name)})"
            if name in stack:
                raise ValueError(f"recursive rule {name}")
            return f"(?:{node(defs[name], (*stack, name))})"
        kind = tree.data
        if kind == "expansions":
            return "(?:" + "|".join(node(c, stack) for c in tree.children) + ")"
        if kind == "expansion":
            return "".join(node(c, stack) for c in tree.children)
        if kind in ("value", "literal"):
            return node(tree.children[0], stack)
        if kind == "expr":
            inner, op = tree.children[0], tree.children[1]
            quant = {"?": "?", "*": "*", "+": "+"}.get(str(op))
            if quant is None:
                raise ValueError(f"unsupported operator {op}")
            return f"(?:{node(inner, stack)}){quant}"
        raise ValueError(f"unsupported grammar construct {kind}")

    return node(defs[rule], (rule,))


ZERO_DIGITS = str.maketrans("123456789", "000000000")


def _anonymous(name: str) -> bool:
    """Lark's generated (`__ANON`) and filtered (`_X`) terminals carry no field."""
    return name.startswith("__") or (not name.isupper() and name.startswith("_"))


class HeadParser:
    """Find and parse one start rule's head at the start of a string.

    Heads differ mostly in their digits (timestamps, pids, ranks), so Lark parses the head's
    *shape* (digits zeroed, same length) once; the fields of each head are then sliced out of
    the real text at the token positions of that parse. One Lark parse per shape, not per line.
    """

    __slots__ = ("_regex", "_template", "name", "source")

    def __init__(self, parser: Lark, rule: str,
                 transform: Callable[[Tree[Token]], dict[str, Any]] | None = None):
        self.name = rule
        self.source = rule_regex(parser, rule)  # compiled when a line first needs it: framing
        self._regex: re.Pattern[str] | None = None  # finds candidates with one union of all

        @lru_cache(maxsize=4096)
        def template(shape: str) -> tuple[list[tuple[str, int, int]], dict[str, Any], bool] | None:
            try:
                tree = parser.parse(shape, start=rule)
            except LarkError:
                return None
            tokens = [(tok.type, tok.start_pos, tok.end_pos)
                      for tok in tree.scan_values(lambda v: isinstance(v, Token))
                      if tok.start_pos is not None and tok.end_pos is not None
                      and not _anonymous(tok.type)]
            extra: dict[str, Any] = {"_rule": tree.data}
            subs = [str(sub.data) for sub in tree.iter_subtrees() if sub is not tree]
            if subs:
                extra["_sub"] = subs
            repeats = len({name for name, _, _ in tokens}) < len(tokens)
            return tokens, extra, repeats

        self._template = template

    def parse(self, span: str) -> dict[str, Any] | None:
        """The head's fields: terminal name -> text (repeated terminals -> list)."""
        found = self._template(span.translate(ZERO_DIGITS))
        if found is None:
            return None
        tokens, extra, repeats = found
        out: dict[str, Any] = dict(extra)
        if not repeats:
            for name, start, end in tokens:
                out[name] = span[start:end]
            return out
        for name, start, end in tokens:
            value = span[start:end]
            if name in out:
                prev = out[name]
                out[name] = [*prev, value] if isinstance(prev, list) else [prev, value]
            else:
                out[name] = value
        return out

    @property
    def regex(self) -> re.Pattern[str]:
        """The anchored expression derived from the rule."""
        if self._regex is None:
            self._regex = re.compile(self.source)
        return self._regex

    def match(self, text: str) -> tuple[int, dict[str, Any]] | None:
        """(end of the head, fields) when `text` starts with this head."""
        m = self.regex.match(text)
        if m is None:
            return None
        fields = self.parse(m.group(0))
        if fields is None:
            return None
        return m.end(), fields


def tree_fields(tree: Tree[Token]) -> dict[str, Any]:
    """Flatten a head's parse tree: terminal name -> text (repeated terminals -> list)."""
    out: dict[str, Any] = {"_rule": tree.data}
    for tok in tree.scan_values(lambda v: isinstance(v, Token)):
        name = tok.type
        if _anonymous(name):
            continue
        if name in out:
            prev = out[name]
            out[name] = [*prev, str(tok)] if isinstance(prev, list) else [prev, str(tok)]
        else:
            out[name] = str(tok)
    for sub in tree.iter_subtrees():
        if sub is not tree:
            out.setdefault("_sub", []).append(str(sub.data))
    return out


def first_candidate(parsers: tuple[HeadParser, ...]) -> Callable[[str], int]:
    """A function giving the index of the first parser whose regex matches the start of a
    text (len(parsers) when none does), in one regex call instead of one per parser: most
    lines have no wrapper at all, and framing tries a dozen."""
    union = re.compile("|".join(f"(?P<r{i}>{p.source})" for i, p in enumerate(parsers)))
    missing = len(parsers)

    def first(text: str) -> int:
        m = union.match(text)
        if m is None:
            return missing
        name = m.lastgroup
        if name is None or not name.startswith("r"):
            return next(int(k[1:]) for k, v in m.groupdict().items() if v is not None)
        return int(name[1:])

    return first


@cache
def wrapper_parsers() -> tuple[HeadParser, ...]:
    """The outer-prefix matchers, in the order framing tries them."""
    lark = load("wrappers", WRAPPER_RULES)
    return tuple(HeadParser(lark, r, tree_fields) for r in WRAPPER_RULES)


@cache
def head_parsers() -> tuple[HeadParser, ...]:
    """The record-head matchers, in the order framing tries them."""
    lark = load("heads", HEAD_RULES + tuple(r for r in MESSAGE_HEAD_RULES if r not in HEAD_RULES))
    return tuple(HeadParser(lark, r, tree_fields) for r in HEAD_RULES)


@cache
def message_head_parsers() -> tuple[HeadParser, ...]:
    """Heads that follow a bracketed timestamp (DeepSpeed, torch 2.1-2.3, NCCL 2.26+ WARN)."""
    lark = load("heads", HEAD_RULES + tuple(r for r in MESSAGE_HEAD_RULES if r not in HEAD_RULES))
    return tuple(HeadParser(lark, r, tree_fields) for r in MESSAGE_HEAD_RULES)
