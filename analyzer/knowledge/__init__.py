"""Knowledge as data: failure, symptom and benign signatures, phase markers and the facts a
post-mortem shows (TOML).

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

from analyzer.cache import pickled
from analyzer.errors import RulesError
from analyzer.knowledge.facts import Fact, fact
from analyzer.knowledge.index import LiteralIndex, LiteralScanner, required_literals
from analyzer.knowledge.lazy import LazyPattern

T = TypeVar("T")

KINDS = ("failure", "symptom", "benign")
EDGES = ("begin", "in", "end", "ready", "serving")
ENDS = ("interrupt", "termination")
PHASE_ORDER = ("launch", "dist_init", "weight_load", "compile", "kv_cache_alloc",
               "cuda_graph_capture", "warmup", "ready", "serving", "training", "benchmark",
               "shutdown")
MATCH_CHARS = 8192
NAMED_GROUP = re.compile(r"\(\?P<\w+>")


@dataclass(frozen=True)
class Signature:
    """One recognisable line: what it means and what to do about it."""

    id: str
    kind: str
    system: str
    pattern: LazyPattern
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
    dead: bool = False  # the program says its engine is gone ("shutting down"): serving or
    # health lines after it do not show that an earlier error was outlived
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
    pattern: LazyPattern
    summary: str = ""
    source: str | None = None
    examples: tuple[str, ...] = ()  # real lines the marker must recognise (tested)
    done: bool = False  # the job reports its own successful end (a `status` group must say
    # success where the line has one)
    health: LazyPattern | None = None  # on the `path` group: the lines that answer a
    # health check, whose `status` says whether the server is ready (5xx: not yet, or no more)
    polls: LazyPattern | None = None  # on the `path` group: requests that only show the
    # HTTP server is up (model info, metrics), not that it serves: no serving phase from them

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
        """Whether this match shows a live job (a serving line only when it succeeded, a
        statistics line only when work moved)."""
        status = groups.get("status")
        if self.edge == "serving" and status is not None and not status.startswith("2"):
            return False
        return self.shows_life and not _idle(groups)

    def is_poll(self, groups: dict[str, str]) -> bool:
        """Whether this match is a health check or a metadata poll, not a served request."""
        path = groups.get("path")
        return path is not None and any(p is not None and p.match(path) is not None
                                        for p in (self.health, self.polls))

    def health_answer(self, groups: dict[str, str]) -> bool | None:
        """Whether this match is a health check answered ready (True) or unavailable
        (False, a 5xx); None when it is no health check (or a 4xx: no such endpoint)."""
        path, status = groups.get("path"), groups.get("status")
        if self.health is None or path is None or not status or not self.health.match(path):
            return None
        if status.startswith("2"):
            return True
        return False if status.startswith("5") else None


@dataclass(frozen=True)
class FrameHint:
    """A function-name pattern on a traceback's stack that tells the phase it failed in."""

    phase: str
    pattern: LazyPattern


@dataclass
class Knowledge:
    """Every signature and marker, indexed by the literals a line must contain to match them."""

    signatures: list[Signature] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    frame_hints: list[FrameHint] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)  # versions, memory, metrics (facts.py)
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

    def markers_for(self, text: str, offset: int = 0, message: str | None = None
                    ) -> list[tuple[Marker, dict[str, str]]]:
        """Phase markers found in `text` (whose record starts at `offset`); an anchored one
        may also start the `message` after the record's head ("[INFO|trainer.py:2432] ...
        >> ***** Running training *****")."""
        return _search(text[:MATCH_CHARS], self.marker_index, offset,
                       message[:MATCH_CHARS] if message else None)


WORK_GROUPS = ("running", "running_req", "prompt_tps", "gen_tps")


def _idle(groups: dict[str, str]) -> bool:
    """A serving statistics line that shows no work: nothing running, no tokens. The API
    server's stats loop prints it every 10 s whether or not the engine behind it is alive
    (vLLM's 'Avg prompt throughput: 0.0 tokens/s ... Running: 0 reqs' after EngineCore died)."""
    values = [groups[k] for k in WORK_GROUPS if k in groups]
    try:
        return bool(values) and all(float(v) == 0 for v in values)
    except ValueError:
        return False


class _Entry(Protocol):
    @property
    def pattern(self) -> LazyPattern: ...


E = TypeVar("E", bound=_Entry)


ANCHORED = re.compile(r"^\^|\|\^|^\(\?:\^")


@cache
def _anchored(pattern: LazyPattern) -> bool:
    """A pattern written for the start of the record ('^frame #'), not of the physical line."""
    return ANCHORED.search(pattern.pattern) is not None


def _search(text: str, index: LiteralIndex[E], offset: int = 0, message: str | None = None
            ) -> list[tuple[E, dict[str, str]]]:
    """The entries whose pattern matches, with their named groups; only entries whose required
    literal occurs in `text` are searched. An anchored pattern is tried where the record
    starts, after the `offset` characters of wrappers (`sglang-1  | `, `> `, `[rank3]: `)."""
    hits = []
    for entry in index.candidates(text):
        pattern = entry.pattern
        anchored = _anchored(pattern)
        m = pattern.search(text[offset:] if offset and anchored else text)
        if m is None and anchored and message is not None:
            m = pattern.search(message)
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


def _compile(pattern: str, where: str) -> LazyPattern:
    try:
        return LazyPattern.checked(pattern)
    except re.error as exc:
        raise RulesError(f"{where}: bad pattern: {exc}") from None


STR, BOOL, INT, STRS = str, bool, int, list
SIGNATURE_FIELDS: dict[str, type] = {
    "id": STR, "kind": STR, "pattern": STR, "system": STR, "category": STR, "summary": STR,
    "remediation": STR, "stands_alone": BOOL, "explains": STRS, "resolved_by": STR,
    "verdict": STR, "priority": INT, "hang_if_repeated": INT, "idle_ok": BOOL, "ends": STR,
    "at_exit": BOOL, "dead": BOOL, "case": STR, "source": STR, "examples": STRS,
    "not_examples": STRS}
MARKER_FIELDS: dict[str, type] = {
    "id": STR, "system": STR, "phase": STR, "edge": STR, "pattern": STR, "summary": STR,
    "source": STR, "examples": STRS, "done": BOOL, "health": STR,
    "polls": STR}
FRAME_HINT_FIELDS: dict[str, type] = {"phase": STR, "pattern": STR}
MAX_PATTERN_CHARS = 4000  # a user pattern longer than this is a mistake (or an attack)
MAX_USER_ENTRIES = 5000  # per --rules directory: beyond it, loading alone takes seconds
# a quantified group that itself ends in a quantifier, "(a+)+", "(\w*)*", "(x+){2,}": on a
# line that almost matches, Python's backtracking engine takes exponential time
NESTED_QUANTIFIER = re.compile(r"\((?:[^()\\]|\\.)*[+*}]\)(?:[+*]|\{\d*,)")


def _check_fields(entry: Any, fields: dict[str, type], what: str, where: str) -> None:
    """`--rules` entries are validated like a schema: a table, known keys, the right types,
    so a mistake is one line naming the file and entry (exit 2), never a traceback."""
    if not isinstance(entry, dict):
        raise RulesError(f"{where}: each [[{what}]] must be a table")
    name = entry.get("id", what)
    for key, value in entry.items():
        want = fields.get(key)
        if want is None:
            raise RulesError(f"{where}: {name}: unknown key {key!r} in a {what}")
        if want is INT and (isinstance(value, bool) or not isinstance(value, int)):
            raise RulesError(f"{where}: {name}: {key} must be an integer")
        if want is STRS and not (isinstance(value, list)
                                 and all(isinstance(v, str) for v in value)):
            raise RulesError(f"{where}: {name}: {key} must be a list of strings")
        if want in (STR, BOOL) and not isinstance(value, want):
            kind = "a string" if want is STR else "true or false"
            raise RulesError(f"{where}: {name}: {key} must be {kind}")
    pattern = entry.get("pattern")
    if isinstance(pattern, str) and len(pattern) > MAX_PATTERN_CHARS:
        raise RulesError(f"{where}: {name}: pattern longer than {MAX_PATTERN_CHARS} characters")


def _check_user_pattern(entry: dict[str, Any], where: str) -> None:
    """A user's pattern must not backtrack catastrophically: every line of every log is
    tried against it, and one `(a+)+` on a long line would hang the run."""
    for key in ("pattern", "resolved_by"):
        pattern = entry.get(key)
        nested = NESTED_QUANTIFIER.search(pattern) if isinstance(pattern, str) else None
        if nested is not None:
            raise RulesError(f"{where}: {entry.get('id', key)}: {key} nests quantifiers "
                             f"({nested.group()!r}), which can take exponential time; make "
                             "the inner or outer part exact")


def _signature(entry: dict[str, Any], where: str) -> Signature:
    _check_fields(entry, SIGNATURE_FIELDS, "signature", where)
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
        at_exit=bool(entry.get("at_exit")), dead=bool(entry.get("dead")),
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
    _check_fields(entry, MARKER_FIELDS, "marker", where)
    for key in ("id", "phase", "edge", "pattern"):
        if key not in entry:
            raise RulesError(f"{where}: marker without '{key}'")
    if entry["edge"] not in EDGES:
        raise RulesError(f"{where}: {entry['id']}: edge must be one of {', '.join(EDGES)}")
    return Marker(id=entry["id"], system=entry.get("system", "any"), phase=entry["phase"],
                  edge=entry["edge"], pattern=_compile(entry["pattern"], f"{where}: {entry['id']}"),
                  summary=entry.get("summary", ""), source=entry.get("source"),
                  examples=tuple(entry.get("examples", ())), done=bool(entry.get("done")),
                  health=(_compile(entry["health"], f"{where}: {entry['id']}: health")
                          if "health" in entry else None),
                  polls=(_compile(entry["polls"], f"{where}: {entry['id']}: polls")
                         if "polls" in entry else None))


def _files(dirs: Iterable[Path]) -> list[Path]:
    out: list[Path] = []
    for d in dirs:
        if not d.is_dir():
            raise RulesError(f"rules directory not found: {d}")
        out.extend(sorted(p for p in d.glob("*.toml") if not p.is_dir()))
    return out


def _read_toml(path: Path) -> dict[str, Any]:
    """One knowledge file, or one line saying why it cannot be used."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise RulesError(f"{path}: {exc}") from None
    except RecursionError:
        raise RulesError(f"{path}: nested too deeply to be a rules file") from None
    except OSError as exc:
        raise RulesError(f"{path}: cannot read: {exc.strerror or exc}") from None


def knowledge_files(extra_dirs: Sequence[str] = ()) -> list[Path]:
    """The TOML files `load` reads, in order."""
    return _files([knowledge_dir(), *(Path(d) for d in extra_dirs)])


def load(extra_dirs: Sequence[str] = ()) -> Knowledge:
    """Load the shipped knowledge plus any `--rules` directories (later ids override)."""
    return _load(tuple(str(Path(d)) for d in extra_dirs))


@cache
def _load(extra_dirs: tuple[str, ...]) -> Knowledge:
    """From the cache directory while the files (and this package's code) are unchanged."""
    files = _files([knowledge_dir(), *(Path(d) for d in extra_dirs)])
    code = sorted(Path(__file__).parent.glob("*.py"))
    return pickled("knowledge", [*files, *code], lambda: _build(extra_dirs), Knowledge)


def _build(extra_dirs: tuple[str, ...]) -> Knowledge:
    sigs: dict[str, Signature] = {}
    markers: dict[str, Marker] = {}
    hints: list[FrameHint] = []
    facts: dict[str, Fact] = {}
    shipped = knowledge_dir()
    counts: dict[Path, int] = {}
    for path in _files([shipped, *(Path(d) for d in extra_dirs)]):
        data = _read_toml(path)
        user = path.parent != shipped
        for what in ("signature", "marker", "frame_hint", "fact"):
            if not isinstance(data.get(what, []), list):
                raise RulesError(f"{path}: {what} must be an array of tables ([[{what}]])")
            if user:
                counts[path.parent] = counts.get(path.parent, 0) + len(data.get(what, []))
                if counts[path.parent] > MAX_USER_ENTRIES:
                    raise RulesError(f"{path.parent}: more than {MAX_USER_ENTRIES} entries")
                for entry in data.get(what, []):
                    if isinstance(entry, dict):
                        _check_user_pattern(entry, str(path))
        for entry in data.get("signature", []):
            sig = _signature(entry, str(path))
            sigs[sig.id] = sig
        for entry in data.get("marker", []):
            mk = _marker(entry, str(path))
            markers[mk.id] = mk
        for entry in data.get("frame_hint", []):
            _check_fields(entry, FRAME_HINT_FIELDS, "frame_hint", str(path))
            if "phase" not in entry or "pattern" not in entry:
                raise RulesError(f"{path}: frame_hint needs phase and pattern")
            hints.append(FrameHint(entry["phase"], _compile(entry["pattern"], str(path))))
        for entry in data.get("fact", []):
            one = fact(entry, str(path), _compile)
            facts[one.id] = one
    sig_list = list(sigs.values())
    mk_list = list(markers.values())
    sig_pairs, sig_always = _by_literal(sig_list, lambda e: e.pattern.pattern)
    mk_pairs, mk_always = _by_literal(mk_list, lambda e: e.pattern.pattern)
    scanner = LiteralScanner([lit for lit, _ in sig_pairs + mk_pairs])  # one scan per line
    return Knowledge(
        sig_index=LiteralIndex(sig_pairs, sig_always, scanner),
        marker_index=LiteralIndex(mk_pairs, mk_always, scanner),
        signatures=sig_list, markers=mk_list, frame_hints=hints, facts=list(facts.values()),
    )
