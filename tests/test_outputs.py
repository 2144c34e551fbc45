"""-o never destroys an input: explain and events refuse an output path that is an input
(directly, through a symlink or a hard link) or lies inside an input directory, and leave
the input byte for byte as it was (issue #12's first finding, fixed with the shared writer in
analyzer/cli/options.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "corpus" / "seed" / "seed-sglang-tp8-oom-sigquit-logging-error.log"


def _loglens(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "analyzer", *args], capture_output=True,
                          text=True, timeout=120, cwd=ROOT, check=False)


@pytest.fixture
def log(tmp_path: Path) -> Path:
    copy = tmp_path / "server.log"
    copy.write_bytes(LOG.read_bytes())
    return copy


@pytest.mark.parametrize("command", [["explain"], ["events"], ["events", "-f", "csv"],
                                     ["events", "-f", "parquet"], ["report", "-f", "markdown"]])
@pytest.mark.parametrize("how", ["same", "symlink", "hardlink", "inside_dir"])
def test_output_onto_an_input_is_refused_and_the_input_kept(
        log: Path, tmp_path: Path, command: list[str], how: str) -> None:
    before = log.read_bytes()
    target, source = log, str(log)
    if how == "symlink":
        target = tmp_path / "link.log"
        target.symlink_to(log)
    elif how == "hardlink":
        target = tmp_path / "hard.log"
        os.link(log, target)
    elif how == "inside_dir":
        target, source = tmp_path / "out.json", str(tmp_path)
    run = _loglens(*command, source, "-o", str(target))
    assert run.returncode == 2, run.stderr
    assert "refusing to" in run.stderr and "Traceback" not in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
    assert log.read_bytes() == before
    if how == "inside_dir":
        assert not target.exists()


def test_output_elsewhere_is_written_whole(log: Path, tmp_path: Path) -> None:
    out = tmp_path / "explain.json"
    out.write_text("old contents")
    run = _loglens("explain", str(log), "-o", str(out))
    assert run.returncode == 0, run.stderr
    assert out.read_text(encoding="utf-8").lstrip().startswith("{")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".explain.json.")]


COMMANDS = [["explain"], ["events"], ["report", "-f", "markdown"]]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize("how", ["directory", "missing_dir", "empty", "loop"])
def test_unwritable_output_is_one_line_and_exit_2(
        log: Path, tmp_path: Path, command: list[str], how: str) -> None:
    target = {"directory": str(tmp_path), "missing_dir": str(tmp_path / "no" / "out.txt"),
              "empty": "", "loop": str(tmp_path / "loop.json")}[how]
    if how == "loop":
        (tmp_path / "loop.json").symlink_to(tmp_path / "loop.json")
    got = _loglens(*command, str(log), "-o", target)
    assert got.returncode == 2, got.stderr
    assert got.stderr.count("\n") == 1 and got.stderr.startswith("loglens: cannot write")
    assert "Traceback" not in got.stderr
    assert not [p for p in tmp_path.rglob(".*.tmp")]  # no temporary file left behind


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_fifo_target_is_written_not_replaced(log: Path, tmp_path: Path,
                                             command: list[str]) -> None:
    """A device or FIFO named by -o (/dev/stdout, /dev/null, a pipe) stays what it is."""
    import threading

    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got_bytes: list[bytes] = []
    reader = threading.Thread(target=lambda: got_bytes.append(fifo.read_bytes()), daemon=True)
    reader.start()
    got = _loglens(*command, str(log), "-o", str(fifo))
    reader.join(10)
    assert got.returncode == 0, got.stderr
    assert fifo.is_fifo()
    assert got_bytes and got_bytes[0]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_existing_output_keeps_its_mode_and_a_symlink_stays_a_link(
        log: Path, tmp_path: Path, command: list[str]) -> None:
    real = tmp_path / "private.out"
    real.write_text("old\n")
    real.chmod(0o600)
    link = tmp_path / "link.out"
    link.symlink_to(real)
    got = _loglens(*command, str(log), "-o", str(link))
    assert got.returncode == 0, got.stderr
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert (real.stat().st_mode & 0o777) == 0o600
    assert real.read_text() != "old\n"


def test_file_size_limit_is_exit_2_and_keeps_the_old_file(log: Path, tmp_path: Path) -> None:
    """EFBIG (a full disk looks the same): one line, exit 2, the previous output intact."""
    import resource
    import signal

    out = tmp_path / "events.jsonl"
    out.write_text("previous\n")

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    got = subprocess.run([sys.executable, "-m", "analyzer", "events", str(log), "-o", str(out)],
                         capture_output=True, text=True, timeout=120, cwd=ROOT,
                         preexec_fn=limit, check=False)
    assert got.returncode == 2, got.stderr
    assert "cannot write" in got.stderr and "Traceback" not in got.stderr
    assert out.read_text() == "previous\n"
    assert not [p for p in tmp_path.glob(".*.tmp")]
