"""Read and classify a large file in a second process.

The analysis of the selected lines is Python and holds the GIL; reading, splitting and
classifying lines is polars and needs a core of its own. In threads of one process the two
still contend (the analysis waited for the GIL a third of the time on a 1 GB log), so for a
large file a child process (`python -m analyzer.scan.producer`) runs `prefilter.classified`
and sends each batch's selection — a few hundred lines out of ~60,000 — over a socket. The
lines nobody selected stay in the child; when a block (a traceback) needs them, the parent
asks for a window. The child starts while the parent loads its knowledge, so start-up overlaps too.

Used only for regular files of at least SPLIT_BYTES (small logs are done before a process has
started) and where `LOGLENS_PRODUCER` is not "0". Answers are the same either way
(`tests/test_fastpath.py`).
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from functools import partial
from itertools import chain
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from analyzer.errors import InputError
from analyzer.scan.prefilter import AHEAD, Batch
from analyzer.scan.split import explain_target
from analyzer.sources.source import Source

KEEP_DONE = 2  # batches the child keeps after the parent is done with them


class RemoteBatches:
    """The parent's side: starts the child at once, then yields its batches in order."""

    def __init__(self, source: Source, rules: Sequence[str]) -> None:
        self.source = source
        data_here, data_there = socket.socketpair()
        ctl_here, ctl_there = socket.socketpair()
        args = [sys.executable, "-m", "analyzer.scan.producer", str(source.path), source.name,
                json.dumps(list(rules)), str(data_there.fileno()), str(ctl_there.fileno())]
        # glibc would hand each 16 MiB batch buffer fresh pages from mmap (page faults cost
        # as much as the CSV split); a higher threshold lets it reuse freed heap memory
        env = {"MALLOC_MMAP_THRESHOLD_": str(256 << 20), "MALLOC_TRIM_THRESHOLD_": str(1 << 30),
               **os.environ}
        # its own session: a terminal's Ctrl-C goes to loglens, which exits 130; the child
        # sees its sockets close and ends, and never prints a traceback of its own
        self.proc = subprocess.Popen(args, pass_fds=(data_there.fileno(), ctl_there.fileno()),
                                     stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        data_there.close()
        ctl_there.close()
        self.data = Connection(data_here.detach())
        self.ctl = Connection(ctl_here.detach())
        self._recent: dict[int, tuple[int, int]] = {}  # batch id -> (first line, size)

    def __iter__(self) -> Iterator[Batch]:
        finished = False
        try:
            while True:
                try:
                    msg = self.data.recv()
                except EOFError:
                    raise RuntimeError("the reader process ended without a result") from None
                kind = msg[0]
                if kind == "batch":
                    _, bid, first, size, full, alive, texts, edges, literals = msg
                    self._recent[bid] = (first, size)
                    self._recent.pop(bid - KEEP_DONE - 1, None)
                    yield Batch(first, size, full, alive, texts, edges=edges, literals=literals,
                                fetch=partial(self._window, bid))
                    self.ctl.send(("done", bid))
                elif kind == "end":
                    self._finish(msg[1], msg[2])
                    finished = True
                    return
                elif kind == "input_error":
                    raise InputError(msg[1])
                else:
                    raise RuntimeError(f"reader process failed: {msg[1]}")
        finally:
            if not finished or self.source._marks:  # a plain file seeks for its excerpts
                self.close()
            else:  # gzip: the excerpts near the end come from the child, not a second gunzip
                self.source._recent = self.recent_lines

    def recent_lines(self, lo: int, hi: int) -> dict[int, str] | None:
        """Lines lo..hi if the child still holds them (the last batches), else None."""
        out: dict[int, str] = {}
        hi = min(hi, self.source.stats.lines)  # windows may reach past the last line
        for bid, (first, size) in sorted(self._recent.items()):
            a, b = max(lo, first), min(hi, first + size - 1)
            if a <= b:
                try:
                    lines = self._window(bid, a - first, b - a + 1)
                except (OSError, EOFError):
                    return None
                out.update(zip(range(a, a + len(lines)), lines, strict=True))
        return out if len(out) == hi - lo + 1 else None

    def _window(self, bid: int, start: int, count: int) -> list[str]:
        self.ctl.send(("window", bid, start, count))
        lines: list[str] = self.ctl.recv()
        return lines

    def _finish(self, stats: dict[str, Any], marks: list[tuple[int, int]]) -> None:
        for key, value in stats.items():
            setattr(self.source.stats, key, value)
        self.source._marks = [tuple(m) for m in marks]  # type: ignore[misc]

    def close(self) -> None:
        """Stop the child (it may still be reading when the parent gives up)."""
        if self.source._recent == self.recent_lines:
            self.source._recent = None
        for conn in (self.data, self.ctl):
            conn.close()
        if self.proc.poll() is None:
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


_PRESTARTED: dict[tuple[str, tuple[str, ...]], RemoteBatches] = {}
# `loglens explain` options that take a value (the rest of argv is files and flags)
def prestart(argv: Sequence[str]) -> None:
    """Start the producer for `loglens explain FILE ...` before the CLI has parsed anything:
    argument parsing and imports are ~0.3 s of a run that the child can already spend
    reading. A best guess from argv (`split.explain_target`); `take` hands it over only for
    the same file and rules, and an unused one is stopped at exit."""
    target = explain_target(argv)
    if target is None:
        return
    source, rules = target
    try:
        remote = RemoteBatches(source, list(rules))
    except OSError:
        return
    assert source.path is not None  # explain_target names a regular file
    _PRESTARTED[(str(source.path.resolve()), tuple(rules))] = remote
    atexit.register(remote.close)


def take(source: Source, rules: Sequence[str]) -> RemoteBatches | None:
    """A prestarted producer for this source and rules, now reporting to `source`."""
    if source.path is None:
        return None
    remote = _PRESTARTED.pop((str(source.path.resolve()), tuple(rules)), None)
    if remote is not None:
        remote.source = source
    return remote


def release(source: Source) -> None:
    """Stop a producer kept alive for `source`'s excerpts."""
    recent = source._recent
    owner = getattr(recent, "__self__", None)
    if isinstance(owner, RemoteBatches):
        owner.close()


def _serve(ctl: Connection, kept: dict[int, Any], slots: threading.Semaphore) -> None:
    """The child's control loop: windows of unselected lines, and batches the parent is done
    with (their lines are dropped, and reading may go on)."""
    while True:
        try:
            msg = ctl.recv()
        except (EOFError, OSError):
            os._exit(0)  # the parent is gone: nothing left to do
        if msg[0] == "window":
            _, bid, start, count = msg
            ctl.send(kept[bid].slice(start, count).to_list())
        elif msg[0] == "done":  # the last few stay: excerpts of a gzip file come from them
            kept.pop(msg[1] - KEEP_DONE, None)
            slots.release()


def main(argv: Sequence[str]) -> int:
    """Entry point of the child process."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    path, name, rules, data_fd, ctl_fd = argv
    data, ctl = Connection(int(data_fd)), Connection(int(ctl_fd))
    from analyzer.scan import prefilter  # after the sockets: imports take the longest

    kept: dict[int, Any] = {}
    slots = threading.Semaphore(AHEAD)
    threading.Thread(target=_serve, args=(ctl, kept, slots), daemon=True).start()
    source = Source(name, Path(path))
    try:
        batches = source.series_batches()
        with ThreadPoolExecutor(1) as early:  # the first batch is read while knowledge loads
            head = early.submit(next, batches, None)
            pats = prefilter.cached_patterns(json.loads(rules))
            first = head.result()
        if pats is None:
            raise RuntimeError("this knowledge cannot be prefiltered")
        todo = chain([first] if first is not None else [], batches)
        for bid, batch in enumerate(prefilter.classified(todo, pats)):
            slots.acquire()
            kept[bid] = batch.lines
            data.send(("batch", bid, batch.first, batch.size, batch.full, batch.alive,
                       batch.texts, batch.edges, batch.literals))
        data.send(("end", asdict(source.stats), source._marks))
    except (BrokenPipeError, ConnectionResetError):
        return 0
    except InputError as exc:
        data.send(("input_error", str(exc)))
    except Exception as exc:  # reported by the parent as an internal error
        data.send(("error", f"{type(exc).__name__}: {exc}"))
    threading.Event().wait()  # serve windows until the parent hangs up (_serve exits then)
    return 0


if __name__ == "__main__":
    os._exit(main(sys.argv[1:]))
