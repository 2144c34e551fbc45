"""Track each rank/process through the lifecycle, from phase markers (data) and progress bars."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from analyzer.knowledge import PHASE_ORDER, Knowledge, Marker
from analyzer.model import Event
from analyzer.parse.timestamps import seconds_between

SERVER_SYSTEMS = ("sglang", "vllm", "uvicorn")
NEXT_PHASE = {"launch": "dist_init", "dist_init": "weight_load", "weight_load": "kv_cache_alloc",
              "compile": "kv_cache_alloc", "kv_cache_alloc": "cuda_graph_capture",
              "cuda_graph_capture": "warmup", "warmup": "ready", "ready": "serving"}
ALIVE_KEEP = 3  # = causality.SURVIVED_AFTER: only whether that many came after matters
STARTUP_PHASES = ("weight_load", "compile", "kv_cache_alloc", "cuda_graph_capture", "warmup")

Key = tuple[int | None, str | None]


@dataclass
class Span:
    """One phase of one rank/process."""

    phase: str
    start: str | None
    start_line: int
    end: str | None = None
    end_line: int | None = None
    ended: bool = False
    progress: str | None = None

    def as_dict(self, key: Key) -> dict[str, Any]:
        return {"rank": key[0], "process": key[1], "phase": self.phase, "start": self.start,
                "end": self.end, "seconds": seconds_between(self.start, self.end),
                "progress": self.progress}


@dataclass
class PhaseTracker:
    """Phases per (rank, process); what was reached overall; where the log stopped."""

    knowledge: Knowledge
    spans: dict[Key, list[Span]] = field(default_factory=dict)
    last_line: dict[Key, tuple[int, str | None, str]] = field(default_factory=dict)
    ready_line: int | None = None
    serving_line: int | None = None
    done_line: int | None = None  # where the job reported its own successful end
    server_seen: bool = False
    server_systems: set[str] = field(default_factory=set)  # of the server markers seen
    steps_all_done: int | None = None  # where a training bar last reached its total
    last_phase: str | None = None
    last_progress: str | None = None
    last_progress_phase: str | None = None  # the phase that progress belongs to
    hits: list[tuple[str, int]] = field(default_factory=list)  # (marker id, line)
    ready_containers: list[tuple[int, str]] = field(default_factory=list)  # (line, container)
    # of each ready marker a container wrapper names: did a restarted container come up?
    alive_times: dict[int, str] = field(default_factory=dict)  # alive line -> its timestamp
    alive: deque[int] = field(default_factory=lambda: deque(maxlen=ALIVE_KEEP))  # the last
    # lines showing a healthy server (ready, successful serving): did it outlive an error?
    activity_line: int = 0  # the last line that showed progress of any kind
    step_done: bool = False  # a training step finished (a loss line, a bar past 0)
    launch_lines: list[int] = field(default_factory=list)  # start banners (a new attempt?)
    health_down: int | None = None  # the last health check answered 5xx, with no ready
    # marker or healthy answer after it: the server is not ready (yet, or any more)

    def key(self, ev: Event) -> Key:
        return (ev.rank_number(), _process_label(ev))

    def feed(self, ev: Event) -> None:
        """Update from one event (blocks carry no markers)."""
        key = self.key(ev)
        self.last_line[key] = (ev.line_end, ev.timestamp, ev.raw[-1] if ev.raw else "")
        if ev.kind in ("traceback", "faulthandler", "cpp_abort", "native", "logging_error"):
            return
        for marker, groups in self.knowledge.markers_for(ev.clean[0], ev.offset(0),
                                                         ev.message):
            self._apply(key, marker, groups, ev)
        if ev.kind == "progress" and "n" in ev.fields:
            self.activity_line = ev.line_start
            text = f"{ev.fields['n']}/{ev.fields['total']}"
            desc = ev.fields.get("desc")
            self.last_progress = f"{desc}: {text}" if desc else text
            spans = self.spans.get(key) or self._latest_spans()
            self.last_progress_phase = spans[-1].phase if spans else None
            if self.last_progress_phase == "training" and str(ev.fields["n"]) not in ("0", ""):
                self.step_done = True
                # the latest training bar: at its total, or not (yet)
                done = str(ev.fields["n"]) == str(ev.fields["total"])
                self.steps_all_done = ev.line_end if done else None
            if spans:
                spans[-1].progress = self.last_progress

    def _latest_spans(self) -> list[Span] | None:
        best: list[Span] | None = None
        for spans in self.spans.values():
            if spans and (best is None or spans[-1].start_line > best[-1].start_line):
                best = spans
        return best

    def _apply(self, key: Key, marker: Marker, groups: dict[str, str], ev: Event) -> None:
        self.hits.append((marker.id, ev.line_start))
        if marker.phase == "launch" and marker.edge == "begin" and len(self.launch_lines) < 64:
            self.launch_lines.append(ev.line_start)
        if marker.system in SERVER_SYSTEMS:
            self.server_seen = True
            self.server_systems.add(marker.system)
        self.activity_line = ev.line_start
        answer = marker.health_answer(groups)
        if answer is not None:
            self.health_down = None if answer else ev.line_start
        if marker.edge == "ready":
            self.health_down = None
            self.ready_line = self.ready_line or ev.line_start
            container = ev.container
            if container is not None:
                self.ready_containers.append((ev.line_start, container))
        if marker.edge == "serving" and marker.is_poll(groups):
            if marker.alive(groups):
                self._note_alive(ev)  # it answers: alive, but serving nothing yet
                if "vllm" in self.server_systems and "sglang" not in self.server_systems:
                    # vLLM's API server listens only once its engine is up: an answered
                    # probe is a server that is serving (SGLang answers them before its
                    # warmup request is done, so there they are not)
                    self.serving_line = self.serving_line or ev.line_start
            return
        if marker.edge == "serving":
            self.serving_line = self.serving_line or ev.line_start
        if marker.says_done(groups):
            self.done_line = self.done_line or ev.line_start
        if marker.alive(groups):
            self._note_alive(ev)
            if marker.phase == "training" and ev.kind != "progress":
                self.step_done = True  # a loss line, a step's log (a bar says its count)
        spans = self.spans.setdefault(key, [])
        current = spans[-1] if spans else None
        if current is not None and current.phase == marker.phase:
            if marker.edge == "end":
                current.end, current.end_line, current.ended = ev.timestamp, ev.line_start, True
            elif current.ended and marker.edge == "begin":
                spans.append(Span(marker.phase, ev.timestamp, ev.line_start))
            else:
                current.end, current.end_line = ev.timestamp, ev.line_start
        else:
            if current is not None and not current.ended:
                current.end = current.end if current.end_line else ev.timestamp
                current.end = ev.timestamp or current.end
                current.end_line = ev.line_start
                current.ended = True
            span = Span(marker.phase, ev.timestamp, ev.line_start)
            if marker.edge in ("end", "ready"):  # ready is a moment: serving follows it,
                # whether or not a serving line was looked at (the fast path samples them)
                span.ended, span.end, span.end_line = True, ev.timestamp, ev.line_start
            spans.append(span)
        if "done" in groups and "total" in groups:
            spans[-1].progress = f"{groups['done']}/{groups['total']}"
            self.last_progress = spans[-1].progress
            self.last_progress_phase = marker.phase
        self.last_phase = marker.phase

    def ready_again(self, line: int, container: str | None) -> int | None:
        """The first ready line of `container` after `line`, if it came up (again)."""
        if container is None:
            return None
        return next((ln for ln, c in self.ready_containers if ln > line and c == container),
                    None)

    def _note_alive(self, ev: Event) -> None:
        self.alive.append(ev.line_start)
        if ev.timestamp:
            self.alive_times[ev.line_start] = ev.timestamp
        if len(self.alive_times) > 4 * ALIVE_KEEP:
            kept = set(self.alive)
            self.alive_times = {k: v for k, v in self.alive_times.items() if k in kept}

    def alive_after(self, line: int, since: str | None = None) -> int:
        """How many ready/successful-serving lines came after `line` (at most ALIVE_KEEP).

        With `since` (the error's timestamp), a line stamped earlier does not count: it is
        later in the file but not in time, as when a paste puts a second process's log (a
        PD decode server's) after the first's error."""
        return sum(1 for a in self.alive if a > line and not (
            since and (ts := self.alive_times.get(a)) and ts[:19] < since[:19]))

    def note_alive(self, lines: Iterable[int]) -> None:
        """Serving lines the fast path summarised instead of feeding: merged by line number
        with those fed, so the latest few are kept whichever came first."""
        merged = sorted({*self.alive, *lines})[-ALIVE_KEEP:]
        self.alive.clear()
        self.alive.extend(merged)

    def phase_at(self, line: int, key: Key | None = None) -> str | None:
        """The phase a rank (or, failing that, the whole job) was in at `line`."""
        candidates = [self.spans[key]] if key in self.spans else list(self.spans.values())
        best: Span | None = None
        for spans in candidates:
            for span in spans:
                if span.start_line <= line and (best is None or span.start_line >= best.start_line):
                    best = span
        if best is None and key is not None:
            return self.phase_at(line, None)
        if best is None:
            return None
        if best.ended and best.end_line is not None and best.end_line < line:
            if not self.server_seen:  # a training job or NCCL test: after init, it runs
                return "running" if best.phase == "dist_init" else best.phase
            return NEXT_PHASE.get(best.phase, best.phase)  # finished: it was in the next one
        return best.phase

    def furthest(self) -> str | None:
        """The furthest phase any rank reached."""
        reached = [s.phase for spans in self.spans.values() for s in spans]
        known = [p for p in reached if p in PHASE_ORDER]
        return max(known, key=PHASE_ORDER.index) if known else None

    def open_startup_phase(self) -> bool:
        """The most recent phase is a start-up phase that had not finished when the log ended."""
        latest = self._latest_spans()
        if not latest:
            return False
        span = latest[-1]
        return span.phase in STARTUP_PHASES and not span.ended

    def as_list(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for key in sorted(self.spans, key=lambda k: (k[0] is None, k[0] or 0, k[1] or "")):
            out.extend(span.as_dict(key) for span in self.spans[key])
        return out


def _process_label(ev: Event) -> str | None:
    if ev.process:
        return ev.process
    if ev.system in ("sglang", "vllm"):
        return "main"
    return None
