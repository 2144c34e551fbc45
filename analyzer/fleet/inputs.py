"""What a scan reads: the paths named on the command line, expanded into jobs.

A job is one log, or with `--group-by-dir` every log of one directory (one per rank), which
is analysed together as `explain DIR` does. Listing never opens a file: a file that cannot be
read becomes a row with its `error` set when its turn comes, so one bad file does not stop
the scan and nothing is skipped silently.
"""

from __future__ import annotations

import glob
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from analyzer.errors import InputError
from analyzer.sources.source import log_like


@dataclass(frozen=True)
class Job:
    """One row's input: its key (the path shown), the files, their total size and newest
    modification time (the resume key is path + size + mtime)."""

    path: str
    files: tuple[str, ...]
    size: int
    mtime: float


def _stat(path: str) -> tuple[int, float]:
    try:
        info = os.stat(path)
    except OSError:
        return -1, 0.0  # reported by the analysis, in the row's error column
    return info.st_size, info.st_mtime


def _walk(root: str) -> Iterable[str]:
    """Log-like files under root, recursively, hidden names left out, in name order."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if not name.startswith(".") and log_like(name):
                yield os.path.join(dirpath, name)


def _expand(arg: str) -> list[str]:
    if any(ch in arg for ch in "*?[") and not os.path.exists(arg):
        matches = sorted(glob.glob(arg, recursive=True))
        if not matches:
            raise InputError(f"{arg}: no file matches this pattern")
        out: list[str] = []
        for m in matches:
            out.extend(_walk(m) if os.path.isdir(m) else [m])
        return out
    try:
        mode = os.stat(arg).st_mode
    except OSError:
        return [arg]  # a row with the error: the scan goes on
    return list(_walk(arg)) if stat.S_ISDIR(mode) else [arg]


def read_path_list(lines: Iterable[str]) -> list[str]:
    """`-`: one path per line on stdin (blank lines and `#` comments ignored)."""
    return [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]


def jobs(paths: Sequence[str], *, group_by_dir: bool = False,
         since: datetime | None = None) -> list[Job]:
    """The jobs to analyse, each file once, in the order named (files in a directory in name
    order). `since`: only logs modified at or after it (a directory's job: any of its files)."""
    files: list[str] = []
    seen: set[str] = set()
    for arg in paths:
        for f in _expand(arg):
            key = os.path.normpath(f)
            if key not in seen:
                seen.add(key)
                files.append(f)
    if group_by_dir:
        by_dir: dict[str, list[str]] = {}
        for f in files:
            by_dir.setdefault(str(Path(f).parent), []).append(f)
        groups = list(by_dir.items())
    else:
        groups = [(f, [f]) for f in files]
    out: list[Job] = []
    cutoff = since.timestamp() if since is not None else None
    for key, members in groups:
        stats = [_stat(f) for f in members]
        size = -1 if any(s < 0 for s, _ in stats) else sum(s for s, _ in stats)
        mtime = max(m for _, m in stats)
        if cutoff is not None and size >= 0 and mtime < cutoff:
            continue
        out.append(Job(key, tuple(members), size, mtime))
    return out
