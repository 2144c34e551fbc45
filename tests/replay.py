"""Replay a real corpus log into a file over time, as a starting server would write it.

`loglens watch` has to be tested against a file that grows while it watches: the decisive line
must arrive *after* the watcher started, and the test must know when it was written to measure
how fast the verdict came. A `Replay` runs a small plan (write lines over a compressed time
span, pause, truncate, rotate) in a background thread and records when each line hit the file.

    rep = Replay(tmp_path / "server.log")
    rep.lines(CORPUS / "seed/x.log", duration=2.0, pause_after={68: 1.5})
    rep.start(); ...; rep.join()
    rep.time_of("Not enough memory")  # time.monotonic() when that line was written
"""

from __future__ import annotations

import itertools
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

TIMESTAMP = re.compile(r"(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)")
PROGRESS = re.compile(r"^(?P<desc>[^\r|]*?):\s*\d{1,3}%(?: Completed \||\|)")


@dataclass
class Written:
    """One line as written: when (monotonic), where (file line number), what."""

    at: float
    lineno: int
    text: str


def _bar(line: str) -> str | None:
    """The description of a tqdm bar line, or None."""
    m = PROGRESS.match(line)
    return re.sub(r"\s*\([^)]*\)", "", m.group("desc")) if m else None


class Replay:
    """A plan of writes to one path, executed in a background thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.plan: list[Callable[[], None]] = []
        self.written: list[Written] = []
        self.events: list[tuple[float, str]] = []  # (monotonic, "truncate" | "rotate")
        self.error: BaseException | None = None
        self._lineno = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- building the plan ---------------------------------------------------------------------
    def lines(self, source: Path, *, duration: float = 2.0, first: int = 1,
              last: int | None = None, timestamps: bool = False,
              pause_after: dict[int, float] | None = None, tqdm: bool = False) -> Replay:
        """Write lines `first`..`last` (1-based, inclusive) of `source` over about `duration` s.

        `timestamps`: space lines by their relative log timestamps (scaled into `duration`)
        instead of evenly. `pause_after`: extra seconds after a given source line. `tqdm`:
        write runs of progress lines as one line refreshed with `\\r`, as tqdm does.
        """
        all_lines = source.read_text(encoding="utf-8", errors="replace").split("\n")
        if all_lines and all_lines[-1] == "":
            all_lines.pop()
        chosen = list(enumerate(all_lines, 1))[first - 1:last]
        delays = _delays([t for _, t in chosen], duration, timestamps)
        pauses = pause_after or {}
        end = last if last is not None else len(all_lines)

        def run() -> None:
            for (n, line), delay in zip(chosen, delays, strict=True):
                if self._wait(delay):
                    return
                desc = _bar(line) if tqdm else None
                nxt = all_lines[n] if n < end else ""
                if desc is not None and _bar(nxt) == desc:
                    self._write("\r" + line, complete=False, text=line)  # tqdm redraws in place
                else:
                    self._write(("\r" if desc is not None else "") + line + "\n", complete=True,
                                text=line)
                if self._wait(pauses.get(n, 0.0)):
                    return

        self.plan.append(run)
        return self

    def text(self, data: str) -> Replay:
        """Write raw text (may end without a newline: a partial line)."""
        self.plan.append(lambda: self._write(data, complete=data.endswith("\n"), text=data))
        return self

    def pause(self, seconds: float) -> Replay:
        def run() -> None:
            self._wait(seconds)
        self.plan.append(run)
        return self

    def truncate(self) -> Replay:
        """Truncate in place (same inode), like `> server.log` before a relaunch."""
        def run() -> None:
            with open(self.path, "r+b") as fh:
                fh.truncate(0)
            self._lineno = 0
            self.events.append((time.monotonic(), "truncate"))
        self.plan.append(run)
        return self

    def rotate(self, suffix: str = ".1") -> Replay:
        """Move the file away; the next write creates a new one (a new inode)."""
        def run() -> None:
            os.replace(self.path, self.path.with_name(self.path.name + suffix))
            self._lineno = 0
            self.events.append((time.monotonic(), "rotate"))
        self.plan.append(run)
        return self

    # -- running -------------------------------------------------------------------------------
    def start(self, delay: float = 0.0) -> Replay:
        """Run the plan in a daemon thread, after `delay` seconds."""
        def main() -> None:
            try:
                if self._wait(delay):
                    return
                for step in self.plan:
                    if self._stop.is_set():
                        return
                    step()
            except BaseException as exc:  # re-raised by join()
                self.error = exc
        self._thread = threading.Thread(target=main, name="replay", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float = 30.0) -> None:
        if self._thread is not None:
            self._thread.join(timeout)
        if self.error is not None:
            raise self.error

    @property
    def done(self) -> bool:
        return self._thread is not None and not self._thread.is_alive()

    def time_of(self, needle: str) -> float:
        """When the first line containing `needle` was completely written (monotonic)."""
        return self._find(needle).at

    def line_of(self, needle: str) -> int:
        """The file line number the first line containing `needle` was written at."""
        return self._find(needle).lineno

    def _find(self, needle: str) -> Written:
        for w in self.written:
            if needle in w.text:
                return w
        raise KeyError(needle)

    # -- internals -----------------------------------------------------------------------------
    def _wait(self, seconds: float) -> bool:
        """Sleep; True when stopped meanwhile."""
        return self._stop.wait(seconds) if seconds > 0 else self._stop.is_set()

    def _write(self, data: str, *, complete: bool, text: str) -> None:
        with open(self.path, "a", encoding="utf-8", newline="") as fh:
            fh.write(data)
            fh.flush()
        if complete:
            self._lineno += data.count("\n")
            self.written.append(Written(time.monotonic(), self._lineno, text))


def _delays(lines: list[str], duration: float, timestamps: bool) -> list[float]:
    """Seconds to wait before each line: even spacing, or scaled log-timestamp gaps.

    Lines without a timestamp (tqdm bars, traceback lines) get times interpolated between
    their timestamped neighbours, so a 5-minute shard-loading bar is spread over its 5 minutes.
    """
    if not lines:
        return []
    even = duration / len(lines)
    if not timestamps:
        return [even] * len(lines)
    stamps: list[float | None] = []
    for line in lines:
        m = TIMESTAMP.search(line)
        stamps.append(datetime.fromisoformat(f"{m.group(1)}T{m.group(2)}").timestamp()
                      if m else None)
    known = [i for i, s in enumerate(stamps) if s is not None]
    if len(known) < 2:
        return [even] * len(lines)
    times: list[float] = []
    for i, stamp in enumerate(stamps):
        if stamp is not None:
            times.append(stamp)
            continue
        before = max((k for k in known if k < i), default=None)
        after = min((k for k in known if k > i), default=None)
        if before is None or after is None:
            times.append(stamps[before if before is not None else known[0]] or 0.0)
            continue
        t0, t1 = stamps[before] or 0.0, stamps[after] or 0.0
        times.append(t0 + (t1 - t0) * (i - before) / (after - before))
    span = (max(times) - min(times)) or 1.0
    scale = duration / span
    out = [0.001]
    out.extend(max(b - a, 0.0) * scale + 0.001 for a, b in itertools.pairwise(times))
    return out
