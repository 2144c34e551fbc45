"""The real entry point (`python -m analyzer`) on bad input and on every output format.

Contract (analyzer/cli.py): exit 0 when the analysis ran, 2 for unusable input or arguments;
an error is one line on stderr and never a Python traceback. All commands of this module run
once, concurrently, in a module fixture (each start-up costs a second), then the tests check
their results.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import corpus_logs

ROOT = Path(__file__).resolve().parent.parent
CORPUS_LOG = ROOT / "corpus" / "vllm" / "vllm-v1-tp8-cudagraph-capture-oom-rank6.log"
CONTRACT_KEYS = {"schema", "file", "lines", "verdict", "root_cause", "symptoms", "phases",
                 "signatures"}
LONG_LINE_BYTES = 50 * 1024 * 1024
TIMEOUT = 240
GZ_LINES = 3000


@dataclass
class Run:
    """What one CLI invocation did."""

    args: list[str]
    code: int
    stdout: bytes
    stderr: str

    @property
    def err_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]

    def jsonl(self) -> list[dict[str, object]]:
        return [json.loads(line) for line in self.stdout.decode("utf-8").splitlines()]


def loglens(*args: str) -> Run:
    """Run `python -m analyzer ARGS` from the repository root."""
    cmd = [sys.executable, "-m", "analyzer", *args]
    proc = subprocess.run(cmd, capture_output=True, timeout=TIMEOUT, cwd=ROOT, check=False)
    return Run(list(args), proc.returncode, proc.stdout, proc.stderr.decode("utf-8", "replace"))


def make_inputs(d: Path) -> dict[str, Path]:
    """The bad and odd inputs, written once."""
    (d / "empty_dir").mkdir()
    (d / "empty.log").write_bytes(b"")
    (d / "garbage.bin").write_bytes(bytes(range(256)) * 64)
    (d / "bad_utf8.log").write_bytes(
        b"INFO 02-22 23:03:54 [core.py:58] caf\xe9 \xff\xfe bytes\nsecond line\n")
    (d / "crlf.log").write_bytes(
        b"INFO 02-22 23:03:54 [core.py:58] first\r\nINFO 02-22 23:03:55 [core.py:58] second\r\n")
    (d / "nul.log").write_bytes(b"INFO 02-22 23:03:54 [core.py:58] nul\x00here\nnext line\n")
    with (d / "long.log").open("wb") as f:
        f.write(b"INFO 02-22 23:03:54 [core.py:58] before the long line\n")
        chunk = b"x" * (1 << 20)
        for _ in range(LONG_LINE_BYTES // len(chunk)):
            f.write(chunk)
        f.write(b"\nINFO 02-22 23:03:55 [core.py:58] after the long line\n")
    text = "".join(f"INFO 02-22 23:03:54 [core.py:58] line {i} {'padding ' * 8}\n"
                   for i in range(GZ_LINES))
    full = gzip.compress(text.encode())
    (d / "truncated.log.gz").write_bytes(full[: len(full) // 2])
    (d / "yearless.log").write_text("INFO 12-31 23:59:58 [core.py:58] a\n"
                                    "INFO 01-01 00:00:01 [core.py:58] b\n", encoding="utf-8")
    return {p.name: p for p in d.iterdir()}


def commands(f: dict[str, Path], out: Path) -> dict[str, list[str]]:
    """Every invocation the tests look at, by name."""
    log = str(CORPUS_LOG)
    return {
        "missing": ["events", str(out / "no-such-file.log")],
        "empty_dir": ["events", str(f["empty_dir"])],
        "empty": ["events", str(f["empty.log"])],
        "garbage": ["events", str(f["garbage.bin"])],
        # three damaged files in one run: each file's events restart at line 1
        "damaged": ["events", "--format", "jsonl", str(f["bad_utf8.log"]), str(f["crlf.log"]),
                    str(f["nul.log"])],
        "long_events": ["events", "--format", "jsonl", str(f["long.log"])],
        "long_explain": ["explain", "--format", "json", str(f["long.log"])],
        "truncated_gz": ["explain", "--format", "json", str(f["truncated.log.gz"])],
        "truncated_gz_events": ["events", "--format", "jsonl", str(f["truncated.log.gz"])],
        "unknown_option": ["events", "--no-such-option", log],
        "jsonl": ["events", "--format", "jsonl", log],
        "csv": ["events", "--format", "csv", log],
        "table": ["events", "--format", "table", log],
        "parquet": ["events", "--format", "parquet", "-o", str(out / "events.parquet"), log],
        "explain_json": ["explain", "--format", "json", log],
        "year": ["events", "--format", "jsonl", "--year", "2021", str(f["yearless.log"])],
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """Run every command once, a few at a time."""
    d = tmp_path_factory.mktemp("cli")
    cmds = commands(make_inputs(d), d)
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {name: pool.submit(loglens, *args) for name, args in cmds.items()}
        results = {name: fut.result() for name, fut in futures.items()}
    results["_dir"] = Run([str(d)], 0, b"", "")
    return results


def out_dir(runs: dict[str, Run]) -> Path:
    return Path(runs["_dir"].args[0])


def per_file(run: Run) -> list[list[dict[str, object]]]:
    """The JSONL records of a multi-file run, split where line numbers start again."""
    files: list[list[dict[str, object]]] = []
    last = 0
    for rec in run.jsonl():
        start = int(str(rec["line_start"]))
        if not files or start <= last:
            files.append([])
        files[-1].append(rec)
        last = start
    return files


def assert_clean_failure(run: Run, *words: str) -> None:
    """Exit 2, exactly one stderr line naming the problem, no traceback, nothing on stdout."""
    assert run.code == 2, (run.code, run.stderr)
    assert "Traceback" not in run.stderr
    assert len(run.err_lines) == 1, run.stderr
    line = run.err_lines[0].lower()
    assert line.startswith("loglens: ")
    for word in words:
        assert word in line, line
    assert run.stdout == b""


def assert_clean_success(run: Run) -> None:
    """Exit 0, no traceback, at most one line (a warning) on stderr."""
    assert run.code == 0, (run.code, run.stderr)
    assert "Traceback" not in run.stderr
    assert len(run.err_lines) <= 1, run.stderr


# -- unusable input: exit 2, one line -----------------------------------------------------------

BAD = {
    "missing": ("no such file",),
    "empty_dir": ("no readable log files",),
    "empty": ("empty",),
    "garbage": ("does not look like a text log",),
}


@pytest.mark.parametrize("name", list(BAD))
def test_unusable_input(runs: dict[str, Run], name: str) -> None:
    """Missing file, empty directory, empty file, binary garbage: one clear line, exit 2."""
    assert_clean_failure(runs[name], *BAD[name])


def test_unknown_option(runs: dict[str, Run]) -> None:
    """A usage error is exit 2 with one line naming the option."""
    assert_clean_failure(runs["unknown_option"], "no-such-option")


# -- damaged but usable input: exit 0, best effort -------------------------------------------


def test_damaged_files_run(runs: dict[str, Run]) -> None:
    """Invalid UTF-8, CRLF and NUL bytes: exit 0, every file read."""
    assert_clean_success(runs["damaged"])
    assert len(per_file(runs["damaged"])) == 3


def test_invalid_utf8_is_replaced(runs: dict[str, Run]) -> None:
    """Invalid UTF-8 bytes become U+FFFD; the rest of the line and file is kept."""
    records = per_file(runs["damaged"])[0]
    assert [r["line_start"] for r in records] == [1, 2]
    assert "\ufffd" in str(records[0]["message"]) and "bytes" in str(records[0]["message"])
    assert records[0]["kind"] == "log"


def test_crlf_line_endings(runs: dict[str, Run]) -> None:
    """CRLF files read like LF files: no stray CR in messages, heads still parse."""
    records = per_file(runs["damaged"])[1]
    assert [r["message"] for r in records] == ["first", "second"]
    assert {r["kind"] for r in records} == {"log"}


def test_nul_bytes(runs: dict[str, Run]) -> None:
    """NUL bytes (a crashed writer's preallocated blocks) are replaced, not fatal."""
    records = per_file(runs["damaged"])[2]
    assert len(records) == 2
    assert "\x00" not in str(records[0]["message"])
    assert str(records[0]["message"]).startswith("nul")


def test_50mb_single_line_events(runs: dict[str, Run]) -> None:
    """A 50 MB line is cut (not loaded whole) and the lines after it still come out."""
    run = runs["long_events"]
    assert_clean_success(run)
    records = run.jsonl()
    assert [r["line_start"] for r in records] == [1, 2, 3]
    assert records[2]["message"] == "after the long line"
    assert 0 < len(str(records[1]["message"])) < LONG_LINE_BYTES


def test_50mb_single_line_explain(runs: dict[str, Run]) -> None:
    """explain finishes on a 50 MB line too."""
    run = runs["long_explain"]
    assert_clean_success(run)
    report = json.loads(run.stdout)
    assert report["lines"] == 3
    assert report["stats"]["truncated_lines"] == 1


def test_truncated_gzip_reads_what_is_there(runs: dict[str, Run]) -> None:
    """A .gz cut mid-stream: exit 0 with the readable lines, the damage noted in the report."""
    run = runs["truncated_gz"]
    assert_clean_success(run)
    report = json.loads(run.stdout)
    assert 0 < report["lines"] < GZ_LINES
    assert any("truncated" in note for note in report["stats"]["notes"])


def test_truncated_gzip_warns_on_stderr(runs: dict[str, Run]) -> None:
    """The damage is also one warning line on stderr."""
    run = runs["truncated_gz"]
    assert len(run.err_lines) == 1 and "truncated" in run.err_lines[0], run.stderr


def test_truncated_gzip_events(runs: dict[str, Run]) -> None:
    """`events` streams the readable lines of a cut .gz and exits 0."""
    run = runs["truncated_gz_events"]
    assert_clean_success(run)
    assert 0 < len(run.jsonl()) < GZ_LINES


def test_truncated_gzip_events_warns_on_stderr(runs: dict[str, Run]) -> None:
    """`events` also says on stderr that the input was cut."""
    run = runs["truncated_gz_events"]
    assert len(run.err_lines) == 1 and "truncated" in run.err_lines[0], run.stderr


# -- output formats ---------------------------------------------------------------------------


def test_events_jsonl(runs: dict[str, Run]) -> None:
    """One JSON object per event with the public record keys; tracebacks come out whole."""
    run = runs["jsonl"]
    assert_clean_success(run)
    records = run.jsonl()
    keys = {"line_start", "line_end", "line_ranges", "timestamp", "timestamp_inferred",
            "system", "process", "rank", "level", "kind", "message", "fields"}
    assert all(set(r) == keys for r in records)
    oom = [r for r in records if r["kind"] == "traceback" and r["rank"] == {"global": 6}]
    assert len(oom) == 1 and (oom[0]["line_start"], oom[0]["line_end"]) == (9, 11)


def test_events_csv(runs: dict[str, Run]) -> None:
    """CSV has a header and the same rows as JSONL."""
    run = runs["csv"]
    assert_clean_success(run)
    rows = list(csv.DictReader(io.StringIO(run.stdout.decode("utf-8"))))
    assert len(rows) == len(runs["jsonl"].jsonl())
    assert {"line_start", "kind", "message", "rank"} <= set(rows[0])
    assert [int(r["line_start"]) for r in rows] == [r["line_start"] for r in runs["jsonl"].jsonl()]


def test_events_table(runs: dict[str, Run]) -> None:
    """The table shows the columns and the events."""
    run = runs["table"]
    assert_clean_success(run)
    text = run.stdout.decode("utf-8")
    for word in ("lines", "kind", "message", "traceback", "9-11"):
        assert word in text


def test_events_parquet(runs: dict[str, Run]) -> None:
    """Parquet reads back with polars, one row per event."""
    assert_clean_success(runs["parquet"])
    frame = pl.read_parquet(out_dir(runs) / "events.parquet")
    records = runs["jsonl"].jsonl()
    assert frame.height == len(records)
    assert frame["line_start"].to_list() == [r["line_start"] for r in records]
    assert frame["kind"].to_list() == [r["kind"] for r in records]


def test_explain_json_contract(runs: dict[str, Run]) -> None:
    """explain --format json is valid JSON with the contract's keys."""
    run = runs["explain_json"]
    assert_clean_success(run)
    report = json.loads(run.stdout)
    assert set(report) >= CONTRACT_KEYS
    assert report["schema"].startswith("loglens.explain/")
    assert report["lines"] == 13
    assert report["verdict"] == "crash"
    assert report["root_cause"]["line"] == 11 and report["root_cause"]["rank"] == 6
    assert isinstance(report["symptoms"], list) and isinstance(report["phases"], list)
    assert isinstance(report["signatures"], list)


def test_year_option(runs: dict[str, Run]) -> None:
    """--year dates yearless lines, and the Dec -> Jan rollover moves to the next year."""
    run = runs["year"]
    assert_clean_success(run)
    assert [r["timestamp"] for r in run.jsonl()] == ["2021-12-31T23:59:58",
                                                      "2022-01-01T00:00:01"]


def test_no_run_printed_a_traceback(runs: dict[str, Run]) -> None:
    """Whatever happened, no invocation shows a Python traceback."""
    assert [name for name, run in runs.items() if "Traceback" in run.stderr] == []


def _with_producer(*args: str) -> Run:
    env = {**os.environ, "LOGLENS_SPLIT_BYTES": "0"}  # every file gets a producer process
    cmd = [sys.executable, "-m", "analyzer", *args]
    proc = subprocess.run(cmd, capture_output=True, timeout=TIMEOUT, cwd=ROOT, check=False,
                          env=env)
    return Run(list(args), proc.returncode, proc.stdout, proc.stderr.decode("utf-8", "replace"))


def test_the_prestarted_producer_gives_the_same_report() -> None:
    log = str(corpus_logs()[0])
    plain = loglens("explain", "--format", "json", log)
    early = _with_producer("explain", "--format", "json", "--fail-on", "healthy", log)
    assert plain.code == 0 and early.code in (0, 1) and not early.err_lines
    assert json.loads(early.stdout) == json.loads(plain.stdout)


def test_a_usage_error_with_a_prestarted_producer_is_one_line() -> None:
    bad = _with_producer("explain", "--format", "nope", str(corpus_logs()[0]))
    assert bad.code == 2 and len(bad.err_lines) == 1 and "Traceback" not in bad.stderr


def test_version_is_printed_and_exits_0() -> None:
    for flag in ("--version", "-V"):
        got = loglens(flag)
        assert got.code == 0
        assert got.stdout.decode().startswith("loglens ") and len(got.stdout.split()) == 2


def test_the_fast_version_answer_is_the_clis() -> None:
    """The entry point answers a bare --version without importing the CLI; the CLI's option
    (reached with other arguments, e.g. `--version explain`) prints the same line."""
    from typer.testing import CliRunner

    from analyzer.cli import app
    from analyzer.version import version

    fast = loglens("--version").stdout.decode().strip()
    assert fast == version()
    slow = CliRunner().invoke(app, ["--version", "explain"])
    assert slow.exit_code == 0 and slow.output.strip() == fast


def test_rules_kind_is_validated() -> None:
    bad = loglens("rules", "--kind", "bogus")
    assert bad.code == 2
    assert len(bad.err_lines) == 1 and "bogus" in bad.err_lines[0]  # one line, no traceback
    markers = loglens("rules", "--kind", "marker")
    assert markers.code == 0
    lines = markers.stdout.decode().splitlines()
    assert lines and all(" marker " in line for line in lines)


def test_loglens_alone_prints_help_and_nothing_stray() -> None:
    got = loglens()
    assert got.code == 0
    assert b"explain" in got.stdout
    assert got.err_lines == []


def test_text_width_follows_columns_and_no_color_keeps_it() -> None:
    """COLUMNS sets the text report's width when piped; NO_COLOR drops colour only."""
    log = next(p for p in corpus_logs() if p.stem.startswith("sglang-kimi-k25-eplb"))

    def text(**env: str) -> str:
        proc = subprocess.run([sys.executable, "-m", "analyzer", "explain", "-f", "text",
                               str(log)], capture_output=True, timeout=TIMEOUT, cwd=ROOT,
                              check=True, env={**os.environ, **env})
        return proc.stdout.decode("utf-8")

    narrow, wide = text(COLUMNS="64"), text(COLUMNS="200")
    assert narrow != wide
    assert text(COLUMNS="200", NO_COLOR="1") == wide
    assert "\x1b[" not in text(COLUMNS="200", NO_COLOR="1")


def test_foreign_text_is_unknown_not_healthy(tmp_path: Path) -> None:
    """An nginx access log is not a healthy server: loglens says it read nothing it knows."""
    log = tmp_path / "access.log"
    log.write_text('127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET /a.gif HTTP/1.0" 200 2326\n'
                   '127.0.0.1 - - [10/Oct/2000:13:55:37 -0700] "GET /b.html HTTP/1.0" 404 100\n')
    got = loglens("explain", "--json", str(log))
    assert got.code == 0
    report = json.loads(got.stdout)
    assert report["verdict"] == "unknown" and report["root_cause"] is None
    assert "recognised" in report["headline"]
    assert loglens("explain", str(log), "--fail-on", "unknown").code == 1


def test_piped_explain_is_text_and_json_is_asked_for(tmp_path: Path) -> None:
    """Piped (as in `| less` or `> out.txt`) the report stays text; --json, --format json or
    an -o file named *.json give JSON, *.md Markdown."""
    log = next(p for p in corpus_logs() if p.stem.startswith("sglang-kimi-k25-eplb"))
    piped = loglens("explain", str(log)).stdout.decode()
    assert piped.startswith("Hang: ") and "\x1b[" not in piped
    assert json.loads(loglens("explain", "--json", str(log)).stdout)["verdict"] == "hang"
    out_json, out_md = tmp_path / "r.json", tmp_path / "r.md"
    assert loglens("explain", str(log), "-o", str(out_json)).code == 0
    assert json.loads(out_json.read_text())["verdict"] == "hang"
    assert loglens("explain", str(log), "-o", str(out_md)).code == 0
    assert out_md.read_text().startswith("### Hang: ")


@pytest.mark.parametrize("command", ["explain", "events", "rules", "watch", "report", "redact"])
def test_help_ends_with_examples_and_exit_codes(command: str) -> None:
    """Every --help shows runnable examples and the exit codes of `analyzer.errors.ExitCode`;
    flags carry no `<bool>` type (only typer's own --help does)."""
    from analyzer.cli.help import EXAMPLES, EXIT_CODES

    got = subprocess.run([sys.executable, "-m", "analyzer", command, "--help"],
                         capture_output=True, timeout=TIMEOUT, cwd=ROOT, check=False,
                         env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"})
    text = got.stdout.decode()
    assert got.returncode == 0
    assert "Examples" in text and "Exit codes:" in text
    for cmd, _ in EXAMPLES[command]:
        assert cmd in text
        assert cmd.split()[:2] == ["loglens", command] or "| loglens " + command in cmd
    for code, meaning in EXIT_CODES[command]:
        assert f"{int(code)} {meaning}" in text
    flags = [line for line in text.splitlines() if "<bool>" in line]
    assert all("--help" in line or "completion" in line for line in flags), flags


def test_shell_completion_script_is_offered() -> None:
    got = loglens("--show-completion", "bash")
    assert got.code == 0 and b"_completion()" in got.stdout and b"complete " in got.stdout
