"""The streaming analyzer: feed events, get the verdict, the cascade and the timeline.

It keeps only what the verdict needs (findings, phase spans, per-rank last activity, a few
counters), never the ordinary lines themselves, so memory does not follow file size.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from analyzer.analysis.causality import (
    RULES,
    Context,
    candidates,
    choose_root,
    confidence,
    last_resort,
    survived,
    symptom_reason,
)
from analyzer.analysis.findings import (
    DECORATION,
    LEXICAL_TIER,
    TROUBLE_WORDS,
    WARN_IS_ERROR,
    Finding,
    block_findings,
    line_findings,
    stack_of,
)
from analyzer.analysis.phases import PhaseTracker
from analyzer.knowledge import Knowledge
from analyzer.model import Event, bounded_int
from analyzer.parse.blocks import TRACEBACK_HEAD, parse_progress
from analyzer.parse.timestamps import seconds_between

BLOCK_KINDS = ("traceback", "faulthandler", "cpp_abort", "native", "logging_error", "pyspy")
MAX_SYMPTOMS = 500
MAX_WARNINGS = 200
MAX_BLOCK_PHASES = 1000
ELASTIC_ENTRY_GAP = 4  # lines between an elastic root entry's head and its quoted traceback
NEAR_LINES = 200
CUT_WINDOW = 8  # lines before a cut-off traceback that may state its error
WENT_ON_LINES = 10  # ordinary lines after an unknown error line: the job went on
PROGRESS_WINDOW = 8  # lines before an interrupt that may show the job still making progress
HANG_PHASES = ("dist_init",)
ORDINARY_KINDS = ("plain", "log", "progress", "access")
SILENCE_BEFORE_STOP = 600  # s without a line before a kill from outside: the job hung
IGNORED_MARKERS = ("python.exception_ignored",)
# a writer's tag at the start of a line: Ray's "(Worker pid=12)", vLLM's "(VllmWorker pid=12)"
WRITER_TAG = re.compile(r"\s*(?:\x1b\[[\d;]*m)?\((?:[\w.:\-]{1,60} )?pid=(\d{1,9})[,)]")
# a process's last words are not a sign that it went on
TEARDOWN_WORDS = re.compile(r"(?i)shut|exit|terminat|kill|destroy|clean|stop|abort|signal|"
                            r"dead|died|fail|closing|finaliz")
# words of the systems loglens reads, in any line: without one (and without a marker or a
# finding) the input is foreign text. One pattern for Python's re and polars' Rust regex.
KNOWN_TEXT = (r"(?i:\b(?:py)?torch|\bcuda|\bnccl|\bvllm|\bsglang|\bdeepspeed|\bmegatron|"
              r"\bgpu\b|\branks?\b|\bray\b|\btraceback\b|\buvicorn\b)"
              # and the record heads of SGLang, vLLM, NCCL and c10/glog, whatever the words
              r"|\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? (?:TP|DP|PP|EP)\d"
              r"|(?:INFO|WARNING|ERROR|DEBUG) \d\d-\d\d \d\d:\d\d:\d\d"
              r"|NCCL (?:INFO|WARN)|[EWIF]\d{4} \d\d:\d\d:\d\d\.\d")
KNOWN_WORDS = re.compile(KNOWN_TEXT)
NCCL_COMM_RANK = re.compile(r"\bcomm 0x[0-9a-f]+ rank (\d+) n[Rr]anks \d+")
# vLLM's parallel_state: "rank 1 in world size 2 is assigned as DP rank 0, PP rank 0, TP rank 1"
# (each worker says it once, under its own "(VllmWorkerProcess pid=N)" / Ray prefix)
VLLM_WORLD_RANK = re.compile(r"\brank (\d+) in world size \d+ is assigned as ")
# NCCL's error-return trace, printed by NCCLCHECK on the way up from where a call failed:
# "NCCL INFO transport/shm.cc:634 -> 2" (the WARN just before the first of them said why)
NCCL_RETURN = re.compile(r"(?:^|NCCL INFO )\S+\.(?:cc|cu|h|c|cpp):\d+ -> \d+\b")
MAX_NCCL_RETURNS = 4096


@dataclass
class Analyzer:
    """Consumes events of one or more inputs (in order) and builds the explain report."""

    knowledge: Knowledge
    findings: list[Finding] = field(default_factory=list)
    events: int = 0
    skipped: int = 0  # ordinary lines the fast path counted without analysing
    plain_lines: int = 0
    blocks: int = 0
    config: dict[str, Any] = field(default_factory=dict)
    input_index: int = 0
    phases: PhaseTracker = field(init=False)
    warnings: dict[str, dict[str, Any]] = field(default_factory=dict)
    nccl_ranks: dict[str, int] = field(default_factory=dict)  # "host:pid" -> rank
    nccl_returns: list[tuple[str | None, int]] = field(default_factory=list)  # (process, line)
    nccl_inits: list[tuple[str, int]] = field(default_factory=list)  # (process, line) of
    # "comm 0x.. rank 3 nranks 8 ... - Init COMPLETE": that process's communicator came up
    known_events: int = 0  # lines that name a system loglens knows (KNOWN_TEXT), up to 1
    ordinary: int = 0  # ordinary lines so far (fed or skipped): did the job go on after a line?
    writer_lines: dict[tuple[str, int], int] = field(default_factory=dict)  # (source, pid) ->
    # the last ordinary line that writer printed: did the process go on after its error?
    _ignored_line: int = -10
    _elastic_root: tuple[int, int] | None = None  # (last line, rank) of an elastic root entry
    exit_line: int | None = None  # where a process first said it is leaving at exit
    _stack_prints: list[int] = field(default_factory=list)  # headless frames, no exception
    _prev: tuple[int, str, str | None, int | None, str | None] | None = None  # last ordinary line
    block_phases: list[tuple[int, str]] = field(default_factory=list)  # (line, phase from stack)
    _recent: deque[Finding | None] = field(  # the last lines before a block: trouble, or None
        default_factory=lambda: deque(maxlen=CUT_WINDOW))

    def __post_init__(self) -> None:
        self.phases = PhaseTracker(self.knowledge)

    def _elastic_entry_rank(self, ev: Event, found: list[Finding]) -> None:
        """torchelastic's summary names the failed rank, then quotes that worker's traceback
        under "traceback :" (a block of its own): the quoted error is that rank's."""
        root = (ev.fields.get("elastic") or {}).get("root_cause") or {}
        if isinstance(root.get("rank"), int):
            self._elastic_root = (ev.line_end, root["rank"])
        elif (self._elastic_root is not None
              and ev.clean[0][ev.offset(0):].lstrip().startswith("traceback :")
              and 0 < ev.line_start - self._elastic_root[0] <= ELASTIC_ENTRY_GAP):
            for f in found:
                if f.rank is None:
                    f.rank, f.rank_source = self._elastic_root[1], "message"

    def next_input(self) -> None:
        """Start the next file of a multi-file analysis."""
        self.input_index += 1

    def feed(self, ev: Event) -> None:
        """Take one event."""
        self.events += 1
        if not self.known_events and any(KNOWN_WORDS.search(r) for r in ev.raw):
            self.known_events += 1  # (by the text: the fast path tests its batches alike)
        if ev.kind == "plain" and ev.message.strip():
            self.plain_lines += len(ev.lines)
        self._nccl_rank(ev)
        self._nccl_return(ev)
        self._nccl_init(ev)
        if ev.kind == "config":
            for key in ("server_args", "args"):
                if isinstance(ev.fields.get(key), dict):
                    self.config.update(ev.fields[key])
        self.phases.feed(ev)
        if ev.kind in BLOCK_KINDS:
            self.blocks += 1
            hinted = self.knowledge.phase_from_frames(stack_of(ev))
            if hinted and len(self.block_phases) < MAX_BLOCK_PHASES:
                self.block_phases.append((ev.line_start, hinted))
            found = block_findings(ev, self.blocks, self.knowledge)
            self._elastic_entry_rank(ev, found)
        else:
            found = line_findings(ev, self.knowledge)
        ignored = ev.kind in BLOCK_KINDS and ev.line_start - 1 == self._ignored_line
        if ignored:
            for f in found:  # "Exception ignored in: ..." then the traceback Python ignored
                if f.role == "statement":
                    f.kind, f.tier = "nonfatal", 8
                    f.reason = "an exception Python reported as ignored (e.g. in __del__)"
        if not found and ev.kind in ORDINARY_KINDS and ev.message.strip():
            self.ordinary += 1  # (access lines too: the fast path counts them as it skips)
            if ev.pid is not None and ev.level not in ("error", "critical", "warning") \
                    and not TEARDOWN_WORDS.search(ev.message):
                self.writer_lines[(ev.source, ev.pid)] = ev.line_end
        if ev.kind == "traceback" and ev.fields.get("statement_line") is None and not ignored:
            found = found + self._cut_traceback(ev)  # (an ignored one cut short stays so)
        self._remember(ev)
        for f in found:
            f.seq = self.input_index * 10**12 + f.line
            f.ordinary_before = self.ordinary
            if f.sig is not None and f.sig.id in IGNORED_MARKERS:
                self._ignored_line = f.line
            if f.sig is not None and f.sig.at_exit and self.exit_line is None:
                self.exit_line = f.line  # a process leaves: warnings after it are teardown
            if f.kind == "benign" or (f.kind == "error" and ev.level == "warning"):
                self._warning(f, benign=True)
                continue
            if f.kind == "nonfatal":
                self._warning(f, benign=False)
                continue
            self.findings.append(f)
        if ev.level == "warning" and not found and ev.kind not in BLOCK_KINDS:
            self._warning_line(ev)
        stops = [f for f in found if f.sig is not None and f.sig.ends]
        for f in stops:
            f.before = self._prev
            f.stamped = ev.timestamp is not None and not ev.timestamp_inferred
        body = ev.clean[-1][ev.offset(len(ev.lines) - 1):].strip()
        if not stops and body and not body.startswith("^C"):
            self._prev = (ev.line_end, ev.raw[-1], ev.timestamp, ev.rank_number(), ev.process)

    def note_skipped(self, lineno: int, text: str, body: str) -> None:
        """An ordinary line the fast path counted without analysing (the last one of a run):
        the latest ordinary line, should the user interrupt the job after it."""
        if body.strip():
            self._prev = (lineno, text, None, None, None)

    def note_writer(self, source: str, lineno: int, text: str) -> None:
        """A line the fast path skipped (the first or last of a run), read only for its
        writer's tag: the ordinary output a process printed after its error."""
        m = WRITER_TAG.match(text)
        if m is not None and not TEARDOWN_WORDS.search(text):
            key = (source, bounded_int(m.group(1)))
            self.writer_lines[key] = max(self.writer_lines.get(key, 0), lineno)

    def note_ordinary(self, count: int, last_body: str) -> None:
        """Ordinary lines the fast path counted without analysing (`last_body`: the last
        one's record, as `_remember` reads it: a run of blank lines breaks nothing)."""
        self.ordinary += count
        if last_body.strip(" ()"):
            self._recent.append(None)

    def _remember(self, ev: Event) -> None:
        """Keep the last lines before a block: a line that says something went wrong (any
        level), or None for an ordinary one; blank lines change nothing."""
        if ev.kind in BLOCK_KINDS:
            self._recent.clear()
            return
        body = ev.clean[-1][ev.offset(len(ev.lines) - 1):]
        if not ev.message.strip() or not body.strip(" ()"):
            return
        if TROUBLE_WORDS.search(ev.message) and ev.level not in ("info", "debug"):
            self._recent.append(Finding(
                line=ev.line_start, text=ev.raw[0], clean=ev.clean[0], kind="symptom", tier=2,
                category="other", rank=ev.rank_number(), process=ev.process,
                timestamp=ev.timestamp, source=ev.source, level=ev.level, pid=ev.pid,
                event_kind=ev.kind, role="cut",
                reason="stated just before a traceback that was cut off before its exception "
                       "line: the nearest statement of what failed"))
        else:
            self._recent.append(None)

    def _cut_traceback(self, ev: Event) -> list[Finding]:
        """A traceback that ends without its exception line (a paste cut short, a log that
        stops mid-write) still says the program failed: the run of trouble lines just
        before it states what, and the earliest of them is the first statement."""
        run: list[Finding] = []
        for f in reversed(self._recent):
            if f is None:
                break
            run.append(f)
        if run:
            return [run[-1]]
        if not any(TRACEBACK_HEAD in text for text in ev.clean):
            self._stack_prints.append(ev.line_start)  # judged at the end: see _stack_print
        last = len(ev.lines) - 1  # its last line that says something (not a caret marker)
        while last > 0 and (not ev.clean[last][ev.offset(last):].strip()
                            or DECORATION.match(ev.clean[last][ev.offset(last):])):
            last -= 1
        return [Finding(line=ev.lines[last], text=ev.raw[last], clean=ev.clean[last],
                        kind="symptom", tier=2, category="other", rank=ev.rank_number(),
                        process=ev.process, timestamp=ev.timestamp, source=ev.source,
                        pid=ev.pid, frames=stack_of(ev),
                        event_kind=ev.kind, role="cut", block_start=ev.line_start,
                        reason="the last line of a traceback cut off before its exception "
                               "line: nothing before it says what failed")]

    def _nccl_return(self, ev: Event) -> None:
        """Where NCCL's error-return trace is ("init.cc:1248 -> 3"), by the text, not the
        parsed head: behind an unknown wrapper the head is not seen."""
        if " -> " in ev.message and NCCL_RETURN.search(ev.message) \
                and len(self.nccl_returns) < MAX_NCCL_RETURNS:
            self.nccl_returns.append((ev.process, ev.line_start))

    def _nccl_init(self, ev: Event) -> None:
        if ev.process and "Init COMPLETE" in ev.message \
                and len(self.nccl_inits) < MAX_NCCL_RETURNS:
            self.nccl_inits.append((ev.process, ev.line_start))

    def _nccl_rank(self, ev: Event) -> None:
        """A process's rank, told once by its own line: NCCL's comm init, vLLM's rank
        assignment; its later lines carry no rank of their own."""
        if not ev.process or " rank " not in ev.message:
            return
        if ev.system == "nccl":
            m = NCCL_COMM_RANK.search(ev.message)
            if m:
                self.nccl_ranks[ev.process] = bounded_int(m.group(1))
            return
        m = VLLM_WORLD_RANK.search(ev.message)
        if m:
            self.nccl_ranks.setdefault(ev.process, bounded_int(m.group(1)))

    def summarise(self, ev: Event) -> bool:
        """Take a line that is only a phase's begin/end marker without analysing it in full,
        where that changes nothing but the timeline's detail: the server was ready before it
        (the verdict no longer depends on open phases) and it repeats the phase its rank or
        process is already in (the phase at any later line stays the same). False: feed it.
        What later rules read is kept: the last activity, the NCCL rank of the process."""
        ph = self.phases
        if ph.ready_line is None or (ev.kind != "log" and ev.kind != "nccl"):
            return False
        key = ph.key(ev)
        spans = ph.spans.get(key)
        if not spans:
            return False
        hits = self.knowledge.markers_for(ev.clean[0], ev.offset(0), ev.message)
        if not hits or any(m.phase != spans[-1].phase or m.edge not in ("begin", "end")
                           or "done" in g for m, g in hits):
            return False
        ph.activity_line = ev.line_start
        ph.last_line[key] = (ev.line_end, ev.timestamp, ev.raw[-1])
        self._nccl_rank(ev)
        self._nccl_return(ev)
        self._nccl_init(ev)
        self.skipped += 1
        return True

    def _warning(self, f: Finding, benign: bool) -> None:
        key = f.sig_id or f.clean[:80]
        entry = self.warnings.get(key)
        if entry is None:
            self.warnings[key] = {"line": f.line, "text": f.text, "id": f.sig_id,
                                  "benign": benign, "count": 1}
        else:
            entry["count"] += 1

    def _warning_line(self, ev: Event) -> None:
        key = (ev.fields.get("site") or "") + ev.message[:60]
        entry = self.warnings.get(key)
        if entry is None:
            if len(self.warnings) < MAX_WARNINGS:
                self.warnings[key] = {"line": ev.line_start, "text": ev.raw[0], "id": None,
                                      "benign": False, "count": 1}
        else:
            entry["count"] += 1

    # -- verdict --------------------------------------------------------------------------
    def result(self) -> dict[str, Any]:
        """The verdict, root cause, cascade and timeline (the body of the JSON contract)."""
        findings = _dedupe(self.findings)
        for f in findings:  # NCCL lines carry the device; the comm init line told the rank
            if f.process in self.nccl_ranks and (f.rank is None or f.rank_source == "device"):
                f.rank, f.rank_source = self.nccl_ranks[f.process], "nccl comm"
        ph = self.phases
        single = self.input_index == 0
        self._stack_print(findings)
        ctx = Context(ready_line=ph.ready_line if single else None,
                      serving_line=ph.serving_line if single else None,
                      done_line=ph.done_line if single else None,
                      exit_line=self.exit_line if single else None,
                      writer_lines=self.writer_lines,
                      launch_lines=tuple(ph.launch_lines) if single else (),
                      nccl_returns=tuple(self.nccl_returns) if single else (),
                      nccl_inits=tuple(self.nccl_inits) if single else ())
        for rule in RULES:
            rule(findings, ctx)
        single_input = self.input_index == 0
        if single_input:
            for f in self._restarted_and_came_up(findings):
                self._warning(f, benign=False)
            for f in survived(findings, ph.alive_after, self._ready_after):
                self._warning(f, benign=False)
            for f in self._warned_and_went_on(findings):
                self._warning(f, benign=False)
        root = choose_root(findings, by_time=self.input_index > 0)
        if root is None and single_input:
            root = last_resort(findings, ph.alive_after,
                               lambda line: ph.ready_line is not None and ph.ready_line > line,
                               went_on=self._went_on,
                               ready=ph.ready_line is not None or ph.serving_line is not None)
        verdict = "crash"
        hang_from_silence = interrupted = False
        if root is not None and root.sig is not None and self._stopped_on_purpose(root):
            root.kind, root.tier = "nonfatal", 8  # stopped while it was making progress
            root.reason = ("stopped while it was making progress (its last lines before the "
                           + ("interrupt are steps or served requests): on purpose"
                              if root.sig.ends == "interrupt" else
                              "termination are served requests): a server's normal stop"))
            self._warning(root, benign=True)
            root = None  # it was chosen: nothing before it states an error
        if root is not None and root.sig is not None and (
                root.sig.ends == "interrupt" or self._stopped_after_silence(root)):
            root, verdict, hang_from_silence = self._interrupted(root), "hang", True
            interrupted = root.sig is None  # the hang's last line, not the interrupt itself
        if root is None:
            verdict, root, hang_from_silence = self._no_error_verdict()
        elif root.sig is not None and root.sig.verdict:
            verdict = root.sig.verdict
        elif root.category == "nccl_timeout" or (root.sig and "watchdog" in root.sig.id):
            verdict = "hang"
        symptoms = []
        if root is not None and (not hang_from_silence or interrupted):
            for f in findings:
                if f is root or (f.line == root.line and f.seq == root.seq):
                    continue
                if f.kind == "error" and (f.line < root.line or f.tier == LEXICAL_TIER):
                    continue
                symptoms.append({"line": f.line, "text": f.text, "rank": f.rank,
                                 "reason": symptom_reason(f, root), "signature": f.sig_id,
                                 **({"file": f.source} if self.input_index > 0 else {})})
        rivals = candidates(findings, root) if root is not None else []
        sure = confidence(root, rivals, from_silence=hang_from_silence) if root is not None \
            else None
        return {"verdict": verdict, "root": root, "symptoms": symptoms[:MAX_SYMPTOMS],
                "findings": findings, "candidates": rivals, "confidence": sure}

    def _stack_print(self, findings: list[Finding]) -> None:
        """Frames with neither a "Traceback (most recent call last):" header nor an exception
        line are a printed stack (a warning's "This call originates from:", logging's
        stack_info), not a traceback, unless the input ends there (a paste cut on both
        sides). So when the log went on after it, it states no failure."""
        starts = set(self._stack_prints)
        for f in findings:
            if f.role == "cut" and f.block_start in starts and self._went_on(f):
                f.kind, f.tier = "nonfatal", 8
                f.reason = ("a printed stack (frames with no traceback header and no exception "
                            "line) that the log went on after: not a failure")

    def _ready_after(self, f: Finding) -> bool:
        """Whether the server came up after `f`: when wrappers name containers, only a ready
        line of f's own container counts (another service's start-up excuses nothing)."""
        ph = self.phases
        if f.container is not None and ph.ready_containers:
            return ph.ready_again(f.line, f.container) is not None
        return ph.ready_line is not None and ph.ready_line > f.line

    def _restarted_and_came_up(self, findings: list[Finding]) -> list[Finding]:
        """Signal: a failure in a container (a compose service, a pod) that the same
        container's log later shows ready again. Why: its orchestrator restarted it and it
        came up; at the end of the log the service runs, so the failure is reported as one
        it recovered from, not as the state of the log. Example:
        vllm-docker-compose-dual-qwen35-awq-one-gpu-kv-cache-negative-container-restart-healthy."""
        out: list[Finding] = []
        for f in findings:
            if f.tier > 2 or f.resolved:
                continue
            again = self.phases.ready_again(f.line, f.container)
            if again is None:
                continue
            f.kind, f.tier = "nonfatal", 8
            f.reason = f"its container restarted and came up again (ready at line {again})"
            out.append(f)
        return out

    def _warned_and_went_on(self, findings: list[Finding]) -> list[Finding]:
        """Signal: a failure signature on a WARNING-level line, after which the job went on
        printing ordinary lines and nothing at error level, no traceback, no death report
        followed. Why: a warning is the writer's own judgement that it can continue (vLLM's
        "Failed to import from vllm._C" on a plugin platform that never needs it); when
        nothing fails after it, it cannot be what ended the log, which is then read as a
        stall, a start-up in progress or a success. Example:
        vllm-ascend-310p3-qwen3-06b-engine-core-stuck-after-init-waiting-core-engine-hang."""
        out: list[Finding] = []
        for f in findings:
            if (f.tier > 2 or f.resolved or f.level != "warning" or f.block is not None
                    or f.system in WARN_IS_ERROR or not self._went_on(f)):
                continue
            if any(g.seq > f.seq and g.tier <= 3 and not g.resolved
                   and (g.level in ("error", "critical") or g.block is not None)
                   for g in findings):
                continue
            f.kind, f.tier = "nonfatal", 8
            f.reason = "a warning the job went on past; nothing failed after it"
            out.append(f)
        return out

    def _went_on(self, f: Finding) -> bool:
        """Whether the job printed ordinary lines after `f`, as a live job does."""
        return self.ordinary - f.ordinary_before >= WENT_ON_LINES

    def failure_phase(self, root: Finding) -> str | None:
        """The phase the job failed in: the root's own stack, else the stack of the nearest
        other traceback (ranks fail together), else the phase markers of the root's rank."""
        own = self.knowledge.phase_from_frames(root.frames)
        if own:
            return own
        if self.block_phases:
            line, phase = min(self.block_phases, key=lambda lp: abs(lp[0] - root.line))
            if abs(line - root.line) <= NEAR_LINES:
                return phase
        return self.phases.phase_at(root.line, (root.rank, root.process))

    def _repeated_wait(self) -> Finding | None:
        """A waiting message repeated at the end of the log with no progress after the last
        marker (vLLM's shm-broadcast wait every 60 s): the first of that final run."""
        # ">=": a wait glued to the end of the last progress bar's line came after that bar
        done = self.phases.done_line
        tail = [f for f in self.findings if f.sig is not None and f.sig.hang_if_repeated
                and f.line >= self.phases.activity_line and (done is None or f.line < done)]
        if not tail:  # (waits after the job said it finished are its teardown)
            return None
        need = tail[0].sig.hang_if_repeated if tail[0].sig else 0
        if len(tail) < need:
            return None
        first = tail[0]
        first.reason = (f"repeated {len(tail)} times at the end of the log with no progress: "
                        "a process stopped responding")
        return first

    def _relaunched_since_up(self) -> bool:
        """Whether a launch began after the last line that showed the server up (a launch
        banner, or the launch phase of a process that started then)."""
        ph = self.phases
        up = [line for line in (ph.ready_line, ph.serving_line) if line is not None]
        last_up = max([*up, *ph.alive], default=None)
        if last_up is None:
            return False
        return any(line > last_up for line in ph.launch_lines) or any(
            span.phase == "launch" and span.start_line > last_up
            for spans in ph.spans.values() for span in spans)

    def _no_error_verdict(self) -> tuple[str, Finding | None, bool]:
        ph = self.phases
        waiting = self._repeated_wait()
        if waiting is not None:
            return "hang", waiting, False
        if ph.health_down is not None and ph.done_line is None:
            # the last health check said 503: whatever uvicorn printed, not ready (SGLang
            # answers so until its warmup is done; a user's wait loop polls exactly this)
            return "in_progress", None, False
        if ph.ready_line is not None or ph.serving_line is not None or ph.done_line is not None:
            if ph.done_line is None and ph.open_startup_phase() and self._relaunched_since_up():
                return "in_progress", None, False  # it came up, then started again (a
                # restart after a reboot, a container restart) and is starting still
            return "healthy", None, False  # ready, serving, or the job said it finished
        if ph.server_seen and ph.furthest() in HANG_PHASES and len(ph.last_line) >= 2 \
                and self._silent_in_init():
            return "hang", self._first_silent(), True
        if ph.server_seen or ph.open_startup_phase():
            return "in_progress", None, False
        if ph.furthest() == "training" and not ph.step_done:
            return "in_progress", None, False  # training began, but no step finished yet
        if ph.furthest() == "launch":
            return "in_progress", None, False  # a launcher started workers; nothing since
            # shows they got anywhere (no init finished, no step, no report of the end)
        if ph.furthest() == "benchmark":
            return "in_progress", None, False  # a sweep began; neither its summary nor teardown
        if not self.known_events and not ph.hits and not self.findings:
            return "unknown", None, False  # no line of a system loglens reads (an nginx log,
            # a shell session): saying "healthy" would be a claim about nothing
        return "healthy", None, False

    def _stopped_on_purpose(self, root: Finding) -> bool:
        """An interrupt (Ctrl-C) while the job made progress, or a termination (SIGTERM from
        docker stop, kubectl, systemd, a benchmark harness) of a server that was ready and
        serving requests: both are how such jobs are stopped, not failures. A training job
        terminated mid-run (a scheduler's time limit, a preemption) did not finish: it stays
        a failure; one terminated right after its training bar reached its total is not
        mid-run."""
        assert root.sig is not None
        if root.sig.ends == "interrupt":
            return self._progressing_before(root.line)
        done = self.phases.steps_all_done
        if root.sig.ends == "termination" and done is not None \
                and abs(done - root.line) <= PROGRESS_WINDOW:  # (its last redraw may be
            # flushed with the cancel's own lines, after them)
            return True  # its training bar had just reached its total: the work was done
            # (a cancel while it saves or exits is not the job failing)
        ups = [x for x in (self.phases.ready_line, self.phases.serving_line) if x is not None]
        return (root.sig.ends == "termination" and self.input_index == 0 and bool(ups)
                and min(ups) < root.line and self._progressing_before(root.line))

    def _progressing_before(self, line: int) -> bool:
        """Whether the job showed progress (a training step, a served request) in the last
        PROGRESS_WINDOW lines before `line`: an interrupt there is a user's stop, not the
        end of a hang."""
        return any(line - PROGRESS_WINDOW <= a < line for a in self.phases.alive)

    def _stopped_after_silence(self, stop: Finding) -> bool:
        """A termination from outside (scancel, a time limit) that its own line dates at
        least SILENCE_BEFORE_STOP after the last line before it: the job had gone silent,
        and being killed was the end of a hang, not its cause."""
        assert stop.sig is not None
        if stop.sig.ends != "termination" or stop.before is None:
            return False
        if self._progressing_before(stop.line):
            return False  # steps right up to it: slow lines, not silence
        # the same clock on both sides: the stop line's own stamp where it has one (a CI
        # runner's, a wrapper's), else the time its message states ("CANCELLED AT ...")
        at = stop.timestamp if stop.stamped else stop.groups.get("at")
        last = stop.before[2]
        if at and last and at[:4].isdigit() and last[:4] != at[:4]:
            last = at[:4] + last[4:]  # a yearless line got the file's year: the stop's is right
        gap = seconds_between(last, at)
        if gap is not None:
            gap -= _bar_elapsed(stop.text)  # a bar redrawn on the stop's own line was busy
            # for that long after the last dated line (tqdm's elapsed: "45/2133 [42:47<...")
        return gap is not None and gap >= SILENCE_BEFORE_STOP

    def _interrupted(self, stop: Finding) -> Finding:
        """A job the user interrupted (Ctrl-C), or killed from outside after it went silent,
        with no error before it: it had stopped making progress, and the last ordinary line
        before the stop shows where."""
        if stop.before is None:
            return stop
        line, text, ts, rank, process = stop.before
        stop.kind, stop.tier = "symptom", 3
        interrupt = stop.sig is not None and stop.sig.ends == "interrupt"
        stop.reason = ("the user interrupted the job (Ctrl-C): a consequence of the hang"
                       if interrupt else "the job was killed from outside after it went "
                       "silent: a consequence of the hang")
        return Finding(line=line, text=text, clean=text, kind="symptom", tier=2,
                       category="other", rank=rank, process=process, timestamp=ts,
                       source=stop.source, seq=stop.seq - (stop.line - line),
                       reason=(f"last line before the user interrupted the job at line "
                               f"{stop.line}: nothing happened after it" if interrupt else
                               f"last line before the silence that ended in the kill at line "
                               f"{stop.line}"))

    def _silent_in_init(self) -> bool:
        """Every process's last phase marker is an unfinished distributed init."""
        spans = [s[-1] for s in self.phases.spans.values() if s]
        return bool(spans) and all(s.phase in HANG_PHASES and not s.ended for s in spans)

    def _first_silent(self) -> Finding | None:
        """The last line of the rank/process that went silent first."""
        lasts = [(ts or "", line, text, key) for key, (line, ts, text)
                 in self.phases.last_line.items() if key in self.phases.spans]
        if not lasts:
            return None
        ts, line, text, key = min(lasts, key=lambda x: (x[0], x[1]))
        return Finding(line=line, text=text, clean=text, kind="symptom", tier=2,
                       category="distributed_init", rank=key[0], process=key[1],
                       timestamp=ts or None,
                       reason="last line of the rank that went silent first")


def _bar_elapsed(text: str) -> float:
    """The elapsed time of the last tqdm state in `text`, in seconds (0 without a bar); the
    states are the parse stage's (blocks.parse_progress), read back to front."""
    for segment in reversed(text[-4000:].split("\r")):
        state = parse_progress(segment)
        elapsed = state.get("elapsed") if state else None
        if elapsed:
            seconds = 0
            for part in str(elapsed).split(":"):
                seconds = seconds * 60 + int(part or 0)
            return float(seconds)
    return 0.0


def _dedupe(findings: list[Finding]) -> list[Finding]:
    """One finding per line: the block statement over other roles, lower tier over higher."""
    by_line: dict[int, Finding] = {}
    for f in findings:
        cur = by_line.get(f.seq)
        if cur is None or (f.role == "statement", -f.tier) > (cur.role == "statement", -cur.tier):
            by_line[f.seq] = f
    return sorted(by_line.values(), key=lambda f: f.seq)
