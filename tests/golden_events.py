"""Golden event summaries: what the parser makes of each corpus log, one JSON file per case.

`corpus/<system>/<case>.events.json` holds, for `<case>.log`: the event counts by kind and
by system, the ranks seen, every multi-line block (traceback, faulthandler dump, C++ abort,
native backtrace, logging error, py-spy dump) with its lines, exception type, message, rank
and process, and the lines that parse only as `plain`. A change in framing or block assembly
shows up as a readable diff of these files (tests/test_events.py).

Regenerate after an intended parser change, then review the diff against the logs:

    python -m tests.golden_events                  # every corpus log
    python -m tests.golden_events CASE_OR_PATH...  # only these
    pytest tests/test_events.py --update-golden
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from analyzer import api
from analyzer.model import Event

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus"
SCHEMA = "loglens.events-summary/1"
BLOCK_KINDS = ("traceback", "faulthandler", "cpp_abort", "native", "logging_error", "pyspy")
MESSAGE_CHARS = 200
PLAIN_SAMPLE = 10
PLAIN_CHARS = 120
YEAR = 2025  # timestamps are not summarised, but keep the run independent of file mtimes


def golden_path(log: Path) -> Path:
    """Where the summary of `log` lives."""
    return log.parent / (log.stem + ".events.json")


def corpus_logs() -> list[Path]:
    """Every corpus log, in a stable order."""
    return sorted(CORPUS.rglob("*.log"))


def line_ranges(lines: Iterable[int]) -> str:
    """Owned line numbers as compact ranges: [1, 2, 3, 7, 9, 10] -> "1-3,7,9-10"."""
    out: list[str] = []
    nums = sorted(lines)
    i = 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        out.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return ",".join(out)


def block_exc_type(ev: Event) -> str | None:
    """The exception (or fatal error) a block states, whatever its kind."""
    f = ev.fields
    value = f.get("exc_type") or f.get("error")
    return str(value) if value else None


def _rank_key(rank: dict[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(rank.items()))


def summarize_events(events: Sequence[Event], case: str) -> dict[str, Any]:
    """The golden summary of one log's events."""
    kinds = Counter(ev.kind for ev in events)
    systems = Counter(ev.system for ev in events)
    ranks = {_rank_key(ev.rank): dict(sorted(ev.rank.items())) for ev in events if ev.rank}
    blocks = [
        {
            "line_start": ev.line_start,
            "lines": line_ranges(ev.lines),
            "kind": ev.kind,
            "exc_type": block_exc_type(ev),
            "message": ev.message[:MESSAGE_CHARS],
            "rank": dict(sorted(ev.rank.items())),
            "process": ev.process,
        }
        for ev in events if ev.kind in BLOCK_KINDS
    ]
    plain = [ev for ev in events if ev.kind == "plain"]
    text_plain = [ev for ev in plain if ev.message.strip()]  # blank once wrappers are peeled
    sample: list[dict[str, Any]] = []
    seen: set[str] = set()
    for ev in text_plain:
        text = ev.clean[0][:PLAIN_CHARS]
        if text in seen:
            continue
        seen.add(text)
        sample.append({"line": ev.line_start, "text": text})
        if len(sample) >= PLAIN_SAMPLE:
            break
    return {
        "schema": SCHEMA,
        "case": case,
        "lines": max((max(ev.lines) for ev in events if ev.lines), default=0),
        "events": len(events),
        "kinds": dict(sorted(kinds.items())),
        "systems": dict(sorted(systems.items())),
        "ranks": [ranks[k] for k in sorted(ranks)],
        "blocks": blocks,
        "plain": {"count": len(text_plain), "blank": len(plain) - len(text_plain),
                  "sample": sample},
    }


def summarize(log: Path) -> dict[str, Any]:
    """The golden summary of one corpus log, from the current parser."""
    return summarize_events(list(api.events([str(log)], year=YEAR)), log.stem)


def _one(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def render(summary: dict[str, Any]) -> str:
    """The summary as the checked-in JSON text: one block or sample line per text line, so
    that a diff shows exactly which block changed."""
    out = ["{"]
    keys = list(summary)
    for i, key in enumerate(keys):
        value = summary[key]
        comma = "," if i < len(keys) - 1 else ""
        if key == "blocks" and value:
            out.append('  "blocks": [')
            out.extend(f"    {_one(b)}{',' if j < len(value) - 1 else ''}"
                       for j, b in enumerate(value))
            out.append(f"  ]{comma}")
        elif key == "plain" and value["sample"]:
            head = {k: v for k, v in value.items() if k != "sample"}
            out.append(f'  "plain": {_one(head)[:-1]}, "sample": [')
            out.extend(f"    {_one(s)}{',' if j < len(value['sample']) - 1 else ''}"
                       for j, s in enumerate(value["sample"]))
            out.append(f"  ]}}{comma}")
        else:
            out.append(f"  {_one(key)}: {_one(value)}{comma}")
    out.append("}")
    return "\n".join(out) + "\n"


def write(log: Path) -> Path:
    """Regenerate the summary of one log; returns the file written."""
    path = golden_path(log)
    path.write_text(render(summarize(log)), encoding="utf-8")
    return path


def _select(args: Sequence[str]) -> list[Path]:
    logs = corpus_logs()
    if not args:
        return logs
    wanted: list[Path] = []
    for arg in args:
        hits = [p for p in logs if arg in (p.stem, p.name, str(p), str(p.relative_to(ROOT)))]
        if not hits:
            raise SystemExit(f"golden_events: no corpus log named {arg!r}")
        wanted.extend(hits)
    return wanted


def main(argv: Sequence[str] | None = None) -> int:
    """Rewrite the summaries of the named (default: all) corpus logs."""
    for log in _select(list(sys.argv[1:] if argv is None else argv)):
        path = write(log)
        print(path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
