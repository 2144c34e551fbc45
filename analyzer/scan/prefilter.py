"""Skip ordinary lines in bulk, so a multi-GB log costs little more than reading it.

Most lines of a day of serving are decode-batch, access and NCCL INFO lines that can change
nothing but a counter. The reader hands over batches of lines as polars Series (split in Rust,
no Python object per line). Each batch goes through one vectorised regular expression
(Rust's regex engine): lines that may matter — one of the required literals of any signature
or phase marker, an error-ish word, a block start or an indented continuation — take the full
path (framing, blocks, analysis). Lines that only extend a phase (serving, in-phase markers)
are sampled: the first and last of each batch and a few between take the full path, and the
last serving lines count as "alive" evidence. Everything else is only counted.
`tests/test_fastpath.py` checks that the answers are the same as with every line on the full
path.

Batches are read and classified in worker threads (polars releases the GIL) while the main
thread analyses the previous batch: both cores work on a large log.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from analyzer.cache import cache_dir
from analyzer.knowledge import NAMED_GROUP, Knowledge, Marker, knowledge_files
from analyzer.knowledge import load as load_knowledge
from analyzer.knowledge.index import contained, required_literals
from analyzer.model import SourceLine
from analyzer.parse.framing import ANSI
from analyzer.sources.prefetch import prefetched

if TYPE_CHECKING:  # imported where used: the parent of a producer process never needs it
    import polars as pl

CACHE_FORMAT = 8  # bump when Patterns or how they are built changes
SAMPLED_EDGES = ("serving", "in")  # markers that only extend a phase: a sample is enough
SUMMED_EDGES = ("begin", "end")  # after the server is ready, these too (see Batch.edges)
SERVING_STRIDE = 4096  # about one sampled line in this many takes the full path
ALIVE = 3  # serving (or training-step) lines per batch kept as evidence the job was alive
WINDOW = 512  # lines turned into Python strings at once while a block is open
WORKERS = 2  # classification threads; the main thread analyses meanwhile
AHEAD = 3  # batches read and classified ahead of the analysis (bounds memory)

_S = r"[\t\n\v\f\r ]"  # ASCII classes keep Rust's regex on its fast DFA
BLANKISH = " \t>|"  # a blank line, also inside a quoted or barred paste
# Lines worth a full look whatever the knowledge files say: error-ish words and level names
# (lower, Capitalised and UPPER case: as plain literals they join the knowledge's literals in
# one fast automaton, where a case-insensitive group slows the whole union down), block starts
# and continuations (indented lines), progress bars, configuration dumps, failed requests.
# A `^` inside the big union costs as much as the rest of it, so only two cheap shapes stay
# anchored; the others become literals that every such line contains.
WORDS = ("rror", "exception", "warn", "fail", "fatal", "critical", "abort", "killed", "kill ",
         "timeout", "timed out", "segfault", "refused", "denied", "unable", "cannot", "could not",
         "traceback", "panic", "sigquit", "sigterm", "signal", "oom", "out of memory", "died",
         "dead", "hang", "stuck", "terminate", "crash", "core dump", "interrupt", "exit")
ALWAYS = (
    # indented (frames, continuations), separators (=====); not a line of spaces alone, which
    # starts nothing and ends nothing (an open block gets every line anyway): a log padded with
    # millions of them took 40 s and 1.1 GB when each was selected
    rf"^(?:{_S}+[^\t\n\v\f\r ]|=)",
    r"File \"|Traceback \(|Thread 0x|thread 0x| FAILED|Call stack:|Message:|Arguments:",
    # block starts that may sit behind a wrapper (a CI timestamp, a quote, a label), where
    # the anchored shape above cannot see them: native backtraces, crash handlers, py-spy
    r"backtrace \(tid|Caught signal|most recent call first|\((?:active|idle)\)",
    rf"\|{_S}*$",  # table rows that end in a bar
    r"%\||% Completed|it/s\]|s/it\]",
    r"server_args=|args: Namespace\(|non-default args:|with config:",
    r"HTTP/[0-9.]+\" [45][0-9][0-9]",
    r"\"GET /(?:health|ready|ping)",  # every health answer: the last one says ready or not
    r"NVRM|Xid|oom-kill|(?-u:\b)nccl(?-u:\b)|NCCL WARN|Init COMPLETE",
    r"\.(?:cc|cu|cpp|h|c):[0-9]+ -> [0-9]",  # NCCL's error-return trace ("init.cc:1248 -> 3")
    # severity letters of torch's c10 and glog heads: [E1120 12:00:00.1 ...], [W socket.cpp:1]
    r"[EFW][0-9]{4} [0-9]{2}:[0-9]{2}|\[[EFW] [A-Za-z_]",
    r",[0-9]{3} [EFCW] [0-9]+ [0-9]+\]",  # Ray's C++ heads: [2025-04-02 15:02:00,117 E 1 2]
)


def _word_variants() -> set[str]:
    return {v for w in WORDS for v in (w, w[0].upper() + w[1:], w.upper())}


@dataclass(frozen=True)
class Patterns:
    """The vectorised tests of one knowledge set, as Rust regular expressions."""

    full: str  # the line may matter: full path
    sampled: str  # the line only extends a phase: sampled
    serving: str  # the line shows a serving server: evidence of life
    always: str  # lines that matter whatever the knowledge says (ALWAYS and literal-less rules)
    strong_literals: frozenset[str]  # literals of signatures and of markers other than begin/end
    literals: tuple[str, ...]  # every literal of the knowledge (LiteralScanner.literals)


def _union(literals: set[str]) -> str:
    return "|".join(re.escape(lit) for lit in sorted(literals))


def _minimal(literals: set[str]) -> set[str]:
    """Drop every literal that contains another one: a line holding it holds the shorter one
    too, so the union selects the same lines with a smaller automaton (10 % faster)."""
    return {lit for lit, inside in contained(sorted(literals)).items() if inside == [lit]}


def _rust(pattern: str) -> str | None:
    """A Python pattern as a Rust regex, or None where Rust's syntax differs (lookaround,
    backreferences): such a pattern cannot be prefiltered."""
    import polars as pl

    rust = NAMED_GROUP.sub("(?:", pattern)
    try:
        pl.Series([""], dtype=pl.String).str.contains(rust)
    except pl.exceptions.PolarsError:
        return None
    return f"(?:{rust})"


UNANCHOR = re.compile(r"(^|\||\(\?:)\^")  # "^Generated text" -> "Generated text": wrappers
# come first in a raw line, so the vectorised test looks anywhere in it


def _exact(regexes: list[str | None]) -> str | None:
    """The union of the markers' own patterns, where Rust can run them all: the batch's first
    and last sampled line must be a marker, not a line that only shares its literal (an
    uvicorn "/health" poll, which the access marker leaves out). None: use the literals."""
    if not regexes or any(r is None for r in regexes):
        return None
    return "|".join(r for r in regexes if r)


def _high_volume(m: Marker) -> bool:
    """Whether a marker's lines come by the thousand (serving, training steps, NCCL INFO):
    only those are sampled. A sample keeps a batch's first and last such line, so a marker
    of another phase between them (an `NCCL version` line between two weight-load bars)
    would be lost: a rare one takes the full path."""
    return m.edge == "serving" or m.phase == "training" or "NCCL INFO" in m.pattern.pattern


def _patterns(knowledge: Knowledge) -> Patterns | None:
    sampled: set[str] = set()
    serving: set[str] = set()
    strong: set[str] = set()
    edges: set[str] = set()  # literals of begin/end markers
    regexes: list[str] = []  # patterns without a required literal (user rules, say)

    def need(pattern: str, into: set[str]) -> bool:
        lits = required_literals(pattern)
        if lits:
            into.update(lits)
            return True
        rust = _rust(pattern)
        if rust is None:
            return False
        regexes.append(rust)
        return True

    sampled_res: list[str | None] = []
    serving_res: list[str | None] = []
    for m in knowledge.markers:  # summarised by their literals
        lits = required_literals(m.pattern.pattern)
        if m.edge in SAMPLED_EDGES and lits and _high_volume(m):
            sampled.update(lits)
            sampled_res.append(_rust(UNANCHOR.sub(r"\1", m.pattern.pattern)))
            if m.shows_life:
                serving.update(lits)  # what PhaseTracker counts as alive: serving, steps
                serving_res.append(sampled_res[-1])
        elif not need(m.pattern.pattern, edges if m.edge in SUMMED_EDGES else strong):
            return None
    for s in knowledge.signatures:  # a union of full patterns is slow; their literals are not
        if not need(s.pattern.pattern, strong):
            return None
    always = [f"(?:{p})" for p in ALWAYS]
    union = "|".join([_union(_minimal(strong | edges | _word_variants())), *regexes, *always])
    return Patterns(union, _exact(sampled_res) or _union(sampled) or "$^",
                    _exact(serving_res) or _union(serving) or "$^",
                    "|".join([_union(_word_variants()), *regexes, *always]), frozenset(strong),
                    tuple(knowledge.sig_index.scanner.literals))


def cached_patterns(rules: Sequence[str] = ()) -> Patterns | None:
    """`patterns(load_knowledge(rules))`, read from the cache directory while the knowledge
    files are unchanged: a producer process then starts without compiling ~300 regexes."""
    files = knowledge_files(rules)
    digest = hashlib.sha256(repr((CACHE_FORMAT, ALWAYS, WORDS, SAMPLED_EDGES, SUMMED_EDGES,
                                  [str(f) for f in files])).encode())
    for f in (*files, Path(__file__), Path(__file__).parents[1] / "knowledge" / "index.py"):
        digest.update(f.read_bytes())  # the knowledge, and the code that turns it into Patterns
    base = cache_dir()
    path = base / f"patterns-{digest.hexdigest()[:32]}.json" if base is not None else None
    if path is not None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data is None:
                return None
            return Patterns(**{**data, "strong_literals": frozenset(data["strong_literals"]),
                               "literals": tuple(data["literals"])})
        except (OSError, ValueError, TypeError, KeyError):
            pass
    pats = patterns(load_knowledge(rules))
    if path is not None:
        data = None if pats is None else {**asdict(pats),
                                          "strong_literals": sorted(pats.strong_literals),
                                          "literals": list(pats.literals)}
        with contextlib.suppress(OSError):
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data), encoding="utf-8")
            tmp.replace(path)
    return pats


_CACHE: dict[int, tuple[Knowledge, Patterns | None]] = {}


def patterns(knowledge: Knowledge) -> Patterns | None:
    """The tests for this knowledge (built once per Knowledge object); None when a pattern
    cannot be prefiltered, and every line must take the full path."""
    hit = _CACHE.get(id(knowledge))
    if hit is None or hit[0] is not knowledge:
        hit = (knowledge, _patterns(knowledge))
        _CACHE[id(knowledge)] = hit
    return hit[1]


@dataclass
class Batch:
    """One batch of lines and what the classification chose from it."""

    first: int  # line number of the batch's first line
    size: int  # number of lines
    full: list[int]  # indices that take the full path, sorted
    alive: list[int]  # indices of the last serving lines
    texts: dict[int, str] = field(default_factory=dict)  # the lines Python will look at
    lines: pl.Series | None = None  # all lines, where they are at hand
    # full-path lines that are only a phase's begin or end marker: once the server is ready
    # they cannot change the verdict, and the caller may summarise them (api._analyze_fast)
    edges: set[int] = field(default_factory=set)
    # the knowledge's literals each full-path line contains (LiteralScanner.prime)
    literals: dict[int, set[str]] = field(default_factory=dict)
    fetch: Callable[[int, int], list[str]] | None = None  # (start, count) -> lines, otherwise

    def __len__(self) -> int:
        return self.size

    def text(self, i: int) -> str:
        """Line `i` of the batch; lines nobody selected are fetched a window at a time."""
        hit = self.texts.get(i)
        if hit is None:
            if self.lines is not None:
                window = self.lines.slice(i, WINDOW).to_list()
            elif self.fetch is not None:
                window = self.fetch(i, WINDOW)
            else:
                raise IndexError(f"line {i} of the batch was not kept")
            self.texts.update(zip(range(i, i + len(window)), window, strict=True))
            hit = self.texts[i]
        return hit


def _edge(lines: pl.Series, pattern: str, taken: pl.Series, *, last: bool, k: int = 1
          ) -> list[int] | None:
    """Indices of the first (or last k) lines matching `pattern` that are not `taken`.

    Searches a small window at the batch's start (end) and widens it only when needed, so a
    batch full of such lines costs a few hundred regex tests. None: none in the batch.
    """
    n = len(lines)
    size = 256
    while True:
        lo = max(0, n - size) if last else 0
        span = min(size, n)
        hits = (lines.slice(lo, span).str.contains(pattern) & ~taken.slice(lo, span)).arg_true()
        if len(hits) >= k or span == n:
            if not len(hits):
                return None
            found = hits.to_list()
            return [lo + i for i in (found[-k:] if last else found[:k])]
        size *= 8


RUST_ANSI = ANSI.pattern  # framing's expression; Rust reads it the same (no lookaround)


def visible(lines: pl.Series) -> pl.Series:
    """The lines as framing reads them: without ANSI colours, which sit inside a message (a
    torchtitan `step:  1  \\x1b[32mloss: 12.3`) where a marker's `\\b` or a literal would miss
    them. Same rows in the same order; a batch without ESC costs one memchr scan."""
    if not lines.str.contains("\x1b", literal=True).any():
        return lines
    return lines.str.replace_all(RUST_ANSI, "")


def classify(first: int, raw: pl.Series, knowledge: Knowledge | Patterns) -> Batch:
    """Choose the lines of a batch that the full path must see."""
    import polars as pl

    pats = knowledge if isinstance(knowledge, Patterns) else patterns(knowledge)
    if pats is None:
        raise ValueError("this knowledge cannot be prefiltered; use the full path")
    lines = visible(raw)  # matched; the texts handed on are the raw lines (framing strips)
    full_mask = lines.str.contains(pats.full)
    wanted = set(full_mask.arg_true().to_list())
    head = _edge(lines, pats.sampled, full_mask, last=False)
    if head is not None:  # the phase spans' ends, and a sample between
        wanted.update(head)
        wanted.update(_edge(lines, pats.sampled, full_mask, last=True) or [])
        picks = pl.int_range(SERVING_STRIDE // 2, len(lines), SERVING_STRIDE, eager=True)
        sample = lines.gather(picks)
        mask = sample.str.contains(pats.sampled) & ~full_mask.gather(picks)
        wanted.update(picks.filter(mask).to_list())
    alive = _edge(lines, pats.serving, full_mask, last=True, k=ALIVE) or []
    full = sorted(wanted)
    hits = full_mask.gather(full) if full else full_mask.clear()
    chosen = [i for i, hit in zip(full, hits.to_list(), strict=True) if hit]
    edges: set[int] = set()
    literals: dict[int, set[str]] = {}
    scanner_lits = list(pats.literals)
    if full and scanner_lits:
        found = lines.gather(full).str.extract_many(scanner_lits, overlapping=True).to_list()
        literals = {i: set(f) for i, f in zip(full, found, strict=True) if f}  # none: scanned
    if chosen:  # weak: an edge literal only (not a signature's or another marker's, no ALWAYS)
        candidates = [i for i in chosen if literals.get(i, set()).isdisjoint(pats.strong_literals)]
        if candidates:
            always = lines.gather(candidates).str.contains(pats.always)
            edges = {i for i, hit in zip(candidates, always.to_list(), strict=True) if not hit}
    need = set(full)
    need.update(i - 1 for i in full if i)
    need.add(len(lines) - 1)
    order = sorted(need)
    texts = dict(zip(order, raw.gather(order).to_list(), strict=True)) if order else {}
    return Batch(first, len(lines), full, alive, texts, raw, edges, literals)


def classified(batches: Iterator[tuple[int, pl.Series]], knowledge: Knowledge | Patterns,
               *, workers: int = WORKERS) -> Iterator[Batch]:
    """Classify batches in worker threads, in order, at most AHEAD batches ahead.

    The reader also runs in its own thread: file reads, gunzip and polars' CSV split release
    the GIL, so reading, classification and the caller's analysis overlap.
    """
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="loglens-classify")
    submitted = (pool.submit(classify, first, lines, knowledge) for first, lines in batches)
    stream = prefetched(submitted, AHEAD, "loglens-read")
    try:
        for future in stream:
            yield future.result()
    finally:
        stream.close()  # stop the reader first: it submits to the pool
        pool.shutdown(wait=True, cancel_futures=True)


def walk(batch: Batch, name: str, block_open: Callable[[], bool],
         feed: Callable[[SourceLine], None], skip: Callable[[SourceLine, int], None],
         feed_edge: Callable[[SourceLine], None] | None = None,
         blank: Callable[[str], bool] = lambda text: not text.strip(BLANKISH),
         run_start: Callable[[SourceLine], None] | None = None) -> None:
    """Feed the selected lines (and every line while a block is open); report the others.

    `skip(last_line, count)` gets the last non-blank line of each skipped run, whose
    timestamp the next fed line may inherit. Lines in `batch.edges` go to `feed_edge` (which
    may summarise them) when given, except the batch's last one: span ends stay right to a batch.
    `run_start` gets the first line of each skipped run (what a writer printed next).
    """
    first, full_idx = batch.first, batch.full
    edges = batch.edges if feed_edge is not None else set()
    last_edge = max(edges) if edges else -1
    n = len(batch)
    i = p = 0
    while i < n:
        if block_open():
            feed(SourceLine(first + i, batch.text(i), name))
            i += 1
            continue
        while p < len(full_idx) and full_idx[p] < i:
            p += 1
        j = full_idx[p] if p < len(full_idx) else n
        if j > i:  # the run's last line with text: its time, and where an interrupted job was
            k = j - 1
            while k > i and k > j - 50 and blank(batch.text(k)):
                k -= 1
            if run_start is not None and k > i:
                run_start(SourceLine(first + i, batch.text(i), name))
            skip(SourceLine(first + k, batch.text(k), name), j - i)
        if j < n:
            line = SourceLine(first + j, batch.text(j), name)
            if feed_edge is not None and j in edges and j != last_edge:
                feed_edge(line)
            else:
                feed(line)
        i = j + 1
