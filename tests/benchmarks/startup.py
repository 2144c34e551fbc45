"""Small logs: `loglens explain` on pasted-size logs against `lnav -n`, and the CLI's own start.

Most logs users feed loglens are the 50-500 lines pasted into an issue, so start-up is most
of the cost. This runs, side by side in one process tree and one run:

- `loglens explain FILE` (text to /dev/null) and `lnav -n FILE` on every corpus log of at most
  `--max-bytes` (default 1 MB; `--sample N` takes an evenly spaced subset), each `--repeat`
  times, recording each child's wall time and CPU time (user+sys from `os.wait4`);
- `loglens --help` and `loglens --version`.

The children run with their bytecode cached, as `pip install` leaves a package (it compiles
every module); `PYTHONDONTWRITEBYTECODE` in the caller's environment would otherwise make each
run re-compile the analyzer's modules (~0.08 s). `--no-bytecode` measures that worst case.

It prints (and with `-o` writes) one Markdown table: medians and 90th percentiles, and the
loglens/lnav ratios of the medians. Targets (issue #14): explain median wall and CPU <= 0.25 s
and <= 2x lnav; --help/--version <= 0.15 s.

    .venv/bin/python tests/benchmarks/startup.py                 # every small corpus log, 3 runs
    .venv/bin/python tests/benchmarks/startup.py --sample 60 -o tests/benchmarks/startup.md
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


CHILD_ENV = dict(os.environ)


def run(cmd: list[str]) -> tuple[float, float, int]:
    """(wall s, CPU s of the child, exit status) of one run, output discarded."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, env=CHILD_ENV)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    return wall, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status)


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def row(name: str, walls: list[float], cpus: list[float]) -> dict[str, float | str]:
    return {"name": name, "n": len(walls), "wall": statistics.median(walls),
            "wall90": quantile(walls, 0.9), "cpu": statistics.median(cpus),
            "cpu90": quantile(cpus, 0.9)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loglens", default=str(ROOT / ".venv" / "bin" / "loglens"))
    ap.add_argument("--lnav", default=shutil.which("lnav") or "")
    ap.add_argument("--max-bytes", type=int, default=1 << 20)
    ap.add_argument("--sample", type=int, default=0, help="evenly spaced subset of the logs")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-bytecode", action="store_true",
                    help="children compile every module at each start (PYTHONDONTWRITEBYTECODE)")
    ap.add_argument("-o", "--output", type=Path)
    args = ap.parse_args()
    if args.no_bytecode:
        CHILD_ENV["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        CHILD_ENV.pop("PYTHONDONTWRITEBYTECODE", None)
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "analyzer")],
                       check=True, env=CHILD_ENV)

    logs = sorted(p for p in (ROOT / "corpus").glob("*/*.log")
                  if p.stat().st_size <= args.max_bytes)
    if args.sample and args.sample < len(logs):
        step = len(logs) / args.sample
        logs = [logs[int(i * step)] for i in range(args.sample)]
    run([args.loglens, "explain", str(logs[0])])  # warm the caches (grammars, knowledge)

    results: dict[str, tuple[list[float], list[float]]] = {}

    def measure(name: str, cmd: list[str]) -> None:
        walls, cpus = results.setdefault(name, ([], []))
        wall, cpu, _ = run(cmd)
        walls.append(wall)
        cpus.append(cpu)

    for _ in range(args.repeat):
        for log in logs:  # interleaved, so load on the machine hits both tools alike
            measure("loglens explain", [args.loglens, "explain", str(log)])
            if args.lnav:
                measure("lnav -n", [args.lnav, "-n", str(log)])
        for _ in range(5):
            measure("loglens --help", [args.loglens, "--help"])
            measure("loglens --version", [args.loglens, "--version"])

    rows = [row(name, *vals) for name, vals in results.items()]
    by = {str(r["name"]): r for r in rows}
    sizes = [p.stat().st_size for p in logs]
    lines = [
        f"{len(logs)} corpus logs of at most {args.max_bytes:,} bytes (median "
        f"{int(statistics.median(sizes)):,} bytes), {args.repeat} runs each; "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f} at the end; bytecode "
        f"{'compiled at every start' if args.no_bytecode else 'cached, as pip install leaves it'}.",
        "",
        "| command | runs | median wall | p90 wall | median CPU | p90 CPU |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    lines += [f"| {r['name']} | {r['n']} | {r['wall']:.3f} s | {r['wall90']:.3f} s | "
              f"{r['cpu']:.3f} s | {r['cpu90']:.3f} s |" for r in rows]
    if "lnav -n" in by:
        ll, ln = by["loglens explain"], by["lnav -n"]
        lines += ["", f"loglens explain / lnav -n (medians): wall "
                  f"{float(ll['wall']) / float(ln['wall']):.1f}x, CPU "
                  f"{float(ll['cpu']) / float(ln['cpu']):.1f}x (target: <= 2x, and <= 0.25 s)"]
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
