"""`loglens watch` against real corpus logs replayed into a file while it watches.

Each end-to-end test starts the watcher as a subprocess (the exit code is the contract), waits
until it is up, then replays a corpus log into the watched file in a background thread and
asserts the exit code, the verdict, and how soon after the decisive line it came.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TextIO, cast

import pytest

from analyzer.model import SourceLine
from analyzer.sources.follow import Follower, Notice
from analyzer.watch.history import History
from analyzer.watch.loop import Watch, WatchOptions
from analyzer.watch.output import live_table, make_output
from analyzer.watch.probes import ProcessWatch
from analyzer.watch.progress import progress_from_text
from tests.conftest import CORPUS, ROOT
from tests.replay import Replay

HEALTHY_SGLANG = CORPUS / "seed/seed-sglang-tp8-healthy-deepgemm-warning-long-capture.log"
HEALTHY_VLLM_SHM = CORPUS / "vllm/vllm-v1-healthy-tp2-shm-warning-during-compile.log"
OOM_CASCADE = CORPUS / "seed/seed-sglang-tp8-oom-sigquit-logging-error.log"
MID_LOADING = CORPUS / "sglang/sglang-tp8-weight-load-in-progress.log"
OOM_LINE = "RuntimeError: Not enough memory"

# Until cli.py registers the command, run it through its own entry point (same code path).
WATCH_CMD = [str(Path(sys.executable).parent / "loglens"), "watch"]
LINUX_PROC = pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                                reason="process liveness and CPU use come from /proc")
FATAL_LATENCY = 1.0  # the promise: root cause printed within 1 s of the fatal line
SLACK = 0.5  # CI machines are slow and shared


# --------------------------------------------------------------------------- harness
def _nothing() -> None:
    pass


class Watcher:
    """A running watch whose output lines are timestamped as they arrive."""

    def __init__(self) -> None:
        self.lines: list[tuple[float, str]] = []
        self.exited_at: float | None = None
        self.code: int | None = None
        self.thread: threading.Thread | None = None
        self.kill: Callable[[], None] = _nothing

    def wait_started(self, timeout: float = 20.0) -> None:
        """Until the first line is out: the watcher is up and polling."""
        deadline = time.monotonic() + timeout
        while not self.lines and time.monotonic() < deadline and self.exited_at is None:
            time.sleep(0.02)
        assert self.lines, "watch did not start"

    def wait(self, timeout: float = 30.0) -> int:
        assert self.thread is not None
        self.thread.join(timeout)
        if self.thread.is_alive():
            self.kill()
            self.thread.join(5)
            pytest.fail("watch did not exit:\n" + self.text())
        assert self.code is not None
        return self.code

    def text(self) -> str:
        return "".join(line for _, line in self.lines)

    def records(self) -> list[dict[str, Any]]:
        """The NDJSON output: every line one object, exactly one verdict, and it is last."""
        recs = [json.loads(line) for _, line in self.lines]
        assert all(isinstance(r, dict) and "event" in r for r in recs)
        assert recs[0]["event"] == "start"
        if self.exited_at is not None:
            assert [r["event"] for r in recs].count("verdict") == 1
            assert recs[-1]["event"] == "verdict"
            assert set(recs[-1]) >= {"verdict", "exit_code", "root_cause"}
            assert recs[-1]["exit_code"] == self.code
        return recs

    def first(self, event: str) -> tuple[float, dict[str, Any]]:
        """When the first NDJSON record of this kind arrived, and the record."""
        for at, line in self.lines:
            rec = json.loads(line)
            if rec.get("event") == event:
                return at, rec
        raise AssertionError(f"no {event!r} event in:\n{self.text()}")


@contextlib.contextmanager
def watch(path: Path, *args: str, history: Path, as_json: bool = True) -> Iterator[Watcher]:
    """`watch` as a subprocess (the exit code is the contract); killed at the end."""
    cmd = [*WATCH_CMD, str(path), "--history", str(history), *args]
    if as_json:
        cmd.append("--json")
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1"}
    env.pop("FORCE_COLOR", None)
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    w = Watcher()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            w.lines.append((time.monotonic(), line))
        w.code = proc.wait()
        w.exited_at = time.monotonic()

    w.kill = proc.kill
    w.thread = threading.Thread(target=read, daemon=True)
    w.thread.start()
    try:
        w.wait_started()
        yield w
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(5)
        if w.code not in (0, 1, 3) and proc.stderr is not None:
            print(proc.stderr.read())


class _Lines(io.TextIOBase):
    """A text stream that timestamps each complete line written to it."""

    def __init__(self, sink: list[tuple[float, str]]) -> None:
        self.sink = sink
        self.buf = ""

    def write(self, s: str) -> int:
        self.buf += s
        while "\n" in self.buf:
            line, self.buf = self.buf.split("\n", 1)
            self.sink.append((time.monotonic(), line + "\n"))
        return len(s)


@contextlib.contextmanager
def watch_here(path: Path, history: Path, **opts: Any) -> Iterator[Watcher]:
    """The same watch loop in a thread of this process: no interpreter start-up per test."""
    w = Watcher()
    runner = Watch(WatchOptions(path=str(path), history_dir=history, **opts),
                   make_output("json", cast(TextIO, _Lines(w.lines))))

    def run() -> None:
        w.code = runner.run()
        w.exited_at = time.monotonic()

    w.thread = threading.Thread(target=run, daemon=True)
    w.thread.start()
    w.wait_started()
    yield w


@pytest.fixture(name="log")
def _log(tmp_path: Path) -> Path:
    return tmp_path / "server.log"


@pytest.fixture(name="history")
def _history(tmp_path: Path) -> Path:
    return tmp_path / "history"


def report_latency(case: str, **values: float) -> None:
    """Printed with `pytest -s`; the numbers go into the issue's closing note."""
    print(f"\n[latency] {case}: " + ", ".join(f"{k}={v:.3f}s" for k, v in values.items()))


# --------------------------------------------------------------------------- ready
def test_healthy_start_with_scary_warning_is_ready_and_plain(log: Path, history: Path) -> None:
    """DeepGemm WARNING + tqdm `\\r` bars: exit 0, the warning shown as benign, no ANSI."""
    with watch(log, history=history, as_json=False) as w:
        rep = Replay(log).lines(HEALTHY_SGLANG, duration=1.5, tqdm=True).start()
        code = w.wait()
        rep.join()
        out = w.text()
        assert code == 0, out
        assert "\x1b" not in out
        assert "READY" in out and "fired up and ready to roll" in out
        assert "benign (sglang.deepgemm_scale_fmt)" in out
        assert "FAILED" not in out and "fatal" not in out
        assert "phase weight_load" in out and "phase cuda_graph_capture" in out
        assert "progress Loading safetensors checkpoint shards" in out


def test_failure_symptom_during_healthy_start_is_not_a_failure(log: Path, history: Path) -> None:
    """vLLM's 'No available shared memory broadcast block found' during compile: still ready."""
    with watch(log, history=history) as w:
        Replay(log).lines(HEALTHY_VLLM_SHM, duration=1.0).start()
        assert w.wait() == 0, w.text()
        recs = w.records()
        assert not [r for r in recs if r["event"] == "failure"]
        verdict = recs[-1]
        assert verdict["event"] == "verdict" and verdict["verdict"] == "ready"
        assert verdict["exit_code"] == 0 and verdict["root_cause"] is None
        assert "Application startup complete" in verdict["text"]


# --------------------------------------------------------------------------- failed
@pytest.mark.parametrize("pause", [0.0, 1.5], ids=["cascade-flows", "quiet-after-fatal"])
def test_oom_sigquit_cascade_fails_fast_with_oom_as_root(log: Path, history: Path,
                                                         pause: float) -> None:
    """The OOM line is the root cause (not SIGQUIT / logging error / Killed), within 1 s.

    `quiet-after-fatal`: the writer stops right after the RuntimeError, so its traceback is
    never closed by a following record; the watcher must still decide within a second.
    """
    with watch(log, history=history) as w:
        rep = Replay(log).lines(OOM_CASCADE, duration=1.2, pause_after={68: pause}).start()
        code = w.wait()
        rep.join()
        assert code == 1, w.text()
        written = rep.time_of(OOM_LINE)
        found_at, failure = w.first("failure")
        verdict = w.records()[-1]
        assert verdict["event"] == "verdict" and verdict["verdict"] == "failed"
        assert verdict["exit_code"] == 1
        root = verdict["root_cause"]
        assert root["line"] == 68 and OOM_LINE in root["text"], root
        assert root["category"] == "kv_cache_insufficient"
        assert "mem-fraction-static" in root["remediation"]
        assert failure["report"]["root_cause"]["line"] == 68  # right from the first report
        assert w.exited_at is not None
        latency, exit_latency = found_at - written, w.exited_at - written
        report_latency(f"oom-sigquit {pause=}", root_cause_printed=latency,
                       exited=exit_latency)
        assert latency < FATAL_LATENCY + SLACK
        assert exit_latency < FATAL_LATENCY + 2.0 + SLACK + 0.5  # + settle + teardown


@LINUX_PROC
def test_silent_death_of_the_process_fails(log: Path, history: Path) -> None:
    """`--pid` of a process that dies without a word: exit 1 quickly, with the last lines."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with watch(log, "--pid", str(child.pid), history=history) as w:
            rep = Replay(log).lines(HEALTHY_SGLANG, duration=0.8, last=36).start()
            rep.join()
            time.sleep(0.3)
            killed = time.monotonic()
            child.kill()  # not reaped: the watcher must treat the zombie as dead
            code = w.wait()
            assert code == 1, w.text()
            verdict = w.records()[-1]
            assert verdict["verdict"] == "failed" and verdict["root_cause"] is None
            assert "exited before ready" in verdict["reason"]
            assert verdict["phase"] == "weight_load"
            assert verdict["last_lines"][-1]["line"] == 36
            assert w.exited_at is not None
            report_latency("silent death", exited=w.exited_at - killed)
            assert w.exited_at - killed < 1.0 + SLACK
    finally:
        child.kill()
        child.wait()


# --------------------------------------------------------------------------- stalled
@LINUX_PROC
def test_log_that_stops_mid_loading_is_stalled(log: Path, history: Path) -> None:
    """No output for `--stall 2` while loading shards: exit 3, phase and last lines reported;
    with `--pid` the report says the process is alive and idle."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with watch(log, "--stall", "2", "--pid", str(child.pid), history=history) as w:
            rep = Replay(log).lines(MID_LOADING, duration=0.5).start()
            rep.join()
            last_written = rep.written[-1].at
            code = w.wait()
            assert code == 3, w.text()
            verdict = w.records()[-1]
            assert verdict["verdict"] == "stalled" and verdict["exit_code"] == 3
            assert verdict["phase"] == "weight_load"
            ranks = {r["process"]: r for r in verdict["ranks"]}
            assert ranks["TP5"]["phase"] == "weight_load"
            assert "Load weight begin" in ranks["TP5"]["last_text"]
            assert verdict["process"]["alive"] is True
            assert verdict["process"]["cpu_percent"] is not None
            assert verdict["process"]["cpu_percent"] < 50
            assert w.exited_at is not None
            assert 2.0 <= w.exited_at - last_written < 2.0 + 1.0 + SLACK
    finally:
        child.kill()
        child.wait()


def test_timeout_while_the_file_never_appears(log: Path, history: Path) -> None:
    with watch_here(log, history, timeout=0.5) as w:
        code = w.wait()
        assert code == 3
        verdict = w.records()[-1]
        assert verdict["verdict"] == "timed_out" and verdict["exit_code"] == 3
        assert [r["state"] for r in w.records() if r["event"] == "file"] == ["waiting"]


# --------------------------------------------------------------------------- health URL
class _Health(BaseHTTPRequestHandler):
    ok = threading.Event()

    def do_GET(self) -> None:
        self.send_response(200 if self.ok.is_set() else 503)
        self.end_headers()
        self.wfile.write(b"ok" if self.ok.is_set() else b"loading")

    def log_message(self, *args: Any) -> None:
        pass


def test_health_url_must_answer_200_before_ready(log: Path, history: Path) -> None:
    _Health.ok = threading.Event()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/health"
    try:
        with watch_here(log, history, health_url=url) as w:
            rep = Replay(log).lines(HEALTHY_VLLM_SHM, duration=0.8).start()
            rep.join()
            time.sleep(1.2)
            assert w.exited_at is None, "ready before the endpoint answered 200"
            opened = time.monotonic()
            _Health.ok.set()
            code = w.wait()
            assert code == 0, w.text()
            health = [r for r in w.records() if r["event"] == "health"]
            assert health and health[0]["status"] == 503
            verdict = w.records()[-1]
            assert verdict["verdict"] == "ready" and verdict["health"]["status"] == 200
            assert w.exited_at is not None and w.exited_at - opened < 2.0
    finally:
        server.shutdown()


# --------------------------------------------------------------------------- the file
@pytest.mark.parametrize("how", ["rotate", "truncate"])
def test_relaunch_after_rotation_or_truncation(log: Path, history: Path, how: str) -> None:
    """A first attempt stalls mid-loading; the relaunch writes a fresh file: numbering restarts
    and the verdict is the new run's. The file does not exist when the watch starts."""
    with watch_here(log, history) as w:
        rep = Replay(log).lines(MID_LOADING, duration=0.4).pause(0.4)
        rep = rep.rotate() if how == "rotate" else rep.truncate()
        rep.pause(0.3).lines(HEALTHY_SGLANG, duration=1.0).start()
        code = w.wait()
        rep.join()
        assert code == 0, w.text()
        recs = w.records()
        states = [r["state"] for r in recs if r["event"] == "file"]
        assert states[0] == "waiting" and ("rotated" if how == "rotate" else "truncated") in states
        verdict = recs[-1]
        assert verdict["verdict"] == "ready"
        assert verdict["line"] == rep.line_of("fired up and ready to roll") == 93


# --------------------------------------------------------------------------- units (fast)
def test_follower_partial_lines_cr_refreshes_truncation_rotation(tmp_path: Path) -> None:
    path = tmp_path / "f.log"
    f = Follower(path, flush_after=0.2)
    assert f.poll() == [Notice("waiting", "the file does not exist yet")]
    path.write_text("a\nb\npart")
    items = f.poll()
    assert [i.text for i in items if isinstance(i, SourceLine)] == ["a", "b"]
    assert f.partial == "part"
    time.sleep(0.25)
    (held,) = f.poll()  # released after a quiet period: a final bar without newline is seen
    assert isinstance(held, SourceLine) and (held.lineno, held.text) == (3, "part")
    with path.open("a") as fh:
        fh.write("ial\r 1/9\r 2/9\r 3/9\r 4/9\r 5/9\n")
    (done,) = f.poll()  # the same line, complete, with the same number; old states dropped
    assert isinstance(done, SourceLine) and done.lineno == 3
    assert done.text == "partial\r 3/9\r 4/9\r 5/9"
    path.write_text("X\n")  # truncated and rewritten (shorter)
    items = f.poll()
    assert items[0] == Notice("truncated", "the file was truncated; line numbers restart")
    assert isinstance(items[1], SourceLine) and (items[1].lineno, items[1].text) == (1, "X")
    os.replace(path, tmp_path / "f.log.1")
    assert [i.kind for i in f.poll() if isinstance(i, Notice)] == ["missing"]
    path.write_text("new\n")
    items = f.poll()
    assert isinstance(items[0], Notice) and items[0].kind == "rotated"
    assert isinstance(items[-1], SourceLine) and (items[-1].lineno, items[-1].text) == (1, "new")
    f.close()


def test_follower_crlf_and_bad_bytes(tmp_path: Path) -> None:
    path = tmp_path / "f.log"
    path.write_bytes(b"one\r\ntw\xffo\x00\n")
    f = Follower(path)
    lines = [i for i in f.poll() if isinstance(i, SourceLine)]
    assert lines[0].text == "one" and not lines[0].replaced
    assert lines[1].replaced and "\x00" not in lines[1].text
    f.close()


def test_follower_a_hole_growing_across_polls_is_no_length(tmp_path: Path) -> None:
    """A writer at an old offset leaves a NUL hole that grows poll by poll; it must not push
    the line after it over the length cap."""
    path = tmp_path / "f.log"
    path.write_bytes(b"start ")
    f = Follower(path)
    f.poll()
    for _ in range(3):
        with path.open("ab") as fh:
            fh.write(b"\x00" * 2_000_000)
        f.poll()
    with path.open("ab") as fh:
        fh.write(b"after the hole\n")
    [line] = [i for i in f.poll() if isinstance(i, SourceLine)]
    assert (line.text, line.replaced, line.truncated) == ("start after the hole", True, False)
    f.close()


def test_history_tolerates_corrupt_files_and_gives_medians(tmp_path: Path) -> None:
    h = History(tmp_path / "h")
    key = "/data/models/Kimi-K2.5-INT4|tp8"
    assert h.typical(key) == {}
    h.record(key, {"weight_load": 313.0}, "ready")
    h.record(key, {"weight_load": 300.0, "cuda_graph_capture": 316.0}, "ready")
    h.record(key, {"weight_load": 320.0}, "ready")
    assert h.typical(key) == {"weight_load": 313.0, "cuda_graph_capture": 316.0}
    (file,) = (tmp_path / "h").glob("*.json")
    file.write_text("{not json")
    assert h.typical(key) == {}
    h.record(key, {"weight_load": 1.0}, "ready")  # overwrites the corrupt file
    assert h.typical(key) == {"weight_load": 1.0}


def test_history_is_used_on_the_next_start(tmp_path: Path) -> None:
    """The second watch of the same model/TP says how long phases usually take."""
    hist = tmp_path / "h"
    for _ in range(2):
        buf = io.StringIO()
        opts = WatchOptions(path=str(HEALTHY_SGLANG), history_dir=hist)
        assert Watch(opts, make_output("json", buf)).run() == 0
    recs = [json.loads(line) for line in buf.getvalue().splitlines()]
    config = next(r for r in recs if r["event"] == "config")
    assert config["history"]["weight_load"] == 314.0
    assert config["history"]["cuda_graph_capture"] == 316.0


def test_progress_from_a_tqdm_redraw() -> None:
    prog = progress_from_text(
        "Loading safetensors checkpoint shards:  25% Completed | 16/64 [01:19<04:11,  4.90s/it]"
        "\rLoading safetensors checkpoint shards:  50% Completed | 32/64 [02:37<02:37,  4.91s/it]",
        seen=100.0)
    assert prog is not None and (prog.n, prog.total, prog.percent) == (32, 64, 50)
    assert prog.rate is not None and abs(1 / prog.rate - 4.91) < 1e-6
    assert prog.eta(110.0) == 157.0 - 10.0
    assert progress_from_text("no bar here", 0.0) is None


def test_live_table_renders_ranks_progress_and_warnings() -> None:
    """The TTY display (rendered to a string with a forced terminal)."""
    from rich.console import Console

    watcher = Watch(WatchOptions(path=str(MID_LOADING), stall=600),
                    make_output("json", io.StringIO()))
    watcher.step(time.monotonic())
    buf = io.StringIO()
    Console(file=buf, width=160, force_terminal=True, color_system=None).print(
        live_table(watcher, time.monotonic()))
    out = buf.getvalue()
    assert "weight_load" in out and "TP7" in out
    assert "Loading safetensors checkpoint shards 0/30" in out


@LINUX_PROC
def test_process_watch_reads_proc(tmp_path: Path) -> None:
    proc = ProcessWatch(os.getpid())
    assert proc.alive()
    proc.sample(0.0)
    sum(i * i for i in range(2_000_000))  # burn some CPU
    proc.sample(5.0)
    cpu = proc.cpu_percent()
    assert cpu is not None and cpu >= 0
    assert not ProcessWatch(2**22 + 12345).alive()


def test_a_prefix_no_list_knows_is_learned_from_the_first_lines(log: Path, history: Path) -> None:
    """A scheduler's constant prefix in front of every line (as in
    torch-milabench-dinov2-multinode-reduce-watchdog-timeout-hard-wrapped): watch infers it
    from the first lines as explain does, so the traceback behind it is still assembled and
    the OOM is the root cause with the rank and time its record head gives (behind an
    unpeeled prefix the head is not seen: no rank, no time)."""
    lines = OOM_CASCADE.read_text(encoding="utf-8").splitlines()
    log.write_text("".join(f"job-7.node-1 [stderr] {t}\n" for t in lines), encoding="utf-8")
    with watch_here(log, history=history, timeout=20.0) as w:
        assert w.wait() == 1, w.text()
        verdict = w.records()[-1]
        assert verdict["verdict"] == "failed"
        root = verdict["root_cause"]
        assert OOM_LINE in root["text"], root
        assert root["rank"] == 3 and root["timestamp"] == "2026-02-22T23:19:14", root
