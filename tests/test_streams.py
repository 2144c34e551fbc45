"""Streams are streams (#12): a pipe, FIFO, `<(...)` or stdin is read once and loses no line.

Every command reads its input more than once (the year and prefix sniff, the analysis, the
excerpts, the post-mortem's second pass). On a regular file that is free; on a stream each
re-read used to lose what the previous one consumed, or block on a FIFO that had no writer
any more. Each test compares a stream with the same bytes read as a regular file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from analyzer.sources.source import Source
from tests.conftest import CORPUS

CRASH = CORPUS / "b07-paste" / "torch-lightning-slurm-first-broadcast-watchdog-timeout.log"
LONG = CORPUS / "b07-paste" / "torch-nccl-16node-allreduce-bench-healthy-interleaved-ranks.log"
GUARD = 60  # seconds: only a hang trips this, it is not a speed measurement

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX FIFOs")


def _loglens(*args: str, stdin: bytes | None = None, pass_fds: tuple[int, ...] = ()
             ) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "analyzer", *args], input=stdin,
                          capture_output=True, timeout=GUARD, pass_fds=pass_fds)


def _summary(out: bytes) -> tuple[object, ...]:
    d = json.loads(out)
    root = d.get("root_cause") or {}
    return (d["verdict"], d["lines"], root.get("line"), root.get("text"),
            [e["lines"] for e in d["excerpts"]])


def _feed_fifo(path: Path, data: bytes) -> threading.Thread:
    """A writer that opens the FIFO (blocking until loglens opens it) and writes `data`."""
    def write() -> None:
        with open(path, "wb") as out:
            out.write(data)
    t = threading.Thread(target=write, daemon=True)
    t.start()
    return t


@pytest.mark.parametrize("log", [CRASH, LONG], ids=lambda p: p.stem[:40])
def test_explain_stdin_equals_file(log: Path) -> None:
    direct = _loglens("explain", str(log), "--format", "json")
    piped = _loglens("explain", "-", "--format", "json", stdin=log.read_bytes())
    assert direct.returncode == piped.returncode
    assert _summary(piped.stdout) == _summary(direct.stdout)


def test_explain_fifo_equals_file(tmp_path: Path) -> None:
    fifo = tmp_path / "crash.fifo"
    os.mkfifo(fifo)
    writer = _feed_fifo(fifo, CRASH.read_bytes())
    got = _loglens("explain", str(fifo), "--format", "json")
    writer.join(5)
    direct = _loglens("explain", str(CRASH), "--format", "json")
    assert got.returncode == direct.returncode, got.stderr
    # the excerpts are cut from the kept copy, not by reopening the FIFO
    assert _summary(got.stdout) == _summary(direct.stdout)


def test_explain_process_substitution(tmp_path: Path) -> None:
    """`explain <(cat crash.log)` is /dev/fd/N: a pipe that a second open cannot rewind."""
    read_end, write_end = os.pipe()
    data = CRASH.read_bytes()
    def write() -> None:
        with os.fdopen(write_end, "wb") as out:
            out.write(data)
    t = threading.Thread(target=write, daemon=True)
    t.start()
    try:
        got = _loglens("explain", f"/dev/fd/{read_end}", "--format", "json",
                       pass_fds=(read_end,))
    finally:
        os.close(read_end)
        t.join(5)
    direct = _loglens("explain", str(CRASH), "--format", "json")
    assert got.returncode == direct.returncode, got.stderr
    assert _summary(got.stdout)[:4] == _summary(direct.stdout)[:4]


@pytest.mark.parametrize("how", ["stdin", "fifo"])
def test_report_reads_a_stream_twice(tmp_path: Path, how: str) -> None:
    """The post-mortem runs explain and then a collector pass over the same input."""
    out = tmp_path / "r.md"
    if how == "stdin":
        got = _loglens("report", "-", "--format", "markdown", "-o", str(out),
                       stdin=CRASH.read_bytes())
    else:
        fifo = tmp_path / "in.fifo"
        os.mkfifo(fifo)
        writer = _feed_fifo(fifo, CRASH.read_bytes())
        got = _loglens("report", str(fifo), "--format", "markdown", "-o", str(out))
        writer.join(5)
    assert got.returncode == 0, got.stderr
    page = out.read_text()
    want = json.loads(_loglens("explain", str(CRASH), "--format", "json").stdout)
    assert f"**Lines:** {want['lines']}" in page
    assert f"(line {want['root_cause']['line']})" in page.splitlines()[0]
    assert "loglens-stdin" not in page and "loglens-stream" not in page


def test_events_fifo_loses_nothing(tmp_path: Path) -> None:
    fifo = tmp_path / "e.fifo"
    os.mkfifo(fifo)
    writer = _feed_fifo(fifo, LONG.read_bytes())
    got = _loglens("events", str(fifo))
    writer.join(5)
    direct = _loglens("events", str(LONG))
    assert got.returncode == direct.returncode == 0
    assert got.stdout.count(b"\n") == direct.stdout.count(b"\n")


def test_source_reads_a_pipe_again(tmp_path: Path) -> None:
    """The unit behind it: a second `lines()` of a stream replays the first one's copy."""
    read_end, write_end = os.pipe()
    data = b"".join(f"line {i}\n".encode() for i in range(50_000))
    t = threading.Thread(target=lambda: os.write(write_end, data) and os.close(write_end),
                         daemon=True)
    t.start()
    src = Source("pipe", Path(f"/dev/fd/{read_end}"))
    head = []
    for line in src.lines():  # a sniff: stops early
        head.append(line.text)
        if len(head) == 10:
            break
    whole = [line.text for line in src.lines()]
    again = [line.text for line in src.lines()]
    src.close()
    os.close(read_end)
    assert head == whole[:10]
    assert len(whole) == 50_000 and whole == again
    assert whole[-1] == "line 49999"


def test_watch_fifo_without_writer_honours_timeout(tmp_path: Path) -> None:
    fifo = tmp_path / "w.fifo"
    os.mkfifo(fifo)
    got = _loglens("watch", str(fifo), "--timeout", "2")
    assert got.returncode == 3, got.stderr  # 3: gave up at --timeout, as documented


def test_watch_fifo_crash(tmp_path: Path) -> None:
    """A crash written into a FIFO ends watch with exit 1 and the explain verdict."""
    fifo = tmp_path / "c.fifo"
    os.mkfifo(fifo)
    writer = _feed_fifo(fifo, CRASH.read_bytes())
    got = _loglens("watch", str(fifo), "--timeout", "30", "--json")
    writer.join(5)
    assert got.returncode in (1, 2), got.stderr


def test_cr_only_line_endings(tmp_path: Path) -> None:
    """Bare-CR line endings (old Mac tools, serial consoles) are lines, not one redraw."""
    text = CRASH.read_text(encoding="utf-8")
    cr = tmp_path / "cr.log"
    cr.write_bytes(text.replace("\n", "\r").encode())
    lf = tmp_path / "lf.log"
    lf.write_bytes(text.encode())
    got = _loglens("explain", str(cr), "--format", "json")
    want = _loglens("explain", str(lf), "--format", "json")
    assert got.returncode == want.returncode
    assert _summary(got.stdout)[:4] == _summary(want.stdout)[:4]


def test_tqdm_redraws_stay_redraws(tmp_path: Path) -> None:
    """A log with LF lines keeps an inner CR as a progress redraw (the CR rule is file-wide)."""
    log = tmp_path / "bar.log"
    log.write_bytes(b"INFO start\nLoading: 10%\rLoading: 50%\rLoading: 100%\nINFO done\n")
    src = Source("bar", log)
    assert [line.text for line in src.lines()][1] == "Loading: 10%\rLoading: 50%\rLoading: 100%"
