"""Required literals of a regular expression, for a fast prefilter.

A line can only match a pattern if it contains one of the pattern's required literals (for
`Watchdog caught (?:collective|op)` that is "Watchdog caught "). A union of such literals is an
Aho-Corasick search in Rust's regex engine: it classifies millions of lines per second, where a
union of the full patterns would crawl. Lines that pass are checked with the real patterns.
"""

from __future__ import annotations

import re
from re import _constants as sre_constants  # Python 3.11+ (requires-python >= 3.11)
from re import _parser as sre_parse
from typing import Any

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
