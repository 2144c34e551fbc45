"""Knowledge as data: failure, symptom and benign signatures and phase markers (TOML).

The shipped files live in `analyzer/knowledge/`; `--rules DIR` adds more (same schema, later
files may override an id). Each entry names the corpus case that proves it.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Protocol, TypeVar

from analyzer.errors import RulesError
from analyzer.knowledge.index import LiteralIndex, LiteralScanner, required_literals

T = TypeVar("T")

KINDS = ("failure", "symptom", "benign")
EDGES = ("begin", "in", "end", "ready", "serving")
ENDS = ("interrupt", "termination")
PHASE_ORDER = ("launch", "dist_init", "weight_load", "compile", "kv_cache_alloc",
               "cuda_graph_capture", "warmup", "ready", "serving", "training", "shutdown")
MATCH_CHARS = 8192
NAMED_GROUP = re.compile(r"\(\?P<\w+>")


@dataclass(frozen=True)
class Signature:
    """One recognisable line: what it means and what to do about it."""

    id: str
    kind: str
    system: str
    pattern: re.Pattern[str]
    category: str | None = None
    summary: str = ""
    remediation: str | None = None
    stands_alone: bool = False  # a symptom that is the best statement when nothing else is
    explains: tuple[str, ...] = ()  # ids or categories this failure causes
    resolved_by: str | None = None  # template regex; a later match clears this failure
    verdict: str | None = None
    priority: int = 1
    hang_if_repeated: int = 0  # this many at the end of a log, with no progress after: a hang
    idle_ok: bool = False  # such a wait is normal once the server is ready (an idle poll)
    ends: str | None = None  # "interrupt" (Ctrl-C) or "termination" (an outside kill)
    at_exit: bool = False  # printed by a process leaving at interpreter exit (a destructor's
    # warning): the other ranks' warnings after it are teardown
    case: str | None = None
    source: str | None = None
    examples: tuple[str, ...] = ()
    not_examples: tuple[str, ...] = ()  # real lines it must not match (a look-alike)

    @property
    def tier(self) -> int:
        """1 states a primary error, 2 can stand in for one, 3 is a consequence, 9 benign."""
        if self.kind == "failure":
            return 1
        if self.kind == "symptom":
            return 2 if self.stands_alone else 3
        return 9


@dataclass(frozen=True)
class Marker:
    """A phase marker: a line that shows a rank entering, being in or leaving a phase."""

    id: str
    system: str
    phase: str
    edge: str
    pattern: re.Pattern[str]
    summary: str = ""
    source: str | None = None
    examples: tuple[str, ...] = ()  # real lines the marker must recognise (tested)
    done: bool = False  # the job reports its own successful end (a `status` group must say
    # success where the line has one)

    def says_done(self, groups: dict[str, str]) -> bool:
        """Whether this match is the job saying it finished successfully."""
        status = groups.get("status")
        return self.done and (status is None or status.lower() in ("success", "ok", "passed"))

    @property
    def shows_life(self) -> bool:
        """Whether this marker's lines can show a live job: ready, serving, training steps
        (the evidence that an earlier error was outlived)."""
        return self.edge in ("ready", "serving") or (self.phase == "training"
                                                     and self.edge == "in")

    def alive(self, groups: dict[str, str]) -> bool:
        """Whether this match shows a live job (a serving line only when it succeeded)."""
        status = groups.get("status")
        return self.shows_life and not (self.edge == "serving" and status is not None
                                        and not status.startswith("2"))


@dataclass(frozen=True)
class FrameHint:
    """A function-name pattern on a traceback's stack that tells the phase it failed in."""

    phase: str
    pattern: re.Pattern[str]


@dataclass
class Knowledge:
    """Every signature and marker, indexed by the literals a line must contain to match them."""

    signatures: list[Signature] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    frame_hints: list[FrameHint] = field(default_factory=list)
    # required literal -> entries that need it; a line is only searched with the patterns
    # whose literals it contains (a substring test is ~50x cheaper than a regex search)
    sig_index: LiteralIndex[Signature] = field(default_factory=lambda: LiteralIndex([], []))
    marker_index: LiteralIndex[Marker] = field(default_factory=lambda: LiteralIndex([], []))

    def match(self, text: str, offset: int = 0) -> list[tuple[Signature, dict[str, str]]]:
        """All signatures that match `text`, most specific first (only the first MATCH_CHARS
        characters are looked at: an error is stated at the start of its line); `offset`:
        where the record starts, after the line's wrappers."""
        hits = _search(text[:MATCH_CHARS], self.sig_index, offset)
        hits.sort(key=lambda h: (h[0].kind == "benign", -h[0].priority, h[0].tier))
        return hits

    def phase_from_frames(self, frames: Sequence[str]) -> str | None:
        """The phase of the first hint (in file order: the most specific phases first) that
        recognises any frame: a capture that fails inside a forward pass is still a capture."""
        for hint in self.frame_hints:
            if any(hint.pattern.search(func) for func in frames):
                return hint.phase
        return None

    def markers_for(self, text: str, offset: int = 0) -> list[tuple[Marker, dict[str, str]]]:
        """Phase markers found in `text` (whose record starts at `offset`)."""
        return _search(text[:MATCH_CHARS], self.marker_index, offset)


class _Entry(Protocol):
    @property
    def pattern(self) -> re.Pattern[str]: ...


E = TypeVar("E", bound=_Entry)


ANCHORED = re.compile(r"^\^|\|\^|^\(\?:\^")


@cache
def _anchored(pattern: re.Pattern[str]) -> bool:
    """A pattern written for the start of the record ('^frame #'), not of the physical line."""
    return ANCHORED.search(pattern.pattern) is not None


def _search(text: str, index: LiteralIndex[E], offset: int = 0
            ) -> list[tuple[E, dict[str, str]]]:
    """The entries whose pattern matches, with their named groups; only entries whose required
    literal occurs in `text` are searched. An anchored pattern is tried where the record
    starts, after the `offset` characters of wrappers (`sglang-1  | `, `> `, `[rank3]: `)."""
    hits = []
    for entry in index.candidates(text):
        pattern = entry.pattern
        m = pattern.search(text[offset:] if offset and _anchored(pattern) else text)
        if m:
            hits.append((entry, {k: v for k, v in m.groupdict().items() if v is not None}))
    return hits


def _by_literal(entries: Sequence[T], pattern_of: Callable[[T], str]
                ) -> tuple[list[tuple[str, list[T]]], list[T]]:
    by_literal: dict[str, list[T]] = {}
    always: list[T] = []
    for e in entries:
        lits = required_literals(pattern_of(e))
        if lits is None:
            always.append(e)
            continue
        for lit in lits:
            by_literal.setdefault(lit, []).append(e)
    return list(by_literal.items()), always


def knowledge_dir() -> Path:
    """The shipped knowledge files."""
    return Path(__file__).resolve().parent


def _compile(pattern: str, where: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise RulesError(f"{where}: bad pattern: {exc}") from None


def _signature(entry: dict[str, Any], where: str) -> Signature:
    for key in ("id", "kind", "pattern"):
        if key not in entry:
            raise RulesError(f"{where}: signature without '{key}'")
    kind = entry["kind"]
    if kind not in KINDS:
        raise RulesError(f"{where}: {entry['id']}: kind must be one of {', '.join(KINDS)}")
    if kind == "failure" and not entry.get("category"):
        raise RulesError(f"{where}: {entry['id']}: a failure needs a category")
    return Signature(
        id=entry["id"], kind=kind, system=entry.get("system", "any"),
        pattern=_compile(entry["pattern"], f"{where}: {entry['id']}"),
        category=entry.get("category"), summary=entry.get("summary", ""),
        remediation=entry.get("remediation"), stands_alone=bool(entry.get("stands_alone")),
        explains=tuple(entry.get("explains", ())), resolved_by=entry.get("resolved_by"),
        verdict=entry.get("verdict"), priority=int(entry.get("priority", 1)),
        hang_if_repeated=int(entry.get("hang_if_repeated", 0)),
        idle_ok=bool(entry.get("idle_ok")), ends=_ends(entry, where),
        at_exit=bool(entry.get("at_exit")),
        case=entry.get("case"), source=entry.get("source"),
        examples=tuple(entry.get("examples", ())),
        not_examples=tuple(entry.get("not_examples", ())),
    )


def _ends(entry: dict[str, Any], where: str) -> str | None:
    ends = entry.get("ends")
    if ends is not None and ends not in ENDS:
        raise RulesError(f"{where}: {entry['id']}: ends must be one of {', '.join(ENDS)}")
    return ends


def _marker(entry: dict[str, Any], where: str) -> Marker:
    for key in ("id", "phase", "edge", "pattern"):
        if key not in entry:
            raise RulesError(f"{where}: marker without '{key}'")
    if entry["edge"] not in EDGES:
        raise RulesError(f"{where}: {entry['id']}: edge must be one of {', '.join(EDGES)}")
    return Marker(id=entry["id"], system=entry.get("system", "any"), phase=entry["phase"],
                  edge=entry["edge"], pattern=_compile(entry["pattern"], f"{where}: {entry['id']}"),
                  summary=entry.get("summary", ""), source=entry.get("source"),
                  examples=tuple(entry.get("examples", ())), done=bool(entry.get("done")))


def _files(dirs: Iterable[Path]) -> list[Path]:
    out: list[Path] = []
    for d in dirs:
        if not d.is_dir():
            raise RulesError(f"rules directory not found: {d}")
        out.extend(sorted(d.glob("*.toml")))
    return out


def knowledge_files(extra_dirs: Sequence[str] = ()) -> list[Path]:
    """The TOML files `load` reads, in order."""
    return _files([knowledge_dir(), *(Path(d) for d in extra_dirs)])


def load(extra_dirs: Sequence[str] = ()) -> Knowledge:
    """Load the shipped knowledge plus any `--rules` directories (later ids override)."""
    return _load(tuple(str(Path(d)) for d in extra_dirs))


@cache
def _load(extra_dirs: tuple[str, ...]) -> Knowledge:
    sigs: dict[str, Signature] = {}
    markers: dict[str, Marker] = {}
    hints: list[FrameHint] = []
    for path in _files([knowledge_dir(), *(Path(d) for d in extra_dirs)]):
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise RulesError(f"{path}: {exc}") from None
        for entry in data.get("signature", []):
            sig = _signature(entry, str(path))
            sigs[sig.id] = sig
        for entry in data.get("marker", []):
            mk = _marker(entry, str(path))
            markers[mk.id] = mk
        for entry in data.get("frame_hint", []):
            if "phase" not in entry or "pattern" not in entry:
                raise RulesError(f"{path}: frame_hint needs phase and pattern")
            hints.append(FrameHint(entry["phase"], _compile(entry["pattern"], str(path))))
    sig_list = list(sigs.values())
    mk_list = list(markers.values())
    sig_pairs, sig_always = _by_literal(sig_list, lambda e: e.pattern.pattern)
    mk_pairs, mk_always = _by_literal(mk_list, lambda e: e.pattern.pattern)
    scanner = LiteralScanner([lit for lit, _ in sig_pairs + mk_pairs])  # one scan per line
    return Knowledge(
        sig_index=LiteralIndex(sig_pairs, sig_always, scanner),
        marker_index=LiteralIndex(mk_pairs, mk_always, scanner),
        signatures=sig_list, markers=mk_list, frame_hints=hints,
    )
