"""Required literals of a regular expression, for a fast prefilter.

A line can only match a pattern if it contains one of the pattern's required literals (for
`Watchdog caught (?:collective|op)` that is "Watchdog caught "). A union of such literals is an
Aho-Corasick search in Rust's regex engine: it classifies millions of lines per second, where a
union of the full patterns would crawl. Lines that pass are checked with the real patterns.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from re import _constants as sre_constants  # Python 3.11+ (requires-python >= 3.11)
from re import _parser as sre_parse
from typing import Any, Generic, TypeVar

T = TypeVar("T")

MIN_LITERAL = 3

LITERAL = sre_constants.LITERAL
SUBPATTERN = sre_constants.SUBPATTERN
BRANCH = sre_constants.BRANCH
MAX_REPEAT = sre_constants.MAX_REPEAT
MIN_REPEAT = sre_constants.MIN_REPEAT
AT = sre_constants.AT


def required_literals(pattern: str) -> list[str] | None:
    """Literals one of which every match of `pattern` contains; None when there is none."""
    try:
        tree = sre_parse.parse(pattern)
    except re.error:
        return None
    if tree.state.flags & re.IGNORECASE:
        return None
    return _sequence(list(tree))


def _sequence(items: list[tuple[Any, Any]]) -> list[str] | None:
    candidates: list[list[str]] = []
    run: list[str] = []

    def flush() -> None:
        if len(run) >= MIN_LITERAL:
            candidates.append(["".join(run)])
        run.clear()

    for op, av in items:
        if op is LITERAL:
            run.append(chr(av))
            continue
        if op is AT:  # anchors take no characters: a run continues across them
            continue
        flush()
        sub: list[str] | None = None
        if op is SUBPATTERN:
            flags_on = av[1] if len(av) > 1 else 0
            if flags_on & re.IGNORECASE:
                continue
            sub = _sequence(list(av[-1]))
        elif op is BRANCH:
            alts = [_sequence(list(branch)) for branch in av[1]]
            if all(a is not None for a in alts):
                sub = [lit for a in alts for lit in (a or [])]
        elif op in (MAX_REPEAT, MIN_REPEAT):
            low, _high, inner = av
            if low >= 1:
                sub = _sequence(list(inner))
        if sub:
            candidates.append(sub)
    flush()
    if not candidates:
        return None
    # the alternative set whose shortest literal is longest filters best
    return max(candidates, key=lambda lits: (min(len(x) for x in lits), -len(lits)))


def contained(literals: Sequence[str]) -> dict[str, list[str]]:
    """For each literal, the literals inside it (itself included), sorted.

    By substring lookup over the lengths that occur, not by testing every pair: a --rules
    directory of 5,000 signatures made the pairwise test 25M comparisons (~5 s per run)."""
    known = set(literals)
    lengths = sorted({len(lit) for lit in known})
    out: dict[str, list[str]] = {}
    for lit in known:
        found = set()
        for size in lengths:
            if size > len(lit):
                break
            for i in range(len(lit) - size + 1):
                part = lit[i:i + size]
                if part in known:
                    found.add(part)
        out[lit] = sorted(found)
    return out


class LiteralScanner:
    """Which of many literals a text contains, in one scan of a trie-shaped regex (at each
    position the longest literal that starts there; the literals inside it follow from a
    table) instead of one substring test per literal. The last answer is kept: signatures and
    phase markers ask about the same line one after the other."""

    def __init__(self, literals: Sequence[str]) -> None:
        lits = sorted(set(literals))
        self.literals = lits
        self._inside = contained(lits)
        self._scan = re.compile(_trie(lits), re.DOTALL) if lits else None
        self._last: tuple[str, set[str]] = ("", set())
        self._primed: dict[str, set[str]] = {}

    def prime(self, found: dict[str, set[str]]) -> None:
        """Answers computed elsewhere (the fast path's vectorised stage, for the lines it
        selected): `found` on these texts then costs a dict lookup. Replaces the last set."""
        self._primed = found

    def found(self, text: str) -> set[str]:
        """The literals that occur in `text`."""
        if text is self._last[0] or text == self._last[0]:
            return self._last[1]
        primed = self._primed.get(text)
        if primed is not None:
            return primed
        hit: set[str] = set()
        if self._scan is not None:
            search = self._scan.search
            m = search(text)
            while m is not None:  # from the next position, not the match's end: overlaps count
                hit.update(self._inside[m.group()])
                m = search(text, m.start() + 1)
        self._last = (text, hit)
        return hit


class LiteralIndex(Generic[T]):
    """Entries by the literals a text must contain for them to match.

    The order of `candidates` is that of `pairs`, so callers that break ties by order are
    unaffected by how the literals were found.
    """

    def __init__(self, pairs: Sequence[tuple[str, list[T]]], always: Sequence[T],
                 scanner: LiteralScanner | None = None) -> None:
        self.pairs = list(pairs)
        self.always = list(always)
        self._pos = {lit: i for i, (lit, _) in enumerate(self.pairs)}
        self.scanner = scanner or LiteralScanner(list(self._pos))

    def candidates(self, text: str) -> list[T]:
        """Entries that may match `text`: the always-searched ones, then by literal order."""
        found = list(self.always)
        pos = self._pos
        for i in sorted(pos[lit] for lit in self.scanner.found(text) if lit in pos):
            for e in self.pairs[i][1]:
                if e not in found:
                    found.append(e)
        return found


def _trie(literals: Sequence[str]) -> str:
    """A regex matching the longest of `literals` that starts at a position."""
    root: dict[str, Any] = {}
    for lit in literals:
        node = root
        for ch in lit:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        branches = [re.escape(ch) + emit(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"
        return f"(?:{body})?" if "" in node else body

    return emit(root)
