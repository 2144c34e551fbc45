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
