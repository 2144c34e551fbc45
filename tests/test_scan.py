"""`loglens scan` (issue #15): rows agree with `loglens explain`, bad inputs are rows, resume,
formats, grouping, filters, exit codes, and the Ray engine gives the same table."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from analyzer import api
from analyzer.fleet import scan
from analyzer.fleet.inputs import Job, jobs
from analyzer.fleet.row import COLUMNS, analyse, json_schema
from analyzer.fleet.table import summary

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "corpus"
SCHEMA_FILE = ROOT / "analyzer" / "report" / "schemas" / "scan-row.schema.json"
TIMEOUT = 600


def sample(step: int) -> list[Path]:
    """Every step-th corpus log (all systems, outcomes and batches)."""
    return sorted(CORPUS.glob("*/*.log"))[::step]


def loglens(*args: str, stdin: bytes | None = None, cwd: Path = ROOT
            ) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "analyzer", *args], input=stdin,
                          capture_output=True, timeout=TIMEOUT, cwd=cwd, check=False)


def test_rows_say_what_explain_says_on_the_corpus() -> None:
    """The acceptance test of the issue: same verdict and root cause as explain, per log."""
    logs = sample(9)
    df = scan([str(p) for p in logs], n_workers=2)
    assert df.height == len(logs)
    assert df["error"].null_count() == len(logs)
    for row in df.iter_rows(named=True):
        report = api.explain([row["path"]])
        root = report["root_cause"] or {}
        assert (row["verdict"], row["root_line"], row["category"], row["signature"]) == (
            report["verdict"], root.get("line"), root.get("category"), root.get("signature")
        ), row["path"]
        assert row["lines"] == report["lines"]


def test_a_row_carries_the_start_up_facts(tmp_path: Path) -> None:
    log = next(p for p in CORPUS.glob("*/*.log") if "tp_size=2," in p.read_text(errors="ignore")
               and "sglang" in p.name)
    row = analyse(Job(str(log), (str(log),), log.stat().st_size, log.stat().st_mtime))
    assert row["tp"] == 2
    assert row["model"]
    assert row["error"] is None and row["analysis_s"] > 0


def test_host_names_are_pseudonyms_unless_asked(tmp_path: Path) -> None:
    log = tmp_path / "nccl.log"
    log.write_text("".join(
        f"gpu-node-17:{1000 + r}:{1000 + r} [{r}] NCCL INFO Bootstrap : Using eth0:10.1.2.3<0>\n"
        for r in range(4)) + "gpu-node-17:1000:1000 [0] NCCL INFO comm 0x1 rank 0 nranks 4 "
        "cudaDev 0 busId 1000 - Init COMPLETE\n")
    job = Job(str(log), (str(log),), log.stat().st_size, log.stat().st_mtime)
    assert analyse(job)["hostnames"] == "host-1"
    assert analyse(job, redact=False)["hostnames"] == "gpu-node-17"


def bad_inputs(d: Path) -> list[str]:
    (d / "ok.log").write_text("INFO 05-01 10:00:00 api_server.py:1] vLLM API server version 0.8.5\n"
                              * 5)
    (d / "binary.log").write_bytes(bytes(range(256)) * 64)
    (d / "empty.log").write_bytes(b"")
    whole = gzip.compress(b"INFO 05-01 10:00:00 x.py:1] hello\n" * 2000)
    (d / "cut.log.gz").write_bytes(whole[: len(whole) // 2])
    return [str(d / n) for n in ("ok.log", "binary.log", "empty.log", "cut.log.gz")] + [
        str(d / "vanished.log")]


def test_every_bad_input_is_a_row_with_its_error(tmp_path: Path) -> None:
    df = scan(bad_inputs(tmp_path), n_workers=2)
    by = {Path(p).name: e for p, e in zip(df["path"], df["error"], strict=True)}
    assert by["ok.log"] is None
    assert "binary" in by["binary.log"]
    assert "empty" in by["empty.log"]
    assert "vanished.log" in by["vanished.log"] and "no such file" in by["vanished.log"].lower()
    cut = df.filter(pl.col("path").str.ends_with("cut.log.gz")).row(0, named=True)
    assert cut["error"] is not None or cut["lines"] > 0  # a truncated gzip: read up to the cut


def test_cli_bad_inputs_exit_0_and_all_unreadable_exit_2(tmp_path: Path) -> None:
    paths = bad_inputs(tmp_path)
    out = tmp_path / "t.jsonl"
    run = loglens("scan", *paths, "-o", str(out))
    assert run.returncode == 0, run.stderr
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == 5 and sum(1 for r in rows if r["error"]) >= 3
    assert b"unreadable" in run.stderr
    run = loglens("scan", paths[1], paths[4])
    assert run.returncode == 2
    run = loglens("scan", str(tmp_path / "nothing-*.log"))
    assert run.returncode == 2 and run.stderr.decode().count("\n") == 1
    assert b"Traceback" not in run.stderr


def test_resume_reads_only_new_or_changed_logs(tmp_path: Path) -> None:
    d = tmp_path / "logs"
    d.mkdir()
    for p in sample(150)[:4]:
        (d / p.name).write_bytes(p.read_bytes())
    out = tmp_path / "fleet.jsonl"
    first = loglens("scan", str(d), "-o", str(out))
    assert first.returncode == 0, first.stderr
    assert len(out.read_text().splitlines()) == 4
    again = loglens("scan", str(d), "-o", str(out))
    assert b"4 of 4 logs already in" in again.stderr and b"reading 0" in again.stderr
    changed = next(d.iterdir())
    os.utime(changed, (time.time() + 5, time.time() + 5))
    third = loglens("scan", str(d), "-o", str(out))
    assert b"3 of 4 logs already in" in third.stderr
    assert len(out.read_text().splitlines()) == 5  # the changed log's new row is appended


def test_parquet_takes_up_a_killed_runs_journal(tmp_path: Path) -> None:
    logs = sample(150)[:3]
    out = tmp_path / "fleet.parquet"
    # a run killed after one row: its journal is all that is left
    first = analyse(Job(str(logs[0]), (str(logs[0]),), logs[0].stat().st_size,
                        logs[0].stat().st_mtime))
    (tmp_path / "fleet.parquet.partial.jsonl").write_text(json.dumps(first) + "\n{\"cut")
    run = loglens("scan", *map(str, logs), "-o", str(out))
    assert run.returncode == 0, run.stderr
    assert b"1 of 3 logs already in" in run.stderr
    df = pl.read_parquet(out)
    assert sorted(df["path"].to_list()) == sorted(map(str, logs))
    assert list(df.columns) == list(COLUMNS)
    assert not (tmp_path / "fleet.parquet.partial.jsonl").exists()


def test_csv_and_jsonl_carry_the_same_columns(tmp_path: Path) -> None:
    logs = [str(p) for p in sample(200)[:3]]
    loglens("scan", *logs, "-o", str(tmp_path / "a.csv"))
    loglens("scan", *logs, "-f", "jsonl", "-o", str(tmp_path / "a.jsonl"))
    csv_df = pl.read_csv(tmp_path / "a.csv")
    assert list(csv_df.columns) == list(COLUMNS) and csv_df.height == 3
    rows = [json.loads(x) for x in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert [list(r) for r in rows] == [list(COLUMNS)] * 3


def test_rows_follow_the_json_schema(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    assert json.loads(SCHEMA_FILE.read_text()) == json_schema(), (
        "regenerate analyzer/report/schemas/scan-row.schema.json from row.json_schema()")
    df = scan([str(p) for p in sample(120)] + bad_inputs(tmp_path), n_workers=1)
    for row in df.iter_rows(named=True):
        jsonschema.validate(row, json_schema())


def test_group_by_dir_is_one_job_like_explain_dir(tmp_path: Path) -> None:
    job = tmp_path / "job-1"
    job.mkdir()
    logs = sample(100)[:2]
    for i, p in enumerate(logs):
        (job / f"rank{i}.log").write_bytes(p.read_bytes())
    (job / "config.json").write_text("{}")
    df = scan([str(tmp_path)], group_by_dir=True, n_workers=1)
    assert df.height == 1
    row = df.row(0, named=True)
    assert row["files"] == 2 and row["path"] == str(job)
    report = api.explain([str(job)])
    assert row["verdict"] == report["verdict"]
    assert row["root_line"] == (report["root_cause"] or {}).get("line")


def test_since_paths_on_stdin_and_globs(tmp_path: Path) -> None:
    old, new = tmp_path / "old.log", tmp_path / "new.log"
    for p, src in zip((old, new), sample(300)[:2], strict=True):
        p.write_bytes(src.read_bytes())
    os.utime(old, (1_600_000_000, 1_600_000_000))
    from datetime import datetime

    assert [j.path for j in jobs([str(tmp_path)], since=datetime(2021, 1, 1))] == [str(new)]
    assert [j.path for j in jobs([str(tmp_path / "*.log")])] == [str(new), str(old)]
    run = loglens("scan", "-", "-f", "jsonl", stdin=f"{old}\n# a comment\n\n{new}\n".encode())
    assert run.returncode == 0, run.stderr
    assert sorted(json.loads(x)["path"] for x in run.stdout.decode().splitlines()) == sorted(
        [str(old), str(new)])


def test_fail_on_and_the_summary() -> None:
    crash = next(p for p in sample(1) if p.name.endswith("-crash.log"))
    healthy = next(p for p in sample(1) if p.name.endswith("-healthy.log"))
    run = loglens("scan", str(crash), str(healthy), "--fail-on", "crash")
    assert run.returncode == 1
    text = run.stdout.decode()
    assert "verdict" in text and "crash" in text and "healthy" in text
    assert loglens("scan", str(healthy), "--fail-on", "crash").returncode == 0
    assert loglens("scan", str(healthy), "--fail-on", "bogus").returncode == 2


def test_summary_counts_and_examples() -> None:
    rows = [{"path": "b.log", "verdict": "crash", "category": "gpu_oom", "signature": "s1",
             "size": 10, "error": None},
            {"path": "a.log", "verdict": "crash", "category": "gpu_oom", "signature": "s1",
             "size": 10, "error": None},
            {"path": "c.log", "verdict": "healthy", "category": None, "signature": None,
             "size": 5, "error": None},
            {"path": "d.log", "verdict": None, "size": None, "error": "unreadable"}]
    s = summary(rows)
    assert s["total"] == 4 and s["errors"] == 1 and s["bytes"] == 25
    assert s["verdicts"][0] == {"value": "crash", "count": 2, "example": "a.log"}
    assert s["categories"] == [{"value": "gpu_oom", "count": 2, "example": "a.log"}]


def test_ray_engine_gives_the_local_table() -> None:
    ray = pytest.importorskip("ray")
    logs = [str(p) for p in sample(60)]
    local = scan(logs, n_workers=2).drop("analysis_s")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    try:
        remote = scan(logs, engine="ray", n_workers=2).drop("analysis_s")
    finally:
        ray.shutdown()
    assert remote.equals(local)
