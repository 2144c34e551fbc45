"""Stage 1: turn what the user names into a stream of decoded physical lines.

Logs of several GB are normal, and the ones worth investigating are often damaged: a
node died mid-write, a `.gz` was copied while still growing, a rank printed a binary
blob or a 50 MB line. So everything here streams in fixed-size binary chunks, never
raises on bad bytes, and reports damage as per-line flags, counts and one-line
warnings instead of tracebacks. Only input that is unusable as a whole (missing,
unreadable, empty, not text) becomes an `InputError`.
"""

from __future__ import annotations

import codecs
import contextlib
import gzip
import io
import os
import re
import stat
import sys
import tempfile
import zlib
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, cast

if TYPE_CHECKING:  # polars is imported where it is used: `explain` of a big file
    import polars as pl  # leaves it to a producer process and never needs it here

from analyzer.errors import InputError
from analyzer.model import SourceLine
from analyzer.sources.prefetch import prefetched

MAX_LINE_CHARS = 1_000_000  # longer lines are cut to this many chars; truncated=True
GZIP_RATIO = 10  # text logs deflate about this much (NCCL INFO floods more, tracebacks less)
CHUNK_BYTES = 1 << 20  # read size: big enough to amortise syscalls, small enough to bound memory
SERIES_BYTES = 16 << 20  # the fast path's batch: polars splits and classifies this much at once
SNIFF_BYTES = 64 * 1024  # how much of the (decompressed) start decides "is this text?"
BINARY_SHARE = 0.30  # above this share of binary bytes in the sniff, the input is not a log

# A UTF-8 character is at most 4 bytes, so a line of more bytes than this certainly has more
# than MAX_LINE_CHARS characters: keep this many bytes of a long line and drop the rest.
_KEEP_BYTES = 4 * MAX_LINE_CHARS
_GZIP_MAGIC = b"\x1f\x8b"
# Control bytes that do not occur in text logs. Allowed: \t \n \r, ESC (ANSI colours),
# \f and \b (some progress bars and pagers emit them).
_CONTROL_BYTES = bytes(sorted((set(range(0x20)) - {0x09, 0x0A, 0x0D, 0x1B, 0x0C, 0x08}) | {0x7F}))
# With errors="surrogateescape" each invalid UTF-8 byte decodes to one lone surrogate.
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")
# A run of NUL bytes is a hole: a file truncated (a new launch's `> log`) while another
# process still wrote at its old offset reads as NULs up to where that writer went on. The
# hole is no text; the line after it is (a b30 vLLM log: 1.1 MB of NULs before the old
# server's last two lines). Shorter runs are replaced, as any stray control byte.
HOLE_BYTES = 8
_HOLE = re.compile(b"\x00{%d,}" % HOLE_BYTES)
_HOLE_START = b"\x00" * HOLE_BYTES


def without_holes(raw: bytes) -> bytes:
    """`raw` with its NUL holes removed (the same object when it has none)."""
    return _HOLE.sub(b"", raw) if _HOLE_START in raw else raw


def shrink_holes(raw: bytes) -> bytes:
    """`raw` with each hole cut to HOLE_BYTES NULs: still a hole, but no longer a length."""
    return _HOLE.sub(_HOLE_START, raw) if _HOLE_START in raw else raw


def _fill(pending: bytearray, piece: bytes) -> bytes:
    """`piece` with each hole shrunk to HOLE_BYTES NULs, one begun at the end of `pending` too.

    A hole can span many read chunks; shrunk chunk by chunk, it never counts against the
    line-length cap of the line it sits in, and the line still reaches `_line`, which drops
    the rest and counts the line as replaced. The last NULs of `pending` are moved into the
    result so a hole split across two chunks is still seen whole.
    """
    keep = len(pending.rstrip(b"\x00"))
    joined = bytes(pending[keep:]) + piece
    del pending[keep:]
    return shrink_holes(joined)


# Formats we recognise only to give a better message than "binary".
_DECOMPRESS_FIRST = "decompress it first (loglens reads plain text and gzip)"
_OTHER_FORMATS = (
    (b"BZh", f"bzip2-compressed; {_DECOMPRESS_FIRST}"),
    (b"\xfd7zXZ\x00", f"xz-compressed; {_DECOMPRESS_FIRST}"),
    (b"\x28\xb5\x2f\xfd", f"zstd-compressed; {_DECOMPRESS_FIRST}"),
    (b"PK\x03\x04", "a zip archive; extract it first"),
)
_NATURAL = re.compile(r"(\d+)")


@dataclass
class SourceStats:
    """What reading one input found; complete once `Source.lines()` is exhausted.

    Damage is counted rather than raised so that a report can say how much of the
    input it actually saw.
    """

    name: str
    lines: int = 0
    bytes: int = 0  # bytes of log text read (after gunzip), terminators included
    replaced_lines: int = 0  # lines with invalid UTF-8 / NUL replaced
    truncated_lines: int = 0
    warnings: list[str] = field(default_factory=list)


class Source:
    """One input (a file, a gzip file, a FIFO, or stdin), read lazily as lines.

    Nothing is read until `lines()` is iterated, so many sources can be opened up front
    without holding file descriptors or memory.
    """

    def __init__(self, name: str, path: Path | None) -> None:
        """`path` None means stdin; `name` is what messages and reports show."""
        self.name = name
        self.path = path
        self.stats = SourceStats(name)
        self.notes: list[str] = []  # what opening it said (files a directory left out): kept
        # across reads, unlike the stats' warnings
        self._gzipped = False  # set once the magic bytes have been read
        self._transcoded = False  # UTF-16 with a BOM, read as UTF-8
        self._cr_lines = False  # set by the sniff: lines end in a bare CR (no LF at all)
        self._spool: _Spool | None = None  # a stream (pipe, FIFO, stdin), kept for re-reads
        # (first line number, byte offset) of each batch of a plain file: excerpts seek there
        self._marks: list[tuple[int, int]] = []
        # where the last lines are still at hand (a producer process): lo, hi -> lines or None
        self._recent: Callable[[int, int], dict[int, str] | None] | None = None

    def __repr__(self) -> str:
        return f"Source({self.name!r})"

    def lines(self) -> Iterator[SourceLine]:
        """Yield every physical line, decoded; stats and warnings are final at exhaustion.

        Raises `InputError` (at the first `next()`) if the input cannot be opened, is
        empty, or does not look like text. Damage found later (a truncated gzip, a read
        error) ends the stream early with a warning instead: what was read is still
        worth analysing.
        """
        stats = self.stats
        stats.lines = stats.bytes = stats.replaced_lines = stats.truncated_lines = 0
        stats.warnings.clear()
        problems: list[str] = []
        with self._open() as stream:
            yield from self._split(self._text_chunks(stream, problems))
        for problem in problems:
            count = f"{stats.lines} line{'' if stats.lines == 1 else 's'}"
            stats.warnings.append(f"{problem} after {count}; analysed what was readable")

    def series_batches(self, min_bytes: int = SERIES_BYTES) -> Iterator[tuple[int, pl.Series]]:
        """Yield (first line number, lines as a polars Series) per ~`min_bytes` of input.

        The fast path's reader: a clean run of lines (valid UTF-8, no NUL, no line over
        MAX_LINE_CHARS) is split by polars' multi-threaded CSV reader and never becomes one
        Python object per line; anything else goes through `_decode_body`, so the lines are
        exactly those of `lines()`.
        """
        import polars as pl

        stats = self.stats
        stats.lines = stats.bytes = stats.replaced_lines = stats.truncated_lines = 0
        stats.warnings.clear()
        self._marks = []
        problems: list[str] = []
        lineno = 0
        buf: bytes | bytearray = b""
        with self._open() as stream:
            chunks = self._text_chunks(stream, problems)
            if (not self._gzipped and not self._transcoded and not self._cr_lines
                    and _seekable(stream)):
                stream.seek(0)
                chunks = iter(())
                buf = yield from self._file_batches(stream, min_bytes, problems)
                lineno = stats.lines
            parts: list[bytes] = [bytes(buf)] if buf else []
            size = len(buf)
            # gunzip (and pipe reads) in a thread of their own: zlib releases the GIL, so
            # decompression overlaps the split and classification of the batch before
            for chunk in prefetched(chunks, 8, "loglens-inflate"):
                stats.bytes += len(chunk)
                parts.append(chunk)
                size += len(chunk)
                if size < min_bytes or b"\n" not in chunk:  # a long line is only collected
                    continue
                buf = b"".join(parts)
                cut = buf.rfind(b"\n") + 1
                series = self._series(buf, cut)
                parts = [buf[cut:]]
                size = len(parts[0])
                yield lineno + 1, series
                lineno += len(series)
                stats.lines = lineno
            buf = b"".join(parts)
        cut = buf.rfind(b"\n") + 1
        if cut:
            series = self._series(buf, cut)
            buf = buf[cut:]
            yield lineno + 1, series
            lineno += len(series)
            stats.lines = lineno
        if buf:
            # a final line without LF keeps a trailing CR: it is a tqdm refresh, not CRLF
            last = self._line(lineno + 1, bytes(buf), cut=False)
            lineno += 1
            stats.lines = lineno
            yield lineno, pl.Series("text", [last.text], dtype=pl.String)
        for problem in problems:
            count = f"{stats.lines} line{'' if stats.lines == 1 else 's'}"
            stats.warnings.append(f"{problem} after {count}; analysed what was readable")

    def _file_batches(self, stream: BinaryIO, size: int, problems: list[str]
                      ) -> Generator[tuple[int, pl.Series], None, bytearray]:
        """`series_batches` for a regular file: read straight into one reused buffer (fresh
        multi-MB buffers cost page faults); returns the unfinished last line."""
        stats = self.stats
        buf = bytearray(size)
        keep = 0  # buf[:keep]: the start of a line whose end is not read yet
        offset = 0  # of buf[0] in the file
        while True:
            if keep == len(buf):  # a line longer than the buffer: grow
                buf.extend(bytes(len(buf)))
            try:
                with memoryview(buf) as view:
                    got = stream.readinto(view[keep:])  # type: ignore[attr-defined]
            except OSError as exc:
                problems.append(f"read error ({exc.strerror or exc})")
                got = 0
            if not got:
                return buf[:keep]
            stats.bytes += got
            end = keep + got
            cut = buf.rfind(b"\n", keep, end) + 1
            if not cut:
                keep = end
                continue
            series = self._series(buf, cut)
            self._marks.append((stats.lines + 1, offset))
            yield stats.lines + 1, series
            stats.lines += len(series)
            buf[:end - cut] = buf[cut:end]
            keep = end - cut
            offset += cut

    def _series(self, buf: bytes | bytearray, end: int) -> pl.Series:
        """The complete lines buf[:end] (each ending in LF) as a Series; see `series_batches`.

        polars' split is checked, not trusted: the line lengths must add up to the bytes.
        """
        import polars as pl

        if buf.find(b"\x00", 0, end) < 0:  # NULs are replaced and counted: the careful path
            with memoryview(buf) as view:
                data = io.BytesIO(view[:end])
            try:
                frame = pl.read_csv(data, has_header=False, separator="\x1f", quote_char=None,
                                    comment_prefix=None, new_columns=["text"],
                                    schema={"text": pl.String}, encoding="utf8",
                                    truncate_ragged_lines=True, low_memory=False)
            except pl.exceptions.PolarsError:  # invalid UTF-8: the careful path counts it
                frame = None
            if frame is not None:
                series = frame.get_column("text").fill_null("")
                sizes = series.str.len_bytes()
                longest, total = sizes.max(), sizes.sum()
                if isinstance(total, int) and total + len(series) != end:
                    total += buf.count(b"\r\n", 0, end)  # CRLF: polars dropped the CR
                # a line holding the separator (\x1f) was cut short: the sum tells
                if (isinstance(longest, int) and longest <= MAX_LINE_CHARS
                        and total + len(series) == end):
                    return series
        return pl.Series("text", self._decode_body(bytes(buf[:end - 1])), dtype=pl.String)

    def line_range(self, lo: int, hi: int) -> dict[int, str]:
        """Lines lo..hi (1-based, inclusive), decoded as `lines()` would give them.

        For excerpts after the analysis: chunks before `lo` are only counted (bytes.count),
        never decoded or split, and reading stops after `hi`. Stats are left alone.
        """
        out: dict[int, str] = {}
        if hi < lo:
            return out
        if self._recent is not None:
            recent = self._recent(lo, hi)
            if recent is not None:
                return recent
        problems: list[str] = []
        lineno = 1  # number of the line that starts at the beginning of `carry`
        carry = b""
        with self._open() as stream:
            start = max((m for m in self._marks if m[0] <= lo), default=None)
            if start is not None:  # a plain file read before: seek to the batch that has lo
                lineno, offset = start
                stream.seek(offset)
                chunks: Iterable[bytes] = _read_chunks(_reader(stream), problems)
            else:
                chunks = self._text_chunks(stream, problems)
            for chunk in chunks:
                data = carry + chunk if carry else chunk
                cut = data.rfind(b"\n")
                if cut < 0:
                    carry = data[:_KEEP_BYTES]
                    continue
                body, carry = data[:cut], data[cut + 1:]
                count = body.count(b"\n") + 1
                if lineno + count - 1 >= lo:
                    for i, raw in enumerate(body.split(b"\n")):
                        if lo <= lineno + i <= hi:
                            out[lineno + i] = _excerpt_text(raw)
                lineno += count
                if lineno > hi:
                    return out
        if carry and lo <= lineno <= hi:
            out[lineno] = _excerpt_text(carry)
        return out

    def _decode_body(self, body: bytes) -> list[str]:
        """Lines of a run of complete lines (LF-separated, no final LF)."""
        if b"\x00" not in body:
            try:
                text = body.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            if text is not None:
                lines = text.split("\n")
                if "\r" in text:  # only the CR of a CRLF ending goes
                    lines = [t[:-1] if t.endswith("\r") else t for t in lines]
                if len(text) > MAX_LINE_CHARS and max(map(len, lines)) > MAX_LINE_CHARS:
                    for i, t in enumerate(lines):
                        if len(t) > MAX_LINE_CHARS:
                            lines[i] = t[:MAX_LINE_CHARS]
                            self.stats.truncated_lines += 1
                return lines
        out = []
        for raw in body.split(b"\n"):
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            out.append(self._line(0, raw, cut=False).text)
        return out

    def size_hint(self) -> int | None:
        """About how many bytes of text the input holds, where that is known without reading
        it: a regular file's size (a gzip file's times GZIP_RATIO), a stream's once it has
        been read to its end (a paste on stdin, read whole by the sniff). None: unknown."""
        if self._spool is not None:
            return self._spool.size if self._spool.ended else None
        if self.path is None:
            return None
        try:
            if not self.path.is_file():
                return None
            size = self.path.stat().st_size
        except OSError:
            return None
        gz = self._gzipped or self.path.suffix in (".gz", ".tgz")
        return size * GZIP_RATIO if gz else size

    def mtime_year(self) -> int | None:
        """The year the file was last written: completes timestamps that carry no year."""
        if self.path is None:
            return None
        try:
            return datetime.fromtimestamp(self.path.stat().st_mtime).year
        except (OSError, ValueError, OverflowError):
            return None

    def probe(self) -> None:
        """Open and sniff the input now, so that a bad file fails before any analysis.

        Only for regular files: probing a FIFO or stdin would consume what it sniffs.
        """
        problems: list[str] = []
        with self._open() as stream:
            self._text_chunks(stream, problems)

    # -- internals -----------------------------------------------------------------

    @contextlib.contextmanager
    def _open(self) -> Iterator[BinaryIO]:
        """Open read-only (the user's files are never modified); stdin is left open.

        A stream (stdin, a pipe, a FIFO, `<(...)`) can be read only once, but the year and
        prefix sniff, the analysis and the excerpts each read from the start: the first
        open tees it into an anonymous temporary file, and every read replays that copy
        before it reads on, so no line is lost and a FIFO is opened once.
        """
        if self._spool is not None:
            yield self._spool.reader()
            return
        if self.path is None:
            if sys.stdin is None:
                raise InputError("stdin ('-') is not available")
            self._spool = _Spool(self.name, sys.stdin.buffer)
            yield self._spool.reader()
            return
        try:
            stream = open(self.path, "rb")  # noqa: SIM115 - closed below, after the yield
        except OSError as exc:
            raise _os_error(self.name, exc) from None
        if not _seekable(stream):
            self._spool = _Spool(self.name, stream)
            yield self._spool.reader()
            return
        with stream:
            yield stream

    def close(self) -> None:
        """Let go of a stream's copy (regular files hold nothing between reads)."""
        if self._spool is not None:
            self._spool.close()
            self._spool = None

    def _text_chunks(self, stream: BinaryIO, problems: list[str]) -> Iterator[bytes]:
        """The input's text as chunks, refused by `_sniff` if it is empty or not text.

        Old Mac tools and some serial consoles end lines with a bare CR: when the sniffed
        start holds CRs but no LF at all, each CR ends a line (elsewhere an inner CR is a
        progress-bar redraw, which the framing stage splits).
        """
        chunks = self._chunks(stream, problems)
        head = self._sniff(chunks, problems)
        sample = b"".join(head)
        self._cr_lines = b"\n" not in sample and sample.count(b"\r") >= 2
        if not self._cr_lines:
            return chain(head, chunks)
        return (chunk.replace(b"\r", b"\n") for chunk in chain(head, chunks))

    def _chunks(self, stream: BinaryIO, problems: list[str]) -> Iterator[bytes]:
        """Raw or gunzipped chunks; a read/gzip failure ends the stream and is recorded.

        Gzip is detected by its magic bytes, not the extension: rotated logs are often
        renamed, and stdin has no name at all.
        """
        try:
            magic = stream.read(2)
        except OSError as exc:
            raise InputError(f"cannot read {self.name}: {exc.strerror or exc}") from None
        self._gzipped = magic == _GZIP_MAGIC
        self._transcoded = magic in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
        if self._transcoded:  # Windows tools (PowerShell's `>`) write UTF-16 with a BOM
            decoder = codecs.getincrementaldecoder("utf-16")(errors="replace")
            decoder.decode(magic)
            for chunk in _read_chunks(_reader(stream), problems):
                yield decoder.decode(chunk).encode("utf-8", "surrogateescape")
            tail = decoder.decode(b"", final=True)
            if tail:
                yield tail.encode("utf-8", "surrogateescape")
            return
        if not self._gzipped:
            if magic:
                yield magic
            yield from _read_chunks(_reader(stream), problems)
            return
        # read1() returns as soon as one decompression step produced output, so data
        # before a truncation or corruption point is delivered before the error.
        gz = gzip.GzipFile(fileobj=_Replay(magic, stream), mode="rb")
        yield from _read_chunks(gz.read1, problems, gzipped=True)

    def _sniff(self, chunks: Iterator[bytes], problems: list[str]) -> list[bytes]:
        """Read the first SNIFF_BYTES and refuse empty or binary input.

        Returns the chunks it consumed so the caller can replay them: stdin and FIFOs
        cannot be rewound.
        """
        head: list[bytes] = []
        size = 0
        for chunk in chunks:
            head.append(chunk)
            size += len(chunk)
            if size >= SNIFF_BYTES:
                break
        if size == 0:
            if problems:
                raise InputError(f"{self.name}: {problems[0]} before any log text")
            after = " after gunzip" if self._gzipped else ""
            raise InputError(f"{self.name} is empty (0 bytes{after})")
        sample = without_holes(b"".join(head)[:SNIFF_BYTES])
        if not sample and size < SNIFF_BYTES:
            raise InputError(f"{self.name} holds only NUL bytes ({size} bytes): no log text")
        share = _binary_share(sample)
        if share > BINARY_SHARE:
            for magic, what in _OTHER_FORMATS:
                if sample.startswith(magic):
                    raise InputError(f"{self.name} is {what}")
            if sample[257:262] == b"ustar":
                raise InputError(f"{self.name} is a tar archive; extract it first")
            raise InputError(
                f"{self.name} does not look like a text log "
                f"({share:.0%} of the first 64 KiB is binary)"
            )
        return head

    def _split(self, chunks: Iterable[bytes]) -> Iterator[SourceLine]:
        """Split chunks on b"\\n" with bounded memory.

        A chunk (1 MiB) is smaller than _KEEP_BYTES, so lines wholly inside one chunk
        never need a byte-length check; only the line carried across chunks (`pending`)
        is capped, and once over the cap the rest of it is discarded up to its newline.
        The loop is inlined for clean lines because it runs once per line of GBs of logs.
        """
        stats = self.stats
        name = self.name
        pending = bytearray()
        dropping = False  # pending went over _KEEP_BYTES: skip bytes until the next newline
        lineno = 0
        for chunk in chunks:
            stats.bytes += len(chunk)
            pieces = chunk.split(b"\n")
            tail = pieces.pop()
            if pieces:
                if pending or dropping:
                    first, cut = pieces[0], dropping
                    if dropping:
                        first = bytes(pending)
                    else:
                        if b"\x00" in first:
                            first = _fill(pending, first)
                        room = _KEEP_BYTES - len(pending)
                        if len(first) > room:
                            first, cut = first[:room], True
                        first = bytes(pending + first)
                    if cut:
                        lineno += 1
                        yield self._line(lineno, first, cut=True)
                        del pieces[0]
                    else:
                        pieces[0] = first
                    pending = bytearray()
                    dropping = False
                for raw in pieces:
                    lineno += 1
                    if raw.endswith(b"\r"):  # only the CR of a CRLF ending
                        raw = raw[:-1]
                    if b"\x00" not in raw:
                        try:
                            text = raw.decode("utf-8")
                        except UnicodeDecodeError:
                            pass
                        else:
                            if len(text) <= MAX_LINE_CHARS:
                                yield SourceLine(lineno, text, name)
                                continue
                    yield self._line(lineno, raw, cut=False)
                stats.lines = lineno
            if tail and not dropping:
                if b"\x00" in tail:
                    tail = _fill(pending, tail)
                room = _KEEP_BYTES - len(pending)
                if len(tail) > room:
                    pending += tail[:room]
                    dropping = True
                else:
                    pending += tail
        if pending or dropping:
            # A final line without LF keeps a trailing CR: it is a tqdm refresh, not CRLF.
            lineno += 1
            yield self._line(lineno, bytes(pending), cut=dropping)
        stats.lines = lineno

    def _line(self, lineno: int, raw: bytes, *, cut: bool) -> SourceLine:
        """Decode one damaged, long or cut line (the slow path) and count its damage.

        Inner CRs are kept: they are tqdm refreshes that the framing stage splits.
        """
        filled = without_holes(raw)
        text, replaced = _decode(filled, complete=not cut)
        replaced = replaced or filled is not raw
        if "\x00" in text:
            text = text.replace("\x00", "\ufffd")
            replaced = True
        if len(text) > MAX_LINE_CHARS:
            text = text[:MAX_LINE_CHARS]
            cut = True
        stats = self.stats
        if replaced:
            stats.replaced_lines += 1
        if cut:
            stats.truncated_lines += 1
        return SourceLine(lineno, text, self.name, truncated=cut, replaced=replaced)


class _Spool:
    """A stream read once and kept in an unlinked temporary file for every later read.

    Readers are sequential (one at a time): each replays what was copied so far and then
    reads on from the stream, copying as it goes. The copy is on disk, not in memory, and
    disappears with the process whatever happens.
    """

    def __init__(self, name: str, stream: BinaryIO) -> None:
        self.name = name
        self.stream = stream
        self.copy = tempfile.TemporaryFile(prefix="loglens-stream-")  # noqa: SIM115
        self.size = 0
        self.ended = False

    def reader(self) -> BinaryIO:
        return cast(BinaryIO, _SpoolReader(self))

    def read_at(self, pos: int, size: int) -> bytes:
        """Up to `size` bytes at `pos`: from the copy, else fresh from the stream."""
        if size < 0:
            size = CHUNK_BYTES
        if pos < self.size:
            self.copy.seek(pos)
            return self.copy.read(min(size, self.size - pos))
        if self.ended:
            return b""
        data = _reader(self.stream)(size)
        if not data:
            self.ended = True
            return b""
        try:
            self.copy.seek(self.size)
            self.copy.write(data)
        except OSError as exc:
            raise InputError(f"cannot keep a copy of {self.name} to read it again: "
                             f"{exc.strerror or exc}") from None
        self.size += len(data)
        return data

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.copy.close()
        if self.stream is not getattr(sys.stdin, "buffer", None):
            with contextlib.suppress(OSError):
                self.stream.close()


class _SpoolReader(io.RawIOBase):
    """One sequential read of a `_Spool` from its start (not seekable: a stream)."""

    def __init__(self, spool: _Spool) -> None:
        super().__init__()
        self._spool = spool
        self._pos = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        data = self._spool.read_at(self._pos, -1 if size is None else size)
        self._pos += len(data)
        return data

    read1 = read

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


class _Replay:
    """A read-only stream that replays bytes already consumed (the magic-byte sniff).

    Needed because stdin and FIFOs cannot seek back to hand gzip the whole stream.
    """

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self._head = head
        self._rest = rest

    def read(self, size: int = -1) -> bytes:
        """Return the replayed bytes first, then read on (short reads are allowed)."""
        if not self._head:
            return self._rest.read(size)
        if size < 0:
            data, self._head = self._head + self._rest.read(), b""
            return data
        data, self._head = self._head[:size], self._head[size:]
        return data

    def seek(self, offset: int, /) -> int:
        """Part of the file protocol gzip expects; only used to rewind, which we never do."""
        raise io.UnsupportedOperation("seek")


def _seekable(stream: BinaryIO) -> bool:
    try:
        return stream.seekable() and stat.S_ISREG(os.fstat(stream.fileno()).st_mode)
    except (OSError, ValueError, io.UnsupportedOperation):
        return False


def _reader(stream: BinaryIO) -> Callable[[int], bytes]:
    """Prefer read1: on a pipe it returns what is available instead of waiting for 1 MiB."""
    read1 = getattr(stream, "read1", None)
    if callable(read1):
        return cast(Callable[[int], bytes], read1)
    return stream.read


def _read_chunks(
    read: Callable[[int], bytes], problems: list[str], *, gzipped: bool = False
) -> Iterator[bytes]:
    """Chunks until EOF; a read or decompression failure is recorded, not raised."""
    while True:
        try:
            data = read(CHUNK_BYTES)
        except EOFError:
            problems.append("gzip stream truncated")
            return
        except zlib.error as exc:
            problems.append(f"gzip stream corrupt ({exc})")
            return
        except OSError as exc:  # gzip.BadGzipFile is an OSError too
            what = "gzip stream corrupt" if gzipped else "read error"
            problems.append(f"{what} ({exc.strerror or exc})")
            return
        if not data:
            return
        yield data


def _excerpt_text(raw: bytes) -> str:
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    text, _ = _decode(without_holes(raw)[:_KEEP_BYTES], complete=True)
    return text.replace("\x00", "\ufffd")[:MAX_LINE_CHARS]


def _decode(raw: bytes, *, complete: bool) -> tuple[str, bool]:
    """UTF-8 with replacement; `complete` False means raw was cut mid-line.

    A cut can split a multi-byte character; the incremental decoder holds that partial
    character back instead of reporting it as invalid, so a cut is not a "replacement".
    """
    try:
        if complete:
            return raw.decode("utf-8"), False
        return codecs.getincrementaldecoder("utf-8")("strict").decode(raw, final=False), False
    except UnicodeDecodeError:
        if complete:
            return raw.decode("utf-8", errors="replace"), True
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        return decoder.decode(raw, final=False), True


def _binary_share(sample: bytes) -> float:
    """Share of bytes that no text log contains: stray control bytes and invalid UTF-8.

    Control bytes alone are only ~11% of random data, so invalid UTF-8 must count too;
    a few bad bytes in a real log stay far below the threshold.
    """
    if not sample:
        return 0.0
    control = len(sample) - len(sample.translate(None, _CONTROL_BYTES))
    text = codecs.getincrementaldecoder("utf-8")("surrogateescape").decode(sample, final=False)
    invalid = len(text) - len(_ESCAPED_BYTE.sub("", text))
    return (control + invalid) / len(sample)


def _os_error(name: str, exc: OSError) -> InputError:
    """One clear line for the OS errors a user can cause by naming a path."""
    if isinstance(exc, FileNotFoundError):
        broken = " (broken symlink)" if os.path.islink(name) else ""
        return InputError(f"no such file: {name}{broken}")
    if isinstance(exc, NotADirectoryError):
        return InputError(f"no such file: {name}")
    if isinstance(exc, PermissionError):
        return InputError(f"permission denied: {name}")
    if isinstance(exc, IsADirectoryError):
        return InputError(f"{name} is a directory")
    return InputError(f"cannot read {name}: {exc.strerror or exc}")


def _natural_key(parts: Sequence[str]) -> tuple[tuple[tuple[str | int, ...], str], ...]:
    """Sort rank2 before rank10: per-rank logs are numbered without zero padding."""
    return tuple(
        (
            tuple(int(t) if i % 2 else t.casefold() for i, t in enumerate(_NATURAL.split(p))),
            p,
        )
        for p in parts
    )


LOG_SUFFIXES = frozenset({".log", ".txt", ".out", ".err", ".stdout", ".stderr"})
_ROTATED = re.compile(r"\.\d+$")  # "server.log.1"


def log_like(filename: str) -> bool:
    """Whether a file in a directory looks like a log: *.log, *.txt, *.out, *.err (also
    gzipped or rotated: .log.gz, .log.1), or a name without an extension (`stdout`,
    `rank0`). A directory often holds the run's labels, configs and JSON too: reading those
    would merge unrelated text into the analysis."""
    name = filename.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    name = _ROTATED.sub("", name)
    suffix = Path(name).suffix
    return suffix in LOG_SUFFIXES or suffix == "" or not suffix[1:].isalpha()


def _expand_dir(root: Path, display: str, notes: list[str]) -> list[Source]:
    """Every readable regular text file under root, recursively, in natural name order.

    Hidden files and directories (.git, .ipynb_checkpoints, editor swap files) are
    skipped; so are FIFOs and devices, which could block forever, and files that are
    empty or binary, since one stray core dump should not abort a whole run.
    """
    found: list[tuple[tuple[str, ...], Path]] = []
    skipped: list[str] = []
    not_logs: list[str] = []

    def on_walk_error(exc: OSError) -> None:
        skipped.append(f"{exc.filename}: {exc.strerror or exc}")

    for dirpath, dirnames, filenames in os.walk(root, onerror=on_walk_error):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for filename in filenames:
            if filename.startswith("."):
                continue
            full = Path(dirpath, filename)
            if not log_like(filename):
                not_logs.append(os.path.join(display, *full.relative_to(root).parts))
                continue
            found.append((full.relative_to(root).parts, full))
    found.sort(key=lambda item: _natural_key(item[0]))

    sources: list[Source] = []
    for parts, full in found:
        name = os.path.join(display, *parts)
        try:
            mode = full.stat().st_mode
        except OSError as exc:
            skipped.append(str(_os_error(name, exc)))
            continue
        if not stat.S_ISREG(mode):
            skipped.append(f"{name} is not a regular file")
            continue
        source = Source(name, full)
        try:
            source.probe()
        except InputError as exc:
            skipped.append(str(exc))
            continue
        sources.append(source)
    notes.extend(f"skipped {s}" for s in skipped)
    if not_logs:
        shown = ", ".join(not_logs[:3]) + (f" and {len(not_logs) - 3} more" if len(not_logs) > 3
                                           else "")
        notes.append(f"skipped {len(not_logs)} file(s) that are not logs by name: {shown} "
                     "(name a file to read it anyway)")
    if not sources:
        why = f"{len(skipped)} skipped, e.g. {skipped[0]}" if skipped else "no visible files"
        raise InputError(f"directory {display} has no readable log files ({why})")
    return sources


def open_sources(paths: Sequence[str], *, skipped: list[str] | None = None) -> list[Source]:
    """Expand what the user named: files, .gz files, '-' for stdin, directories (every regular
    file inside, recursively, sorted by name, skipping hidden files; e.g. one log per rank).

    Named regular files are opened and sniffed here, so a typo or a binary file fails
    before any analysis starts. Files inside a directory that are unusable are left out
    instead, with a one-line note appended to `skipped` if given; so is a file named
    twice (e.g. both a directory and a file inside it).
    """
    if isinstance(paths, str):
        paths = [paths]
    if not paths:
        raise InputError("no input given (name log files, directories, or '-' for stdin)")
    notes: list[str] = []
    sources: list[Source] = []
    seen: set[tuple[int, int]] = set()
    stdin_used = False
    for arg in paths:
        if arg == "-":
            if stdin_used:
                raise InputError("'-' (stdin) can only be given once")
            stdin_used = True
            sources.append(Source("-", None))
            continue
        if not arg:
            raise InputError("an empty path was given")
        path = Path(arg)
        try:
            info = path.stat()
        except OSError as exc:
            raise _os_error(arg, exc) from None
        if stat.S_ISDIR(info.st_mode):
            candidates = _expand_dir(path, arg, notes)
        elif stat.S_ISSOCK(info.st_mode):
            raise InputError(f"{arg} is a socket, not a log file")
        else:
            candidates = [Source(arg, path)]
            if stat.S_ISREG(info.st_mode):
                candidates[0].probe()
            # FIFOs and character devices are read as streams, never probed.
        for source in candidates:
            assert source.path is not None
            try:
                st = source.path.stat()
            except OSError:
                sources.append(source)
                continue
            key = (st.st_dev, st.st_ino)
            if key in seen:
                notes.append(f"skipped {source.name}: already included")
                continue
            seen.add(key)
            sources.append(source)
    if skipped is not None:
        skipped.extend(notes)
    elif notes and sources:  # shown with the run's warnings (what a directory left out)
        sources[0].notes.extend(notes)
    return sources
