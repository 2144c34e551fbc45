"""A regular expression compiled on its first use.

The knowledge holds some 600 patterns; a small log's lines contain the required literals of
only a few dozen of them (`LiteralIndex`), so the rest are never searched. CPython cannot
pickle a compiled pattern, only its source, and re-compiling all of them on every start cost
~40 ms of a small log's ~0.3 s. A `LazyPattern` pickles as its source and compiles when a
line first needs it. Building the knowledge still compiles each one once, so a bad pattern
is reported when the files are read, not in the middle of an analysis.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any


class LazyPattern:
    """The part of `re.Pattern` the knowledge uses, compiled on first use."""

    __slots__ = ("_compiled", "flags", "pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    @classmethod
    def checked(cls, pattern: str, flags: int = 0) -> LazyPattern:
        """Compile now (raising `re.error` for a bad pattern) and keep the compiled form."""
        lazy = cls(pattern, flags)
        lazy._compiled = re.compile(pattern, flags)
        return lazy

    @property
    def compiled(self) -> re.Pattern[str]:
        """The compiled pattern (re's own cache makes equal sources share one)."""
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, self.flags)
        return self._compiled

    def search(self, text: str, pos: int = 0, endpos: int = 2**63 - 1) -> re.Match[str] | None:
        return self.compiled.search(text, pos, endpos)

    def match(self, text: str, pos: int = 0, endpos: int = 2**63 - 1) -> re.Match[str] | None:
        return self.compiled.match(text, pos, endpos)

    def fullmatch(self, text: str, pos: int = 0, endpos: int = 2**63 - 1
                  ) -> re.Match[str] | None:
        return self.compiled.fullmatch(text, pos, endpos)

    def finditer(self, text: str, pos: int = 0, endpos: int = 2**63 - 1
                 ) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(text, pos, endpos)

    def sub(self, repl: str | Callable[[re.Match[str]], str], text: str, count: int = 0) -> str:
        return self.compiled.sub(repl, text, count)

    @property
    def groupindex(self) -> Any:
        return self.compiled.groupindex

    def __getstate__(self) -> tuple[str, int]:
        return self.pattern, self.flags

    def __setstate__(self, state: tuple[str, int]) -> None:
        self.pattern, self.flags = state
        self._compiled = None

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyPattern):
            return (self.pattern, self.flags) == (other.pattern, other.flags)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.pattern, self.flags))

    def __repr__(self) -> str:
        return f"LazyPattern({self.pattern!r})"
