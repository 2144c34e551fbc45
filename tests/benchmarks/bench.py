#!/usr/bin/env python3
"""Speed and memory of loglens at real sizes, side by side with lnav, grep and wc (issue #4).

For every size (default 64M, 256M, 1G) this script

1. generates the test log with ``tests/benchmarks/gen_log.py`` (seeded, so identical on every machine),
   or reuses it from ``tests/benchmarks/data/`` (git-ignored) when it was made by the same generator;
2. reads the file once so every tool sees a warm page cache;
3. runs, one after another (never overlapping), measuring wall time and peak RSS of each:
   ``wc -l``, ``grep -c -i error``, ``lnav -n -c ';SELECT count(*) FROM all_logs'``,
   ``loglens explain --format json`` on the small version and on the large file,
   ``gzip -dc FILE.gz > /dev/null`` (decompression alone), lnav and ``loglens explain`` on the
   ``.gz`` copy, and ``loglens events --format parquet -o OUT``;
4. checks that loglens gives the same verdict and root cause on the small version, the large file
   and the ``.gz`` copy ("speed never changes answers");
5. prints a Markdown table and writes it, with a machine description, to ``tests/benchmarks/results.md``
   (``--quick``: ``tests/benchmarks/data/results-quick.md``) plus raw numbers to ``tests/benchmarks/data/``.

Every run has a timeout (``--timeout``, default 30 min) and is reported as "timed out" when it
hits it; if ``loglens explain`` timed out on a file, the ``.gz`` and parquet loglens runs of that
size are skipped (they run the same pipeline). Peak RSS comes from ``/usr/bin/time -v`` when
present, else from ``os.wait4()`` (the kernel's per-child ``ru_maxrss``); independently, the
summed RSS of the whole process tree is sampled from ``/proc`` every 0.2 s so that a future
multi-process loglens is measured correctly. CPU time (user + system) is reported next to wall
time because the machine may be shared; runs shorter than 30 s are repeated (``--repeat``) and
the fastest attempt kept. This script installs nothing; lnav is skipped with a message when missing.

Usage::

    .venv/bin/python tests/benchmarks/bench.py                      # 64M, 256M, 1G
    .venv/bin/python tests/benchmarks/bench.py --sizes 64M,256M
    .venv/bin/python tests/benchmarks/bench.py --quick              # ~8 MB smoke run (< 30 s)
    .venv/bin/python tests/benchmarks/bench.py --skip-lnav
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]  # the repository (this file is in tests/benchmarks/)
sys.path.insert(0, str(HERE))
import gen_log  # noqa: E402

TIME_BIN = "/usr/bin/time"
LNAV_QUERY = ";SELECT count(*) FROM all_logs"
REPEAT_BELOW_S = 30.0  # runs faster than this are repeated (--repeat) and the fastest kept
MiB = 1 << 20


# --------------------------------------------------------------------------------------------------
# running one command
# --------------------------------------------------------------------------------------------------


@dataclass
class Run:
    size: str
    tool: str
    cmd: list[str]
    wall: float | None = None  # seconds
    rss_kb: int | None = None  # peak RSS of the command (time -v / wait4)
    tree_rss_kb: int | None = None  # sampled peak of the summed RSS of the process tree
    cpu: float | None = None  # user + system CPU seconds of the command and its children
    load: tuple[float, float] | None = None  # 1-min load average before / after the run
    attempts: int = 1  # short runs are repeated; the fastest attempt is kept
    rc: int | None = None
    status: str = "ok"  # ok | timed out | failed | skipped
    note: str = ""
    result: str = ""  # short output summary (count, verdict, ...)
    input_bytes: int | None = None
    extra: dict[str, object] = field(default_factory=dict)


def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # pid (comm) state ppid ...  -- comm may contain spaces/parens: split after the last ')'
        rest = stat[stat.rfind(b")") + 2 :].split()
        kids.setdefault(int(rest[1]), []).append(int(d))
    return kids


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _tree_sample(root: int) -> tuple[int, float]:
    """(summed VmRSS in kB, summed user+system CPU seconds incl. reaped children) of `root` and
    all its descendants; (0, 0.0) when /proc is unavailable."""
    if not os.path.isdir("/proc"):
        return 0, 0.0
    kids = _children_map()
    rss, ticks, stack = 0, 0, [root]
    while stack:
        pid = stack.pop()
        stack.extend(kids.get(pid, ()))
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                stat = fh.read()
            f = stat[stat.rfind(b")") + 2 :].split()
            ticks += int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])  # utime stime cu cs
            with open(f"/proc/{pid}/status", "rb") as fh:
                for line in fh:
                    if line.startswith(b"VmRSS:"):
                        rss += int(line.split()[1])
                        break
        except (OSError, ValueError, IndexError):
            pass
    return rss, ticks / _TICK


def _loadavg() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return -1.0


def rss_method() -> str:
    if os.access(TIME_BIN, os.X_OK):
        return "`/usr/bin/time -v` (Maximum resident set size)"
    return "`os.wait4()` per-child `ru_maxrss` (no /usr/bin/time on this machine)"


def run_cmd(
    run: Run,
    timeout: float,
    stdout_path: Path | None = None,
    stdin_path: Path | None = None,
) -> Run:
    """Run `run.cmd`, filling in wall time, peak RSS, return code and status."""
    use_time = os.access(TIME_BIN, os.X_OK)
    tmpdir = Path(tempfile.mkdtemp(prefix="bench-"))
    time_out = tmpdir / "time.txt"
    argv = [TIME_BIN, "-v", "-o", str(time_out), *run.cmd] if use_time else list(run.cmd)
    out_fh = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL  # noqa: SIM115
    in_fh = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL  # noqa: SIM115
    err_path = tmpdir / "stderr.txt"
    err_fh = open(err_path, "wb")  # noqa: SIM115
    peak_tree = 0
    tree_cpu = 0.0
    load0 = _loadavg()
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=out_fh, stderr=err_fh, stdin=in_fh, start_new_session=True)
    ru = None
    status_code = None
    next_sample = t0
    try:
        while True:
            pid, status_code, ru = os.wait4(proc.pid, os.WNOHANG)
            now = time.perf_counter()
            if pid == proc.pid:
                break
            if now - t0 > timeout:
                os.killpg(proc.pid, signal.SIGKILL)  # the session we started, nothing else
                _, status_code, ru = os.wait4(proc.pid, 0)
                run.status = "timed out"
                run.note = f"killed after {timeout:.0f} s"
                break
            if now >= next_sample:
                rss, cpu = _tree_sample(proc.pid)
                peak_tree = max(peak_tree, rss)
                tree_cpu = max(tree_cpu, cpu)
                next_sample = now + 0.2
            time.sleep(0.01 if now - t0 < 1 else 0.05)
    finally:
        proc.returncode = 0  # reaped by wait4 above; keep Popen from waiting again
        wall = time.perf_counter() - t0
        for fh in (out_fh, in_fh, err_fh):
            if hasattr(fh, "close"):
                fh.close()
    run.wall = wall
    run.load = (load0, _loadavg())
    run.tree_rss_kb = peak_tree or None
    run.rc = os.waitstatus_to_exitcode(status_code) if status_code is not None else None
    if use_time and time_out.exists():
        cpu = 0.0
        for line in time_out.read_text(errors="replace").splitlines():
            line = line.strip()
            if line.startswith("Maximum resident set size"):
                run.rss_kb = int(line.rsplit(":", 1)[1])
            elif line.startswith("Exit status:"):
                run.rc = int(line.rsplit(":", 1)[1])
            elif line.startswith(("User time (seconds):", "System time (seconds):")):
                cpu += float(line.rsplit(":", 1)[1])
        run.cpu = cpu
    if run.cpu is None and ru is not None and run.status != "timed out":
        run.cpu = ru.ru_utime + ru.ru_stime
    if run.status == "timed out":  # killed: only the /proc samples know what it used
        run.cpu = tree_cpu or None
    if run.rss_kb is None and ru is not None and run.status != "timed out":
        run.rss_kb = ru.ru_maxrss
    if run.status == "ok" and run.rc not in (0, None) and not (
        run.tool.startswith("grep") and run.rc == 1
    ):
        run.status = "failed"
        err = err_path.read_text(errors="replace").strip().splitlines()
        run.note = f"exit {run.rc}: " + (err[-1][:200] if err else "")
    shutil.rmtree(tmpdir, ignore_errors=True)
    return run


# --------------------------------------------------------------------------------------------------
# environment
# --------------------------------------------------------------------------------------------------


def _out(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def find_loglens(arg: str | None) -> str | None:
    if arg:
        return arg
    cand = REPO / ".venv" / "bin" / "loglens"
    if cand.exists():
        return str(cand)
    return shutil.which("loglens")


def loglens_python(loglens: str) -> str:
    """The interpreter loglens runs under (from its shebang), for version reporting."""
    try:
        with open(loglens, "rb") as fh:
            first = fh.readline().decode().strip()
        if first.startswith("#!") and os.path.exists(first[2:].split()[0]):
            return first[2:].split()[0]
    except OSError:
        pass
    return sys.executable


def machine_description(loglens: str | None, lnav: str | None) -> dict[str, str]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = "unknown"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                ram = f"{int(line.split()[1]) / (1 << 20):.1f} GiB"
                break
    except OSError:
        pass
    py = loglens_python(loglens) if loglens else sys.executable
    ver = _out(
        [py, "-c", "import importlib.metadata as m,sys,polars;"
         "print(m.version('loglens'),sys.version.split()[0],polars.__version__)"]
    ).split()
    return {
        "nproc": _out(["nproc"]) or str(os.cpu_count()),
        "cpu": cpu,
        "ram": ram,
        "kernel": platform.release(),
        "python": ver[1] if len(ver) > 1 else "?",
        "loglens": ver[0] if ver else "?",
        "polars": ver[2] if len(ver) > 2 else "?",
        "lnav": (_out([lnav, "-V"]) if lnav else "not installed") or "?",
        "grep": (_out(["grep", "-V"]).splitlines() or ["?"])[0],
        "locale": os.environ.get("LC_ALL") or os.environ.get("LANG") or "unset",
        "rss_method": rss_method(),
        "source": _source_state(),
    }


def source_digest() -> str:
    """Hash of the loglens sources (analyzer/, grammars/) as they are on disk right now: other
    people may edit them while a long benchmark runs, and every loglens run records it."""
    h = hashlib.sha256()
    for sub in ("analyzer", "grammars"):
        for f in sorted((REPO / sub).rglob("*")):
            if f.is_file() and f.suffix in (".py", ".lark", ".toml"):
                h.update(str(f.relative_to(REPO)).encode())
                h.update(f.read_bytes())
    return h.hexdigest()[:12]


def _source_state() -> str:
    """Which loglens code was measured (read-only git queries; the tree may be dirty)."""
    head = _out(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"])
    if not head:
        return "not a git checkout"
    dirty = _out(["git", "-C", str(REPO), "status", "--porcelain", "--", "analyzer", "grammars"])
    n = len([x for x in dirty.splitlines() if x.strip()])
    return f"git {head}" + (f" + {n} uncommitted change(s) under analyzer/ grammars/" if n else "")


# --------------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------------


def generator_digest() -> str:
    return hashlib.sha256((HERE / "gen_log.py").read_bytes()).hexdigest()[:16]


def ensure_log(data_dir: Path, label: str, seed: int) -> dict[str, Path]:
    size = gen_log.parse_size(label)
    base = data_dir / f"sglang-tp8-{label}.log"
    paths = {
        "log": base,
        "gz": base.with_name(base.name + ".gz"),
        "small": gen_log.small_path_for(base),
        "meta": base.with_name(base.name + ".meta.json"),
    }
    want = {"size": size, "seed": seed, "generator": generator_digest()}
    try:
        have = json.loads(paths["meta"].read_text())
    except (OSError, ValueError):
        have = None
    if have and all(have.get(k) == v for k, v in want.items()) and all(
        paths[k].exists() for k in ("log", "gz", "small")
    ) and paths["log"].stat().st_size == have.get("bytes"):
        print(f"[{label}] reusing {base}", flush=True)
        return paths
    print(f"[{label}] generating {base} ...", flush=True)
    info = gen_log.generate(size, base, seed=seed, gz=True, small=paths["small"])
    print(
        f"[{label}] generated {info['bytes']:,} bytes, {info['lines']:,} lines in "
        f"{info['seconds']} s",
        flush=True,
    )
    paths["meta"].write_text(json.dumps({**want, **info}, indent=1))
    return paths


def warm_cache(path: Path) -> None:
    with open(path, "rb") as fh:
        while fh.read(16 * MiB):
            pass


# --------------------------------------------------------------------------------------------------
# answers
# --------------------------------------------------------------------------------------------------

ANSWER_KEYS = ("verdict", "category", "text", "rank", "signature", "phase")


def answer_of(path: Path) -> dict[str, object] | None:
    try:
        d = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    rc = d.get("root_cause") or {}
    return {
        "verdict": d.get("verdict"),
        "category": rc.get("category"),
        "text": rc.get("text"),
        "rank": rc.get("rank"),
        "signature": rc.get("signature"),
        "phase": rc.get("phase"),
        "line": rc.get("line"),
        "lines": d.get("lines"),
        "headline": d.get("headline"),
    }


def compare(a: dict[str, object] | None, b: dict[str, object] | None) -> tuple[bool | None, str]:
    if a is None or b is None:
        return None, "not compared (a run did not finish)"
    diff = [k for k in ANSWER_KEYS if a.get(k) != b.get(k)]
    if diff:
        return False, "DIFFERENT: " + ", ".join(f"{k}: {a.get(k)!r} vs {b.get(k)!r}" for k in diff)
    return True, "same " + ", ".join(ANSWER_KEYS)


# --------------------------------------------------------------------------------------------------
# one size
# --------------------------------------------------------------------------------------------------


def bench_size(
    label: str,
    paths: dict[str, Path],
    loglens: str | None,
    lnav: str | None,
    timeout: float,
    work: Path,
    repeat: int = 3,
    parquet: bool = True,
) -> tuple[list[Run], list[dict[str, object]]]:
    log, gz, small = paths["log"], paths["gz"], paths["small"]
    runs: list[Run] = []
    checks: list[dict[str, object]] = []

    def go(tool: str, cmd: list[str], *, inp: Path, stdout: Path | None = None,
           stdin: Path | None = None, to: float = timeout) -> Run:
        # MB/s is always of uncompressed log text, also for .gz inputs
        r = Run(size=label, tool=tool, cmd=cmd,
                input_bytes=log.stat().st_size if inp == gz else inp.stat().st_size)
        if tool.startswith("loglens"):
            r.extra["source_digest"] = source_digest()
        print(f"[{label}] {tool}: {' '.join(cmd)}", flush=True)
        run_cmd(r, to, stdout_path=stdout, stdin_path=stdin)
        # Short runs are noisy on a shared machine: repeat them, keep the fastest attempt.
        while (r.status == "ok" and r.wall is not None and r.wall < REPEAT_BELOW_S
               and r.attempts < repeat):
            again = Run(size=label, tool=tool, cmd=cmd, input_bytes=r.input_bytes,
                         extra=dict(r.extra))
            run_cmd(again, to, stdout_path=stdout, stdin_path=stdin)
            again.attempts = r.attempts + 1
            if again.status == "ok" and (again.wall or 0) < (r.wall or 0):
                r = again
            else:
                r.attempts = again.attempts
        if stdout is not None and stdout.exists() and r.status == "ok" and tool in (
            "wc -l", "grep -c -i error", "lnav", "lnav (.gz)"
        ):
            words = stdout.read_text(errors="replace").split()
            r.result = (words[:1] if tool == "wc -l" else words[-1:] or [""])[0]
            r.result = f"{int(r.result):,}" if r.result.isdigit() else r.result
        print(
            f"[{label}]   -> {r.status} {r.wall:.2f} s wall, {r.cpu or 0:.2f} s CPU, peak RSS "
            f"{(r.rss_kb or 0) / 1024:.0f} MB, load {r.load} {r.note}",
            flush=True,
        )
        runs.append(r)
        return r

    warm_cache(log)
    warm_cache(gz)
    go("wc -l", ["wc", "-l", str(log)], inp=log, stdout=work / "wc.txt")
    go("grep -c -i error", ["grep", "-c", "-i", "error", str(log)], inp=log,
       stdout=work / "grep.txt")
    if lnav:
        go("lnav", [lnav, "-n", "-c", LNAV_QUERY, str(log)], inp=log, stdout=work / "lnav.txt")
    else:
        runs.append(Run(size=label, tool="lnav", cmd=[], status="skipped",
                        note="lnav not installed (apt-get install lnav) or --skip-lnav"))

    if loglens:
        rs = go("loglens explain (small version)",
                [loglens, "explain", "--format", "json", str(small)], inp=small,
                stdout=work / "small.json")
        a_small = answer_of(work / "small.json") if rs.status == "ok" else None
        rs.result = _answer_str(a_small)

        rl = go("loglens explain", [loglens, "explain", "--format", "json", str(log)], inp=log,
                stdout=work / "large.json")
        a_large = answer_of(work / "large.json") if rl.status == "ok" else None
        rl.result = _answer_str(a_large)
        rl.extra["answer"] = a_large
        rs.extra["answer"] = a_small
    else:
        a_small = a_large = None
        rl = None

    go("gzip -dc > /dev/null", ["gzip", "-dc", str(gz)], inp=gz)
    if lnav:
        go("lnav (.gz)", [lnav, "-n", "-c", LNAV_QUERY, str(gz)], inp=gz,
           stdout=work / "lnavgz.txt")

    a_gz = None
    if loglens:
        if rl is not None and rl.status == "timed out":
            for tool in ("loglens explain (.gz)", "loglens events --format parquet"):
                runs.append(Run(size=label, tool=tool, cmd=[], status="skipped",
                                note="loglens explain timed out on the plain file"))
        else:
            rg = go("loglens explain (.gz)", [loglens, "explain", "--format", "json", str(gz)],
                    inp=gz, stdout=work / "gz.json")
            a_gz = answer_of(work / "gz.json") if rg.status == "ok" else None
            rg.result = _answer_str(a_gz)
            rg.extra["answer"] = a_gz
            pq = work / "events.parquet"
            if not parquet:
                runs.append(Run(size=label, tool="loglens events --format parquet", cmd=[],
                                status="skipped", note="--skip-parquet"))
            else:
                rp = go("loglens events --format parquet",
                        [loglens, "events", "--format", "parquet", "-o", str(pq), str(log)],
                        inp=log)
                if rp.status == "ok" and pq.exists():
                    rp.result = f"{pq.stat().st_size / MiB:.1f} MB parquet"
                    rp.extra["parquet_rows"] = _parquet_rows(loglens, pq)
                    if rp.extra["parquet_rows"] is not None:
                        rp.result += f", {rp.extra['parquet_rows']:,} rows"
                pq.unlink(missing_ok=True)

        ok, why = compare(a_small, a_large)
        checks.append({"size": label, "pair": "small vs large", "ok": ok, "detail": why,
                       "line_small": (a_small or {}).get("line"),
                       "line_large": (a_large or {}).get("line")})
        ok, why = compare(a_large, a_gz)
        checks.append({"size": label, "pair": "large vs .gz", "ok": ok, "detail": why,
                       "line_small": (a_large or {}).get("line"),
                       "line_large": (a_gz or {}).get("line")})
    return runs, checks


def _answer_str(a: dict[str, object] | None) -> str:
    if not a:
        return ""
    return f"{a['verdict']} / {a['category']} / rank {a['rank']} (line {a['line']})"


def _parquet_rows(loglens: str, pq: Path) -> int | None:
    code = ("import polars as pl, sys;"
            "print(pl.scan_parquet(sys.argv[1]).select(pl.len()).collect().item())")
    out = _out([loglens_python(loglens), "-c", code, str(pq)])
    return int(out) if out.isdigit() else None


# --------------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------------


def _fmt_ratio(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{x:.1f}×" if x >= 10 else f"{x:.2f}×"


def table(runs: list[Run]) -> str:
    hdr = ("| size | tool | wall s | CPU s | peak RSS MB | tree RSS MB | MB/s | ratio vs lnav | "
           "ratio vs grep | load 1m | result / note |")
    lines = [hdr, "|" + "---|" * 11]
    by_size: dict[str, list[Run]] = {}
    for r in runs:
        by_size.setdefault(r.size, []).append(r)
    for label, rs in by_size.items():
        ref = {r.tool: r for r in rs}
        lnav_w = ref["lnav"].wall if "lnav" in ref and ref["lnav"].status == "ok" else None
        grep_w = (ref["grep -c -i error"].wall
                  if "grep -c -i error" in ref and ref["grep -c -i error"].status == "ok" else None)
        gunzip = ref.get("gzip -dc > /dev/null")
        gunzip_w = gunzip.wall if gunzip and gunzip.status == "ok" else None
        for r in rs:
            if r.status == "skipped":
                lines.append(f"| {label} | {r.tool} | skipped | – | – | – | – | – | – | – "
                             f"| {r.note} |")
                continue
            w = r.wall or 0.0
            net = w
            note = r.result
            if r.tool in ("loglens explain (.gz)", "lnav (.gz)") and gunzip_w is not None:
                net = max(w - gunzip_w, 0.0)
                note = (note + "; " if note else "") + f"ratios net of gzip -dc ({gunzip_w:.2f} s)"
            if r.status != "ok":
                note = f"**{r.status}** {r.note}"
                wall_s = f">{w:.0f}" if r.status == "timed out" else f"{w:.2f}"
            else:
                wall_s = f"{w:.2f}"
            done = r.status == "ok"
            mbs = f"{(r.input_bytes or 0) / MiB / w:.1f}" if done and w > 0 else "–"
            rl = _fmt_ratio(net / lnav_w) if lnav_w else "–"
            rg = _fmt_ratio(net / grep_w) if grep_w else "–"
            if r.tool.endswith("(small version)"):  # a different (2,000-line) input
                rl = rg = mbs = "–"
            if r.status == "timed out":
                rl = f">{rl}" if lnav_w else "–"
                rg = f">{rg}" if grep_w else "–"
            rss = f"{r.rss_kb / 1024:.0f}" if r.rss_kb else "–"
            trss = f"{r.tree_rss_kb / 1024:.0f}" if r.tree_rss_kb else "–"
            cpu = f"{r.cpu:.2f}" if r.cpu is not None else "–"
            if r.status == "timed out" and r.cpu is not None:
                cpu = f">{r.cpu:.0f}"
            load = f"{r.load[0]:.1f}→{r.load[1]:.1f}" if r.load else "–"
            if r.attempts > 1:
                note = (note + "; " if note else "") + f"best of {r.attempts}"
            lines.append(f"| {label} | {r.tool} | {wall_s} | {cpu} | {rss} | {trss} | {mbs} | {rl} "
                         f"| {rg} | {load} | {note} |")
    return "\n".join(lines)


def checks_md(checks: list[dict[str, object]]) -> str:
    if not checks:
        return "_loglens not run._"
    out = ["| size | compared | same answer? | detail |", "|---|---|---|---|"]
    for c in checks:
        mark = {True: "yes", False: "**NO**", None: "n/a"}[c["ok"]]  # type: ignore[index]
        extra = ""
        if c["ok"] is not None:
            extra = f" (root-cause line {c['line_small']} vs {c['line_large']})"
        out.append(f"| {c['size']} | {c['pair']} | {mark} | {c['detail']}{extra} |")
    return "\n".join(out)


def write_report(path: Path, machine: dict[str, str], runs: list[Run],
                 checks: list[dict[str, object]], argv: list[str], files: dict[str, dict],
                 complete: bool, timeouts: dict[str, float]) -> str:
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    m = machine
    parts = [
        "# loglens benchmark results" + ("" if complete else " (partial: run in progress)"),
        "",
        f"Generated {now} by `python tests/benchmarks/{Path(__file__).name}"
        + "".join(f" {a}" for a in argv) + "`.",
        "",
        "## Machine",
        "",
        f"- CPU: {m['cpu']}, nproc = {m['nproc']}; RAM {m['ram']}; Linux {m['kernel']}",
        f"- loglens {m['loglens']} on Python {m['python']} (polars {m['polars']}); "
        f"{m['lnav']}; {m['grep']}; locale {m['locale']}",
        f"- loglens source measured: {m['source']}",
        f"- peak RSS: {m['rss_method']}; \"tree RSS\" = summed RSS of the process tree, sampled "
        "from /proc every 0.2 s",
        "- per-run timeout " + ", ".join(f"{k}: {v:.0f} s" for k, v in timeouts.items())
        + "; page cache warmed before each size; runs never "
        "overlap (but other users' jobs may share the CPUs: the load 1m column is the 1-minute "
        "load average before→after each run, and CPU s = user+system time is the "
        f"contention-proof number); runs shorter than {REPEAT_BELOW_S:.0f} s are repeated and "
        "the fastest kept",
        "",
        "## Inputs (generated by `tests/benchmarks/gen_log.py`, seeded)",
        "",
        "| size | bytes | lines | .gz bytes | small version lines |",
        "|---|---|---|---|---|",
    ]
    for label, info in files.items():
        parts.append(f"| {label} | {info['bytes']:,} | {info['lines']:,} | {info['gz_bytes']:,} | "
                     f"{info['small_lines']:,} |")
    parts += [
        "",
        "## Wall time and memory",
        "",
        "Ratios are wall-time ratios against lnav / `grep -c -i error` on the same (plain) file; "
        "for `.gz` inputs the `gzip -dc` time is subtracted first (decompression reported in its "
        "own row). lnav command: `lnav -n -c ';SELECT count(*) FROM all_logs' FILE`.",
        "",
        table(runs),
        "",
        "## Same answers at every size (verdict and root cause)",
        "",
        checks_md(checks),
        "",
    ]
    digests = sorted({str(r.extra["source_digest"]) for r in runs if "source_digest" in r.extra})
    if len(digests) > 1:
        parts += ["**Warning: the loglens sources changed during this run** (digests "
                  + ", ".join(digests) + "); loglens rows are not all of the same code.", ""]
    elif digests:
        parts += [f"All loglens runs measured the same sources (digest {digests[0]} of "
                  "analyzer/ and grammars/).", ""]
    text = "\n".join(parts)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return text


# --------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(description="loglens vs lnav vs grep at 64 MB / 256 MB / 1 GB")
    ap.add_argument("--sizes", default=None, help="comma list, e.g. 64M,256M,1G (default)")
    ap.add_argument("--quick", action="store_true",
                    help="~8 MB smoke run for CI (10 s per-run timeout; < 30 s in total)")
    ap.add_argument("--skip-lnav", action="store_true", help="do not run lnav")
    ap.add_argument("--skip-parquet", action="store_true",
                    help="do not time `events --format parquet` (11 minutes on 1 GB)")
    ap.add_argument("--timeout", default=None,
                    help="per-run timeout in seconds (default 1800; --quick: 10), or per size: "
                         "64M=1800,256M=3600,1G=1800")
    ap.add_argument("--loglens", default=None,
                    help="loglens executable (default .venv/bin/loglens)")
    ap.add_argument("--data-dir", type=Path, default=HERE / "data")
    ap.add_argument("--out", type=Path, default=None,
                    help="Markdown report (default tests/benchmarks/results.md; --quick: "
                         "tests/benchmarks/data/results-quick.md)")
    ap.add_argument("--seed", type=int, default=20260222)
    ap.add_argument("--repeat", type=int, default=None,
                    help=f"runs shorter than {REPEAT_BELOW_S:.0f} s are repeated this many times "
                         "in all and the fastest kept (default 3, --quick: 1)")
    args = ap.parse_args(argv)

    sizes = [s.strip() for s in (args.sizes or ("8M" if args.quick else "64M,256M,1G")).split(",")
             if s.strip()]
    for s in sizes:
        gen_log.parse_size(s)
    default_timeout = 10.0 if args.quick else 1800.0
    timeouts: dict[str, float] = {}
    for part in (args.timeout or "").split(","):
        if "=" in part:
            k, v = part.split("=", 1)
            timeouts[k.strip()] = float(v)
        elif part.strip():
            default_timeout = float(part)
    if args.repeat is None:
        args.repeat = 1 if args.quick else 3
    out = args.out or (args.data_dir / "results-quick.md" if args.quick else HERE / "results.md")

    loglens = find_loglens(args.loglens)
    if not loglens:
        print("loglens not found (looked for .venv/bin/loglens and PATH); timing the others only",
              file=sys.stderr)
    lnav = None if args.skip_lnav else shutil.which("lnav")
    if not args.skip_lnav and not lnav:
        print("lnav is not installed: skipping lnav (Debian/Ubuntu: apt-get install lnav)",
              file=sys.stderr)
    if not os.access(TIME_BIN, os.X_OK):
        print("no /usr/bin/time: peak RSS from os.wait4() ru_maxrss", file=sys.stderr)

    machine = machine_description(loglens, lnav)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    all_runs: list[Run] = []
    all_checks: list[dict[str, object]] = []
    files: dict[str, dict] = {}
    used_timeouts: dict[str, float] = {}
    report = ""
    for i, label in enumerate(sizes):
        paths = ensure_log(args.data_dir, label, args.seed)
        meta = json.loads(paths["meta"].read_text())
        files[label] = {"bytes": meta["bytes"], "lines": meta["lines"],
                        "gz_bytes": paths["gz"].stat().st_size,
                        "small_lines": meta["small_lines"]}
        with tempfile.TemporaryDirectory(prefix=f"bench-{label}-") as work:
            timeout = timeouts.get(label, default_timeout)
            runs, checks = bench_size(label, paths, loglens, lnav, timeout, Path(work),
                                      repeat=args.repeat, parquet=not args.skip_parquet)
        all_runs += runs
        all_checks += checks
        used_timeouts[label] = timeout
        report = write_report(out, machine, all_runs, all_checks, argv, files,
                              complete=i == len(sizes) - 1, timeouts=used_timeouts)
        raw = args.data_dir / ("results-quick.json" if args.quick else "results.json")
        raw.write_text(json.dumps({"machine": machine, "runs": [asdict(r) for r in all_runs],
                                   "checks": all_checks, "files": files}, indent=1, default=str))
    print()
    print(report)
    print(f"(written to {out})")
    return 1 if any(c["ok"] is False for c in all_checks) else 0


if __name__ == "__main__":
    sys.exit(main())
