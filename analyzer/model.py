"""The typed records that flow between the pipeline stages.

sources -> `SourceLine`; framing -> `Frame`; blocks -> `Event`. They are plain
dataclasses with slots: one is created per input line, so they must stay cheap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# A rank, pid, count or metric written with more digits than this is not one: it is clamped
# (the line stays an event), because int() refuses 4,300+ digits and float() overflows to inf.
NUMBER_DIGITS = 18
NUMBER_MAX: int = 10**NUMBER_DIGITS - 1
FLOAT_MAX = 1e300


def bounded_int(text: Any) -> int:
    """int(text), clamped to +-NUMBER_MAX; raises ValueError like int() for non-numbers."""
    if isinstance(text, int):
        return max(-NUMBER_MAX, min(NUMBER_MAX, text))
    raw = str(text).strip()
    digits = raw.lstrip("+-").replace("_", "")
    if len(digits) > NUMBER_DIGITS and digits.isdigit():
        return -NUMBER_MAX if raw.startswith("-") else NUMBER_MAX
    return int(raw)


def bounded_float(text: Any) -> float:
    """float(text), clamped to +-FLOAT_MAX (so never inf); NaN stays NaN (a diverged loss)."""
    value = float(text)
    if value != value:
        return value
    return max(-FLOAT_MAX, min(FLOAT_MAX, value))


CONTAINER_PREFIXES = ("compose", "kubectl")  # wrappers that name a restartable container


def container_of(prefixes: Any) -> str | None:
    """The container named by the first compose/kubectl wrapper among `prefixes`."""
    for p in prefixes:
        if p.kind in CONTAINER_PREFIXES:
            name = str(p.text).strip().rstrip("|").strip().strip("[]")
            if name and not name[0].isdigit():  # `kubectl logs --timestamps` names no pod
                return name
    return None


SYSTEMS = ("sglang", "vllm", "nccl", "torch", "python", "kernel", "other")
LEVELS = ("debug", "info", "warning", "error", "critical")


@dataclass(slots=True)
class SourceLine:
    """One physical line of one input, decoded, without its line terminator."""

    lineno: int  # 1-based, within its source
    text: str
    source: str  # display name of the input (path, "-" for stdin)
    truncated: bool = False  # the line was longer than the reader keeps
    replaced: bool = False  # invalid UTF-8 or NUL bytes were replaced


@dataclass(slots=True)
class Prefix:
    """An outer wrapper peeled off a line (docker compose, Ray, pdsh, kubectl, ...)."""

    kind: str
    text: str
    fields: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Head:
    """The parsed record head of one log format (timestamp, level, rank, logger site)."""

    fmt: str  # grammar that matched: sglang, vllm, nccl, torch_c10, torch_glog, ...
    system: str
    text: str  # the head as it appears in the line
    timestamp: str | None = None  # ISO 8601, year possibly still missing ("--MM-DD...")
    level: str | None = None
    rank: dict[str, int] = field(default_factory=dict)
    process: str | None = None
    pid: int | None = None
    site: str | None = None  # logger file:line
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Frame:
    """One physical line after framing: wrappers peeled, head parsed, body isolated."""

    lineno: int
    raw: str  # the line as in the file (decoded)
    clean: str  # ANSI codes stripped, trailing CR dropped, last CR segment kept
    prefixes: list[Prefix]
    head: Head | None
    message: str  # the body after wrappers and head
    segments: list[str] = field(default_factory=list)  # CR-separated states (tqdm), if several
    process: str | None = None  # from a process wrapper such as "(Worker_TP1 pid=3)"
    pid: int | None = None
    rank: dict[str, int] = field(default_factory=dict)

    @property
    def wrapped(self) -> int:
        """How many characters of `clean` the wrappers take (the record starts there)."""
        return sum(len(p.text) for p in self.prefixes) if self.prefixes else 0

    @property
    def emitter(self) -> tuple[str, ...]:
        """Who wrote the line, as far as prefixes tell: the key for block assembly."""
        key = tuple(p.text for p in self.prefixes if p.kind != "timestamp")
        return key


@dataclass(slots=True)
class Event:
    """A typed record: one line, or a multi-line block such as a traceback."""

    line_start: int
    line_end: int
    kind: str
    system: str
    message: str
    timestamp: str | None = None
    timestamp_inferred: bool = False
    process: str | None = None
    rank: dict[str, int] = field(default_factory=dict)
    level: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    lines: list[int] = field(default_factory=list)  # owned lines (blocks may interleave)
    raw: list[str] = field(default_factory=list)  # raw text of the owned lines (a record
    # hard-wrapped over several: the first entry is the whole line, parse/wraps.py)
    clean: list[str] = field(default_factory=list)  # cleaned text of the owned lines
    source: str = ""
    pid: int | None = None  # the writer's pid, where a wrapper or head names it
    offsets: list[int] = field(default_factory=list)  # where each line's record starts in
    # `clean`, after its wrappers (empty: at 0)
    container: str | None = None  # the compose service / kubectl pod a wrapper names: the
    # unit an orchestrator restarts (not part of the public record)

    def offset(self, i: int) -> int:
        """Where line i's record starts in `clean[i]`, after its wrappers."""
        return self.offsets[i] if i < len(self.offsets) else 0

    def rank_number(self) -> int | None:
        """The one rank number worth showing: global, else TP, else the first known."""
        rank = self.rank
        if "global" not in rank and "dp" in rank and "ep" in rank:
            return rank["ep"]  # vLLM's Worker_DP3_TP1_EP13: the EP group spans DP x TP
        for key in ("global", "tp", "pp", "dp", "ep", "task"):
            if key in rank:
                return rank[key]
        return None

    def line_ranges(self) -> list[list[int]] | None:
        """The owned lines as [first, last] runs when they are not one contiguous run (a
        traceback whose writer interleaved with other records); None when they are: then
        [line_start, line_end] says it all. Every input line is in exactly one event."""
        lines = self.lines
        if not lines or lines[-1] - lines[0] + 1 == len(lines):
            return None
        runs: list[list[int]] = [[lines[0], lines[0]]]
        for n in lines[1:]:
            if n == runs[-1][1] + 1:
                runs[-1][1] = n
            else:
                runs.append([n, n])
        return runs

    def as_record(self) -> dict[str, Any]:
        """The public shape of an event (`loglens events --format jsonl`)."""
        return {
            "line_start": self.line_start,
            "line_end": self.line_end,
            "line_ranges": self.line_ranges(),
            "timestamp": self.timestamp,
            "timestamp_inferred": self.timestamp_inferred,
            "system": self.system,
            "process": self.process,
            "rank": dict(self.rank),
            "level": self.level,
            "kind": self.kind,
            "message": self.message,
            "fields": self.fields,
        }
