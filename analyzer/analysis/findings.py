"""Turn events into findings: every line that states an error, a consequence or a benign warning.

Recognition is data (signatures); this module only applies it, and adds what the structure of
a block tells: in a traceback only the originating exception can be a cause, the rest of the
block is context or consequence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from analyzer.knowledge import Knowledge, Signature
from analyzer.model import Event, bounded_int

SIGNAL_HANDLER = re.compile(r"(?:sig\w*_handler|signal_handler|_handler)$")
REPORT_BLOCKS = ("pyspy",)
# an unknown ERROR line that says it will carry on is not a stand-in for a crash
NON_FATAL_WORDS = re.compile(r"(?i)\b(?:retry|retrying|will retry|ignor(?:e|ed|ing)|skipping|"
                             r"fall(?:ing)? back|fallback|continuing)\b")
# "torch.OutOfMemoryError: ...", "OSError: [Errno 48] ..." on a line of its own
EXC_STATEMENT = re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt)"
                           r"(?:\([^)]{0,80}\))?: \S")
# a line of no known format (a native library's own print, a cut record) that states a failure
ERROR_WORDS = re.compile(r"(?:\b[Ee]rror\b|\bERROR\b|\b[Ff]atal\b|\bFATAL\b|\bfailed\b|"
                         r"\bFAILED\b|[Ss]egmentation fault|core dumped|[Oo]ut of memory|"
                         r"\btimed out\b|\b[Aa]borted\b|\bpanic(?:ked)?\b)")
NOT_AN_ERROR = re.compile(r"(?i)(?:\bno errors?\b|\b0 errors?\b|errors?[=:]\s*0\b|"
                          r"\bwithout errors?\b|\bif (?:it )?fail|\bwarn(?:ing)?\b|"
                          # advice, not an event: "If you get `CUDA error: ...` errors, ..."
                          r"^\s*if (?:you|this|the|it)\b|"
                          r"deprecat|^\s*(?:#|//|\$ |>>> )|error_?(?:rate|handling|msg|code)\b)")
# words that say something went wrong, for a line just before a traceback cut off early
TROUBLE_WORDS = re.compile(r"(?i)(?:\berror\b|\bfatal\b|\bfail(?:ed|ure|s)?\b|timed out|"
                           r"\btime ?out\b|out of memory|\boom\b|\bkilled\b|refused|"
                           r"\bunable to\b|\bcannot\b|\bcan't\b|abort|exception|"
                           r"segmentation fault)")
# a record whose message is only a traceback's decoration ("           ^^^^^^^^^^"): the
# remnant of a traceback the paste cut, never a statement of its own
DECORATION = re.compile(r"\s*[\^~\-=*|]+\s*$")
# a frame or source line of a traceback logged one record per line whose head was cut
# ("ERROR ... [core.py:710]     raise RuntimeError("): it echoes code, it states nothing
SOURCE_ECHO = re.compile(r"\s{2,}(?:File \"[^\"]*\", line \d+|"
                         r"(?:raise|return|await|yield|assert)\b)")
LEXICAL_TIER = 4  # read only by the last resort: when nothing else says the job failed
# ... unless it says the retries ran out
GAVE_UP = re.compile(r"(?i)\b(?:exceeded|exhausted|giving up|gave up|max(?:imum)? retries|"
                     r"no more retries|retries left: 0)\b")


def carries_on(message: str) -> bool:
    """Whether a line says the program handles the problem and goes on."""
    return NON_FATAL_WORDS.search(message) is not None and GAVE_UP.search(message) is None


BLOCK_CATEGORY = {"native": "segfault", "faulthandler": "segfault"}
# systems whose WARN level is their error level (NCCL has no ERROR)
WARN_IS_ERROR = ("nccl",)


# a logger's level right before the traceback it prints ("ERROR:2025-12-25 23:46:30,691:")
LOGGED_TRACEBACK = re.compile(r"\s*(?:ERROR|CRITICAL|WARNING|error|Error)\b[^\n]{0,60}?[: \]]\s*"
                              r"Traceback \(most recent call last\)")


# an exception whose message is only a heading: what went wrong is on the message's next
# line (dynamo's "BackendCompilerFailed: backend='inductor' raised:" then the backend's own
# exception; pydantic's "ValidationError: 1 validation error for VllmConfig" then the field's
# error)
HEADING_MESSAGE = re.compile(r"(?:Error|Exception|Failed)\b:? .*(?:\braised:|"
                             r"\b\d+ validation errors? for [\w.]+)\s*$")
# ... or any exception message that is a phrase ending in a colon and no sentence before it
# ("Exception: 2 errors happen:", "RuntimeError: Critical error when building pipeline:"):
# the list or the cause it announces follows. A sentence then "Reasons:" has stated the error
# already, and triton's "CompilationError: at 322:24:" is a source position, not a heading.
HEADING_PHRASE = re.compile(r"(?:Error|Exception)\w*: (?:(?!\. )[^\n])*[A-Za-z)]:\s*$")
# a message line that itself introduces the next one (DALI's "... encountered:")
INTRODUCES_NEXT = re.compile(r"[A-Za-z)]:\s*$")
# torch's ExceptionWrapper.reraise(): DataParallel replicas and DataLoader workers
TORCH_REWRAP = re.compile(r"Caught \w+ in (?:replica \d+ on device \d+|DataLoader worker "
                          r"process \d+)\.$")


@dataclass
class Finding:
    """One line that matters for the verdict, with what we know about it."""

    line: int
    text: str  # as in the file
    clean: str
    kind: str  # failure | symptom | benign | error (unclassified error-level line)
    tier: int
    sig: Signature | None = None
    category: str | None = None
    groups: dict[str, str] = field(default_factory=dict)
    rank: int | None = None
    process: str | None = None
    timestamp: str | None = None
    role: str | None = None  # statement | chained | context | handler, inside a block
    block: int | None = None  # index of the block event it belongs to
    reason: str | None = None
    source: str = ""
    resolved: bool = False
    event_kind: str = ""
    seq: int = 0  # global order across inputs (file index, line)
    frames: list[str] = field(default_factory=list)  # "file:function" of the statement's stack
    rank_source: str | None = None  # None: a prefix; "message": the text; "device": local GPU;
    # "local": a launcher's local_rank
    block_start: int | None = None  # first line of the block the finding belongs to
    level: str | None = None  # the record's level, where its format says
    system: str = ""  # the writer's system (NCCL's WARN is its error level: WARN_IS_ERROR)
    container: str | None = None  # the compose service / pod a wrapper names
    pid: int | None = None  # the writer's pid, where a wrapper or head names it
    ordinary_before: int = 0  # ordinary lines of the input before it (see Analyzer._went_on)
    logged: bool = False  # a traceback the program's logger printed (a level on its first
    # line, "ERROR:...:Traceback ..."): the code caught the exception and reported it
    block_end: int | None = None  # last line of the block the finding belongs to
    detail: tuple[int, str] | None = None  # (line, text): the statement's own reason, stated
    # further down the same message (NCCL's "Last error:" line)
    before: tuple[int, str, str | None, int | None, str | None] | None = None  # the last
    # ordinary line before this one (line, text, timestamp, rank, process): where a job that
    # the user interrupted had stopped
    stamped: bool = False  # its timestamp is its own line's (a head or a wrapper), not inherited

    @property
    def sig_id(self) -> str | None:
        return self.sig.id if self.sig else None


def _base(ev: Event, i: int, **kw: Any) -> Finding:
    f = Finding(line=ev.lines[i], text=ev.raw[i], clean=ev.clean[i],
                rank=ev.rank_number(), process=ev.process, timestamp=ev.timestamp,
                source=ev.source, event_kind=ev.kind, level=ev.level, pid=ev.pid,
                system=ev.system, container=ev.container,
                block_start=ev.line_start if len(ev.lines) > 1 and "wrapped_lines" not in
                ev.fields else None, **kw)  # (a hard-wrapped record is one line, not a block)
    _rank_from_groups(f, ev)
    return f


# "mpirun noticed that process rank 1 with PID 0 on node n14 exited on signal 11",
# "global rank 3 exited", "[Rank 5] ...": the rank a generic error line is about
RANK_IN_TEXT = re.compile(r"\b(?:process|global) rank (\d+)\b|\[Rank (\d+)\]|"
                          r"\bwas aborted on rank (\d+)\b")


def _rank_from_groups(f: Finding, ev: Event) -> None:
    """Where no prefix named the rank, use what the line itself says (a `rank` group), else
    the local GPU it names (NCCL's [dev], "GPU 3 has a total capacity"), flagged as such."""
    g = f.groups
    for key in ("rank", "rank_a", "from_rank"):  # the line names the rank it is about
        if _small(g.get(key)):
            f.rank, f.rank_source = bounded_int(g[key]), "message"
            return
    if f.rank is not None:
        return
    # a line that says whose process it was (a launcher's "process rank 1", torch's own
    # "[Rank 7]" and "communicator was aborted on rank 1"), known to a signature or not
    m = RANK_IN_TEXT.search(f.clean)
    number = next((x for x in m.groups() if x), None) if m is not None else None
    if _small(number):
        f.rank, f.rank_source = bounded_int(number), "message"
        return
    for value in (g.get("gpu"), g.get("device"), ev.fields.get("device")):
        if _small(value):
            f.rank, f.rank_source = bounded_int(str(value)), "device"
            return
    if _small(g.get("local_rank")):  # a launcher's "local_rank: 3": the node's rank
        f.rank, f.rank_source = bounded_int(g["local_rank"]), "local"
        return


def _small(value: object) -> bool:
    """A number a rank can be (a few digits): an absurd one in a line is not a rank."""
    text = str(value) if value is not None else ""
    return text.isdigit() and len(text) <= 9


def _merged(hits: list[tuple[Signature, dict[str, str]]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for _sig, groups in hits:
        for k, v in groups.items():
            out.setdefault(k, v)
    return out


def best(hits: list[tuple[Signature, dict[str, str]]]) -> tuple[Signature, dict[str, str]] | None:
    """The one signature that describes a line: benign knowledge wins, then specificity."""
    if not hits:
        return None
    benign = [h for h in hits if h[0].kind == "benign"]
    if benign:
        return benign[0]
    return sorted(hits, key=lambda h: (-h[0].priority, h[0].tier, -len(h[0].pattern.pattern)))[0]


# a sentence that names an error as a hypothesis, to advise: "If you get `CUDA error:
# invalid device function` errors, the above might be the cause" (bitsandbytes' setup)
ADVICE = re.compile(r"\s*If (?:you|this|the|it)\b.{0,80}\berrors?\b.{0,40}(?:might|may|could|,)")


def line_findings(ev: Event, knowledge: Knowledge) -> list[Finding]:
    """Findings of a single-line event."""
    if ev.kind == "plain" and ADVICE.match(ev.message):
        return []
    hits = knowledge.match(ev.clean[0], ev.offset(0))
    hit = best(hits)
    if hit is not None:
        sig, _groups = hit
        f = _base(ev, 0, kind=sig.kind, tier=sig.tier, sig=sig, category=sig.category,
                  groups=_merged(hits))
        quiet = ev.level in ("warning", "info", "debug") and ev.system not in WARN_IS_ERROR
        if f.tier == 1 and quiet:
            if ev.level != "warning" or carries_on(ev.message):
                f.kind, f.tier = "nonfatal", 8
                goes_on = " and it says the program carries on" if ev.level == "warning" else ""
                f.reason = f"logged at {str(ev.level).upper()} level{goes_on}: reported, not fatal"
            else:
                f.tier = 2
                f.reason = "logged at WARNING level: a stand-in only when no error is stated"
        elif f.tier == 2 and sig.kind == "symptom" and carries_on(ev.message):
            f.kind, f.tier = "nonfatal", 8  # "... falling back to ...": it carried on
            f.reason = "the line says the program carries on (falls back, retries, ignores)"
        return [f]
    body = ev.clean[0][ev.offset(0):]
    if ev.kind == "plain" and ev.level is None and EXC_STATEMENT.match(body):
        return [_base(ev, 0, kind="error", tier=3 if carries_on(body) else 2, category="other",
                      reason="a Python exception statement printed without its traceback "
                             "(a rich-rendered traceback, or a paste of its last line)")]
    if ev.kind == "plain" and ev.level is None and ERROR_WORDS.search(body) \
            and not NOT_AN_ERROR.search(body):
        return [_base(ev, 0, kind="error", tier=LEXICAL_TIER, category="other",
                      reason="a line of no known format that says something failed")]
    if ev.level in ("error", "critical") and ev.message.strip() \
            and not DECORATION.match(ev.message) and not SOURCE_ECHO.match(ev.message):
        recoverable = carries_on(ev.message)
        return [_base(ev, 0, kind="error", tier=3 if recoverable else 2, category="other",
                      reason="an error-level log line that no signature knows"
                      + (" (it says the program carries on)" if recoverable else ""))]
    return []


def block_findings(ev: Event, index: int, knowledge: Knowledge) -> list[Finding]:
    """Findings of a multi-line block (traceback, faulthandler dump, C++ abort, backtrace)."""
    fields = ev.fields
    stmt_line = fields.get("statement_line")
    stmt_i = ev.lines.index(stmt_line) if stmt_line in ev.lines else None
    if ev.kind in REPORT_BLOCKS or (ev.kind == "faulthandler" and not fields.get("error")):
        # a state dump states no error of its own: py-spy, or faulthandler's stacks without
        # a "Fatal Python error:" header (faulthandler.register(SIGTERM) on a worker being
        # stopped, dump_traceback_later): its header is never the root cause
        stmt_i = None
    in_handler = bool(fields.get("signal_handler_frames")) or bool(fields.get("logging_error"))
    section_end = _statement_section_end(ev, stmt_i)
    out: list[Finding] = []
    stmt_hits: list[tuple[Signature, dict[str, str]]] = []
    said_at: dict[str, int] = {}  # signature id -> first line of the message that matched it
    on_stmt_line: set[str] = set()  # signature ids the statement line itself matches
    why_hits: list[tuple[int, tuple[Signature, dict[str, str]]]] = []  # failures that explain
    for i in range(len(ev.lines)):
        hits = knowledge.match(ev.clean[i], ev.offset(i))
        if stmt_i is not None and stmt_i <= i < section_end:
            # the message's later lines may say why (a failure signature), but a symptom
            # they match (c10's "Exception raised from ... (most recent call first):" that
            # opens the C++ frames of a DistBackendError) does not make the statement one
            stmt_hits.extend(h for h in hits if h[0].kind != "benign"
                             and (i == stmt_i or h[0].kind != "symptom"))
            for h in hits:
                said_at.setdefault(h[0].id, i)
            if i == stmt_i:
                on_stmt_line.update(h[0].id for h in hits)
                continue
        hit = best(hits)
        if hit is None or hit[0].kind == "benign":
            continue
        sig_i, groups = hit
        if sig_i.explains and sig_i.kind == "failure":
            why_hits.append((i, hit))
        role = "chained" if stmt_i is not None and i > section_end else "context"
        out.append(_base(ev, i, kind="symptom", tier=3, sig=sig_i, category=sig_i.category,
                         groups=groups, role=role, block=index,
                         reason=_block_reason(role, in_handler)))
    if ev.kind == "logging_error" and stmt_i != 0:
        out.append(_base(ev, 0, kind="symptom", tier=3, role="handler", block=index,
                         reason="logging failed while emitting a record (often because a signal "
                                "handler interrupted it): a symptom, not a cause"))
    if stmt_i is None:
        return out
    hit = best(stmt_hits) if stmt_hits else None
    sig = hit[0] if hit else None
    groups = _merged(stmt_hits)
    if sig is not None and sig.kind == "benign":
        sig = None
    kind, tier = ("failure", 1) if sig is None else (sig.kind, sig.tier)
    category = sig.category if sig is not None else BLOCK_CATEGORY.get(ev.kind, "other")
    if ev.kind in ("cpp_abort", "native") and sig is None:
        kind, tier = "symptom", 2  # a native frame or abort banner: only a stand-in
    at = stmt_i
    if sig is not None and said_at.get(sig.id, stmt_i) != stmt_i and (
            any(x in sig.explains for x in on_stmt_line)  # the message goes on to say why
            or (not on_stmt_line and sig.kind == "failure")):  # a generic line, then the why
        at = said_at[sig.id]
    why = next(((i, h) for i, h in why_hits if sig is not None and i != at
                and (sig.id in h[0].explains or (sig.category or "") in h[0].explains)), None)
    if why is not None:  # a later part of the block (a chained exception's message: the
        # compiler output a RuntimeError quotes) says why the statement failed
        at, (sig, groups) = why[0], why[1]
        kind, tier, category = sig.kind, sig.tier, sig.category or category
    # (the NCCL "Last error:" detail belongs to the statement; a why found elsewhere in the
    # block, another rank's OOM in an interleaved stream, replaces both)
    detail = _nccl_last_error(ev, stmt_i, section_end) if why is None else None
    if detail is not None:
        at = stmt_i  # the message is stated on its first line; the reason is its detail
    elif at == stmt_i and sig is None and (HEADING_MESSAGE.search(ev.clean[stmt_i])
                                           or HEADING_PHRASE.search(ev.clean[stmt_i])):
        at = _stated_after_heading(ev, stmt_i, section_end)
    rewrapped = bool(TORCH_REWRAP.search(ev.clean[stmt_i]))
    if rewrapped:
        kind, tier = "symptom", 3  # the worker's own traceback follows, and states it
    f = _base(ev, at, kind=kind, tier=tier, sig=sig, category=category, groups=groups,
              role="statement", block=index)
    if rewrapped:
        f.reason = ("torch re-raises a worker's exception (ExceptionWrapper); the \"Original "
                    "Traceback\" that follows states it where it happened")
    if detail is not None:
        f.detail = (ev.lines[detail], ev.raw[detail])
    f.block_end = ev.line_end
    opening = ev.clean[0][ev.offset(0):]
    f.logged = ev.kind == "traceback" and bool(LOGGED_TRACEBACK.match(opening))
    f.frames = stack_of(ev)
    if ev.level in ("warning", "info", "debug") and f.tier <= 2:
        f.kind, f.tier = "nonfatal", 8
        f.reason = (f"logged at {ev.level.upper()} level: the program reported it and went on")
    if in_handler and not (sig is not None and sig.ends and fields.get("signal_handler_frames")):
        # (a stop raised by a signal handler, vLLM's KeyboardInterrupt("terminated") on
        # SIGTERM, is how the stop arrives, not a bystander: the stop rules read it)
        f.kind, f.tier, f.role = "symptom", 3, "handler"
        f.reason = ("raised inside a signal handler or while logging: the interrupted code is a "
                    "bystander of an earlier failure")
    out.append(f)
    out.extend(_chained_exceptions(ev, index, stmt_i, section_end, in_handler))
    return out



def _stated_after_heading(ev: Event, stmt_i: int, section_end: int) -> int:
    """The line of a heading-only message that states the error: pydantic's first error
    ("  Value error, ... [type=value_error, ...]", after the field's name when there is one),
    else the next line with text (what dynamo's backend raised)."""
    rest = [k for k in range(stmt_i + 1, min(section_end, len(ev.clean)))
            if ev.clean[k][ev.offset(k):].strip()]
    if "validation error" in ev.clean[stmt_i]:
        return next((k for k in rest if "[type=" in ev.clean[k]), stmt_i)
    for at in rest[:-1]:  # a heading may announce another heading
        if not INTRODUCES_NEXT.search(ev.clean[at]):
            return at
    return rest[-1] if rest else stmt_i


def _nccl_last_error(ev: Event, stmt_i: int, section_end: int) -> int | None:
    """The line after "Last error:" in an NCCL exception's message: NCCL's copy of the WARN
    that says why. One documented rule: the error is *stated* on the message's first line
    (where the corpus labels put it, 5 of 6), and this reason is shown as that statement's
    detail, the same event, not a second cause or a symptom."""
    for k in range(stmt_i + 1, min(section_end, len(ev.clean)) - 1):
        if ev.clean[k][ev.offset(k):].strip() == "Last error:" and \
                ev.clean[k + 1][ev.offset(k + 1):].strip():
            return k + 1
    return None


def stack_of(ev: Event) -> list[str]:
    """Function names on the stack of the whole block, outermost first."""
    out: list[str] = []
    for sec in ev.fields.get("sections", []):
        out.extend(f"{fr.get('file', '')}:{fr.get('func', '')}" for fr in sec.get("frames", []))
    for th in ev.fields.get("threads", []):
        if th.get("current"):
            out.extend(f"{fr.get('file', '')}:{fr.get('func', '')}"
                       for fr in reversed(th.get("frames", [])))
    for fr in ev.fields.get("frames", []):
        if isinstance(fr, dict) and fr.get("func"):
            out.append(str(fr["func"]))
    return out


CARETS = re.compile(r"\s*[\^~]{3,}\s*")  # after the line's wrappers


def _statement_section_end(ev: Event, stmt_i: int | None) -> int:
    """Index after the last line of the statement's own message: before a chain separator, a
    blank line, or a line no message has, which only a traceback prints: a caret line under
    source code, a new "Traceback (most recent call last):" (the tracebacks of ranks that
    share a stream without prefixes interleave, and another rank's error is not this one's
    explanation)."""
    if stmt_i is None:
        return 0
    for i in range(stmt_i + 1, len(ev.clean)):
        text = ev.clean[i]
        if not text.strip() or "The above exception" in text or "During handling" in text \
                or CARETS.fullmatch(text, ev.offset(i)) \
                or "Traceback (most recent call last)" in text:
            return i
    return len(ev.clean)


def _chained_exceptions(ev: Event, index: int, stmt_i: int, section_end: int,
                        in_handler: bool) -> list[Finding]:
    out = []
    for sec in ev.fields.get("sections", [])[1:]:
        i = sec.get("exc_index")
        if not isinstance(i, int) or i <= stmt_i or i >= len(ev.lines) or i < section_end:
            continue
        relation = sec.get("relation")
        reason = ("wraps the exception above (raise ... from)" if relation == "cause" else
                  "raised while handling the exception above")
        out.append(_base(ev, i, kind="symptom", tier=3, role="chained", block=index,
                         reason=reason if not in_handler else _block_reason("chained", True)))
    return out


def _block_reason(role: str, in_handler: bool) -> str:
    if in_handler:
        return "part of an error raised while handling or reporting another error"
    if role == "chained":
        return "later exception in the same chain: a consequence of the first one"
    return "context of the error stated in the same block"
