"""Skip ordinary lines in bulk, so a multi-GB log costs little more than reading it.

Most lines of a day of serving are decode-batch, access and NCCL INFO lines that can change
nothing but a counter. Each chunk of lines goes through two vectorised regular expressions
(polars, i.e. Rust's regex engine): lines that may matter — one of the required literals of
any signature or phase marker, an error-ish word, a block start or an indented continuation —
take the full path (framing, blocks, analysis); frequent serving lines are summarised (one in
SERVING_STRIDE takes the full path, the last few count as "alive" evidence); everything else
is only counted. `tests/test_fastpath.py` checks that the
answers are the same as with every line on the full path.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence

import polars as pl

from .literals import required_literals
from .model import SourceLine
from .signatures import NAMED_GROUP, Knowledge

CHUNK = 65_536
SAMPLED_EDGES = ("serving", "in")  # markers that only extend a phase: a sample is enough
SERVING_STRIDE = 4096  # one serving line in this many takes the full path (phase spans' ends)

# Lines worth a full look whatever the knowledge files say: error-ish words (any case), block
# starts and continuations (indented lines), progress bars, configuration dumps, failed requests.
ALWAYS = (
    r"(?i:error|exception|warn|fail|fatal|abort|killed|kill |timeout|timed out|segfault|"
    r"refused|denied|unable|cannot|could not|traceback|panic|sigquit|sigterm|signal|oom|"
    r"out of memory|died|dead|hang|stuck|terminate|crash|core dump|interrupt|exit)",
    r"^\s|File \"|Traceback \(|^\S+ +\|\s*$",
    r"^(?:Thread|Current thread) 0x|^=+|^\S+ FAILED|^(?:Call stack|Message|Arguments):",
    r"%\||% Completed|it/s\]|s/it\]",
    r"server_args=|args: Namespace\(|non-default args:|with config:",
    r"HTTP/[\d.]+\" [45]\d\d",
    r"NVRM|Xid|oom-kill|\bnccl\b|NCCL WARN",
)


def _strip(pattern: str) -> str:
    return NAMED_GROUP.sub("(?:", pattern)


_CACHE: dict[int, tuple[Knowledge, tuple[str, list[str], list[str]]]] = {}


def _patterns(knowledge: Knowledge) -> tuple[str, list[str], list[str]]:
    sampled: set[str] = set()
    serving: set[str] = set()
    for m in knowledge.markers:  # summarised by their literals: an Aho-Corasick pass
        if m.edge in SAMPLED_EDGES:
            sampled.update(required_literals(m.pattern.pattern) or [])
        if m.edge == "serving":
            serving.update(required_literals(m.pattern.pattern) or [])
    other = [s.pattern.pattern for s in knowledge.signatures]
    other += [m.pattern.pattern for m in knowledge.markers if m.edge not in SAMPLED_EDGES]
    parts: set[str] = set()
    for pattern in other:  # a union of full patterns is slow; their required literals are not
        lits = required_literals(pattern)
        if lits is None:
            parts.add(f"(?:{_strip(pattern)})")
        else:
            parts.update(re.escape(lit) for lit in lits)
    union = "|".join([*sorted(parts), *(f"(?:{p})" for p in ALWAYS)])
    return union, sorted(sampled), sorted(serving)


def patterns(knowledge: Knowledge) -> tuple[str, list[str], list[str]]:
    """(lines that need the full path, frequent serving lines) as Rust-regex unions."""
    hit = _CACHE.get(id(knowledge))
    if hit is None or hit[0] is not knowledge:
        hit = (knowledge, _patterns(knowledge))
        _CACHE[id(knowledge)] = hit
    return hit[1]


def merged(batches: Iterable[tuple[int, list[str]]], size: int = CHUNK
           ) -> Iterator[tuple[int, list[str]]]:
    """Join the reader's per-chunk batches into about `size` lines: fewer, bigger vectorised
    calls."""
    first, texts = 0, list[str]()
    for start, lines in batches:
        if not texts:
            first = start
        texts.extend(lines)
        if len(texts) >= size:
            yield first, texts
            texts = []
    if texts:
        yield first, texts


def select(batch: Sequence[str], knowledge: Knowledge) -> tuple[list[int], list[int]]:
    """Indices that need the full path (sorted), and indices of the summarised serving lines
    (the evidence that a server was alive)."""
    union, sampled_lits, serving_lits = patterns(knowledge)
    texts = pl.Series("t", batch, dtype=pl.Utf8)
    full = texts.str.contains(union)
    wanted = set(full.arg_true().to_list())
    sampled_idx = (texts.str.contains_any(sampled_lits) & ~full).arg_true().to_list() \
        if sampled_lits else []
    if sampled_idx:  # the first and last, and a sample between: the phase spans' ends
        wanted.update(sampled_idx[::SERVING_STRIDE])
        wanted.add(sampled_idx[-1])
    serving_idx = (texts.str.contains_any(serving_lits) & ~full).arg_true().to_list() \
        if serving_lits else []
    return sorted(wanted), serving_idx


def walk(first: int, batch: Sequence[str], name: str, full_idx: Sequence[int],
         block_open: Callable[[], bool], feed: Callable[[SourceLine], None],
         skip: Callable[[SourceLine, int], None]) -> None:
    """Feed the selected lines (and every line while a block is open); report the others.

    `skip(last_line, count)` gets the last line of each skipped run, whose timestamp the next
    fed line may inherit.
    """
    n = len(batch)
    i = p = 0
    while i < n:
        if block_open():
            feed(SourceLine(first + i, batch[i], name))
            i += 1
            continue
        while p < len(full_idx) and full_idx[p] < i:
            p += 1
        j = full_idx[p] if p < len(full_idx) else n
        if j > i:
            skip(SourceLine(first + j - 1, batch[j - 1], name), j - i)
        if j < n:
            feed(SourceLine(first + j, batch[j], name))
        i = j + 1
