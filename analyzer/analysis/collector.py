"""Post-mortem collection: what a maintainer wants to *see* in `loglens report`, gathered
from the event stream in the same pass as the analysis would read it.

Per-rank phase spans with their line numbers (the Gantt chart), serving metrics over time
(SGLang batch lines, vLLM periodic stats), GPU memory per start-up step, and the environment
(versions, GPUs, server arguments). Memory stays bounded: metric series are downsampled on the
fly to at most `MAX_POINTS` points, every list is capped. Every string passes through one
`Redactor` (unless redaction is off), so the renderers never see a secret or a hostname.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from analyzer.analysis.phases import PhaseTracker
from analyzer.knowledge import Knowledge
from analyzer.model import Event, bounded_float, bounded_int
from analyzer.parse.timestamps import epoch
from analyzer.report.redact import Redactor

MAX_POINTS = 2000  # per metric series, after downsampling
MAX_SERIES = 24
MAX_LANES = 128
MAX_SPANS_PER_LANE = 200
MAX_MEMORY_STEPS = 40
MAX_FACTS = 30
MAX_ARGS = 400
MAX_GPUS = 16


# ------------------------------------------------------------------------- metrics
@dataclass
class Series:
    """One metric over time, downsampled in place to at most `MAX_POINTS` points.

    Each kept point is the peak of the samples it stands for: a KV-usage spike or a
    queue build-up must survive downsampling, an average would hide it.
    """

    metric: str
    label: str
    unit: str
    who: str = ""  # emitter (TP0, DP1, engine 0) when a log has several
    points: list[tuple[float, float, int]] = field(default_factory=list)  # (x, y, line)
    stride: int = 1
    _pending: tuple[float, float, int] | None = None
    _pending_n: int = 0
    samples: int = 0
    last: float | None = None

    def add(self, x: float, y: float, line: int) -> None:
        """Take one sample (x is seconds since the epoch, or a line number)."""
        self.samples += 1
        self.last = y
        if self._pending is None or y > self._pending[1]:
            self._pending = (x if self._pending is None else self._pending[0], y,
                             line if self._pending is None else self._pending[2])
        self._pending_n += 1
        if self._pending_n >= self.stride:
            self._flush()

    def _flush(self) -> None:
        if self._pending is not None:
            self.points.append(self._pending)
        self._pending, self._pending_n = None, 0
        if len(self.points) >= MAX_POINTS:
            merged = []
            for i in range(0, len(self.points) - 1, 2):
                a, b = self.points[i], self.points[i + 1]
                merged.append((a[0], max(a[1], b[1]), a[2]))
            if len(self.points) % 2:
                merged.append(self.points[-1])
            self.points = merged
            self.stride *= 2

    def finish(self) -> dict[str, Any]:
        """The public shape: points plus min/max/last for the summary tables."""
        self._flush()
        self.points.sort(key=lambda p: p[0])  # several inputs may go back in time
        ys = [p[1] for p in self.points]
        return {"metric": self.metric, "label": self.label, "who": self.who, "unit": self.unit,
                "points": [[p[0], p[1]] for p in self.points], "samples": self.samples,
                "downsampled": self.stride > 1, "min": min(ys) if ys else None,
                "max": max(ys) if ys else None, "last": self.last}


_NUM = r"(\d+(?:\.\d+)?)"
# the metrics themselves ([[fact]] group "metric") live in knowledge/environment.toml
VLLM_ENGINE = re.compile(r"^Engine (\d{1,4}):")
METRIC_TITLES = {"gen": "Generation throughput", "prompt": "Prompt / prefill throughput",
                 "requests": "Requests", "usage": "KV cache / token usage"}

# ------------------------------------------------------------------------- memory
AVAIL = re.compile(r"avail mem=" + _NUM + r" ?GB")
USAGE = re.compile(r"mem usage=" + _NUM + r" ?GB")
STEP_LABEL = re.compile(r"\s*([A-Za-z][^.,=]{0,60}?)\s*(?:\.(?:\s|$)|,|$| avail mem| mem usage)")
# the figures of single lines ([[fact]] group "memory") live in knowledge/environment.toml

# ------------------------------------------------------------------------- environment
# the versions ([[fact]] group "version") live in knowledge/environment.toml
NO_VALUE = frozenset({"N/A", "None", "none", "Could not collect", "", "null"})
BANNER_VERSION = re.compile(r"[█▄▀].{0,60}\bversion (\d[\w.+-]{0,40})")
_GPU_VENDORS = r"(?:NVIDIA|AMD|Tesla|Quadro|GeForce|Radeon)"
GPU_LINE = re.compile(rf"^GPU ([\d,]{{1,40}}): ({_GPU_VENDORS}[^\n]{{1,60}})$")
NCCL_TESTS_GPU = re.compile(
    rf"device\s+\d{{1,3}} \[0x[0-9a-f]{{1,4}}\] ({_GPU_VENDORS}[^\n]{{1,50}})$")
MODEL_ARG = re.compile(r"\bmodel='([^']{1,200})'")


# ------------------------------------------------------------------------- collector
@dataclass
class _Lane:
    rank: int | None
    process: str | None
    first_line: int
    last_line: int
    first_ts: float | None = None
    last_ts: float | None = None
    events: int = 0


@dataclass
class _Range:
    """Min, max and count of a value seen many times (bounded memory, unlike a list)."""

    lo: float | None = None
    hi: float | None = None
    n: int = 0

    def add(self, v: float) -> None:
        self.lo = v if self.lo is None else min(self.lo, v)
        self.hi = v if self.hi is None else max(self.hi, v)
        self.n += 1


class Collector:
    """One pass over the events: phases with line numbers, metrics, memory, environment."""

    def __init__(self, knowledge: Knowledge, wanted_lines: set[int],
                 redactor: Redactor | None) -> None:
        self.tracker = PhaseTracker(knowledge)
        facts = knowledge.facts
        self.version_facts = [f for f in facts if f.group == "version"]
        self.memory_facts = [f for f in facts if f.group == "memory"]
        self.sglang_metrics = [f for f in facts if f.group == "metric" and f.system == "sglang"]
        self.sglang_prefill = [f for f in self.sglang_metrics if f.prefill]
        self.vllm_metrics = [f for f in facts if f.group == "metric" and f.system == "vllm"]
        self.redactor = redactor
        self.lanes: dict[tuple[int | None, str | None], _Lane] = {}
        self.series: dict[tuple[str, str], Series] = {}
        self.memory: dict[str, dict[str, Any]] = {}
        self.facts: dict[tuple[str, str], dict[str, Any]] = {}
        self.versions: dict[str, dict[str, Any]] = {}
        self.gpus: dict[str, dict[str, Any]] = {}
        self.args: dict[str, Any] = {}
        self.args_source: list[str] = []
        self.model: str | None = None
        self.wanted = wanted_lines
        self.wanted_max = max(wanted_lines, default=0)
        self.line_ts: dict[tuple[str, int], str | None] = {}
        self.first_ts: float | None = None
        self.last_ts: float | None = None
        self.last_line = 0
        self.sources: list[str] = []
        self.any_ts = False

    def feed(self, ev: Event) -> None:
        """Take one event of the stream."""
        if self.redactor is not None:
            for raw in ev.raw:
                self.redactor.learn(raw)
        if not self.sources or self.sources[-1] != ev.source:
            self.sources.append(ev.source)
        self.tracker.feed(ev)
        ts = epoch(ev.timestamp)
        if ts is not None:
            self.any_ts = True
            self.first_ts = ts if self.first_ts is None else min(self.first_ts, ts)
            self.last_ts = ts if self.last_ts is None else max(self.last_ts, ts)
        self.last_line = max(self.last_line, ev.line_end)
        self._lane(ev, ts)
        if ev.line_start <= self.wanted_max:
            for line in range(ev.line_start, ev.line_end + 1):
                if line in self.wanted:
                    self.line_ts.setdefault((ev.source, line), ev.timestamp)
        msg = ev.message
        if ev.kind == "config":
            self._config(ev)
        if ev.kind in ("log", "plain", "config"):
            self._metrics(ev, msg, ts)
            self._memory(ev, msg)
            self._environment(msg, ev.line_start)

    def feed_facts(self, ev: Event) -> None:
        """Take one event for its facts only (host names, time span, environment): what a
        fleet table's row needs, at a third of `feed`'s cost (no phases, lanes, metrics)."""
        if self.redactor is not None:
            for raw in ev.raw:
                self.redactor.learn(raw)
        ts = epoch(ev.timestamp)
        if ts is not None:
            self.first_ts = ts if self.first_ts is None else min(self.first_ts, ts)
            self.last_ts = ts if self.last_ts is None else max(self.last_ts, ts)
        if ev.kind == "config":
            self._config(ev)
        if ev.kind in ("log", "plain", "config"):
            self._environment(ev.message, ev.line_start)

    def _lane(self, ev: Event, ts: float | None) -> None:
        key = self.tracker.key(ev)
        lane = self.lanes.get(key)
        if lane is None:
            if len(self.lanes) >= MAX_LANES * 4:
                return
            lane = self.lanes[key] = _Lane(key[0], key[1], ev.line_start, ev.line_end)
        lane.events += 1
        lane.last_line = ev.line_end
        if ts is not None:
            lane.first_ts = ts if lane.first_ts is None else lane.first_ts
            lane.last_ts = ts

    # -- metrics ------------------------------------------------------------------------
    def _metrics(self, ev: Event, msg: str, ts: float | None) -> None:
        if "batch." in msg and ("Decode batch" in msg or "Prefill batch" in msg):
            table = self.sglang_prefill if "Prefill batch" in msg else self.sglang_metrics
            who = ev.process or ""
        elif "throughput:" in msg and "Avg" in msg:
            table = self.vllm_metrics
            m = VLLM_ENGINE.match(msg)
            who = f"engine {bounded_int(m.group(1))}" if m else ""
        else:
            return
        if ts is None:  # stats lines carry their own timestamp; one without is not plottable
            return
        for fact in table:
            got = fact.value(msg)
            if got is None:
                continue
            key = (fact.id, who)
            series = self.series.get(key)
            if series is None:
                if len(self.series) >= MAX_SERIES:
                    continue
                series = self.series[key] = Series(fact.metric, fact.name, fact.unit, who)
            series.add(ts, bounded_float(got[0]) * fact.scale, ev.line_start)

    # -- memory -------------------------------------------------------------------------
    def _memory(self, ev: Event, msg: str) -> None:
        if "mem" in msg and ("avail mem=" in msg or "mem usage=" in msg):
            avail, usage = AVAIL.search(msg), USAGE.search(msg)
            label_m = STEP_LABEL.match(msg)
            label = label_m.group(1).strip() if label_m else msg[:40]
            step = self.memory.get(label)
            if step is None:
                if len(self.memory) >= MAX_MEMORY_STEPS:
                    return
                step = self.memory[label] = {"step": label, "line": ev.line_start,
                                             "timestamp": ev.timestamp, "avail": _Range(),
                                             "usage": _Range(), "who": []}
            if avail:
                step["avail"].add(bounded_float(avail.group(1)))
            if usage:
                step["usage"].add(bounded_float(usage.group(1)))
            who = ev.process or (f"rank {ev.rank_number()}" if ev.rank_number() is not None
                                 else "")
            if who and who not in step["who"] and len(step["who"]) < 64:
                step["who"].append(who)
            return
        if not any(w in msg for w in ("GiB", "GB", "tokens", "concurrency")):
            return
        for fact in self.memory_facts:
            got = fact.value(msg)
            if got is None:
                continue
            number, subject = got
            label = fact.name.replace("{subject}", subject or "")
            value = f"{number}{fact.unit}" if fact.unit == "×" else f"{number} {fact.unit}"
            key = (label, value)
            if key not in self.facts and len(self.facts) < MAX_FACTS:
                self.facts[key] = {"label": label, "value": value, "line": ev.line_start}

    # -- environment ----------------------------------------------------------------------
    def _environment(self, msg: str, line: int) -> None:
        text = msg.strip()
        for fact in self.version_facts:
            if fact.name in self.versions:
                continue
            got = fact.value(text)
            if got is not None and got[0].strip() not in NO_VALUE:
                self.versions[fact.name] = {"value": got[0].strip(), "line": line}
        if "vLLM" not in self.versions and "version" in text:
            hit = BANNER_VERSION.search(text)
            if hit:
                self.versions["vLLM"] = {"value": hit.group(1), "line": line}
        for rx in (GPU_LINE, NCCL_TESTS_GPU) if "GPU " in text or "device " in text else ():
            hit = rx.search(text)
            if hit:
                name = hit.group(hit.lastindex or 1).strip()
                ids = hit.group(1) if rx is GPU_LINE else ""
                entry = self.gpus.get(name)
                if entry is None and len(self.gpus) < MAX_GPUS:
                    self.gpus[name] = {"name": name, "ids": ids, "count": 1, "line": line}
                elif entry is not None:
                    entry["count"] += 1
                    if ids and len(entry["ids"]) < 200:  # collect_env: one line per GPU
                        entry["ids"] = f"{entry['ids']},{ids}" if entry["ids"] else ids
        if self.model is None and "model='" in text:
            hit = MODEL_ARG.search(text)
            if hit:
                self.model = hit.group(1)

    def _config(self, ev: Event) -> None:
        for key in ("server_args", "args"):
            value = ev.fields.get(key)
            if isinstance(value, dict):
                label = "SGLang server_args" if key == "server_args" else "vLLM arguments"
                if label not in self.args_source:
                    self.args_source.append(label)
                for k, v in value.items():
                    if len(self.args) < MAX_ARGS or k in self.args:
                        self.args[str(k)] = v

    # -- result ---------------------------------------------------------------------------
    def result(self) -> dict[str, Any]:
        """Plain data (not yet redacted): timeline, metrics, memory, environment."""
        return {"timeline": self._timeline(), "metrics": self._metrics_result(),
                "memory": {"steps": self._memory_steps(), "facts": list(self.facts.values())},
                "environment": self.environment()}

    def _timeline(self) -> dict[str, Any]:
        lanes: list[dict[str, Any]] = []
        keys = set(self.tracker.spans) | {k for k in self.lanes if k[0] is not None}
        order = sorted(keys, key=lambda k: (k[0] is None, k[0] if k[0] is not None else 0,
                                            k[1] or ""))
        for key in order[:MAX_LANES]:
            seen = self.lanes.get(key)
            spans = []
            for span in self.tracker.spans.get(key, [])[:MAX_SPANS_PER_LANE]:
                spans.append({"phase": span.phase, "start": span.start, "end": span.end,
                              "start_line": span.start_line, "end_line": span.end_line,
                              "ended": span.ended, "progress": span.progress,
                              "t0": epoch(span.start), "t1": epoch(span.end)})
            lanes.append({
                "rank": key[0], "process": key[1], "spans": spans,
                "first_line": seen.first_line if seen else None,
                "last_line": seen.last_line if seen else None,
                "first_t": seen.first_ts if seen else None,
                "last_t": seen.last_ts if seen else None,
                "events": seen.events if seen else 0,
            })
        return {"lanes": lanes, "hidden_lanes": max(0, len(order) - MAX_LANES),
                "first_t": self.first_ts, "last_t": self.last_ts, "last_line": self.last_line,
                "sources": self.sources[:50]}

    def _metrics_result(self) -> list[dict[str, Any]]:
        charts: dict[str, list[dict[str, Any]]] = {}
        for series in self.series.values():
            charts.setdefault(series.metric, []).append(series.finish())
        for chart in charts.values():
            if len({s["who"] for s in chart}) > 1:  # several emitters: name them
                for s in chart:
                    s["label"] = f"{s['label']} ({s['who']})" if s["who"] else s["label"]
        out = []
        for metric in METRIC_TITLES:
            if metric in charts:
                out.append({"metric": metric, "title": METRIC_TITLES[metric],
                            "unit": charts[metric][0]["unit"], "series": charts[metric],
                            "x": "time"})
        return out

    def _memory_steps(self) -> list[dict[str, Any]]:
        out = []
        for step in self.memory.values():
            avail, usage = step["avail"], step["usage"]
            out.append({"step": step["step"], "line": step["line"],
                        "timestamp": step["timestamp"],
                        "avail_min": avail.lo, "avail_max": avail.hi,
                        "usage_min": usage.lo, "usage_max": usage.hi,
                        "who": step["who"], "samples": max(avail.n, usage.n)})
        return out

    def environment(self) -> dict[str, Any]:
        """Model, versions, GPUs and parsed arguments seen so far."""
        args = dict(self.args)
        model = self.model
        for key in ("model_path", "model", "model_tag"):
            if model is None and isinstance(args.get(key), str):
                model = args[key]
        versions = [{"name": k, "value": v["value"], "line": v["line"]}
                    for k, v in self.versions.items()]
        return {"model": model, "versions": versions, "gpus": list(self.gpus.values()),
                "args": args, "args_source": self.args_source}
