"""`loglens watch`: follow a starting server's log and tell slow from stuck from dead, fast.

Shell loops around a bring-up get it wrong both ways: `grep -i error` kills healthy servers over a
harmless WARNING, `sleep 600 && tail` notices a crash ten minutes late, and a health-check loop
cannot tell "still loading" from "the process is gone". This module runs the same streaming
pipeline as `explain` (framing -> blocks -> analyzer) on a followed file, so a line only counts as
fatal when the root-cause engine says so, and it decides as soon as the evidence is in:

* exit 0 (ready): a ready marker was seen (and, with a health URL, the endpoint answers 200);
* exit 1 (failed): the engine found a root cause (printed like `explain`, within about a second
  of the fatal line; the cascade gets up to `settle` seconds to offer a better root cause), or
  the watched process exited before ready;
* exit 3 (stalled / timed out): no output for the stall threshold of the current phase (or
  `--stall`), or `--timeout` elapsed. The report says where every rank stopped and whether the
  process is alive and burning CPU.

Blocks (tracebacks) are only emitted by the assembler once the next record closes them; a dying
process often writes nothing after its traceback, so when the file goes quiet (or a block stays
open) the watcher analyses a *shadow copy* of the state with the open blocks closed provisionally.
The real state is never mutated by such a peek, so the final analysis equals `explain`'s.
"""

from __future__ import annotations

import contextlib
import copy
import math
import os
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from analyzer.analysis.engine import Analyzer
from analyzer.analysis.phases import Key
from analyzer.api import Input, build_report
from analyzer.errors import ExitCode
from analyzer.knowledge import PHASE_ORDER, Knowledge
from analyzer.knowledge import load as load_knowledge
from analyzer.model import Event, Frame, SourceLine
from analyzer.parse import prefixes
from analyzer.parse.framing import Framer
from analyzer.parse.wraps import wrap_width
from analyzer.pipeline import Pipeline
from analyzer.report.common import human_duration
from analyzer.sources.follow import Follower, Notice
from analyzer.sources.source import Source
from analyzer.watch.history import History
from analyzer.watch.output import MAX_ROWS, JsonOutput, Output, make_output, show
from analyzer.watch.probes import HealthProbe, ProcessWatch
from analyzer.watch.progress import Progress, progress_from_fields, progress_from_text

EXIT_READY, EXIT_FAILED, EXIT_STALLED = ExitCode.OK, ExitCode.FAILED, ExitCode.STALLED

POLL = 0.1  # seconds between polls of the file
QUIET_PEEK = 0.3  # analyse open blocks provisionally after this long without output
SETTLE = 2.0  # after a fatal line, wait at most this long for a better root cause
SETTLE_QUIET = 1.0  # ... or until the log has been quiet this long
SGLANG_WARMUP_GRACE = 60.0  # SGLang's HTTP app is up before its warmup request; wait for it
LAST_LINES = 10
RING_LINES = 5000  # recent lines kept for the report's excerpts (robust to rotation)
LEARN_LINES = 40  # lines read before the input's own prefixes are inferred

# Default stall thresholds (seconds without any output) per phase. Generous: a 1T-parameter
# checkpoint on network storage or a cold torch.compile can be silent for many minutes, and a
# false "stalled" kills a healthy server just like a false "error" does.
ADAPTIVE_STALL: dict[str | None, float] = {
    None: 300.0, "launch": 300.0, "dist_init": 300.0, "weight_load": 900.0, "compile": 1200.0,
    "kv_cache_alloc": 300.0, "cuda_graph_capture": 900.0, "warmup": 600.0, "ready": 300.0,
    "serving": 300.0, "shutdown": 120.0,
}
STRONG_READY = {"sglang": "sglang.ready"}  # systems whose generic HTTP-ready comes before warmup
JOB_PHASES = tuple(p for p in PHASE_ORDER if p not in ("ready", "serving"))


# --------------------------------------------------------------------------- small helpers
def _parse_ts(ts: str | None) -> datetime | None:
    if not ts or ts.startswith("-"):
        return None
    try:
        return datetime.fromisoformat(ts)
    except ValueError:
        return None


def _label(key: Key) -> str:
    rank, process = key
    if process and process != "main":
        return process if rank is None or str(rank) in process else f"{process} (rank {rank})"
    if rank is not None:
        return f"rank {rank}"
    return process or "log"


def _phase_order(phase: str | None) -> int:
    return PHASE_ORDER.index(phase) if phase in PHASE_ORDER else -1


# --------------------------------------------------------------------------- pipeline parts
class RingSource(Source):
    """The recent lines as a `Source`, so `build_report` can cut excerpts after a rotation."""

    def __init__(self, name: str, path: Path, ring: deque[SourceLine]) -> None:
        super().__init__(name, path)
        self._ring = ring

    def lines(self) -> Iterator[SourceLine]:
        yield from list(self._ring)

    def line_range(self, lo: int, hi: int) -> dict[int, str]:
        """From the ring, never the path: a FIFO cannot be read again, a file may have
        rotated since, and a line the ring no longer has is simply not excerpted."""
        return {ln.lineno: ln.text for ln in self._ring if lo <= ln.lineno <= hi}


@dataclass
class RankRow:
    """One rank/process as the live table and the stall report show it."""

    key: Key
    label: str
    phase: str | None
    phase_seconds: float | None
    last_line: int | None
    last_text: str
    last_age: float | None

    def record(self) -> dict[str, Any]:
        return {"rank": self.key[0], "process": self.key[1], "phase": self.phase,
                "phase_seconds": None if self.phase_seconds is None
                else round(self.phase_seconds, 1),
                "last_line": self.last_line, "last_text": show(self.last_text, 300),
                "last_age_seconds": None if self.last_age is None else round(self.last_age, 1)}


@dataclass
class WatchOptions:
    """What `loglens watch` was asked to do."""

    path: str
    pid: int | None = None
    health_url: str | None = None
    timeout: float | None = None
    stall: float | None = None
    history_dir: Path | None = None  # None: no history
    rules: Sequence[str] = ()
    poll: float = POLL
    quiet_peek: float = QUIET_PEEK
    settle: float = SETTLE
    warmup_grace: float = SGLANG_WARMUP_GRACE


@dataclass
class Failure:
    """A fatal error the engine found, while the cascade settles."""

    first_seen: float
    root: tuple[int, str]
    report: dict[str, Any]


@dataclass
class Verdict:
    code: int
    record: dict[str, Any]
    text: str
    details: list[str] = field(default_factory=list)


def _is_failure(result: dict[str, Any]) -> bool:
    """Only a root cause the engine found in the log fails the watch.

    `hang` from silence (everyone still in dist_init) is how the engine describes a log that
    *ended*; a live log that is merely quiet is the stall logic's business, not a failure.
    """
    root = result["root"]
    if root is None or result["verdict"] not in ("crash", "hang"):
        return False
    return any(f is root for f in result["findings"])


# --------------------------------------------------------------------------- the watcher
class Watch:
    """The watch loop: follow, analyse incrementally, emit state changes, decide."""

    def __init__(self, opts: WatchOptions, out: Output) -> None:
        self.opts = opts
        self.out = out
        self.knowledge: Knowledge = load_knowledge(list(opts.rules))
        self._memo_base: dict[int, Any] = {id(self.knowledge): self.knowledge}
        for sig in self.knowledge.signatures:
            self._memo_base[id(sig)] = sig
        for mk in self.knowledge.markers:
            self._memo_base[id(mk)] = mk
        self.name = opts.path
        self.follower = Follower(opts.path, name=opts.path)
        self.history = History(opts.history_dir) if opts.history_dir else None
        self.process = ProcessWatch(opts.pid) if opts.pid is not None else None
        self.health = HealthProbe(opts.health_url) if opts.health_url else None
        self.started = time.monotonic()
        self._reset()
        # Pay one-off costs (grammar compilation, the text renderer's imports) now, not in
        # the second after a fatal line.
        Framer().frame(SourceLine(1, "[2026-01-01 00:00:00 TP0] warm up", "-"))
        if not isinstance(out, JsonOutput):
            import analyzer.report.text  # noqa: F401

    # -- state -----------------------------------------------------------------------------
    def _reset(self) -> None:
        """A new run in the file (rotation/truncation): forget everything about the old one."""
        year = None
        with contextlib.suppress(OSError):
            year = datetime.fromtimestamp(os.stat(self.opts.path).st_mtime).year
        self.pipe = Pipeline(self.name, year)
        self.learning: list[str] | None = []  # the first lines, until prefixes are inferred
        self.learning_frames: list[Frame] = []  # ... as framed, for the hard-wrap width
        self.analyzer = Analyzer(self.knowledge)
        self.ring: deque[SourceLine] = deque(maxlen=RING_LINES)
        self.lines = 0
        self.version = 0  # bumped per fed line: a cache key for the shadow analysis
        self.anchor: tuple[datetime, float] | None = None  # (log time, monotonic) of newest ts
        self.key_seen: dict[Key, float] = {}
        self.progress: dict[tuple[str, int], Progress] = {}
        self.progress_bucket: dict[tuple[str, int], int] = {}
        self.warned: set[str] = set()
        self.config_key: str | None = None
        self.config_announced = False
        self.typical: dict[str, float] = {}
        self.job_phase: str | None = None
        self.job_phase_since: float = time.monotonic()
        self.failure: Failure | None = None
        self.ready_since: float | None = None  # weak (pre-warmup) ready seen at
        self.health_announced: tuple[int | None, str | None] | None = None
        self.pending_since: float | None = None
        self.shadow: tuple[int, Analyzer, dict[str, Any]] | None = None  # peeked, per version
        self.plain: tuple[int, Analyzer, dict[str, Any]] | None = None  # per findings count
        self.last_output = max(self.follower.last_data, time.monotonic())
        self.partial_seen = ""

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def _log_now(self, now: float) -> datetime | None:
        if self.anchor is None:
            return None
        ts, mono = self.anchor
        return ts + timedelta(seconds=now - mono)

    # -- main loop ---------------------------------------------------------------------------
    def run(self) -> int:
        """Follow until a verdict; return its exit code."""
        self.out.start(self)
        self.out.event({"event": "start", "file": self.name, "pid": self.opts.pid,
                        "health_url": self.opts.health_url, "timeout": self.opts.timeout,
                        "stall": self.opts.stall},
                       f"watching {self.name}" + (f" (pid {self.opts.pid})" if self.opts.pid
                                                  else ""))
        verdict: Verdict | None = None
        try:
            while verdict is None:
                now = time.monotonic()
                self.step(now)
                verdict = self.decide(now)
                if verdict is None:
                    self.out.refresh(self, now)
                    time.sleep(self.opts.poll)
            self._remember(verdict)
            self.out.verdict(verdict)
        finally:
            if self.health:
                self.health.stop()
            self.follower.close()
            self.out.stop()
        return verdict.code

    def step(self, now: float) -> None:
        """Read what arrived, feed it through the pipeline, announce what changed."""
        before = self.follower.last_data
        first_open = not self.follower.is_open and self.follower.generation == 0
        for item in self.follower.poll():
            if isinstance(item, Notice):
                self._notice(item, now)
            else:
                self._line(item, now)
        if self.follower.last_data != before:
            self.last_output = self.follower.last_data
            if first_open and self.follower.is_open and self.follower.initial_size:
                self._date_backlog(now)
        partial = self.follower.partial
        if partial and partial != self.partial_seen:
            self.partial_seen = partial
            prog = progress_from_text(partial, now)
            if prog is not None:
                self._progress(prog, None, now)
        if self.process:
            self.process.sample(now)
        self._announce(now)

    def _date_backlog(self, now: float) -> None:
        """Lines that were in the file before we started were not written "now".

        The file's mtime says when the newest was written; log timestamps place the others
        relative to it. So attaching to a log that has been silent for 20 minutes reports it
        as silent for 20 minutes, not since the watch started.
        """
        try:
            age = max(0.0, time.time() - os.stat(self.opts.path).st_mtime)
        except OSError:
            return
        written = now - age
        self.last_output = min(self.last_output, written)
        newest = self.anchor[0] if self.anchor else None
        if newest is not None:
            self.anchor = (newest, written)
        for key, (_line, ts, _text) in self.analyzer.phases.last_line.items():
            parsed = _parse_ts(ts)
            lag = (newest - parsed).total_seconds() if newest and parsed else 0.0
            self.key_seen[key] = written - max(lag, 0.0)

    # -- input -------------------------------------------------------------------------------
    def _notice(self, notice: Notice, now: float) -> None:
        if notice.kind in ("rotated", "truncated"):
            self._reset()
            self.last_output = now
        self.out.event({"event": "file", "state": notice.kind, "detail": notice.detail},
                       f"file {notice.kind}: {notice.detail}")

    def _line(self, line: SourceLine, now: float) -> None:
        if self.ring and self.ring[-1].lineno == line.lineno:
            self.ring[-1] = line  # a provisional partial line, now longer or complete
        else:
            self.ring.append(line)
        self.lines = max(self.lines, line.lineno)
        self.version += 1
        frame = self.pipe.frame(line)
        if self.learning is not None:
            self._learn(frame)
        for ev in self.pipe.assemble(frame):
            self._event(ev, now)
        if self.pipe.pending():
            if self.pending_since is None:
                self.pending_since = now
        else:
            self.pending_since = None

    def _learn(self, frame: Frame) -> None:
        """Infer the input's own prefixes (prefixes.infer, as explain does from the file's
        first lines) once enough lines have arrived; the lines after that are framed with
        them. The first ones were framed without: a start-up rarely fails in its first lines,
        and what is announced is never taken back."""
        assert self.learning is not None
        self.learning.append(prefixes.sample_text(frame))
        self.learning_frames.append(frame)
        if len(self.learning) < LEARN_LINES:
            return
        learned = prefixes.infer(self.learning, self.pipe.framer.recognised,
                                 self.pipe.framer.body)
        self.pipe.assembler.wrap_width = wrap_width(self.learning_frames)  # (as explain's sniff)
        self.learning, self.learning_frames = None, []
        if learned:
            self.pipe.framer.inferred = tuple(learned)

    def _event(self, ev: Event, now: float) -> None:
        if ev.timestamp is not None and not ev.timestamp_inferred:  # its own time
            parsed = _parse_ts(ev.timestamp)
            if parsed is not None and (self.anchor is None or parsed >= self.anchor[0]):
                self.anchor = (parsed, now)
        self.analyzer.feed(ev)
        key = self.analyzer.phases.key(ev)
        self.key_seen[key] = now
        if ev.kind == "progress" and "n" in ev.fields:
            self._progress(progress_from_fields(ev.fields, now), key, now)

    def _progress(self, prog: Progress, key: Key | None, now: float) -> None:
        prog.key = key
        prog.phase = self.job_phase
        ident = (prog.desc, prog.total)
        self.progress[ident] = prog
        bucket = min(prog.percent // 25, 4)
        if self.progress_bucket.get(ident) != bucket:
            self.progress_bucket[ident] = bucket
            self.out.event({"event": "progress", **prog.as_record(now)},
                           f"progress {prog.text(now)}")

    # -- analysis ----------------------------------------------------------------------------
    def _copy(self, analyzer: Analyzer) -> Analyzer:
        """A deep copy sharing the (immutable, large) knowledge."""
        return copy.deepcopy(analyzer, dict(self._memo_base))

    def assess(self, now: float, *, force_peek: bool = False) -> tuple[Analyzer, dict[str, Any]]:
        """The current analysis, with open blocks closed provisionally when the log is quiet.

        Returns (analyzer to report from, result). `result()` mutates findings, so it always
        runs on a copy; without a peek it is recomputed only when findings were added (nothing
        else can change whether a root cause exists).
        """
        held = now - self.pending_since if self.pending_since is not None else 0.0
        peek = self.pipe.pending() and (force_peek or held >= self.opts.quiet_peek
                                       or now - self.last_output >= self.opts.quiet_peek)
        if peek:
            if self.shadow is not None and self.shadow[0] == self.version:
                return self.shadow[1], self.shadow[2]
            shadow = self._copy(self.analyzer)
            for ev in self.pipe.peek():
                shadow.feed(ev)
            result = shadow.result()
            self.shadow = (self.version, shadow, result)
            return shadow, result
        count = len(self.analyzer.findings)
        if self.plain is None or self.plain[0] != count:
            assessed = self._copy(self.analyzer)
            self.plain = (count, assessed, assessed.result())
        return self.analyzer, self.plain[2]

    def report(self, analyzer: Analyzer, result: dict[str, Any]) -> dict[str, Any]:
        """The explain report (same JSON contract) of the current state."""
        src = RingSource(self.name, Path(self.opts.path), self.ring)
        src.stats.lines = self.lines
        return build_report(analyzer, result, [Input(src, None)], excerpts=True)

    def _ready(self, view: Analyzer, now: float) -> tuple[bool, int | None, str]:
        """Ready marker seen? SGLang's HTTP app is up before its warmup: wait for the real one."""
        ph = view.phases
        ids = {mid for mid, _ in ph.hits[-2000:]}
        systems = {mid.split(".", 1)[0] for mid in ids}
        for system, strong in STRONG_READY.items():
            if system in systems:
                line = next((ln for mid, ln in ph.hits if mid == strong), None)
                if line is not None:
                    return True, line, "ready marker"
                if ph.ready_line is not None:
                    if self.ready_since is None:
                        self.ready_since = now
                        self.out.event({"event": "phase", "phase": "warmup", "line": ph.ready_line,
                                        "detail": "HTTP server up; waiting for the warmup request"},
                                       f"HTTP server up (line {ph.ready_line}); waiting for "
                                       "SGLang's warmup to finish")
                    if now - self.ready_since >= self.opts.warmup_grace:
                        return True, ph.ready_line, (
                            f"HTTP server up and no failure for {self.opts.warmup_grace:.0f}s")
                return False, None, ""
        if ph.ready_line is not None:
            return True, ph.ready_line, "ready marker"
        if ph.serving_line is not None:
            return True, ph.serving_line, "serving"
        return False, None, ""

    # -- announcements -----------------------------------------------------------------------
    def _announce(self, now: float) -> None:
        """State changes since the last step: config, phase, warnings."""
        view = self.view(now)
        self._announce_config(view)
        phase = self._job_phase(view)
        if phase != self.job_phase and phase is not None:
            prev, prev_since = self.job_phase, self.job_phase_since
            self.job_phase, self.job_phase_since = phase, now
            durations = self.durations(view)
            took = durations.get(prev) if prev else None
            if took is None and prev:
                took = now - prev_since
            typical = self.typical.get(phase)
            ranks = [k for k, spans in view.phases.spans.items() if spans
                     and spans[-1].phase == phase]
            bits = [f"phase {phase}"]
            if prev:
                bits.append(f"{prev} took {human_duration(took)}")
            if typical is not None:
                bits.append(f"{phase} usually takes {human_duration(typical)} here")
            self.out.event({"event": "phase", "phase": phase, "previous": prev,
                            "previous_seconds": None if took is None else round(took, 1),
                            "typical_seconds": typical,
                            "ranks": [_label(k) for k in ranks]}, " · ".join(bits))
        warnings = dict(view.warnings)
        if self.plain is not None:  # result() turns errors the server survived into warnings
            warnings.update({k: w for k, w in self.plain[1].warnings.items() if k not in warnings})
        for key, w in warnings.items():
            if key in self.warned:
                continue
            self.warned.add(key)
            benign = bool(w["benign"] and w["id"])
            tag = f"benign ({w['id']})" if benign else "not known to be harmful or fatal; check it"
            self.out.event({"event": "warning", "line": w["line"], "benign": benign,
                            "signature": w["id"], "text": show(w["text"], 400)},
                           f"warning L{w['line']} {tag}: {show(w['text'], 140)}")

    def _announce_config(self, view: Analyzer) -> None:
        if self.config_announced:
            return
        cfg = view.config
        model = cfg.get("model_path") or cfg.get("model") or cfg.get("model_tag")
        if not model:
            return
        self.config_announced = True
        tp = cfg.get("tp_size") or cfg.get("tensor_parallel_size") or 1
        pp = cfg.get("pp_size") or cfg.get("pipeline_parallel_size") or 1
        self.config_key = f"{model}|tp{tp}" + (f"|pp{pp}" if pp != 1 else "")
        if self.history is not None:
            self.typical = self.history.typical(self.config_key)
        hint = ", ".join(f"{p} ~{human_duration(s)}" for p, s in
                         sorted(self.typical.items(), key=lambda x: _phase_order(x[0])))
        self.out.event({"event": "config", "model": str(model), "tp": tp, "pp": pp,
                        "history": self.typical},
                       f"config: model {model} · tp {tp}" + (f" · pp {pp}" if pp != 1 else "")
                       + (f" · earlier starts here: {hint}" if hint else ""))

    def view(self, now: float) -> Analyzer:
        """The freshest state for display: a peeked shadow if one is current, else the real one."""
        if self.shadow is not None and self.shadow[0] == self.version:
            return self.shadow[1]
        return self.analyzer

    @staticmethod
    def _job_phase(view: Analyzer) -> str | None:
        """The furthest start-up phase any rank/process reached (by the lifecycle order).

        Not "the latest marker": ranks interleave, and a launcher process stays in `launch`
        while its workers load weights, so the job would seem to flip back and forth."""
        reached = {s.phase for spans in view.phases.spans.values() for s in spans}
        known = [p for p in reached if p in JOB_PHASES]  # serving lines come during warmup too
        return max(known, key=JOB_PHASES.index) if known else None

    def durations(self, view: Analyzer) -> dict[str, float]:
        """Job-level duration of each finished phase, in log time (first start to last end)."""
        starts: dict[str, datetime] = {}
        ends: dict[str, datetime] = {}
        spans_by_key = view.phases.spans
        ranked = [k for k in spans_by_key if k[0] is not None]  # the launcher sits in "launch"
        for key in ranked or list(spans_by_key):
            spans = spans_by_key[key]
            for span in spans:
                start, end = _parse_ts(span.start), _parse_ts(span.end)
                if start is None or end is None or not span.ended:
                    continue
                if span.phase not in starts or start < starts[span.phase]:
                    starts[span.phase] = start
                if span.phase not in ends or end > ends[span.phase]:
                    ends[span.phase] = end
        return {p: (ends[p] - starts[p]).total_seconds() for p in starts
                if p not in ("ready", "serving", "shutdown")}

    def phase_elapsed(self, view: Analyzer, phase: str | None, now: float) -> float | None:
        """How long the job has been in `phase`: log time where the log has timestamps."""
        if phase is None:
            return None
        log_now = self._log_now(now)
        starts = [_parse_ts(s[-1].start) for s in view.phases.spans.values()
                  if s and s[-1].phase == phase]
        known = [s for s in starts if s is not None]
        if log_now is not None and known:
            return max((log_now - min(known)).total_seconds(), 0.0)
        return now - self.job_phase_since

    def rows(self, view: Analyzer, now: float) -> list[RankRow]:
        """Per rank/process: phase, time in it, last line and its age."""
        out = []
        log_now = self._log_now(now)
        ph = view.phases
        for key in sorted(ph.spans, key=lambda k: (k[0] is None, k[0] or 0, k[1] or "")):
            spans = ph.spans[key]
            span = spans[-1] if spans else None
            phase_secs = None
            if span is not None:
                start = _parse_ts(span.start)
                if log_now is not None and start is not None and not span.ended:
                    phase_secs = max((log_now - start).total_seconds(), 0.0)
                elif span.ended and span.end and span.start:
                    s, e = _parse_ts(span.start), _parse_ts(span.end)
                    phase_secs = (e - s).total_seconds() if s and e else None
            last = ph.last_line.get(key)
            seen = self.key_seen.get(key)
            out.append(RankRow(key=key, label=_label(key), phase=span.phase if span else None,
                               phase_seconds=phase_secs, last_line=last[0] if last else None,
                               last_text=last[2] if last else "",
                               last_age=None if seen is None else max(now - seen, 0.0)))
        return out

    def stall_threshold(self, view: Analyzer) -> tuple[float, str]:
        """Seconds of silence that mean stuck in the current phase, and why that many."""
        if self.opts.stall is not None:
            return self.opts.stall, "--stall"
        phase = self.job_phase
        base = ADAPTIVE_STALL.get(phase, ADAPTIVE_STALL[None])
        why = f"default for {phase or 'start-up'}"
        typical = self.typical.get(phase or "")
        if typical is not None and 2 * typical > base:
            base, why = 2 * typical, f"twice the usual {phase} time here"
        active = [p for p in self.progress.values() if p.n < p.total and p.rate]
        for prog in active:  # a bar that ticks slowly is not stuck between ticks
            gap = 3.0 / prog.rate + 30.0 if prog.rate else 0.0
            if gap > base:
                base, why = gap, f"3x the time per item of '{prog.desc}'"
        return base, why

    # -- decisions ---------------------------------------------------------------------------
    def decide(self, now: float) -> Verdict | None:
        """Failed, ready, stalled, timed out — or keep watching."""
        view, result = self.assess(now)
        verdict = self._decide_failure(view, result, now)
        if verdict is not None or self.failure is not None:
            return verdict
        ready, line, why = self._ready(view, now)
        if ready and self.health is None:
            return self._verdict_ready(view, line, why, now)
        if ready and self.health is not None:
            self.health.start()
            state = (self.health.status, self.health.error)
            if self.health.checks and state != self.health_announced:
                self.health_announced = state
                self.out.event({"event": "health", **self.health.record()},
                               f"health {self.health.text()}")
            if self.health.status == 200:
                return self._verdict_ready(view, line, why, now)
        if self.process is not None and not self.process.alive():
            return self._verdict_exited(now)
        quiet = now - self.last_output
        threshold, why_t = self.stall_threshold(view)
        if quiet >= threshold:
            what = "the log file never appeared" if not self.follower.is_open and \
                self.follower.generation == 0 else f"no new output for {human_duration(quiet)}"
            return self._verdict_stalled(view, now, "stalled",
                                         f"{what} (threshold {human_duration(threshold)}: {why_t})")
        if self.opts.timeout is not None and now - self.started >= self.opts.timeout:
            return self._verdict_stalled(view, now, "timed_out",
                                         f"--timeout {human_duration(self.opts.timeout)} reached")
        return None

    def _decide_failure(self, view: Analyzer, result: dict[str, Any],
                        now: float) -> Verdict | None:
        failing = _is_failure(result)
        if failing:
            root = result["root"]
            ident = (root.line, root.text)
            if self.failure is None or self.failure.root != ident:
                update = self.failure is not None
                rep = self.report(view, result)
                first = self.failure.first_seen if self.failure else now
                self.failure = Failure(first_seen=first, root=ident, report=rep)
                self.out.failure(rep, update=update)
        elif self.failure is not None:
            self.out.event({"event": "retracted", "line": self.failure.root[0]},
                           f"the error at line {self.failure.root[0]} was recovered from; "
                           "watching on")
            self.failure = None
        if self.failure is None:
            return None
        dead = self.process is not None and not self.process.alive()
        quiet = now - self.last_output
        settled = now - self.failure.first_seen >= self.opts.settle or dead or (
            quiet >= SETTLE_QUIET and not self.follower.partial)
        if not settled:
            return None
        view, result = self.assess(now, force_peek=True)  # everything written so far, closed
        later: list[str] = []
        if _is_failure(result):  # the final cascade (symptoms that came while settling)
            root = result["root"]
            rep = self.report(view, result)
            changed = (root.line, root.text) != self.failure.root
            shown = {sym.get("line") for sym in self.failure.report.get("symptoms", [])}
            later = [f"later in the cascade: L{sym.get('line')} {show(str(sym.get('text')), 90)}"
                     f" — {sym.get('reason')}" for sym in rep.get("symptoms", [])
                     if sym.get("line") not in shown][:10]
            self.failure = Failure(self.failure.first_seen, (root.line, root.text), rep)
            if changed:
                self.out.failure(rep, update=True)
                later = []
        rep = self.failure.report
        rc = rep.get("root_cause") or {}
        rec = {"event": "verdict", "verdict": "failed", "exit_code": EXIT_FAILED,
               "root_cause": rep.get("root_cause"), "headline": rep.get("headline"),
               "reason": "fatal error in the log", "symptoms": rep.get("symptoms", [])[:20],
               "elapsed_seconds": round(self.elapsed(), 2)}
        if self.process is not None:
            rec["process"] = self.process.record()
        fix = [f"fix: {rc['remediation']}"] if rc.get("remediation") else []
        return Verdict(EXIT_FAILED, rec, f"FAILED: {rep.get('headline')}", later + fix)

    def _verdict_ready(self, view: Analyzer, line: int | None, why: str, now: float) -> Verdict:
        text = ""
        if line is not None:
            hit = next((ln for ln in reversed(self.ring) if ln.lineno == line), None)
            text = hit.text if hit else ""
        durations = self.durations(view)
        rec: dict[str, Any] = {"event": "verdict", "verdict": "ready", "exit_code": EXIT_READY,
                               "root_cause": None, "line": line, "text": show(text, 300),
                               "reason": why, "phases": {p: round(s, 1) for p, s
                                                         in durations.items()},
                               "elapsed_seconds": round(self.elapsed(), 2)}
        if self.health is not None:
            rec["health"] = self.health.record()
        msg = f"READY: line {line}: {show(text, 120)}" if text else f"READY ({why})"
        details = []
        if durations:
            details.append("phases: " + ", ".join(
                f"{p} {human_duration(s)}" for p, s in
                sorted(durations.items(), key=lambda x: _phase_order(x[0]))))
        if self.health is not None:
            details.append(f"health: {self.health.text()}")
        return Verdict(EXIT_READY, rec, msg, details)

    def _verdict_exited(self, now: float) -> Verdict:
        """The process is gone: read what it managed to write, then say how it ended."""
        time.sleep(min(self.opts.poll, 0.1))  # its last writes may still be in flight
        self.step(now)
        self.last_output = -math.inf  # nothing more will come
        view, result = self.assess(time.monotonic(), force_peek=True)
        pid = self.opts.pid
        if _is_failure(result):
            rep = self.report(view, result)
            self.out.failure(rep, update=False)
            rc = rep.get("root_cause") or {}
            rec = {"event": "verdict", "verdict": "failed", "exit_code": EXIT_FAILED,
                   "root_cause": rep.get("root_cause"), "headline": rep.get("headline"),
                   "reason": f"process {pid} exited after a fatal error",
                   "symptoms": rep.get("symptoms", [])[:20],
                   "elapsed_seconds": round(self.elapsed(), 2)}
            return Verdict(EXIT_FAILED, rec, f"FAILED: {rep.get('headline')} (process {pid} "
                           "exited)", [f"fix: {rc['remediation']}"] if rc.get("remediation")
                           else [])
        last = list(self.ring)[-LAST_LINES:]
        phase = self.job_phase
        rec = {"event": "verdict", "verdict": "failed", "exit_code": EXIT_FAILED,
               "root_cause": None, "reason": f"process {pid} exited before ready",
               "phase": phase, "last_lines": [{"line": ln.lineno, "text": show(ln.text, 300)}
                                              for ln in last],
               "elapsed_seconds": round(self.elapsed(), 2)}
        details = ["no error line in the log: look for the OOM killer (dmesg), a SIGKILL from "
                   "a scheduler, or a crash in native code that printed nothing"]
        details += ["last lines:"] + [f"  L{ln.lineno}  {show(ln.text, 150)}" for ln in last]
        return Verdict(EXIT_FAILED, rec, f"FAILED: process {pid} exited before the server was "
                       f"ready (phase: {phase or 'start-up'})", details)

    def _verdict_stalled(self, view: Analyzer, now: float, kind: str, why: str) -> Verdict:
        view, _ = self.assess(now, force_peek=True)
        rows = self.rows(view, now)
        phase = self.job_phase
        elapsed = self.phase_elapsed(view, phase, now)
        typical = self.typical.get(phase or "")
        rec: dict[str, Any] = {
            "event": "verdict", "verdict": kind, "exit_code": EXIT_STALLED, "root_cause": None,
            "reason": why, "phase": phase,
            "phase_seconds": None if elapsed is None else round(elapsed, 1),
            "typical_seconds": typical, "ranks": [r.record() for r in rows],
            "progress": [p.as_record(now) for p in self.progress.values()],
            "elapsed_seconds": round(self.elapsed(), 2)}
        details = []
        if phase:
            line = f"phase {phase}: {human_duration(elapsed)} so far"
            if typical is not None:
                line += f"; usually takes {human_duration(typical)} here"
            details.append(line)
        for prog in self.progress.values():
            if prog.n < prog.total:
                details.append(f"progress {prog.text(now)} (last update "
                               f"{human_duration(now - prog.seen)} ago)")
        for row in rows[:MAX_ROWS * 4]:
            age = f"{human_duration(row.last_age)} ago" if row.last_age is not None else ""
            details.append(f"  {row.label:<14} {row.phase or '—':<20} last L{row.last_line} "
                           f"{age}: {show(row.last_text, 110)}")
        if self.process is not None:
            rec["process"] = self.process.record()
            details.append(self.process.text())
        if self.health is not None:
            rec["health"] = self.health.record()
            details.append(f"health: {self.health.text()}")
        title = "STALLED" if kind == "stalled" else "TIMED OUT"
        return Verdict(EXIT_STALLED, rec, f"{title}: {why}", details)

    def _remember(self, verdict: Verdict) -> None:
        """Store this start's phase durations for the next one."""
        if self.history is None:
            return
        key = self.config_key or f"file:{os.path.abspath(self.opts.path)}"
        durations = self.durations(self.view(time.monotonic()))
        self.history.record(key, durations, verdict.record.get("verdict", "?"))


def watch(opts: WatchOptions, *, mode: str = "plain", stream: TextIO | None = None) -> int:
    """Run `loglens watch`; returns the exit code (0 ready, 1 failed, 3 stalled/timed out)."""
    return Watch(opts, make_output(mode, stream)).run()
