"""The library front door: the CLI calls only these functions.

    sources -> framing -> blocks (events) -> analysis -> report dict -> renderers
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from analyzer.analysis.engine import Analyzer
from analyzer.analysis.findings import Finding
from analyzer.analysis.remedies import concrete
from analyzer.knowledge import load as load_knowledge
from analyzer.model import Event, Frame
from analyzer.parse import prefixes
from analyzer.parse.timestamps import epoch
from analyzer.parse.wraps import wrap_width
from analyzer.pipeline import Pipeline
from analyzer.scan.split import wanted as producer_wanted
from analyzer.sources.source import Source, open_sources
from analyzer.version import version as tool_version

if TYPE_CHECKING:  # the post-mortem's collector and redactor load only when one is made
    from analyzer.analysis.collector import Collector
    from analyzer.scan import prefilter

SCHEMA = "loglens.explain/1"
YEAR_SNIFF_LINES = 5000
EXCERPT_BEFORE, EXCERPT_AFTER = 12, 4
DATED_HEADS = ("bracket_ts", "nccl", "deepspeed", "torch_legacy", "wrapper", "launcher",
               "pylog_dash", "kernel", "neuron_rt")
DATED_WRAPPERS = ("docker_ts", "kubectl", "launcher", "journald")


@dataclass
class Input:
    """One opened input, the year its yearless timestamps belong to, and the prefixes it
    puts before its records (inferred from its first lines)."""

    source: Source
    year: int | None
    prefixes: list[re.Pattern[str]] = field(default_factory=list)
    wrap_width: int | None = None  # the width a paste was hard-wrapped at (parse/wraps.py)


def _sniff(src: Source) -> tuple[int | None, list[re.Pattern[str]], int | None]:
    """What the first lines teach: the year of the first fully dated line (so yearless lines
    before it get it right), the prefixes this input puts before its records, and the width
    it was hard-wrapped at."""
    from analyzer.parse.framing import Framer as _F  # local: a throwaway framer

    framer = _F()
    year: int | None = None
    texts: list[str] = []
    framed: list[Frame] = []
    try:
        for i, line in enumerate(src.lines()):
            if i >= YEAR_SNIFF_LINES or (year is not None and i >= prefixes.SAMPLE_LINES):
                break
            frame = framer.frame(line)
            if i < prefixes.SAMPLE_LINES:
                texts.append(prefixes.sample_text(frame))
                framed.append(frame)
            head = frame.head
            dated = head is not None and (head.fmt in DATED_HEADS or any(
                p.kind in DATED_WRAPPERS for p in frame.prefixes))
            if year is None and dated and head is not None and head.timestamp:
                year = int(head.timestamp[:4])
    except Exception:
        return year, [], None
    return (year, prefixes.infer(texts, framer.recognised, framer.body),
            wrap_width(framed))


def _opened(paths: Sequence[str] | Sequence[Source]) -> list[Source]:
    if paths and all(isinstance(p, Source) for p in paths):
        return [p for p in paths if isinstance(p, Source)]
    return open_sources([str(p) for p in paths])


def open_inputs(paths: Sequence[str], year: int | None = None) -> list[Input]:
    """Open what the user named; raise InputError with one clear line when unusable."""
    return _with_years(open_sources(list(paths)), year)


def _with_years(sources: Sequence[Source], year: int | None) -> list[Input]:
    out = []
    for src in sources:
        y = year
        sniffed, learned, width = _sniff(src)  # a stream is kept, so stdin can be sniffed
        if y is None:
            y = sniffed or src.mtime_year()
        out.append(Input(src, y, learned, width))
    return out


def iter_events(inp: Input) -> Iterator[Event]:
    """Every event of one input, in line order, timestamps inherited (the full path)."""
    return Pipeline(inp.source.name, inp.year, inp.prefixes, inp.wrap_width).run(inp.source.lines())


def events(paths: Sequence[str] | Sequence[Source], year: int | None = None,
           notes: list[str] | None = None) -> Iterator[Event]:
    """Events of all inputs, one input after another; reader warnings (a truncated gzip, ...)
    are appended to `notes` when given."""
    for inp in _with_years(_opened(paths), year):
        yield from iter_events(inp)
        if notes is not None:
            notes.extend(inp.source.stats.warnings)


def explain(paths: Sequence[str] | Sequence[Source], *, rules: Sequence[str] = (),
            year: int | None = None, excerpts: bool = True, fast: bool | None = None,
            observe: Callable[[Event], bool] | None = None) -> dict[str, Any]:
    """Analyse the inputs and return the explain report (the JSON contract).

    `paths` may be sources opened already (the post-mortem reads them twice). `fast=False`
    puts every line on the full path (the reference the fast path is tested against), `True`
    prefilters whatever the size; the default prefilters only inputs worth it. The answers
    are the same.

    `observe`, when given, sees the events in order until it returns False: on the full path
    the very events analysed (one read), on the prefiltered path a second read of the inputs
    (the prefilter never builds events for the ordinary lines an observer wants).
    """
    sources = _opened(paths)
    remote = None
    if fast is not False and sources and producer_wanted(sources[0]):  # a big file: starts
        from analyzer.scan import producer

        remote = producer.take(sources[0], rules) or producer.RemoteBatches(sources[0], rules)
        # now, to overlap our start-up
    try:
        inputs = _with_years(sources, year)
        if fast is None:  # after the sniff, which reads a short stream to its end
            fast = worth_prefiltering(sources)
        knowledge = load_knowledge(rules)
        if fast:  # imported only here: a pasted log never builds the prefilter
            from analyzer.scan import prefilter
        if fast and prefilter.patterns(knowledge) is None:
            fast = False
    except BaseException:
        if remote is not None:
            remote.close()
        raise
    if not fast and remote is not None:
        remote.close()
        remote = None
    analyzer = Analyzer(knowledge)
    for i, inp in enumerate(inputs):
        if i:
            analyzer.next_input()
        if fast:
            if remote is None and producer_wanted(inp.source):
                from analyzer.scan import producer

                remote = producer.RemoteBatches(inp.source, rules)
            if remote is not None:
                batches: Iterable[prefilter.Batch] = remote
            else:
                batches = prefilter.classified(inp.source.series_batches(), knowledge)
            remote = None
            Pipeline(inp.source.name, inp.year, inp.prefixes, inp.wrap_width).analyze_prefiltered(
                analyzer, batches)
        else:
            for ev in iter_events(inp):
                analyzer.feed(ev)
                if observe is not None and not observe(ev):
                    observe = None
    if fast and observe is not None:
        _observe_again(inputs, observe)
    result = analyzer.result()
    try:
        return build_report(analyzer, result, inputs, excerpts=excerpts)
    finally:
        loaded = sys.modules.get("analyzer.scan.producer")  # none was started if never loaded
        for inp in inputs:
            if loaded is not None:
                loaded.release(inp.source)


def _observe_again(inputs: Sequence[Input], observe: Callable[[Event], bool]) -> None:
    for inp in inputs:
        for ev in iter_events(inp):
            if not observe(ev):
                return


PREFILTER_BYTES = 4 << 20  # below this, building the prefilter's unions costs more than it saves


def worth_prefiltering(sources: Sequence[Source]) -> bool:
    """Whether the prefilter pays for itself. Building its patterns (and importing polars)
    costs ~0.3 s once; the full path reads a pasted log of a few thousand lines in ~0.02 s.
    An input of unknown size (a stream not yet read to its end) may be endless: prefiltered."""
    total = 0
    for src in sources:
        size = src.size_hint()
        if size is None:
            return True
        total += size
    return total >= PREFILTER_BYTES


def _root_dict(root: Finding, analyzer: Analyzer, phase: str | None) -> dict[str, Any]:
    sig = root.sig
    summary = sig.summary if sig is not None else _generic_summary(root)
    remediation = concrete(root.category, root.groups, analyzer.config,
                           sig.remediation if sig is not None else None)
    return {"category": root.category or "other", "line": root.line, "text": root.text,
            "rank": root.rank, "timestamp": root.timestamp, "summary": summary,
            "remediation": remediation, "signature": root.sig_id, "process": root.process,
            "system": sig.system if sig is not None else "python", "phase": phase,
            "file": root.source or None,
            "detail": ({"line": root.detail[0], "text": root.detail[1]}
                       if root.detail is not None else None)}


def _generic_summary(root: Finding) -> str:
    if root.reason:
        return root.reason[0].upper() + root.reason[1:]
    if root.role == "statement":
        return ("The first exception of this traceback; no signature knows it, so read its "
                "message and the frames above it.")
    return "The earliest error in the log."


def _headline(verdict: str, root: dict[str, Any] | None, last_phase: dict[str, Any] | None,
              ranks: int) -> str:
    phase = (root or {}).get("phase") or (last_phase or {}).get("phase")
    if verdict in ("crash", "hang") and root is not None:
        where = f" on rank {root['rank']}" if root.get("rank") is not None else ""
        during = f" during {phase}" if phase else ""
        what = root["category"].replace("_", " ")
        if root["category"] == "other" and root.get("signature"):
            what = str(root["signature"]).split(".")[-1].replace("_", " ")
        return f"{verdict.capitalize()}: {what}{where}{during} (line {root['line']})"
    if verdict == "healthy":
        return "Healthy: no failure found" + (f"; reached {phase}" if phase else "")
    if verdict == "unknown":
        return "Unknown: no SGLang, vLLM, PyTorch, NCCL or Ray lines recognised"
    progress = (last_phase or {}).get("progress")
    return ("In progress: no failure found; the log ends in " + (phase or "start-up")
            + (f" ({progress})" if progress else ""))


def build_report(analyzer: Analyzer, result: dict[str, Any], inputs: Sequence[Input],
                 *, excerpts: bool = True) -> dict[str, Any]:
    """Assemble the stable JSON contract from the analysis."""
    root: Finding | None = result["root"]
    tracker = analyzer.phases
    phase = analyzer.failure_phase(root) if root is not None else tracker.last_phase
    root_dict = _root_dict(root, analyzer, phase) if root is not None else None
    # the last progress bar, only if it belongs to the phase reported (not weight loading's
    # "48/48" shown for a crash hours into serving)
    progress = (tracker.last_progress
                if tracker.last_progress_phase == (phase or tracker.last_phase) else None)
    last_phase = ({"phase": phase or tracker.last_phase, "progress": progress}
                  if (phase or tracker.last_phase) else None)
    sigs: list[dict[str, Any]] = []
    for f in result["findings"]:
        if f.sig is not None:
            sigs.append({"id": f.sig.id, "line": f.line, "kind": "failure",
                         "role": "cause" if f is root else f.sig.kind})
    for w in analyzer.warnings.values():
        if w["id"] and w["benign"]:
            sigs.append({"id": w["id"], "line": w["line"], "kind": "benign"})
    sigs.extend({"id": mid, "line": line, "kind": "phase"} for mid, line in tracker.hits[:500])
    sigs.sort(key=lambda s: (s["line"], s["id"]))
    stats_src = [inp.source.stats for inp in inputs]
    warnings = sorted(analyzer.warnings.values(), key=lambda w: (w["benign"], w["line"]))
    report: dict[str, Any] = {
        "schema": SCHEMA,
        "file": ", ".join(inp.source.name for inp in inputs),
        "lines": sum(s.lines for s in stats_src),
        "verdict": result["verdict"],
        "headline": "",
        "root_cause": root_dict,
        "confidence": ({"level": result["confidence"][0], "reason": result["confidence"][1]}
                       if result.get("confidence") else None),
        "candidates": [{"line": f.line, "text": f.text, "rank": f.rank,
                        "category": f.category or "other", "signature": f.sig_id,
                        "rule": why, **({"file": f.source} if len(inputs) > 1 else {})}
                       for f, why in result.get("candidates", [])],
        "symptoms": result["symptoms"],
        "phases": tracker.as_list()[:300],
        "last_phase": last_phase,
        "signatures": sigs[:2000],
        "warnings": warnings,
        "excerpts": [],
        "stats": {"events": analyzer.events + analyzer.skipped,
                  "ordinary_lines_skipped": analyzer.skipped,
                  "plain_lines": analyzer.plain_lines,
                  "replaced_lines": sum(s.replaced_lines for s in stats_src),
                  "truncated_lines": sum(s.truncated_lines for s in stats_src),
                  "sources": [inp.source.name for inp in inputs],
                  "notes": [*(n for inp in inputs for n in inp.source.notes),
                            *(w for s in stats_src for w in s.warnings)]},
    }
    if report["verdict"] == "hang":
        report["last_activity"] = _last_activity(tracker)
    ranks = len({k[0] for k in tracker.spans if k[0] is not None})
    report["headline"] = _headline(report["verdict"], root_dict, last_phase, ranks)
    if excerpts and root is not None:
        report["excerpts"] = _excerpts(inputs, root, result["symptoms"])
    return report


def _last_activity(tracker: Any) -> list[dict[str, Any]]:
    """Each rank's/process's last line, the one that went silent first at the top."""
    rows = [{"rank": key[0], "process": key[1], "line": line, "timestamp": ts, "text": text}
            for key, (line, ts, text) in tracker.last_line.items()]
    rows.sort(key=lambda r: (r["timestamp"] or "", r["line"]))
    return rows[:64]


def _excerpts(inputs: Sequence[Input], root: Finding, symptoms: list[dict[str, Any]]
              ) -> list[dict[str, Any]]:
    """Re-read the relevant lines (a second, cheap pass) for the report's log excerpts."""
    src = next((i.source for i in inputs if i.source.name == root.source), inputs[0].source)
    wanted: dict[int, str] = {}
    windows: list[tuple[str, int, int]] = [
        ("root cause", root.line - EXCERPT_BEFORE, root.line + EXCERPT_AFTER)]
    for s in symptoms[:6]:
        windows.append((f"symptom: {s['reason'][:60]}", s["line"] - 1, s["line"] + 1))
    top = max(int(w[2]) for w in windows)
    lo = min(int(w[1]) for w in windows)
    marks = {root.line} | {s["line"] for s in symptoms[:6]}
    wanted.update(src.line_range(max(lo, 1), top))
    out: list[dict[str, Any]] = []
    seen: set[int] = set()
    for title, a, b in windows:
        numbers = [n for n in range(max(a, 1), b + 1) if n in wanted and n not in seen]
        seen.update(numbers)
        lines = [{"line": n, "text": wanted[n], "mark": n in marks} for n in numbers]
        if lines:
            out.append({"title": title, "lines": lines})
    return out


# ------------------------------------------------------------------------- post-mortem
POSTMORTEM_SCHEMA = "loglens.postmortem/1"



def postmortem(paths: Sequence[str], *, redact: bool = True, rules: Sequence[str] = (),
          year: int | None = None) -> dict[str, Any]:
    """Analyse `paths` and collect everything a post-mortem shows; redacted by default."""
    from analyzer.analysis.collector import Collector
    from analyzer.report.redact import Redactor

    real = open_sources(list(paths))  # opened once: a stream is kept for the second pass
    try:
        report = explain(real, rules=rules, year=year)
        knowledge = load_knowledge(list(rules))
        root = report.get("root_cause") or {}
        wanted = {s["line"] for s in report.get("symptoms", [])[:200]
                  if isinstance(s.get("line"), int)}
        if isinstance(root.get("line"), int):
            wanted.add(root["line"])
        redactor = Redactor() if redact else None
        collector = Collector(knowledge, wanted, redactor)
        for ev in events(real, year):
            collector.feed(ev)
        extra = collector.result()
        markers = _markers(report, collector)
    finally:
        for src in real:
            src.close()
    data: dict[str, Any] = {
        "schema": POSTMORTEM_SCHEMA,
        "generator": tool_version(),
        "report": report,
        **extra,
        "markers": markers,
    }
    if redactor is not None:
        data = {k: (v if k in ("schema", "generator") else redactor.value(k, v))
                for k, v in data.items()}
        data["redaction"] = {"enabled": True, "summary": redactor.summary(),
                             "line": redactor.summary_line()}
    else:
        data["redaction"] = {"enabled": False, "summary": [], "line": "off (--no-redact)"}
    return data


SURVEY_EVENTS = 200_000  # the facts (versions, args, hosts) are printed at start-up


def survey(paths: Sequence[str] | Sequence[Source], *, rules: Sequence[str] = (),
           year: int | None = None) -> dict[str, Any]:
    """What one row of a fleet table needs: explain's report (no excerpts) and, from the
    first SURVEY_EVENTS events, the environment (versions, model, args, GPUs), the first and
    last timestamps and the host names seen (real name -> pseudonym). A log small enough for
    the full path is read once (the collector sees explain's own events); `paths` may be
    opened sources."""
    from analyzer.analysis.collector import Collector
    from analyzer.report.redact import Redactor

    redactor = Redactor()  # learns the host names; the caller decides what is shown
    collector = Collector(load_knowledge(list(rules)), set(), redactor)
    seen = 0

    def observe(ev: Event) -> bool:
        nonlocal seen
        seen += 1
        if seen > SURVEY_EVENTS:
            return False
        collector.feed_facts(ev)
        return True

    sources = _opened(paths)
    try:
        report = explain(sources, rules=rules, year=year, excerpts=False, observe=observe)
    finally:
        for src in sources:
            src.close()
    complete = seen <= SURVEY_EVENTS
    return {"report": report, "environment": collector.environment(),
            "first_t": collector.first_ts,
            "last_t": collector.last_ts if complete else None,
            "hosts": redactor.hosts(), "redactor": redactor}


def _markers(report: dict[str, Any], col: Collector) -> list[dict[str, Any]]:
    """The failure and its symptoms, placed in time (their own or their line's inherited)."""
    out: list[dict[str, Any]] = []
    root = report.get("root_cause")
    src = col.sources[0] if col.sources else ""
    if isinstance(root, dict) and isinstance(root.get("line"), int):
        file = root.get("file") or src
        ts = root.get("timestamp") or col.line_ts.get((file, root["line"]))
        out.append({"kind": "root", "line": root["line"], "rank": root.get("rank"),
                    "process": root.get("process"), "timestamp": ts, "t": epoch(ts),
                    "file": file, "label": root.get("category") or "failure"})
        src = file
    for s in report.get("symptoms", [])[:60]:
        if not isinstance(s.get("line"), int):
            continue
        ts = col.line_ts.get((src, s["line"]))
        out.append({"kind": "symptom", "line": s["line"], "rank": s.get("rank"),
                    "process": None, "timestamp": ts, "t": epoch(ts), "file": src,
                    "label": s.get("reason") or "symptom"})
    return out

