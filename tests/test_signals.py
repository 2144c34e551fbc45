"""Ctrl-C at any moment is exit 130 and one quiet exit (#12): no KeyboardInterrupt traceback,
whether it lands in the imports, the analysis, or a producer child's start-up."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "corpus" / "seed" / "seed-sglang-tp8-oom-sigquit-logging-error.log"

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX signals")


@pytest.fixture(scope="module")
def big_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A log large enough that explain is still working when the signal comes."""
    path = tmp_path_factory.mktemp("sig") / "big.log"
    body = SEED.read_bytes()
    with path.open("wb") as out:
        for _ in range(max(1, (40 << 20) // len(body))):
            out.write(body)
    return path


def _interpreter_start() -> float:
    """Seconds a bare `python -c pass` takes now (the load of a parallel test run included)."""
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-S", "-c", "pass"], check=True)
    return time.monotonic() - t0


def _in_interpreter_start(err: str) -> bool:
    """The signal landed before any loglens code ran (CPython's own start-up: runpy, site).

    No program can handle that moment, so it says nothing about loglens."""
    return "Could not import runpy module" in err or (
        "KeyboardInterrupt" in err and "analyzer" not in err)


def _interrupt(argv: list[str], delay: float) -> subprocess.CompletedProcess[str]:
    """SIGINT `delay` seconds after the interpreter is up (measured, retried if it was not)."""
    for attempt in range(4):
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True, cwd=ROOT)
        time.sleep(delay + (_interpreter_start() * attempt if attempt else 0.0))
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        if proc.returncode == 130 or not _in_interpreter_start(err):
            break
    return subprocess.CompletedProcess(argv, proc.returncode, "", err)


@pytest.mark.parametrize("delay", [0.05, 0.2, 0.5, 1.0, 2.0])
def test_ctrl_c_is_130_without_a_traceback(big_log: Path, delay: float) -> None:
    got = _interrupt([sys.executable, "-m", "analyzer", "explain", str(big_log)], delay)
    if got.returncode == 0:
        pytest.skip("finished before the signal")  # a fast machine; nothing to interrupt
    assert got.returncode == 130, got.stderr
    assert "Traceback" not in got.stderr and "KeyboardInterrupt" not in got.stderr


@pytest.mark.skipif(shutil.which("loglens") is None, reason="console script not installed")
@pytest.mark.parametrize("delay", [0.05, 0.3])
def test_console_script_too(big_log: Path, delay: float) -> None:
    loglens = shutil.which("loglens")
    assert loglens is not None
    got = _interrupt([loglens, "events", str(big_log)], delay)
    if got.returncode == 0:
        pytest.skip("finished before the signal")
    assert got.returncode == 130, got.stderr
    assert "Traceback" not in got.stderr


def test_interrupted_output_leaves_no_temp_file(big_log: Path, tmp_path: Path) -> None:
    out = tmp_path / "events.jsonl"
    got = _interrupt([sys.executable, "-m", "analyzer", "events", str(big_log), "-o", str(out)],
                     1.0)
    if got.returncode == 0:
        pytest.skip("finished before the signal")
    assert got.returncode == 130, got.stderr
    assert not out.exists()  # the old (absent) output is kept: nothing half-written
    assert not list(tmp_path.glob(".*.tmp"))
