#!/usr/bin/env python3
r"""`loglens scan` on a fleet of 10,000 job logs, against one `loglens explain` per log (#15).

What is measured, side by side in one run on this machine (every number is wall time of a
whole command, CPU of its process tree, and the peak of the tree's summed RSS):

1. the local engine on the whole fleet (`loglens scan DIR --jobs N`);
2. the local engine on the small logs only (<= 30 KB: a pasted log, a short run): logs/s;
3. the reference: one `loglens explain --format json LOG` process per log, N at a time (what
   a shell loop with `xargs -P N` does), on a seeded sample; its rate gives the fleet's time;
   the scan of that same sample is measured too, so the ratio is also given on equal files;
4. the answers: for every sampled log, the scan row's verdict and root-cause line against
   `explain`'s on that log;
5. the Ray engine (`--engine ray`, a local cluster of 1, 2 and 8 CPUs; 8 is a simulated
   larger cluster on 2 cores: it shows the scheduling cost, not more speed) on a seeded
   subset, with the local engine on the same subset.

Usage::

    .venv/bin/python tests/benchmarks/scan_bench.py                      # writes tests/benchmarks/scan.md
    .venv/bin/python tests/benchmarks/scan_bench.py --count 500 --sample 60 --ray-count 200 \
        --out /tmp/s.md
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench import Run, find_loglens, machine_description, run_cmd  # noqa: E402
from gen_fleet import generate  # noqa: E402

SMALL = 30_000
MiB = 1 << 20


def ensure_fleet(data: Path, count: int, seed: int) -> list[Path]:
    """The fleet's logs, generated once per (count, seed, generator)."""
    root = data / f"fleet-{count}-s{seed}"
    stamp = root / ".generated"
    digest = str((HERE / "gen_fleet.py").stat().st_mtime_ns)
    if not (stamp.exists() and stamp.read_text() == digest):
        if root.exists():
            subprocess.run(["rm", "-rf", str(root)], check=True)
        generate(count, root, seed)
        stamp.write_text(digest)
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name != ".generated")


def machine_cpu() -> float:
    """CPU seconds the whole machine has spent (user+nice+system+irq+softirq), from /proc/stat.

    Ray's raylet and workers are not children the command waits for, so neither `time -v` nor a
    process-tree sample sees all of them; on an otherwise idle machine the machine's delta does."""
    try:
        with open("/proc/stat") as fh:
            f = fh.readline().split()[1:8]
    except OSError:
        return float("nan")
    user, nice, system, _idle, _iowait, irq, softirq = (int(x) for x in f)
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def warm(paths: list[Path]) -> None:
    for p in paths:
        with open(p, "rb") as fh:
            while fh.read(1 << 20):
                pass


def scan(loglens: str, args: list[str], stdin_list: list[Path] | None, tool: str,
         timeout: float) -> tuple[Run, list[dict[str, Any]]]:
    """One `loglens scan` run to a fresh jsonl file; the run and its rows."""
    with tempfile.TemporaryDirectory(prefix="scanbench-") as tmp:
        out = Path(tmp) / "rows.jsonl"
        stdin_path = None
        if stdin_list is not None:
            stdin_path = Path(tmp) / "paths.txt"
            stdin_path.write_text("".join(f"{p}\n" for p in stdin_list))
        run = Run(size="fleet", tool=tool, cmd=[loglens, "scan", *args, "--format", "jsonl",
                                                "-o", str(out)])
        before = machine_cpu()
        run = run_cmd(run, timeout, stdin_path=stdin_path)
        run.extra["machine_cpu"] = machine_cpu() - before
        rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    return run, rows


def explain_each(loglens: str, paths: list[Path], parallel: int
                 ) -> tuple[float, float, dict[str, dict[str, Any]]]:
    """One `loglens explain` process per log, `parallel` at a time: wall, CPU, answers."""
    answers: dict[str, dict[str, Any]] = {}

    def one(p: Path) -> tuple[str, dict[str, Any]]:
        proc = subprocess.run([loglens, "explain", str(p), "--format", "json"],
                              capture_output=True, text=True)
        try:
            report = json.loads(proc.stdout)
        except json.JSONDecodeError:
            report = {"verdict": f"error (exit {proc.returncode})"}
        return str(p), report

    # children's CPU over the whole pool (a per-thread delta would count the other thread's
    # children too, since the counters are per process)
    t = os.times()
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        for path, report in pool.map(one, paths):
            answers[path] = report
    wall = time.perf_counter() - t0
    t2 = os.times()
    cpu = (t2.children_user - t.children_user) + (t2.children_system - t.children_system)
    return wall, cpu, answers


def agree(rows: list[dict[str, Any]], answers: dict[str, dict[str, Any]]) -> tuple[int, list[str]]:
    by_path = {str(Path(r["path"]).resolve()): r for r in rows}
    same, differ = 0, []
    for path, report in answers.items():
        row = by_path.get(str(Path(path).resolve()))
        root = report.get("root_cause") or {}
        want = (report.get("verdict"), root.get("line"))
        got = (row.get("verdict"), row.get("root_line")) if row else None
        if got == want:
            same += 1
        else:
            differ.append(f"{path}: explain {want}, scan {got}")
    return same, differ


def fmt(x: float | None, unit: str = "s") -> str:
    return "–" if x is None else f"{x:.1f} {unit}"


def mb(kb: int | None) -> str:
    return "–" if kb is None else f"{kb / 1024:.0f} MB"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--sample", type=int, default=300, help="logs explained one process each")
    ap.add_argument("--ray-count", type=int, default=1000, help="logs of the Ray comparison")
    ap.add_argument("--skip-ray", action="store_true")
    ap.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--data-dir", type=Path, default=HERE / "data")
    ap.add_argument("--out", type=Path, default=HERE / "scan.md")
    ap.add_argument("--loglens")
    args = ap.parse_args(argv)
    loglens = find_loglens(args.loglens)
    if loglens is None:
        print("scan_bench: loglens not found (.venv/bin/loglens or PATH)", file=sys.stderr)
        return 2
    paths = ensure_fleet(args.data_dir, args.count, args.seed)
    fleet_dir = paths[0].parents[2]
    total_bytes = sum(p.stat().st_size for p in paths)
    small = [p for p in paths if p.stat().st_size <= SMALL and p.suffix != ".gz"]
    rng = random.Random(args.seed)
    sample = sorted(rng.sample(paths, min(args.sample, len(paths))))
    subset = sorted(rng.sample(paths, min(args.ray_count, len(paths))))
    warm(paths)
    jobs = ["--jobs", str(args.jobs)]
    res: dict[str, Any] = {"count": len(paths), "bytes": total_bytes, "small": len(small),
                           "jobs": args.jobs, "machine": machine_description(loglens, None)}

    whole, whole_rows = scan(loglens, [str(fleet_dir), *jobs], None, "scan (local)", args.timeout)
    small_run, _ = scan(loglens, ["-", *jobs], small, "scan small (local)", args.timeout)
    sample_run, sample_rows = scan(loglens, ["-", *jobs], sample, "scan sample", args.timeout)
    ref_wall, ref_cpu, answers = explain_each(loglens, sample, args.jobs)
    same, differ = agree(sample_rows, answers)
    errors = sum(1 for r in whole_rows if r.get("error"))
    res.update(whole=vars(whole), small_run=vars(small_run), sample_run=vars(sample_run),
               ref_wall=ref_wall, ref_cpu=ref_cpu, same=same, differ=differ, errors=errors,
               rows=len(whole_rows))

    ray_runs: list[Run] = []
    if not args.skip_ray:
        local_sub, _ = scan(loglens, ["-", *jobs], subset, "local", args.timeout)
        ray_runs.append(local_sub)
        for cpus in (1, 2, 8):
            run, _ = scan(loglens, ["-", "--engine", "ray", "--jobs", str(cpus)], subset,
                          f"ray, {cpus} CPU{'s' if cpus > 1 else ''}", args.timeout)
            ray_runs.append(run)
    res["ray"] = [vars(r) for r in ray_runs]
    (args.data_dir / "scan-results.json").write_text(json.dumps(res, indent=2, default=str))
    args.out.write_text(report(res, whole, small_run, sample_run, ray_runs, len(sample),
                               len(subset)))
    print(args.out.read_text())
    return 0 if not differ else 1


def report(res: dict[str, Any], whole: Run, small_run: Run, sample_run: Run,
           ray_runs: list[Run], n_sample: int, n_subset: int) -> str:
    n, jobs = res["count"], res["jobs"]
    ref_rate = n_sample / res["ref_wall"]
    ref_fleet = n / ref_rate
    whole_wall = whole.wall or float("nan")
    lines = [
        "# `loglens scan` on a fleet (issue #15)",
        "",
        f"Generated by `tests/benchmarks/scan_bench.py` on {time.strftime('%Y-%m-%d')}; machine: "
        f"{res['machine'].get('cpu', '?')}, {res['machine'].get('nproc', '?')} CPUs. Fleet: "
        f"{n:,} job logs from `tests/benchmarks/gen_fleet.py` (mutations of corpus logs), "
        f"{res['bytes'] / 1e6:,.0f} MB, {res['small']:,} of them ≤ 30 KB; {jobs} workers.",
        "",
        "| run | logs | wall | logs/s | CPU | peak RSS (tree) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
        f"| `scan` (local), the whole fleet | {n:,} | {fmt(whole.wall)} | "
        f"{n / whole_wall:.0f} | {fmt(whole.cpu)} | {mb(whole.tree_rss_kb)} |",
        f"| `scan` (local), small logs only | {res['small']:,} | {fmt(small_run.wall)} | "
        f"{res['small'] / (small_run.wall or float('nan')):.0f} | {fmt(small_run.cpu)} | "
        f"{mb(small_run.tree_rss_kb)} |",
        f"| `scan` (local), the sample | {n_sample} | {fmt(sample_run.wall)} | "
        f"{n_sample / (sample_run.wall or float('nan')):.0f} | {fmt(sample_run.cpu)} | "
        f"{mb(sample_run.tree_rss_kb)} |",
        f"| one `explain` per log, {jobs} at a time, the sample | {n_sample} | "
        f"{fmt(res['ref_wall'])} | {ref_rate:.1f} | {fmt(res['ref_cpu'])} | – |",
        f"| one `explain` per log, the fleet (from the sample's rate) | {n:,} | "
        f"{fmt(ref_fleet)} | {ref_rate:.1f} | – | – |",
        "",
        f"- **Speed-up over one process per log**: {ref_fleet / whole_wall:.1f}× on the fleet "
        f"(its time estimated from the sample's rate), "
        f"{res['ref_wall'] / (sample_run.wall or float('nan')):.1f}× on the same "
        f"{n_sample} sampled logs.",
        f"- **Answers**: the scan row's verdict and root-cause line equal `explain`'s on "
        f"{res['same']}/{n_sample} sampled logs; rows with an `error`: {res['errors']} "
        f"of {res['rows']:,}.",
    ]
    for d in res["differ"][:10]:
        lines.append(f"  - differs: {d}")
    if ray_runs:
        local = ray_runs[0].wall or float("nan")
        lines += ["", f"## Ray Data on a local cluster ({n_subset:,} logs of the fleet)", "",
                  "| engine | wall | vs local | CPU (driver tree) | CPU (machine) | "
                  "peak RSS (tree) |",
                  "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for r in ray_runs:
            lines.append(f"| {r.tool} | {fmt(r.wall)} | {(r.wall or float('nan')) / local:.2f}× | "
                         f"{fmt(r.cpu)} | {fmt(r.extra.get('machine_cpu'))} | "
                         f"{mb(r.tree_rss_kb)} |")
        lines += ["", "CPU (driver tree) is what `time -v` sees of the command; Ray's raylet "
                  "and workers are not children it waits for, so for Ray only CPU (machine), "
                  "the whole machine's CPU during the run, counts."]
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
