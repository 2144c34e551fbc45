"""Stage 3: frames -> events, assembling multi-line blocks per emitting process.

Ranks write to one file at once, so a traceback from TP3 can be interleaved line by line with
TP5's. Each open block is keyed by who wrote it (the wrappers' identity, plus the repeated
vLLM record head), so lines from other writers pass through without breaking it. Events leave
in line order (a small reorder buffer holds single lines while an earlier block is open).
"""

from __future__ import annotations

import copy
import heapq
import re
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

from analyzer.model import Event, Frame, bounded_float, bounded_int, container_of
from analyzer.parse.dumps import parse_cpp_abort, parse_faulthandler, parse_native_backtrace
from analyzer.parse.elastic import parse_elastic_summary
from analyzer.parse.framing import PROC_RANKS, RANK_KEYS
from analyzer.parse.pyrepr import parse_server_args, parse_worknccl
from analyzer.parse.tracebacks import parse_traceback
from analyzer.parse.wraps import continues, cut_at, headless, same_wrapper

TRACEBACK_HEAD = "Traceback (most recent call last):"
MAX_LEAD = 80  # a format's fields before the message, not a sentence that quotes a traceback
FRAME = re.compile(r'^\s*(?:\|\s*)*File "[^"]*", line \d+')
PY_FRAME = re.compile(r'^\s*(?:\|\s*)*File "[^"]*", line \d+, in ')  # not faulthandler's
# a frame line a terminal or a pager hard-wrapped inside its path: `  File "/a/b/pipeline_par`
CUT_FRAME = re.compile(r'^\s*(?:\|\s*)*File "[^"]*$')
MARKER = re.compile(r"^\s*[\^~]+\s*$")
REPEATED = re.compile(r"^\s*\[Previous line repeated \d+ more times?\]")
CHAIN = re.compile(r"^\s*(The above exception was the direct cause of the following exception:|"
                   r"During handling of the above exception, another exception occurred:)\s*$")
EXC_LINE = re.compile(r"^(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:\([\w.]+\))?(?::(?: .*)?)?$")
GROUP_MARGIN = re.compile(r"^\s*[|+][ -]")
FAULT_START = "Fatal Python error:"
# a faulthandler stack without the "Fatal Python error" line: faulthandler.dump_traceback(),
# a watchdog's dump, or a paste that starts at a thread
FAULT_THREAD = re.compile(r"^\s*(?:(?:Current thread|Thread) 0x[0-9a-fA-F]+ (?:\[[^\]]*\] )?"
                          r"|Stack )\(most recent call first\):")
FAULT_FRAME = re.compile(r'^\s*File "[^"]*", line \d+ in ')  # no comma before "in"
FAULT_CONT = re.compile(r'^\s*(?:(?:Current thread|Thread) 0x[0-9a-fA-F]+ (?:\[[^\]]*\] )?'
                        r'\(most recent call first\):|Stack \(most recent call first\):'
                        r'|File "[^"]*", line \d+ in |<no Python frame>|Extension modules:'
                        r'|Python runtime state:|Timeout \(\d+:\d\d:\d\d\)!|\.\.\.)')
CPP_START = "terminate called after throwing an instance of"
CPP_CONT = re.compile(r"^\s*(?:what\(\):|Exception raised from|frame #\d+:|\S.*\(most recent call "
                      r"first\):)")
CPP_AFTER_BLANK = re.compile(r"^\s*(?:Exception raised from|frame #\d+:)")
# py-spy dump: "Process 310: sglang::scheduler_TP7", "Python v3.12.12 (/usr/bin/python3.12)",
# 'Thread 310 (active): "MainThread"', then frames "    _apply (penaltylib/min_new_tokens.py:78)"
PYSPY_START = re.compile(r"^Process \d+: \S")
PYSPY_THREAD = re.compile(r'^Thread (?P<id>0x[0-9A-Fa-f]+|\d+) \((?P<state>[\w+ -]+)\)'
                          r'(?:: "(?P<name>[^"]*)")?\s*$')
PYSPY_CONT = re.compile(r"^(?:Python v\d|Thread (?:0x[0-9A-Fa-f]+|\d+) \([\w+ -]+\)|    \S)")
PYSPY_FRAME = re.compile(r"^\s+(?P<func>\S.*?) \((?P<file>[^()]*?):(?P<line>\d+)\)\s*$")
HOLD_MAX = 10  # lines held after a traceback's message in case a chained exception follows
NATIVE_START = re.compile(r"^\s*=+ backtrace \(tid:\s*\d+\) =+\s*$")
NATIVE_CONT = re.compile(r"^\s*(?:\d+\s+0x[0-9a-fA-F]+\s|=+\s*$)")
LOGGING_ERROR = "--- Logging error ---"
LOGGING_CONT = re.compile(r"^(?:Call stack:|Message: |Arguments: |Logged from file "
                          r"|Unable to print the message|Use the traceback above)")
MAX_MESSAGE_LINES = 60
# A block that got no line of its own for this many lines is over: other writers' lines pass
# an open block, and the events after its start wait for it (bounded memory on long logs).
STALE_LINES = 500
COUNT = r"\d+(?:\.\d+)?[kMGTPEZY]?"  # tqdm's unit_scale shows "7.30k/7.30k", "4.99G/4.99G"
# tqdm state: "<desc>: 42%|####  | 10/24 [00:03<00:04,  3.1it/s]"
# or "<desc>:  42% Completed | 10/24 [...]".
# Anchored on the percentage (a leading lazy description group would make search quadratic);
# the description is taken from the text before it.
PROGRESS = re.compile(
    r"(?P<pct>\d{1,3})%(?: Completed \||\|[^|\r]{0,200}\|)\s*"
    rf"(?P<n>{COUNT})/(?P<total>{COUNT})"
    r"(?: \[(?P<elapsed>[\d:]+)(?:<(?P<remaining>[\d:?]+))?(?:, (?P<rate>[^\]]*))?\]?)?"
)


def parse_progress(segment: str) -> dict[str, Any] | None:
    """One tqdm state: description, percent, n/total, elapsed, remaining, rate."""
    m = PROGRESS.search(segment)
    if m is None:
        return None
    out: dict[str, Any] = m.groupdict()
    before = segment[max(0, m.start() - 200):m.start()]
    out["desc"] = re.split(r"[\]|]", before)[-1].strip().rstrip(":").strip()
    return out


ACCESS = re.compile(r'^(?P<client>\S+) - "(?P<request>[A-Z]+ \S+ [^"]*)" (?P<status>\d{3})')
IDENTITY_KINDS = ("compose", "journald", "mpirun", "process", "rank", "role", "pdsh")
SCALE = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18, "Z": 10**21,
         "Y": 10**24}
QUIET_KINDS = ("pyspy",)  # blocks that report state, not a failure: no level of their own


def count(text: str) -> int:
    """A tqdm count as an int: "12" -> 12, "7.30k" -> 7300."""
    if text[-1] in SCALE:
        return bounded_int(round(bounded_float(text[:-1]) * SCALE[text[-1]]))
    return bounded_int(int(bounded_float(text)))


def identity(frame: Frame) -> tuple[str, ...]:
    """Stable identity of the writer from its wrappers (timestamps excluded)."""
    return tuple(p.text.strip() for p in frame.prefixes if p.kind in IDENTITY_KINDS)


def continuation_key(frame: Frame) -> tuple[str, ...] | None:
    """The key under which this line may continue an open block; None if it starts a record."""
    head = frame.head
    if head is None or head.fmt in ("wrapper", "launcher"):  # a launcher relays child lines
        return identity(frame)
    if head.fmt == "vllm":  # vLLM repeats the record head on every line of a record
        return (*identity(frame), head.text)
    return None


class Block:
    """An open multi-line block (traceback, faulthandler dump, C++ abort, native backtrace,
    py-spy dump)."""

    def __init__(self, kind: str, key: tuple[str, ...], first: Frame, body: str) -> None:
        self.kind = kind
        self.key = key
        self.frames = [first]
        self.bodies = [body]
        self.state = "frames"
        if kind == "traceback" and CHAIN.match(body):
            self.state = "chain"  # a fragment that starts at "During handling of ..."
        elif kind == "traceback" and EXC_LINE.match(body.strip()) and not FRAME.match(body):
            self.state = "message"
        elif kind == "cpp_abort" and "what():" in body:
            self.state = "what"
        # lines that may still belong: up to two blank lines, or (after a traceback's
        # message) up to HOLD_MAX lines that only belong if a chained exception follows
        self.pending: list[tuple[Frame, str]] = []
        self.holding = False
        self.message_lines = 0
        self.last_was_frame = bool(FRAME.match(body))
        self.last_line = first.lineno  # the last line this block took (or holds)
        self.joins: set[int] = set()  # indices of lines that go on the line before (hard wraps)
        self.cut_frame = False  # the last line is a frame cut inside its path: only its rest
        # may follow (a hard wrap), anything else ends the block there (the writer died)
        self.lead = ""  # what a custom log format puts between its head and every message
        # ("[MainThread] [vllm.worker.worker_base] >>> "), learned from the opening line

    @property
    def start(self) -> int:
        return self.frames[0].lineno

    def offer(self, frame: Frame, body: str) -> bool:
        """Take the line if it continues this block (or may still, see `pending`)."""
        taken = self._offer(frame, body)
        if taken:
            self.last_line = frame.lineno
        return taken

    def take_wrap(self, frame: Frame, body: str) -> None:
        """Take a line that is the rest of the line before it (a hard wrap): parsed as one
        logical line, kept as its own physical line so every line is still in one event."""
        self.joins.add(len(self.frames))
        self.cut_frame = False
        self.frames.append(frame)
        self.bodies.append(body)
        self.last_line = frame.lineno
        if self.kind == "traceback" and FRAME.match(self.logical_last()):
            self.last_was_frame = True

    def logical_last(self) -> str:
        """The last logical line: the last physical one joined with the wraps before it."""
        i = len(self.bodies) - 1
        while i in self.joins:
            i -= 1
        return "".join(self.bodies[i:])

    def _offer(self, frame: Frame, body: str) -> bool:
        if self.cut_frame:
            if not self.pending and FRAME.match(self.logical_last() + body):
                self.take_wrap(frame, body)  # `  File "/a/b/pipeline_par` + `allel/x.py", line 6`
                return True
            return False
        if not body.strip():
            if len(self.pending) < (HOLD_MAX if self.holding else 2):
                self.pending.append((frame, body))
                return True
            return False
        accepted = self._accepts(body)
        if accepted:
            self.frames.extend(f for f, _ in self.pending)
            self.bodies.extend(b for _, b in self.pending)
            self.pending.clear()
            self.holding = False
            self.frames.append(frame)
            self.bodies.append(body)
        elif self._may_hold(body):
            self.holding = True
            self.pending.append((frame, body))
            return True
        return accepted

    def _may_hold(self, body: str) -> bool:
        """After a blank line that ends a traceback's message, text such as torch._dynamo's
        "You can suppress this exception ..." may still precede "During handling of ..."."""
        if self.kind != "traceback" or self.state != "message" or not self.pending:
            return False
        if len(self.pending) >= HOLD_MAX or _starts_block(body) is not None:
            return False
        return not _looks_like_exception(body.strip())

    def _accepts(self, body: str) -> bool:
        """Whether the line continues the block (a small state machine per kind)."""
        stripped = body.strip()
        if self.kind == "faulthandler":
            return bool(FAULT_CONT.match(body)) or (self.pending == [] and body.startswith("  "))
        if self.kind == "pyspy":
            return bool(PYSPY_CONT.match(body))
        if self.kind == "cpp_abort":
            if CPP_AFTER_BLANK.match(body):
                self.state = "frames"
                return len(self.pending) <= 1
            if self.pending:
                return False
            if "what():" in body:
                self.state = "what"
                return True
            if CPP_CONT.match(body):
                self.state = "frames"
                return True
            # what() goes on over several lines (NCCL's "Last error:", c10's hints)
            if self.state != "what" or _starts_block(body) is not None:
                return False
            self.message_lines += 1
            return self.message_lines <= MAX_MESSAGE_LINES
        if self.kind == "native":
            return bool(NATIVE_CONT.match(body)) and not self.pending
        # tracebacks (and logging-error blocks, which contain one)
        is_frame = bool(FRAME.match(body))
        if self.state == "message" and stripped.startswith(TORCHSCRIPT_HEAD):
            self.state, self.message_lines = "torchscript", 0
            return True
        if self.state == "torchscript":  # TorchScript's own traceback inside the message:
            # frames, source, "<--- HERE" markers, class headers, until its exception line
            self.message_lines += 1
            if not body.startswith((" ", "\t")) and EXC_NAME.match(stripped) and ": " in stripped:
                self.state, self.message_lines = "message", 0
            return self.message_lines <= MAX_TORCHSCRIPT_LINES
        if CHAIN.match(body):
            self.state, self.last_was_frame = "chain", False
            return True
        if TRACEBACK_HEAD in body:
            if self.state in ("chain", "logging") or self.kind == "logging_error":
                self.state, self.last_was_frame = "frames", False
                return True
            return False
        if self.pending and self.state != "chain":
            # a blank line ended the block, unless a frame follows one blank line between
            # frames: the traceback goes on (an empty source line, a signal handler's frame
            # printed after the one it interrupted)
            bridged = (self.kind == "traceback" and self.state == "frames"
                       and PY_FRAME.match(body) is not None and not self.last_was_frame
                       and len(self.pending) == 1)
            if bridged:
                self.last_was_frame = True
            return bridged
        if not is_frame and self.state == "frames" and CUT_FRAME.match(body):
            self.cut_frame = True  # a frame cut inside its path: its rest may follow
            return True
        if is_frame or REPEATED.match(body) or MARKER.match(body) or GROUP_MARGIN.match(body):
            if self.state == "message" and is_frame and self.kind != "logging_error":
                return False
            self.last_was_frame = is_frame
            if self.state == "chain":
                self.state = "frames"
            return True
        if self.kind == "logging_error" and LOGGING_CONT.match(stripped):
            self.state = "logging"
            return True
        if self.state == "frames":
            if body.startswith(("     ", "\t\t")) and not self.last_was_frame:
                return True  # a statement's further source lines (Python 3.11+ shows the
                # whole multi-line call, deeper indented): never the exception line
            if self.last_was_frame and not EXC_LINE.match(stripped):
                self.last_was_frame = False  # the frame's source line (indentation may be lost)
                return True
            if self.last_was_frame and body.startswith((" ", "\t")):
                self.last_was_frame = False
                return True
            if EXC_LINE.match(stripped) or ": " in stripped:
                self.state, self.message_lines = "message", 0
                return True
            return body.startswith("    ")
        if self.state == "message":
            if _starts_block(body) is not None:
                return False
            self.message_lines += 1
            return self.message_lines <= MAX_MESSAGE_LINES
        if self.state == "logging":
            return body.startswith((" ", "\t"))
        return False

    def close(self) -> tuple[Event, list[Frame]]:
        """The block as one event, and the trailing blank lines it did not keep."""
        leftover = [f for f, _ in self.pending]
        if self.joins:
            logical, physical = _join_wraps(self.bodies, self.joins)
            fields = _physical_indices(_block_fields(self.kind, logical, self.frames), physical)
        else:
            fields = _block_fields(self.kind, self.bodies, self.frames)
        first = self.frames[0]
        ev = _event_from_frame(first, self.kind, self.bodies[0])
        ev.line_end = self.frames[-1].lineno
        ev.lines = [f.lineno for f in self.frames]
        ev.raw = [f.raw for f in self.frames]
        ev.clean = [f.clean for f in self.frames]
        # where each line's own text starts: after its wrappers, and after the record head a
        # writer repeats on every line of a block (vLLM's "ERROR 03-10 07:38:43 [core.py:1] ")
        ev.offsets = [len(f.clean) - len(b) if b and f.clean.endswith(b) else f.wrapped
                      for f, b in zip(self.frames, self.bodies, strict=True)]
        if not any(ev.offsets):
            ev.offsets = []
        ev.fields = fields
        ev.container = container_of(first.prefixes)
        if self.kind not in QUIET_KINDS:
            ev.level = ev.level or ("critical" if self.kind in ("faulthandler", "cpp_abort",
                                                                "native") else "error")
        if ev.system == "other" or (self.kind == "traceback" and ev.system == "sglang"
                                    and first.head is None):
            ev.system = "python" if self.kind in ("traceback", "logging_error",
                                                  "faulthandler", "pyspy") else "torch"
        if self.kind == "pyspy" and not ev.rank:  # "Process 310: sglang::scheduler_TP7"
            for key, num in PROC_RANKS.findall(str(fields.get("process") or "")):
                ev.rank[RANK_KEYS.get(key, key.lower())] = bounded_int(num)
        stmt = fields.get("statement_index")
        if isinstance(stmt, int) and 0 <= stmt < len(self.frames):
            fields["statement_line"] = self.frames[stmt].lineno
            ev.message = self.bodies[stmt].strip()
        else:
            ev.message = self.bodies[0].strip()
        return ev, leftover


def _inner_wrappers_missing(block: tuple[str, ...], line: tuple[str, ...]) -> bool:
    """The line carries the block's outer wrappers but not all of its inner ones (wrappers
    only: a record head a writer repeats, vLLM's, is not a wrapper and proves nothing)."""
    return len(block) > len(line) and block[:len(line)] == line


def _join_wraps(bodies: list[str], joins: set[int]) -> tuple[list[str], list[int]]:
    """The block's logical lines (each hard-wrapped line joined to the one it goes on), and
    the physical index where each logical line starts."""
    logical: list[str] = []
    physical: list[int] = []
    for i, body in enumerate(bodies):
        if i in joins and logical:
            logical[-1] += body
        else:
            logical.append(body)
            physical.append(i)
    return logical, physical


def _physical_indices(fields: Any, physical: list[int]) -> Any:
    """Line indices in parsed block fields (`index`, `*_index`) taken back from logical to
    physical lines, so they point into the block's frames as everywhere else."""
    if isinstance(fields, list):
        return [_physical_indices(v, physical) for v in fields]
    if not isinstance(fields, dict):
        return fields
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if (key == "index" or key.endswith("_index")) and isinstance(value, int) \
                and 0 <= value < len(physical):
            out[key] = physical[value]
        else:
            out[key] = _physical_indices(value, physical)
    return out


def _escaped_traceback(body: str) -> bool:
    """A traceback inside one line's string (a JSON log record's "exc_info":
    "Traceback (most recent call last):\\n  File ..."): the record, not a block."""
    return body.partition(TRACEBACK_HEAD)[2].startswith("\\n")


def _starts_block(body: str) -> str | None:
    """Which block kind (if any) this line opens."""
    if TRACEBACK_HEAD in body:
        return None if _escaped_traceback(body) else "traceback"
    if FAULT_START in body:
        return "faulthandler"
    if CPP_START in body:
        return "cpp_abort"
    if LOGGING_ERROR in body:
        return "logging_error"
    if NATIVE_START.match(body):
        return "native"
    if FAULT_THREAD.match(body) or FAULT_FRAME.match(body):
        return "faulthandler"  # a stack dump without its "Fatal Python error" line
    if FRAME.match(body) and " in " in body:
        return "traceback"  # a pasted fragment that starts at a frame
    if CHAIN.match(body):
        return "traceback"  # a pasted fragment that starts at the chain line
    if PYSPY_START.match(body) or PYSPY_THREAD.match(body):
        return "pyspy"
    return None


def _dedent_shifted(lines: list[str], start: int) -> list[str]:
    """A traceback printed further in than CPython prints it, shifted back.

    CPython puts frames at column 2, their source at 4 and the exception at 0; a copy set
    further in (torchelastic's summary quotes the worker's traceback two columns in, under
    "traceback :") would read its exception line as source. The surplus is the frames'
    indent beyond 2, removed from every line after the header when all of them have it."""
    indents = [len(b) - len(b.lstrip(" ")) for b in lines[start + 1:]
               if b.lstrip().startswith('File "')]
    extra = min(indents) - 2 if indents else 0
    body = lines[start + 1:]
    if extra <= 0 or any(b.strip() and len(b) - len(b.lstrip(" ")) < extra for b in body):
        return lines
    return [*lines[:start + 1], *(b[extra:] if b.strip() else b for b in body)]


def _block_fields(kind: str, bodies: list[str], frames: list[Frame]) -> dict[str, Any]:
    if kind in ("traceback", "logging_error"):
        start = next((i for i, b in enumerate(bodies) if TRACEBACK_HEAD in b), None)
        lines = list(bodies)
        if start is not None:
            lines[start] = TRACEBACK_HEAD
            lines = _dedent_shifted(lines, start)
        fields = parse_traceback(lines)
        if kind == "logging_error":
            fields["logging_error"] = True
        summary_at = next((i for i, b in enumerate(bodies) if "ChildFailedError" in b), None)
        if summary_at is not None:
            fields["elastic"] = parse_elastic_summary(bodies[summary_at + 1:])
        return fields
    if kind == "faulthandler":
        fh = parse_faulthandler([b[b.find(FAULT_START):] if FAULT_START in b else b
                                           for b in bodies])
        error_at = fh.get("error_index")
        fh["statement_index"] = error_at if isinstance(error_at, int) else 0
        return fh
    if kind == "pyspy":
        return _pyspy_fields(bodies)
    if kind == "cpp_abort":
        cpp = parse_cpp_abort(bodies)
        what_at = cpp.get("what_index")  # "what():  CUDA error: ..." states the error
        cpp["statement_index"] = what_at if isinstance(what_at, int) else 0
        return cpp
    if kind == "native":
        nat = parse_native_backtrace(bodies)
        crash = nat.get("crash_index")
        nat["statement_index"] = crash if isinstance(crash, int) else 0
        return nat
    return {}


def _pyspy_fields(bodies: list[str]) -> dict[str, Any]:
    """The process, Python version and each thread's frames (innermost first) of a py-spy dump."""
    out: dict[str, Any] = {"process": None, "pid": None, "python": None, "threads": [],
                           "statement_index": 0}
    thread: dict[str, Any] | None = None
    for i, body in enumerate(bodies):
        text = body.rstrip()
        if m := PYSPY_START.match(text):
            out["process"] = text[len("Process "):]
            out["pid"] = bounded_int(text[len("Process "):].split(":", 1)[0])
        elif text.startswith("Python v"):
            out["python"] = text[len("Python "):]
        elif m := PYSPY_THREAD.match(text):
            thread = {"id": m["id"], "state": m["state"], "name": m["name"], "frames": [],
                      "index": i}
            out["threads"].append(thread)
        elif (m := PYSPY_FRAME.match(text)) and thread is not None:
            thread["frames"].append({"func": m["func"], "file": m["file"],
                                     "line": bounded_int(m["line"]), "index": i})
    return out


def _event_from_frame(frame: Frame, kind: str, message: str) -> Event:
    head = frame.head
    system = head.system if head is not None else "other"
    if system == "other" and frame.process and frame.process.startswith(
            ("VllmWorker", "Worker", "EngineCore", "APIServer", "RayWorkerWrapper")):
        system = "vllm"
    if system == "other" and "global" in frame.rank and any(p.kind == "rank"
                                                            for p in frame.prefixes):
        system = "torch"  # torch's "[rank3]:" prefix (mpirun's "[1,3]" says nothing of torch)
    return Event(
        line_start=frame.lineno, line_end=frame.lineno, kind=kind, system=system,
        message=message, timestamp=head.timestamp if head else None,
        process=frame.process, rank=dict(frame.rank), pid=frame.pid,
        level=head.level if head else None,
        lines=[frame.lineno], raw=[frame.raw], clean=[frame.clean],
        offsets=[frame.wrapped] if frame.prefixes else [],
    )


def record_event(frame: Frame) -> Event:
    """A log record's event without the extras `line_event` looks for (progress, access,
    configuration): enough to tell whose phase a begin/end marker line is about."""
    head = frame.head
    kind = "plain"
    if head is not None and head.fmt != "wrapper":
        kind = {"nccl": "nccl", "kernel": "kernel"}.get(head.fmt, "log")
    return _event_from_frame(frame, kind, frame.message)


def line_event(frame: Frame) -> Event:
    """A single-line event: log record, progress state, access line, kernel line or plain."""
    msg = frame.message
    head = frame.head
    kind = "plain"
    fields: dict[str, Any] = {}
    if head is not None and head.fmt != "wrapper":
        kind = {"nccl": "nccl", "kernel": "kernel"}.get(head.fmt, "log")
        if head.site:
            fields["site"] = head.site
        fields.update({k: v for k, v in head.fields.items() if k != "uvicorn"})
        if head.fields.get("uvicorn"):
            m = ACCESS.match(msg)
            if m:
                kind = "access"
                fields.update(client=m["client"], request=m["request"], status=int(m["status"]))
    states = frame.segments or ([msg] if "%" in msg else [])
    progress = [p for s in states if (p := parse_progress(s)) is not None]
    if progress:
        kind = "progress"
        last = progress[-1]
        fields.update(desc=(last["desc"] or "").strip(), n=count(last["n"]),
                      total=count(last["total"]), percent=bounded_int(last["pct"]),
                      elapsed=last["elapsed"], remaining=last["remaining"], rate=last["rate"])
        if len(progress) > 1:
            fields["states"] = [{"desc": (p["desc"] or "").strip(), "n": count(p["n"]),
                                 "total": count(p["total"])} for p in progress]
    bar = next((p.text for p in frame.prefixes if p.kind == "progress"), None)
    if bar is not None:  # a bar the record was glued to: its states, the record's kind
        glued = [st for seg in bar.split("\r") if (st := parse_progress(seg))]
        fields["progress"] = [{"desc": st["desc"], "n": count(st["n"]),
                               "total": count(st["total"]), "percent": bounded_int(st["pct"])}
                              for st in glued]
    if "server_args=ServerArgs(" in msg:
        kind = "config"
        fields["server_args"] = parse_server_args(msg[msg.index("ServerArgs("):])
    elif msg.startswith(("args: Namespace(", "non-default args: {")):
        kind = "config"
        fields["args"] = parse_server_args(msg[msg.index(" ", 5) + 1:])
    if "WorkNCCL(" in msg:
        fields["work"] = parse_worknccl(msg[msg.index("WorkNCCL("):])
    if frame.prefixes:
        fields["prefixes"] = [{"kind": p.kind, "text": p.text} for p in frame.prefixes]
    ev = _event_from_frame(frame, kind, msg)
    ev.fields = fields
    ev.container = container_of(frame.prefixes)
    if ev.system == "other" and kind == "progress":
        ev.system = "python"
    return ev


class Assembler:
    """Feeds frames in, yields events in line order."""

    def __init__(self, wrap_width: int | None = None) -> None:
        self.open: dict[tuple[str, ...], Block] = {}
        self._heap: list[tuple[int, int, Event]] = []
        self._seq = 0
        self.wrap_width = wrap_width  # the input's hard-wrap width (parse/wraps.py), if any
        self._held: list[Frame] = []  # a record cut at that width and the pieces so far

    def holding(self) -> bool:
        """Whether the next line may belong to what is held (an open block, a cut record)."""
        return bool(self.open or self._held)

    def _may_go_on(self, frame: Frame) -> bool:
        """A single-line record cut by the input's hard wrap: its message goes on below."""
        return cut_at(frame.raw, self.wrap_width)

    def _piece_of_held(self, frame: Frame) -> bool:
        """A headless line right after a cut record, under the same outer wrappers (srun's
        label on every physical line, the program's own prefix only on the first), that
        starts nothing of its own: the rest of that record's message."""
        first, last = self._held[0], self._held[-1]
        if frame.lineno != last.lineno + 1 or not headless(frame):
            return False
        outer = frame.prefixes
        if len(outer) > len(first.prefixes) or not all(
                same_wrapper(a, b) for a, b in zip(outer, first.prefixes, strict=False)):
            return False
        body = frame.message
        return continues(last.raw, body) and _starts_block(body) is None \
            and not CPP_CONT.match(body) and not FRAME.match(body) \
            and parse_progress(body) is None

    def _flush_held(self) -> None:
        held, self._held = self._held, []
        if held:
            self._push(_joined_event(held))

    def _push(self, ev: Event) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (ev.line_start, self._seq, ev))

    def _release(self) -> Iterator[Event]:
        floor = min((b.start for b in self.open.values()), default=None)
        while self._heap and (floor is None or self._heap[0][0] < floor):
            yield heapq.heappop(self._heap)[2]

    def _close(self, key: tuple[str, ...]) -> None:
        block = self.open.pop(key)
        ev, leftover = block.close()
        self._push(ev)
        for f in leftover:
            self._push(line_event(f))

    def feed(self, frame: Frame) -> Iterator[Event]:
        """Take one frame; yield the events that are now complete and in order."""
        if self._held:
            if self._piece_of_held(frame):
                self._held.append(frame)
                if not self._may_go_on(frame):
                    self._flush_held()
                    yield from self._release()
                return
            self._flush_held()
        body = frame.message
        led = self._led_block(frame, body)
        if led is not None:  # the opener's lead again: a line of that traceback, lead peeled
            body = body[len(led.lead):]
            if led.offer(frame, body):
                self._close_stale(frame.lineno)
                yield from self._release()
                return
            self._close(led.key)
        key = continuation_key(frame)
        if key == () and key not in self.open:
            key = self._tagged_first_line(frame.lineno) or key
        if key is None:
            key = self._headed_traceback_line(frame, body)
        wrapped = self._wrapped_line(frame, body, key)
        if wrapped is not None:
            wrapped.take_wrap(frame, body)
            self._close_stale(frame.lineno)
            yield from self._release()
            return
        if key is not None and key in self.open:
            if self.open[key].offer(frame, body):
                self._close_stale(frame.lineno)
                yield from self._release()
                return
            self._close(key)
        kind = _starts_block(body)
        if kind is not None:
            block_key = identity(frame)
            if frame.head is not None and frame.head.fmt == "vllm":
                block_key = (*block_key, frame.head.text)
            if block_key in self.open:
                self._close(block_key)
            block = self.open[block_key] = Block(kind, block_key, frame, body)
            at = body.find(TRACEBACK_HEAD) if kind == "traceback" and frame.head else -1
            if 0 < at <= MAX_LEAD and body[:at].strip() and body.rstrip().endswith(":"):
                block.lead = body[:at]
        elif key is not None and EXC_LINE.match(body.strip()) and _looks_like_exception(
                body.strip()):
            block_key = key
            if block_key in self.open:
                self._close(block_key)
            self.open[block_key] = Block("traceback", block_key, frame, body)
        elif self._may_go_on(frame) and frame.head is not None and frame.head.fmt != "wrapper" \
                and not self.open:
            self._held = [frame]  # (within an open block's lines, blocks take the wraps)
            return
        else:
            self._push(line_event(frame))
        self._close_stale(frame.lineno)
        yield from self._release()

    def _led_block(self, frame: Frame, body: str) -> Block | None:
        """The open traceback this line continues by carrying its opener's head format and
        lead: a custom format (`%(asctime)s %(levelname)s [%(threadName)s] [%(name)s] >>>
        %(message)s`) puts its fields before every line of a logged traceback, so its frames
        and exception line do not start where a traceback's lines do."""
        head = frame.head
        if head is None or not self.open:
            return None
        block = self.open.get(identity(frame))
        if block is None or not block.lead or block.kind != "traceback" \
                or not body.startswith(block.lead):
            return None
        opener = block.frames[0].head
        return block if opener is not None and opener.fmt == head.fmt else None

    def _tagged_first_line(self, lineno: int) -> tuple[str, ...] | None:
        """A writer that tags only the first line of a multi-line message (Ray's "(raylet) "
        before a traceback whose frames follow bare): a bare line just after the one open
        block's last line may continue it."""
        near = [k for k, b in self.open.items() if b.last_line == lineno - 1
                and len(k) == 1 and FIRST_LINE_TAG.match(k[0])]
        return near[0] if len(near) == 1 else None

    def _headed_traceback_line(self, frame: Frame, body: str) -> tuple[str, ...] | None:
        """A per-line prefix that looks like the program's own head (a collector's
        `[2025-07-16 14:47:06] ` before SGLang's records) also stands before every line of a
        traceback: a headed line whose message is a frame, a source line or the exception,
        while a traceback opened by a head of the same format still waits for its exception
        line, continues it. Programs never put their head on a traceback's inner lines, so
        this cannot glue two records of an unwrapped log."""
        head = frame.head
        key = identity(frame)
        block = self.open.get(key)
        if head is None or block is None or block.kind != "traceback" or block.state != "frames":
            return None
        opener = block.frames[0].head
        if opener is None or opener.fmt != head.fmt:
            return None
        stripped = body.strip()
        if FRAME.match(body) or body.startswith((" ", "\t")) or (
                block.last_was_frame is False and EXC_NAME.match(stripped)):
            return key
        return None

    def _wrapped_line(self, frame: Frame, body: str, key: tuple[str, ...] | None
                      ) -> Block | None:
        """A hard wrap under a line wrapper: `srun -l` or pdsh label every physical line
        (`36: `), the program's own prefix (`[rank36]: `) stands only before its logical
        lines. So a line right after an open traceback's last line that carries the outer
        wrappers but not the inner ones, and starts nothing of its own, is the rest of that
        line: `36: /schedules.py", line 637, in forward_backward_no_pipelining`."""
        if key is None or not key or key in self.open or not self.open or not body.strip():
            return None
        if frame.head is not None and frame.head.fmt not in ("wrapper", "launcher"):
            return None
        if _starts_block(body) is not None:
            return None
        near = [b for b in self.open.values() if b.kind == "traceback"
                and b.last_line == frame.lineno - 1 and not b.pending
                and _inner_wrappers_missing(identity(b.frames[-1]), key)]
        return near[0] if len(near) == 1 else None

    def _close_stale(self, lineno: int) -> None:
        """Close the blocks that took no line for STALE_LINES lines."""
        if self.open:
            for key in [k for k, b in self.open.items() if lineno - b.last_line > STALE_LINES]:
                self._close(key)

    def pending(self) -> bool:
        """Whether lines are held: an open block, a cut record, or single lines queued."""
        return bool(self.open or self._heap or self._held)

    def peek(self) -> list[Event]:
        """Copies of the held single lines plus the open blocks closed provisionally (what
        `finish` would emit now); the open blocks stay open."""
        evs = [copy.deepcopy(item[2]) for item in self._heap]
        if self._held:  # the cut record as it stands
            evs.append(_joined_event(list(self._held)))
        for block in self.open.values():
            ev, leftover = block.close()  # close() builds a new event; the block stays open
            evs.append(ev)
            evs.extend(line_event(f) for f in leftover)
        evs.sort(key=lambda e: e.line_start)
        return evs

    def finish(self) -> Iterator[Event]:
        """Close every open block and flush."""
        self._flush_held()
        for key in sorted(self.open, key=lambda k: self.open[k].start):
            self._close(key)
        while self._heap:
            yield heapq.heappop(self._heap)[2]


# TorchScript's interpreter error carries its own traceback in the exception's message, then
# the exception that really happened: "Traceback of TorchScript, serialized code (most ..."
TORCHSCRIPT_HEAD = "Traceback of TorchScript"
MAX_TORCHSCRIPT_LINES = 2000
# writers that tag only the first line of a message: Ray's daemons ("(raylet)", no pid)
FIRST_LINE_TAG = re.compile(r"\([a-z_]+(?:, ip=[\da-fA-F.:]+)?\)$")
EXC_NAME = re.compile(r"^(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*?(?:Error|Exception|Exit|Interrupt|Fault|"
                      r"Timeout|Failure))(?:\([\w.]+\))?(?::|$)")


def _joined_event(held: list[Frame]) -> Event:
    """One event of a record cut by a hard wrap and its pieces (parse/wraps.py): it owns
    every physical line, and its first entry is the whole line."""
    first = held[0]
    rest = "".join(f.message for f in held[1:])
    joined = replace(first, raw=(first.raw + rest).rstrip(),
                     clean=(first.clean + rest).rstrip(),
                     message=(first.message + rest).rstrip())
    ev = line_event(joined)
    if len(held) > 1:  # it owns every physical line; its first entry is the whole line
        ev.lines += [f.lineno for f in held[1:]]
        ev.raw += [f.raw for f in held[1:]]
        ev.clean += [f.clean for f in held[1:]]
        if ev.offsets:
            ev.offsets += [f.wrapped for f in held[1:]]
        ev.line_end = held[-1].lineno
        ev.fields["wrapped_lines"] = len(held)
    return ev


def _looks_like_exception(text: str) -> bool:
    """A bare `SomeError: message` line with no traceback (pasted fragment or logged)."""
    return bool(EXC_NAME.match(text))


def assemble(frames: Iterable[Frame]) -> Iterator[Event]:
    """Convenience wrapper for tests and small inputs."""
    asm = Assembler()
    for frame in frames:
        yield from asm.feed(frame)
    yield from asm.finish()
