"""Score `loglens explain` against labelled corpus folders, and record first-seen scores.

    python -m tests.score_corpus corpus/b08 -v                 # case by case
    python -m tests.score_corpus corpus/b08 --record b08       # append a row to FIRST_SEEN.md

A failure case (crash/hang) is a top-1 hit when the reported root-cause line contains the
label's `match`, a top-3 hit when the root or one of the `candidates` does. A quiet case
(healthy/in_progress) is a false alarm when a failure is reported. The same rules as
`../shared/tools/score_corpus.py`, run in-process (one start-up for the whole folder).

`--record` is the first-seen protocol: run it on a batch *before* any rule, signature or
framing change made for that batch, so the row is the honest measure of unseen logs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIRST_SEEN = ROOT / "corpus" / "FIRST_SEEN.md"


@dataclass
class Score:
    """Counts over one or more folders."""

    failures: int = 0
    top1: int = 0
    top3: int = 0
    quiet: int = 0
    false_alarms: int = 0
    errors: int = 0

    def line(self) -> str:
        def pct(n: int, d: int) -> str:
            return f"{n / d:.0%}" if d else "—"
        return (f"root-cause top-1 {self.top1}/{self.failures} ({pct(self.top1, self.failures)}), "
                f"top-3 {self.top3}/{self.failures} ({pct(self.top3, self.failures)}), "
                f"false alarms {self.false_alarms}/{self.quiet}, tool errors {self.errors}")


def labels(folder: Path) -> list[dict[str, Any]]:
    """Every label under `folder`, with the folder of its log."""
    out = []
    for lf in sorted(folder.rglob("labels.jsonl")):
        for text in lf.read_text(encoding="utf-8").splitlines():
            if text.strip():
                case = json.loads(text)
                case["_dir"] = lf.parent
                out.append(case)
    return out


def judge(case: dict[str, Any], report: dict[str, Any]) -> tuple[str, str]:
    """('top1' | 'top3' | 'miss' | 'quiet' | 'alarm', detail) for one case."""
    rc = report.get("root_cause") or {}
    text = rc.get("text") or ""
    if case["outcome"] in ("crash", "hang"):
        match = (case.get("root_cause") or {}).get("match") or ""
        if match and match in text:
            return "top1", ""
        if match and any(match in (c.get("text") or "") for c in report.get("candidates", [])):
            return "top3", f"runner-up; chosen {text[:100]!r}"
        return "miss", f"got {report.get('verdict')}: {text[:120]!r}"
    if report.get("verdict") in ("crash", "hang") or rc:
        return "alarm", f"{report.get('verdict')}: {text[:100]!r}"
    return "quiet", ""


NAIVE = re.compile(r"(?i)error|exception|traceback|failed")


def naive(log: Path, which: str) -> dict[str, Any]:
    """What `grep -i -m1` (first) or `grep -i | tail -1` (last) of error words would answer,
    as a report: the baseline every row is compared with in the README."""
    hits = [t for t in log.read_text(encoding="utf-8", errors="replace").splitlines()
            if NAIVE.search(t)]
    if not hits:
        return {"verdict": "healthy", "root_cause": None}
    return {"verdict": "crash", "root_cause": {"text": hits[0] if which == "first" else hits[-1]}}


def score(folders: list[Path], verbose: bool = False, baseline: str | None = None) -> Score:
    from analyzer import api
    from analyzer.errors import LoglensError

    s = Score()
    for folder in folders:
        for case in labels(folder):
            log = case["_dir"] / f"{case['id']}.log"
            failure = case["outcome"] in ("crash", "hang")
            if failure:
                s.failures += 1
            else:
                s.quiet += 1
            try:
                report = naive(log, baseline) if baseline else \
                    api.explain([str(log)], excerpts=False)
            except (LoglensError, OSError) as exc:
                s.errors += 1
                if verbose:
                    print(f"{case['id']} | {case['outcome']} | ERROR {exc}")
                continue
            verdict, detail = judge(case, report)
            s.top1 += verdict == "top1"
            s.top3 += verdict in ("top1", "top3")
            s.false_alarms += verdict == "alarm"
            if verbose:
                print(f"{case['id']} | {case['outcome']} | {verdict} {detail}".rstrip())
    return s


def commit() -> str:
    """The commit scored, marked when the work tree has changes to the engine."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout
    head = git("rev-parse", "--short", "HEAD").strip() or "unknown"
    dirty = git("status", "--porcelain", "--", "analyzer", "grammars").strip()
    return head + ("+changes" if dirty else "")


def record(batch: str, folders: list[Path], s: Score) -> None:
    """Append one row to corpus/FIRST_SEEN.md (the table is created with its header)."""
    if not FIRST_SEEN.exists():
        FIRST_SEEN.write_text(
            "# First-seen scores\n\n"
            "Each batch of new corpus cases is scored here *before* any rule, signature or\n"
            "framing change made for it (`python -m tests.score_corpus DIR --record BATCH`).\n"
            "These rows are the honest measure of how loglens does on logs it has never seen.\n\n"
            "| date | batch | cases | failure top-1 | failure top-3 | false alarms | commit |\n"
            "| --- | --- | --- | --- | --- | --- | --- |\n", encoding="utf-8")
    cases = s.failures + s.quiet

    def frac(n: int, d: int) -> str:
        return f"{n}/{d} ({n / d:.0%})" if d else "—"
    row = (f"| {dt.date.today().isoformat()} | {batch} | {cases} | {frac(s.top1, s.failures)} | "
           f"{frac(s.top3, s.failures)} | {s.false_alarms}/{s.quiet} | {commit()} |\n")
    with FIRST_SEEN.open("a", encoding="utf-8") as fh:
        fh.write(row)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--record", metavar="BATCH", help="append the score to corpus/FIRST_SEEN.md")
    ap.add_argument("--baseline", choices=("first", "last"),
                    help="score the first (last) line matching error|exception|traceback|failed "
                         "instead of loglens")
    a = ap.parse_args(argv)
    if a.record and a.baseline:
        ap.error("--record scores loglens, not a baseline")
    s = score(a.folders, a.verbose, a.baseline)
    print(s.line())
    if a.record:
        record(a.record, a.folders, s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
