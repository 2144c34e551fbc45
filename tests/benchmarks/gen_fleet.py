#!/usr/bin/env python3
"""Deterministic generator of a fleet of job logs for `loglens scan` (issue #15).

A fleet is what a team that runs jobs every day keeps: one directory per job, a log in each,
most of them small (a pasted server start, a short fine-tune), a few long ones. Every job log
here is a *mutation of a real corpus log* (serving and training, crashes, hangs, healthy and
still-starting runs), so the scan meets the formats, wrappers and failure shapes users have:

* shorter than the target size: the log's quiet middle (lines with no error word) is repeated
  before its ending until the log is that long (a server that served, a run that trained
  longer before the same end);
* longer: the head and the ending are kept and the middle is cut (`gen_log.py`'s "small
  version" idea), so start-up facts and the failure are both still there;
* host names become the job's own node names; about 3 % of the logs are gzipped.

Sizes follow a fleet's long tail: 70 % 5-30 KB, 20 % 30-300 KB, 8 % 0.3-1.5 MB, 2 % 1.5-5 MB
(10,000 logs: about 1 GB). Output is byte-for-byte the same for a given --seed and --count.

Usage::

    python tests/benchmarks/gen_fleet.py --count 10000 --out tests/benchmarks/data/fleet-10000
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpus"
SIZE_CLASSES = ((0.70, 5_000, 30_000), (0.20, 30_000, 300_000), (0.08, 300_000, 1_500_000),
                (0.02, 1_500_000, 5_000_000))
GZ_SHARE = 0.03
ERROR_WORD = re.compile(r"error|exception|traceback|fatal|fail|killed|abort|timeout|warn",
                        re.IGNORECASE)
NODE = re.compile(r"\bnode-\d+\b")
MAX_SOURCE = 2_000_000  # a corpus log longer than this is not a good seed for a small job


def corpus_logs() -> list[Path]:
    """Every corpus log with a label, in a stable order."""
    out = []
    for labels in sorted(CORPUS.rglob("labels.jsonl")):
        for text in labels.read_text(encoding="utf-8").splitlines():
            if not text.strip():
                continue
            log = labels.parent / f"{json.loads(text)['id']}.log"
            if log.is_file() and 0 < log.stat().st_size <= MAX_SOURCE:
                out.append(log)
    return out


def target_size(rng: random.Random) -> int:
    x = rng.random()
    for share, lo, hi in SIZE_CLASSES:
        if x < share:
            return int(lo * (hi / lo) ** rng.random())  # log-uniform inside the class
        x -= share
    return SIZE_CLASSES[-1][1]


def mutate(lines: list[str], size: int, rng: random.Random) -> list[str]:
    """The log at about `size` bytes, with its head and its ending kept."""
    total = sum(len(line) for line in lines)
    if total >= size:
        keep_head = max(1, len(lines) // 3)
        head, tail = lines[:keep_head], lines[keep_head:]
        while tail and sum(map(len, head)) + sum(map(len, tail)) > size and len(tail) > 20:
            cut = max(1, len(tail) // 8)
            tail = tail[cut:]
        while head and sum(map(len, head)) + sum(map(len, tail)) > size and len(head) > 20:
            head = head[: len(head) * 7 // 8]
        return head + tail
    end = max(1, int(len(lines) * 0.8))  # the ending (the failure, the last phase) stays last
    middle = [line for line in lines[len(lines) // 5:end] if not ERROR_WORD.search(line)]
    if not middle:
        middle = [line for line in lines if not ERROR_WORD.search(line)] or lines[:1]
    grown, extra = lines[:end], []
    need = size - total
    while need > 0:
        start = rng.randrange(len(middle))
        run = middle[start:start + rng.randint(20, 200)]
        extra.extend(run)
        need -= sum(map(len, run))
    return grown + extra + lines[end:]


def generate(count: int, out: Path, seed: int) -> list[Path]:
    rng = random.Random(seed)
    sources = corpus_logs()
    if not sources:
        raise SystemExit("no corpus logs found")
    written = []
    for i in range(count):
        src = sources[rng.randrange(len(sources))]
        lines = src.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
        if not lines:
            continue
        text = "".join(mutate(lines, target_size(rng), rng))
        text = NODE.sub(lambda m, i=i: f"node-{(i * 7 + int(m.group()[5:])) % 997}", text)
        job = out / f"day{i % 30:02d}" / f"job-{i:05d}"
        job.mkdir(parents=True, exist_ok=True)
        name = f"{src.stem[:60]}.log"
        if rng.random() < GZ_SHARE:
            path = job / f"{name}.gz"
            with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as fh:
                fh.write(text)
        else:
            path = job / name
            path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=10_000)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=15)
    args = ap.parse_args(argv)
    paths = generate(args.count, args.out, args.seed)
    size = sum(p.stat().st_size for p in paths)
    print(f"{len(paths)} logs, {size / 1e6:.0f} MB on disk, in {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
