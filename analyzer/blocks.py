"""Stage 3: frames -> events, assembling multi-line blocks per emitting process.

Ranks write to one file at once, so a traceback from TP3 can be interleaved line by line with
TP5's. Each open block is keyed by who wrote it (the wrappers' identity, plus the repeated
vLLM record head), so lines from other writers pass through without breaking it. Events leave
in line order (a small reorder buffer holds single lines while an earlier block is open).
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable, Iterator
from typing import Any

from . import structure
from .model import Event, Frame

TRACEBACK_HEAD = "Traceback (most recent call last):"
FRAME = re.compile(r'^\s*(?:\|\s*)*File "[^"]*", line \d+')
MARKER = re.compile(r"^\s*[\^~]+\s*$")
REPEATED = re.compile(r"^\s*\[Previous line repeated \d+ more times?\]")
CHAIN = re.compile(r"^\s*(The above exception was the direct cause of the following exception:|"
                   r"During handling of the above exception, another exception occurred:)\s*$")
EXC_LINE = re.compile(r"^(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:\([\w.]+\))?(?::(?: .*)?)?$")
GROUP_MARGIN = re.compile(r"^\s*[|+][ -]")
FAULT_START = "Fatal Python error:"
FAULT_CONT = re.compile(r'^\s*(?:(?:Current thread|Thread) 0x[0-9a-fA-F]+ \(most recent call first\):'
                        r'|File "[^"]*", line \d+ in |<no Python frame>|Extension modules:'
                        r'|Python runtime state:|Timeout \(\d+:\d\d:\d\d\)!|\.\.\.)')
CPP_START = "terminate called after throwing an instance of"
CPP_CONT = re.compile(r"^\s*(?:what\(\):|Exception raised from|frame #\d+:|\S.*\(most recent call "
                      r"first\):)")
NATIVE_START = re.compile(r"^\s*=+ backtrace \(tid:\s*\d+\) =+\s*$")
NATIVE_CONT = re.compile(r"^\s*(?:\d+\s+0x[0-9a-fA-F]+\s|=+\s*$)")
LOGGING_ERROR = "--- Logging error ---"
LOGGING_CONT = re.compile(r"^(?:Call stack:|Message: |Arguments: |Logged from file |Unable to print "
                          r"the message|Use the traceback above)")
MAX_MESSAGE_LINES = 60
PROGRESS = re.compile(
    r"(?P<desc>[^\r|]*?):?\s*(?P<pct>\d{1,3})%(?: Completed \||\|[^|]*\|)\s*(?P<n>\d+)/(?P<total>\d+)"
    r"(?: \[(?P<elapsed>[\d:]+)(?:<(?P<remaining>[\d:?]+))?(?:, (?P<rate>[^\]]*))?\]?)?"
)
ACCESS = re.compile(r'^(?P<client>\S+) - "(?P<request>[A-Z]+ \S+ [^"]*)" (?P<status>\d{3})')
IDENTITY_KINDS = ("compose", "journald", "mpirun", "process", "rank", "pdsh")


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
    """An open multi-line block (traceback, faulthandler dump, C++ abort, native backtrace)."""

    def __init__(self, kind: str, key: tuple[str, ...], first: Frame, body: str) -> None:
        self.kind = kind
        self.key = key
        self.frames = [first]
        self.bodies = [body]
        self.state = "frames" if kind != "traceback" or TRACEBACK_HEAD in body else "frames"
        if kind == "traceback" and EXC_LINE.match(body.strip()) and not FRAME.match(body):
            self.state = "message"
        self.pending: list[tuple[Frame, str]] = []  # blank lines that may still belong
        self.message_lines = 0
        self.last_was_frame = bool(FRAME.match(body))

    @property
    def start(self) -> int:
        return self.frames[0].lineno

    def offer(self, frame: Frame, body: str) -> bool:
        """Take the line if it continues this block."""
        if not body.strip():
            if len(self.pending) < 2:
                self.pending.append((frame, body))
                return True
            return False
        accepted = self._accepts(body)
        if accepted:
            self.frames.extend(f for f, _ in self.pending)
            self.bodies.extend(b for _, b in self.pending)
            self.pending.clear()
            self.frames.append(frame)
            self.bodies.append(body)
        return accepted

    def _accepts(self, body: str) -> bool:  # noqa: PLR0911 - a small state machine
        stripped = body.strip()
        if self.kind == "faulthandler":
            return bool(FAULT_CONT.match(body)) or (self.pending == [] and body.startswith("  "))
        if self.kind == "cpp_abort":
            return bool(CPP_CONT.match(body)) and not self.pending
        if self.kind == "native":
            return bool(NATIVE_CONT.match(body)) and not self.pending
        # tracebacks (and logging-error blocks, which contain one)
        is_frame = bool(FRAME.match(body))
        if CHAIN.match(body):
            self.state, self.last_was_frame = "chain", False
            return True
        if TRACEBACK_HEAD in body:
            if self.state in ("chain", "logging") or self.kind == "logging_error":
                self.state, self.last_was_frame = "frames", False
                return True
            return False
        if self.pending and self.state != "chain":
            return False  # a blank line ended the block
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
        fields = _block_fields(self.kind, self.bodies, self.frames)
        first = self.frames[0]
        ev = _event_from_frame(first, self.kind, self.bodies[0])
        ev.line_end = self.frames[-1].lineno
        ev.lines = [f.lineno for f in self.frames]
        ev.raw = [f.raw for f in self.frames]
        ev.clean = [f.clean for f in self.frames]
        ev.fields = fields
        ev.level = ev.level or ("critical" if self.kind in ("faulthandler", "cpp_abort", "native")
                                else "error")
        if ev.system == "other" or (self.kind == "traceback" and ev.system == "sglang"
                                    and first.head is None):
            ev.system = "python" if self.kind in ("traceback", "logging_error",
                                                  "faulthandler") else "torch"
        stmt = fields.get("statement_index")
        if isinstance(stmt, int) and 0 <= stmt < len(self.frames):
            fields["statement_line"] = self.frames[stmt].lineno
            ev.message = self.bodies[stmt].strip()
        else:
            ev.message = self.bodies[0].strip()
        return ev, leftover


def _starts_block(body: str) -> str | None:
    """Which block kind (if any) this line opens."""
    if TRACEBACK_HEAD in body:
        return "traceback"
    if FAULT_START in body:
        return "faulthandler"
    if CPP_START in body:
        return "cpp_abort"
    if LOGGING_ERROR in body:
        return "logging_error"
    if NATIVE_START.match(body):
        return "native"
    if FRAME.match(body) and " in " in body:
        return "traceback"  # a pasted fragment that starts at a frame
    return None


def _block_fields(kind: str, bodies: list[str], frames: list[Frame]) -> dict[str, Any]:
    if kind in ("traceback", "logging_error"):
        start = next((i for i, b in enumerate(bodies) if TRACEBACK_HEAD in b), None)
        lines = list(bodies)
        if start is not None:
            lines[start] = TRACEBACK_HEAD
        fields = structure.parse_traceback(lines)
        if kind == "logging_error":
            fields["logging_error"] = True
        summary_at = next((i for i, b in enumerate(bodies) if "ChildFailedError" in b), None)
        if summary_at is not None:
            fields["elastic"] = structure.parse_elastic_summary(bodies[summary_at + 1:])
        return fields
    if kind == "faulthandler":
        fh = structure.parse_faulthandler([b[b.find(FAULT_START):] if FAULT_START in b else b
                                           for b in bodies])
        fh["statement_index"] = 0
        return fh
    if kind == "cpp_abort":
        cpp = structure.parse_cpp_abort(bodies)
        cpp["statement_index"] = 0
        return cpp
    if kind == "native":
        nat = structure.parse_native_backtrace(bodies)
        crash = nat.get("crash_index")
        nat["statement_index"] = crash if isinstance(crash, int) else 0
        return nat
    return {}


def _event_from_frame(frame: Frame, kind: str, message: str) -> Event:
    head = frame.head
    system = head.system if head is not None else "other"
    if system == "other" and frame.process and frame.process.startswith(
            ("VllmWorker", "Worker", "EngineCore", "APIServer", "RayWorkerWrapper")):
        system = "vllm"
    if system == "other" and "global" in frame.rank and frame.prefixes:
        system = "torch"
    return Event(
        line_start=frame.lineno, line_end=frame.lineno, kind=kind, system=system,
        message=message, timestamp=head.timestamp if head else None,
        process=frame.process, rank=dict(frame.rank),
        level=head.level if head else None,
        lines=[frame.lineno], raw=[frame.raw], clean=[frame.clean],
    )


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
    progress = [m.groupdict() for s in states if (m := PROGRESS.search(s))]
    if progress:
        kind = "progress"
        last = progress[-1]
        fields.update(desc=(last["desc"] or "").strip(), n=int(last["n"]),
                      total=int(last["total"]), percent=int(last["pct"]),
                      elapsed=last["elapsed"], remaining=last["remaining"], rate=last["rate"])
        if len(progress) > 1:
            fields["states"] = [{"desc": (p["desc"] or "").strip(), "n": int(p["n"]),
                                 "total": int(p["total"])} for p in progress]
    if "server_args=ServerArgs(" in msg:
        kind = "config"
        fields["server_args"] = structure.parse_server_args(msg[msg.index("ServerArgs("):])
    elif msg.startswith(("args: Namespace(", "non-default args: {")):
        kind = "config"
        fields["args"] = structure.parse_server_args(msg[msg.index(" ", 5) + 1:])
    if "WorkNCCL(" in msg:
        fields["work"] = structure.parse_worknccl(msg[msg.index("WorkNCCL("):])
    if frame.prefixes:
        fields["prefixes"] = [{"kind": p.kind, "text": p.text} for p in frame.prefixes]
    ev = _event_from_frame(frame, kind, msg)
    ev.fields = fields
    if ev.system == "other" and kind == "progress":
        ev.system = "python"
    return ev


class Assembler:
    """Feeds frames in, yields events in line order."""

    def __init__(self) -> None:
        self.open: dict[tuple[str, ...], Block] = {}
        self._heap: list[tuple[int, int, Event]] = []
        self._seq = 0

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
        body = frame.message
        key = continuation_key(frame)
        if key is not None and key in self.open:
            if self.open[key].offer(frame, body):
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
            self.open[block_key] = Block(kind, block_key, frame, body)
        elif key is not None and not body.strip() is False and EXC_LINE.match(body.strip()) \
                and _looks_like_exception(body.strip()):
            block_key = key
            if block_key in self.open:
                self._close(block_key)
            self.open[block_key] = Block("traceback", block_key, frame, body)
        else:
            self._push(line_event(frame))
        yield from self._release()

    def finish(self) -> Iterator[Event]:
        """Close every open block and flush."""
        for key in sorted(self.open, key=lambda k: self.open[k].start):
            self._close(key)
        while self._heap:
            yield heapq.heappop(self._heap)[2]


EXC_NAME = re.compile(r"^(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*?(?:Error|Exception|Exit|Interrupt|Fault|"
                      r"Timeout|Failure))(?:\([\w.]+\))?(?::|$)")


def _looks_like_exception(text: str) -> bool:
    """A bare `SomeError: message` line with no traceback (pasted fragment or logged)."""
    return bool(EXC_NAME.match(text))


def assemble(frames: Iterable[Frame]) -> Iterator[Event]:
    """Convenience wrapper for tests and small inputs."""
    asm = Assembler()
    for frame in frames:
        yield from asm.feed(frame)
    yield from asm.finish()
