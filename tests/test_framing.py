"""Framing as data: `tests/cases/framing.toml` lists raw lines and what framing must make of
them (wrappers peeled, head format, system, level, timestamp, rank, message), one case per
wrapper and per head format; plus the yearless-timestamp rules and `year=` of the API."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from analyzer import api
from analyzer.model import Frame, SourceLine
from analyzer.parse.blocks import line_event
from analyzer.parse.framing import Framer

CASES_FILE = Path(__file__).parent / "cases" / "framing.toml"
DATA = tomllib.loads(CASES_FILE.read_text(encoding="utf-8"))
CASES: list[dict[str, Any]] = DATA["case"]
SEQUENCES: list[dict[str, Any]] = DATA["sequence"]
DEFAULT_YEAR = 2025


def frame_lines(lines: list[str], year: int) -> list[Frame]:
    """Frame lines in order with one framer, as the pipeline does for one input."""
    framer = Framer(year)
    return [framer.frame(SourceLine(i, text, "case")) for i, text in enumerate(lines, 1)]


def none_if_empty(key: str, value: Any) -> Any:
    """In the case file "" stands for "none" (TOML has no null); a message may be empty."""
    return None if value == "" and key != "message" else value


def observed(frame: Frame) -> dict[str, Any]:
    """Everything a case may check, from one frame and its single-line event."""
    head = frame.head
    ev = line_event(frame)
    states = ev.fields.get("states") or ev.fields.get("progress") or (
        [{"n": ev.fields["n"], "total": ev.fields["total"]}] if "n" in ev.fields else [])
    head_fields = dict(head.fields) if head is not None else {}
    return {
        "wrappers": [p.kind for p in frame.prefixes],
        "head": head.fmt if head is not None else None,
        "system": head.system if head is not None else None,
        "level": head.level if head is not None else None,
        "timestamp": head.timestamp if head is not None else None,
        "site": head.site if head is not None else None,
        "rank": dict(frame.rank),
        "process": frame.process,
        "pid": frame.pid,
        "message": frame.message,
        "kind": ev.kind,
        "progress": [[s["n"], s["total"]] for s in states],
        "fields": head_fields,
    }


def test_case_file_covers_every_wrapper_and_head() -> None:
    """At least one case per wrapper kind and per head format the framer knows."""
    from analyzer.parse import grammars

    frames = [frame_lines([*c.get("before", []), c["line"]], c.get("year", DEFAULT_YEAR))[-1]
              for c in CASES]
    wrappers = {p.kind for f in frames for p in f.prefixes}
    heads = {f.head.fmt for f in frames if f.head is not None}
    assert set(grammars.WRAPPER_RULES) <= wrappers
    assert set(grammars.HEAD_RULES) <= heads
    assert {"nccl", "deepspeed", "torch_legacy", "launcher", "wrapper"} <= heads
    assert len({c["name"] for c in CASES}) == len(CASES), "case names must be unique"


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_framing_case(case: dict[str, Any]) -> None:
    """One raw line -> the expected wrappers, head, identity and message."""
    frames = frame_lines([*case.get("before", []), case["line"]], case.get("year", DEFAULT_YEAR))
    got = observed(frames[-1])
    checked = [k for k in case if k not in ("name", "line", "year", "before")]
    assert checked, "a case must check something"
    for key in checked:
        want = case[key]
        if key == "fields":
            assert {k: got["fields"].get(k) for k in want} == want, f"{key}: {got['fields']}"
        else:
            assert got[key] == none_if_empty(key, want), f"{key}: got {got[key]!r}"


@pytest.mark.parametrize("seq", SEQUENCES, ids=[s["name"] for s in SEQUENCES])
def test_yearless_timestamps(seq: dict[str, Any]) -> None:
    """Yearless heads take the year given, the last full date seen, and roll over at New Year."""
    frames = frame_lines(seq["lines"], seq["year"])
    assert [f.head.timestamp if f.head else None for f in frames] == seq["timestamps"]


def test_year_option_of_the_api(tmp_path: Path) -> None:
    """`year=` (the CLI's --year) dates yearless lines; a rollover inside the file still counts."""
    log = tmp_path / "engine.log"
    log.write_text("INFO 12-31 23:59:58 [core.py:58] a\nINFO 01-01 00:00:01 [core.py:58] b\n",
                   encoding="utf-8")
    stamps = [ev.timestamp for ev in api.events([str(log)], year=2021)]
    assert stamps == ["2021-12-31T23:59:58", "2022-01-01T00:00:01"]


def test_year_from_the_log_beats_file_mtime(tmp_path: Path) -> None:
    """Without `year=`, a dated line later in the file dates the yearless lines before it."""
    log = tmp_path / "mixed.log"
    log.write_text("INFO 06-01 09:59:00 [core.py:58] yearless first\n"
                   "[2019-06-01 10:00:00] Init torch distributed begin.\n", encoding="utf-8")
    stamps = [ev.timestamp for ev in api.events([str(log)])]
    assert stamps == ["2019-06-01T09:59:00", "2019-06-01T10:00:00"]


def test_ansi_and_carriage_returns_are_cleaned() -> None:
    """`clean` has no escape codes and no CR; `raw` keeps the line as written."""
    raw = ("\x1b[1;36m(VllmWorker rank=2 pid=3019)\x1b[0;0m "
           "\rLoading: 50%|#  | 1/2\rLoading: 100%|##| 2/2")
    [frame] = frame_lines([raw], DEFAULT_YEAR)
    assert frame.raw == raw
    assert "\x1b" not in frame.clean and "\r" not in frame.clean
    assert frame.segments == ["Loading: 50%|#  | 1/2", "Loading: 100%|##| 2/2"]
    assert frame.message == "Loading: 100%|##| 2/2"


def test_timestamp_is_the_heads_timestamp_on_corpus_lines() -> None:
    """Framer.timestamp (the cheap path for inherited times) agrees with frame()."""
    from tests.conftest import corpus_logs

    for log in corpus_logs():
        framer = Framer(2025)
        for i, text in enumerate(log.read_text(encoding="utf-8", errors="replace").splitlines()):
            line = SourceLine(i + 1, text, "x")
            head = framer.frame(line).head
            assert framer.timestamp(line) == (head.timestamp if head else None), text
