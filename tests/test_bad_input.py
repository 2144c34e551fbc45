"""Odd input is an answer, never exit 70 (#12): absurd numbers and dates are clamped with the
line still kept as an event, NaN and infinities never make the JSON invalid, and a bad
option value is one line and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from analyzer.model import NUMBER_MAX, bounded_float, bounded_int

ROOT = Path(__file__).resolve().parent.parent
HUGE = "9" * 5000  # past int()'s 4,300-digit limit
ABSURD = [
    f"[rank{HUGE}]: RuntimeError: CUDA error: out of memory",
    f"[2026-01-01 10:00:00 TP{HUGE}] Scheduler hit an exception",
    f"(RayWorkerWrapper pid={HUGE}) ERROR boom",
    f"Loading safetensors checkpoint shards: 50% Completed | {'1' * 400}/{'2' * 400} "
    "[00:01<00:01, 1.00it/s]",
    f"INFO 01-01 10:00:00 metrics.py:1] Avg prompt throughput: {'9' * 400}.0 tokens/s, "
    "Avg generation throughput: 1e999 tokens/s, Running: 1 reqs",
    "[9999-12-31 23:59:59] INFO Server started",
    "[9999-12-31 23:59:59] ERROR RuntimeError: CUDA out of memory",
    f"step {'9' * 400} loss 1e999 lr 1e-4 grad_norm nan",
    f"iteration {HUGE}/ 100 | consumed samples: 1 | elapsed time per iteration (ms): 1e400",
    "[rank0]: RuntimeError: failed call(lr=inf, beta=nan, n=-inf)",
]


def _loglens(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "analyzer", *args], capture_output=True,
                          text=True, timeout=300, cwd=ROOT, check=False)


@pytest.fixture(scope="module")
def absurd(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("absurd") / "absurd.log"
    path.write_text("\n".join(ABSURD) + "\n")
    return path


def test_bounded_numbers() -> None:
    assert bounded_int("42") == 42 and bounded_int(" -7 ") == -7
    assert bounded_int(HUGE) == NUMBER_MAX and bounded_int("-" + HUGE) == -NUMBER_MAX
    assert bounded_int(10**40) == NUMBER_MAX
    with pytest.raises(ValueError):
        bounded_int("rank")
    assert bounded_float("1e999") == 1e300 and bounded_float("-1e999") == -1e300
    nan = bounded_float("nan")
    assert nan != nan  # a diverged loss stays NaN


@pytest.mark.parametrize("format", ["json", "text", "markdown"])
def test_explain_absurd_numbers(absurd: Path, format: str) -> None:
    got = _loglens("explain", str(absurd), "--format", format)
    assert got.returncode in (0, 1), got.stderr
    assert "internal error" not in got.stderr
    if format == "json":
        data = json.loads(got.stdout)  # strict: no bare NaN / Infinity
        assert data["lines"] == len(ABSURD)


def test_events_absurd_numbers_are_strict_json(absurd: Path) -> None:
    got = _loglens("events", str(absurd))
    assert got.returncode == 0, got.stderr
    records = [json.loads(line, parse_constant=_refuse) for line in got.stdout.splitlines()]
    assert sum(r["line_end"] - r["line_start"] + 1 for r in records) == len(ABSURD)


def _refuse(name: str) -> None:
    raise AssertionError(f"{name} is not JSON")


@pytest.mark.parametrize("format", ["html", "markdown"])
def test_report_year_9999_and_huge_metrics(absurd: Path, tmp_path: Path, format: str) -> None:
    out = tmp_path / f"r.{format}"
    got = _loglens("report", str(absurd), "-f", format, "-o", str(out))
    assert got.returncode == 0, got.stderr
    assert out.stat().st_size > 0


@pytest.mark.parametrize("url,why", [("http://[::1", "not a valid URL"),
                                     ("http://localhost:99999/health", "not a valid URL"),
                                     ("http:///health", "names no host"),
                                     ("ftp://host/health", "must start with")])
def test_bad_health_url_is_exit_2(absurd: Path, url: str, why: str) -> None:
    got = _loglens("watch", str(absurd), "--timeout", "1", "--health-url", url)
    assert got.returncode == 2 and why in got.stderr, got.stderr
    assert got.stderr.count("\n") == 1


def test_huge_year_option(absurd: Path) -> None:
    got = _loglens("explain", str(absurd), "--year", "99999999999999999999")
    assert got.returncode in (0, 1, 2) and "internal error" not in got.stderr, got.stderr


SEED = ROOT / "corpus" / "seed" / "seed-sglang-tp8-oom-sigquit-logging-error.log"


@pytest.mark.parametrize("encoding,bom", [("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff")])
def test_utf16_with_bom_is_read_as_text(tmp_path: Path, encoding: str, bom: bytes) -> None:
    """PowerShell's `>` writes UTF-16: it was refused as binary."""
    log = tmp_path / "u16.log"
    log.write_bytes(bom + SEED.read_text(encoding="utf-8").encode(encoding))
    got = json.loads(_loglens("explain", str(log), "--format", "json").stdout)
    want = json.loads(_loglens("explain", str(SEED), "--format", "json").stdout)
    assert (got["verdict"], got["lines"], got["root_cause"]["line"]) == \
        (want["verdict"], want["lines"], want["root_cause"]["line"])
    out = tmp_path / "redacted.log"
    assert _loglens("redact", str(log), "-o", str(out)).returncode == 0
    assert out.read_text(encoding="utf-8").splitlines()[0] == \
        SEED.read_text(encoding="utf-8").splitlines()[0]


@pytest.mark.parametrize("kind", ["binary", "bzip2"])
def test_redact_refuses_what_explain_refuses(tmp_path: Path, kind: str) -> None:
    import bz2

    log = tmp_path / "bad.log"
    log.write_bytes(bytes(range(256)) * 100 if kind == "binary" else bz2.compress(SEED.read_bytes()))
    for argv in (["explain", str(log)], ["redact", str(log), "-o", str(tmp_path / "o")]):
        got = _loglens(*argv)
        assert got.returncode == 2 and got.stderr.count("\n") == 1, (argv, got.stderr)


BIDI = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: "access \u202egnp.exe" displays as "access exe.png"


@pytest.mark.parametrize("argv", [["explain", "-f", "markdown"], ["explain", "-f", "text"]])
def test_bidi_controls_are_shown_not_applied(tmp_path: Path, argv: list[str]) -> None:
    log = tmp_path / "bidi.log"
    log.write_text(f"INFO start\n[rank0]: RuntimeError: access {BIDI}gnp.exe\u202c denied\n")
    got = _loglens(*argv, str(log))
    assert BIDI not in got.stdout and "U+202E" in got.stdout


def test_bidi_controls_in_the_html_report(tmp_path: Path) -> None:
    log = tmp_path / "bidi.log"
    log.write_text(f"INFO start\n[rank0]: RuntimeError: access {BIDI}gnp.exe\u202c denied\n")
    out = tmp_path / "r.html"
    assert _loglens("report", str(log), "-o", str(out)).returncode == 0
    page = out.read_text(encoding="utf-8")
    assert BIDI not in page and "U+202E" in page
