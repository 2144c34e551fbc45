"""Follow a log file like `tail -F`, for `loglens watch`.

A server's log is a moving target: it may not exist yet when we start, it may be truncated
(`> server.log` on relaunch, logrotate's copytruncate) or replaced (a new inode at the same path),
and tqdm writes `\\r` refreshes without a newline, so the last "line" of a loading model can stay
unterminated for minutes. The follower is poll-based and stdlib-only (no inotify: it must work on
NFS and inside containers), never raises on bad bytes, and numbers lines from 1 in each file
generation so the numbers match what `explain` would print for the same file.

`poll()` is non-blocking and returns what arrived since the last call: `SourceLine`s and
`Notice`s (file appeared, rotated, truncated, vanished). A partial line is held until its newline,
except that after `flush_after` seconds without new bytes it is released provisionally (so a
final unterminated progress bar or an error printed without a newline is seen). When the same
line later grows or ends, it is released again with the *same* line number: consumers treat the
later copy as superseding the earlier one.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from analyzer.model import SourceLine
from analyzer.sources.source import shrink_holes, without_holes

POLL_INTERVAL = 0.1  # seconds between polls when iterating
FLUSH_AFTER = 0.5  # a partial line this long without new bytes is released provisionally
READ_BYTES = 1 << 20  # one read() call
MAX_POLL_BYTES = 64 << 20  # per poll, so a huge backlog does not starve the caller
MAX_LINE_BYTES = 4_000_000  # longer lines are cut (like sources.MAX_LINE_CHARS)
HEAD_BYTES = 256  # remembered to notice a truncate-and-refill between polls
CR_KEEP = 3  # a `\r`-refreshed line keeps its head and its last few states only


@dataclass(frozen=True, slots=True)
class Notice:
    """Something happened to the file itself rather than to its content."""

    kind: str  # waiting | opened | missing | rotated | truncated
    detail: str = ""


Item = SourceLine | Notice


def _decode(raw: bytes, name: str, lineno: int, cut: bool) -> SourceLine:
    """Decode one line; invalid UTF-8 and NUL bytes are replaced and flagged, never raised."""
    if raw.endswith(b"\r") and not cut:
        raw = raw[:-1]  # the CR of a CRLF ending
    filled = without_holes(raw)
    replaced = filled is not raw
    raw = filled
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", errors="replace")
        replaced = True
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
        replaced = True
    return SourceLine(lineno, text, name, truncated=cut, replaced=replaced)


def compact_refreshes(buf: bytes, keep: int = CR_KEEP) -> bytes:
    """Drop old `\\r` states of a progress line: the head and the last `keep` states survive.

    tqdm rewrites one line many times; a 30-minute load would otherwise grow one line to MBs.
    """
    if buf.count(b"\r") <= keep + 1:
        return buf
    head, _, rest = buf.partition(b"\r")
    states = rest.split(b"\r")
    return head + b"\r" + b"\r".join(states[-keep:])


class Follower:
    """Poll a path for new lines across creation, truncation and rotation."""

    def __init__(self, path: str | os.PathLike[str], *, name: str | None = None,
                 flush_after: float = FLUSH_AFTER, interval: float = POLL_INTERVAL) -> None:
        self.path = Path(path)
        self.name = name if name is not None else str(path)
        self.flush_after = flush_after
        self.interval = interval
        self.lineno = 0  # complete lines released in the current file generation
        self.generation = 0  # bumped on rotation/truncation; line numbers restart
        self.last_data = time.monotonic()  # when bytes last arrived (or the follower started)
        self.initial_size = 0  # bytes present when the file was first opened (the backlog)
        self._file: BinaryIO | None = None
        self._ident: tuple[int, int] | None = None
        self._pos = 0
        self._partial = b""
        self._partial_cut = False
        self._partial_released = False  # the held partial was released provisionally
        self._announced_waiting = False
        self._announced_missing = False
        self._head = b""  # the file's first bytes: a rewrite (truncate + refill) changes them
        self._last_problem: str | None = None
        self._last_size = -1
        self._stream = False  # a FIFO or device: read without blocking, no size to compare

    # -- public ----------------------------------------------------------------------------
    @property
    def is_open(self) -> bool:
        return self._file is not None

    @property
    def in_backlog(self) -> bool:
        """Still reading what was in the file before we started (not live output)."""
        return self.generation == 0 and self._pos < self.initial_size

    @property
    def partial(self) -> str:
        """The unterminated line being written now (e.g. a tqdm bar), for live display."""
        return self._partial.decode("utf-8", errors="replace") if self._partial else ""

    def poll(self) -> list[Item]:
        """Everything that arrived since the last call; never blocks, never raises on I/O."""
        out: list[Item] = []
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            st = None
        except OSError as exc:  # permission or a transient NFS error: try again next poll
            self._problem(out, f"cannot stat: {exc.strerror or exc}")
            return out
        if self._file is None:
            if st is None:
                if not self._announced_waiting:
                    self._announced_waiting = True
                    out.append(Notice("waiting", "the file does not exist yet"))
                return out
            if not self._open(out):
                return out
            out.append(Notice("opened", f"{self.initial_size} bytes already written"
                              if self.generation == 0 else "the file appeared"))
        elif st is None:
            self._read(out)  # the writer may still be appending to the unlinked/renamed file
            if not self._announced_missing:
                self._announced_missing = True
                out.append(Notice("missing", "the file was removed or renamed; waiting for it"))
            self._maybe_release_partial(out)
            return out
        elif (st.st_dev, st.st_ino) != self._ident:
            self._read(out)  # drain the old generation first
            self._release_partial(out, final=True)
            self._close()
            self._new_generation()
            out.append(Notice("rotated", "a new file replaced the old one; line numbers restart"))
            if not self._open(out):
                return out
        elif not self._stream and (st.st_size < self._pos or self._rewritten(st.st_size)):
            self._release_partial(out, final=True)
            self._new_generation()
            self._pos = 0
            self._head = b""
            assert self._file is not None
            self._file.seek(0)
            out.append(Notice("truncated", "the file was truncated; line numbers restart"))
        self._read(out)
        self._maybe_release_partial(out)
        return out

    def __iter__(self) -> Iterator[Item]:
        """Follow forever (like `tail -F`), sleeping `interval` between polls."""
        while True:
            yield from self.poll()
            time.sleep(self.interval)

    def close(self) -> None:
        """Release the file handle."""
        self._close()

    # -- internals ---------------------------------------------------------------------------
    def _open(self, out: list[Item]) -> bool:
        """Open the file; a FIFO or device is opened non-blocking, so that a FIFO with no
        writer yet, or one that writes nothing, never stops the poll loop (and --timeout)."""
        try:
            self._stream = not stat.S_ISREG(os.stat(self.path).st_mode)
            if self._stream:
                fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
                self._file = os.fdopen(fd, "rb", buffering=0)
            else:
                self._file = open(self.path, "rb")  # noqa: SIM115 - held across polls, closed in close()
        except OSError as exc:
            self._problem(out, f"cannot open: {exc.strerror or exc}")
            return False
        self._last_problem = None
        fst = os.fstat(self._file.fileno())  # the inode we actually opened
        self._ident = (fst.st_dev, fst.st_ino)
        self._pos = 0
        self._announced_missing = False
        self._head = b""
        self._last_size = -1
        if self.generation == 0:
            self.initial_size = fst.st_size if not self._stream else 0
        return True

    def _problem(self, out: list[Item], detail: str) -> None:
        """Report an I/O problem once, not on every poll while it lasts."""
        if detail != self._last_problem:
            self._last_problem = detail
            out.append(Notice("missing", detail))

    def _rewritten(self, size: int) -> bool:
        """Truncated and refilled past our position between two polls: the first bytes differ."""
        if not self._head or size == self._last_size or self._file is None:
            return False
        self._last_size = size
        try:
            now = os.pread(self._file.fileno(), len(self._head), 0)
        except OSError:
            return False
        return now != self._head

    def _close(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            finally:
                self._file = None
                self._ident = None

    def _new_generation(self) -> None:
        self.generation += 1
        self.lineno = 0
        self._partial = b""
        self._partial_cut = False
        self._partial_released = False

    def _read(self, out: list[Item]) -> None:
        if self._file is None:
            return
        total = 0
        while total < MAX_POLL_BYTES:
            try:
                chunk = self._file.read(READ_BYTES)
            except OSError as exc:
                self._problem(out, f"read error: {exc.strerror or exc}")
                return
            if not chunk:  # EOF, or (None) a stream with nothing to read now
                return
            total += len(chunk)
            if len(self._head) < HEAD_BYTES and self._pos == len(self._head):
                self._head += chunk[:HEAD_BYTES - len(self._head)]
            self._pos += len(chunk)
            self.last_data = time.monotonic()
            self._split(chunk, out)

    def _split(self, chunk: bytes, out: list[Item]) -> None:
        pieces = chunk.split(b"\n")
        tail = pieces.pop()
        for piece in pieces:
            raw, cut = self._join(piece)
            self.lineno += 1
            out.append(_decode(raw, self.name, self.lineno, cut))
            self._partial, self._partial_cut, self._partial_released = b"", False, False
        if tail:
            raw, cut = self._join(tail)
            self._partial, self._partial_cut = raw, cut
            self._partial_released = False  # it grew: release the longer text when quiet again

    def _join(self, piece: bytes) -> tuple[bytes, bool]:
        """The held partial plus `piece`, with old `\\r` states dropped and the length capped."""
        raw = self._partial + piece if self._partial else piece
        if b"\r" in piece:
            raw = compact_refreshes(raw)
        if b"\x00" in piece:
            raw = shrink_holes(raw)  # a hole spanning polls is no length (the cap below)
        cut = self._partial_cut
        if len(raw) > MAX_LINE_BYTES:
            raw, cut = raw[:MAX_LINE_BYTES], True
        return raw, cut

    def _maybe_release_partial(self, out: list[Item]) -> None:
        if self._partial and not self._partial_released \
                and time.monotonic() - self.last_data >= self.flush_after:
            self._release_partial(out, final=False)

    def _release_partial(self, out: list[Item], *, final: bool) -> None:
        """Release the held partial line; `final` when no more bytes can join it."""
        if not self._partial:
            return
        if final and self._partial_released:
            self._partial = b""
            return  # already seen as it is
        out.append(_decode(self._partial, self.name, self.lineno + 1, self._partial_cut))
        if final:
            self.lineno += 1
            self._partial, self._partial_cut = b"", False
        self._partial_released = not final
