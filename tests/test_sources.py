"""Stage 1 (sources): decoding, damage accounting, gzip, and input discovery."""

from __future__ import annotations

import gzip
import io
import lzma
import os
import random
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer.errors import InputError
from analyzer.model import SourceLine
from analyzer.sources.source import MAX_LINE_CHARS, Source, open_sources


def read(path: Path) -> tuple[list[SourceLine], Source]:
    """Open one named file and read all of its lines."""
    [source] = open_sources([str(path)])
    return list(source.lines()), source


def texts(path: Path) -> list[str]:
    return [line.text for line in read(path)[0]]


def write(tmp_path: Path, data: bytes, name: str = "app.log") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


# -- line splitting and decoding ------------------------------------------------------


def test_crlf_endings_lose_one_cr(tmp_path: Path) -> None:
    path = write(tmp_path, b"one\r\ntwo\r\n\r\nthree\r\r\n")
    assert texts(path) == ["one", "two", "", "three\r"]


def test_inner_cr_is_kept_for_tqdm(tmp_path: Path) -> None:
    bar = b" 10%|#   |\r 50%|#####  |\r100%|########|"
    lines, _ = read(write(tmp_path, b"start\n" + bar + b"\r\nend\n"))
    assert [line.text for line in lines] == ["start", bar.decode(), "end"]
    assert not any(line.replaced or line.truncated for line in lines)


def test_final_cr_without_lf_is_kept(tmp_path: Path) -> None:
    assert texts(write(tmp_path, b"a\n 50%|###\r")) == ["a", " 50%|###\r"]


def test_final_line_without_newline_is_yielded(tmp_path: Path) -> None:
    lines, source = read(write(tmp_path, b"first\nsecond"))
    assert [(line.lineno, line.text) for line in lines] == [(1, "first"), (2, "second")]
    assert source.stats.lines == 2
    assert source.stats.bytes == len(b"first\nsecond")


def test_lines_carry_lineno_and_source_name(tmp_path: Path) -> None:
    path = write(tmp_path, "α\nβ\n".encode())
    lines, _ = read(path)
    assert lines == [SourceLine(1, "α", str(path)), SourceLine(2, "β", str(path))]


def test_invalid_utf8_is_replaced_and_counted(tmp_path: Path) -> None:
    lines, source = read(write(tmp_path, b"ok\nbad \xff\xfe here\nalso \xc3 bad\nfine \xc3\xa9\n"))
    assert [line.replaced for line in lines] == [False, True, True, False]
    assert lines[1].text == "bad \ufffd\ufffd here"
    assert lines[3].text == "fine é"
    assert source.stats.replaced_lines == 2


def test_nul_bytes_are_replaced_and_counted(tmp_path: Path) -> None:
    # A crashed writer leaves a run of NULs (preallocated blocks) inside a text log.
    lines, source = read(write(tmp_path, b"before\n\x00\x00\x00after crash\nnext\n"))
    assert lines[1].text == "\ufffd\ufffd\ufffdafter crash"
    assert lines[1].replaced
    assert source.stats.replaced_lines == 1
    assert lines[2].text == "next"


def test_a_nul_hole_is_dropped_and_the_text_after_it_kept(tmp_path: Path) -> None:
    """A log truncated while another process still wrote at its old offset: NULs up to that
    offset, then that writer's lines. The hole is no text (1.1 MB of it once hid a server's
    last lines behind the line-length cut, and made the whole file look binary)."""
    hole = b"\x00" * 1_200_000
    data = b"RuntimeError: Engine core initialization failed.\n" + hole + \
        b"INFO:     Waiting for application shutdown.\nINFO:     Application shutdown complete.\n"
    path = write(tmp_path, data)
    lines, source = read(path)
    assert [line.text for line in lines] == [
        "RuntimeError: Engine core initialization failed.",
        "INFO:     Waiting for application shutdown.", "INFO:     Application shutdown complete."]
    assert lines[1].replaced and not lines[1].truncated
    assert source.stats.replaced_lines == 1
    [src] = open_sources([str(path)])  # the fast path's reader gives the same lines
    assert [t for _, s in src.series_batches() for t in s.to_list()] == [x.text for x in lines]
    assert src.line_range(2, 2) == {2: "INFO:     Waiting for application shutdown."}


def test_a_hole_longer_than_the_line_cap_is_dropped_before_the_cap(tmp_path: Path) -> None:
    """A hole of 6 MB spans several read chunks: it is dropped before the line-length cap is
    applied, so the line after it is read whole and the line is not reported as cut."""
    hole = b"\x00" * 6_000_000
    data = b"before\n" + b"tail of a line " + hole + b"after the hole\nRuntimeError: boom\n"
    lines, source = read(write(tmp_path, data))
    assert [line.text for line in lines] == [
        "before", "tail of a line after the hole", "RuntimeError: boom"]
    assert lines[1].replaced and not lines[1].truncated
    assert source.stats.truncated_lines == 0 and source.stats.replaced_lines == 1


def test_a_file_of_nul_bytes_only_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="only NUL bytes"):
        read(write(tmp_path, b"\x00" * 5000))


def test_a_legit_replacement_char_is_not_flagged(tmp_path: Path) -> None:
    [line], source = read(write(tmp_path, "already \ufffd decoded\n".encode()))
    assert not line.replaced
    assert source.stats.replaced_lines == 0


def test_50mb_single_line_is_truncated_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "huge.log"
    block = b"x" * (1 << 20)
    with path.open("wb") as f:
        f.write(b"before\n")
        for _ in range(50):
            f.write(block)
        f.write(b"\r\nafter\n")
    lines, source = read(path)
    assert [line.lineno for line in lines] == [1, 2, 3]
    assert lines[1].truncated
    assert lines[1].text == "x" * MAX_LINE_CHARS
    assert (lines[0].text, lines[2].text) == ("before", "after")
    assert not lines[0].truncated and not lines[2].truncated
    assert source.stats.truncated_lines == 1
    assert source.stats.bytes == path.stat().st_size


def test_50mb_final_line_without_newline_is_truncated(tmp_path: Path) -> None:
    path = tmp_path / "huge.log"
    with path.open("wb") as f:
        f.write(b"before\n")
        for _ in range(50):
            f.write(b"y" * (1 << 20))
    lines, _ = read(path)
    assert len(lines) == 2
    assert lines[1].truncated and len(lines[1].text) == MAX_LINE_CHARS


def test_long_multibyte_line_is_cut_on_characters_not_bytes(tmp_path: Path) -> None:
    # 2.4 MB of two-byte chars: over the char limit, under the byte cap.
    # 4.5 MB of three-byte chars: over the byte cap, which splits a character.
    data = "é".encode() * 1_200_000 + b"\n" + "€".encode() * 1_500_000 + b"\n"
    lines, source = read(write(tmp_path, data))
    assert [line.text for line in lines] == ["é" * MAX_LINE_CHARS, "€" * MAX_LINE_CHARS]
    assert all(line.truncated and not line.replaced for line in lines)
    assert source.stats.truncated_lines == 2


def test_line_of_exactly_max_chars_is_not_truncated(tmp_path: Path) -> None:
    [line], _ = read(write(tmp_path, b"z" * MAX_LINE_CHARS + b"\n"))
    assert not line.truncated and len(line.text) == MAX_LINE_CHARS


def test_lines_spanning_chunk_boundaries(tmp_path: Path) -> None:
    rng = random.Random(7)
    expected = ["w" * rng.randrange(0, 300_000) + str(i) for i in range(40)]
    data = "\r\n".join(expected).encode() + b"\r\n"
    assert texts(write(tmp_path, data)) == expected


# -- gzip -----------------------------------------------------------------------------


def log_text(n: int) -> bytes:
    """A log that compresses poorly enough for a cut in half to land mid-stream."""
    rng = random.Random(1)
    return b"".join(
        f"[2024-05-01 12:00:{i % 60:02d}] rank {i % 8} step {i} loss {rng.random():.6f}\n".encode()
        for i in range(n)
    )


def test_gzip_is_read(tmp_path: Path) -> None:
    path = write(tmp_path, gzip.compress(b"one\r\ntwo\nthree"), "app.log.gz")
    lines, source = read(path)
    assert [line.text for line in lines] == ["one", "two", "three"]
    assert source.stats.warnings == []
    assert source.stats.bytes == len(b"one\r\ntwo\nthree")


def test_gzip_is_detected_by_magic_not_extension(tmp_path: Path) -> None:
    assert texts(write(tmp_path, gzip.compress(b"hello\n"), "rotated.log.1")) == ["hello"]


def test_concatenated_gzip_members(tmp_path: Path) -> None:
    data = gzip.compress(b"a\nb\n") + gzip.compress(b"c\n")
    assert texts(write(tmp_path, data, "app.gz")) == ["a", "b", "c"]


def test_truncated_gzip_yields_readable_lines_and_a_warning(tmp_path: Path) -> None:
    original = log_text(20_000)
    compressed = gzip.compress(original)
    path = write(tmp_path, compressed[: len(compressed) // 2], "cut.log.gz")
    lines, source = read(path)
    want = original.decode().splitlines()
    assert 1000 < len(lines) < len(want)
    assert [line.text for line in lines[:-1]] == want[: len(lines) - 1]
    assert want[len(lines) - 1].startswith(lines[-1].text)  # last line may be partial
    [warning] = source.stats.warnings
    assert warning == (
        f"gzip stream truncated after {len(lines)} lines; analysed what was readable"
    )


def test_corrupt_gzip_yields_readable_lines_and_a_warning(tmp_path: Path) -> None:
    compressed = bytearray(gzip.compress(log_text(20_000)))
    middle = len(compressed) // 2
    compressed[middle : middle + 64] = bytes(64)
    lines, source = read(write(tmp_path, bytes(compressed), "bad.gz"))
    assert len(lines) > 1000
    [warning] = source.stats.warnings
    assert warning.startswith("gzip stream corrupt")
    assert "\n" not in warning


def test_gzip_with_nothing_readable_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="gzip stream truncated before any log text"):
        read(write(tmp_path, gzip.compress(b"hello\n")[:10], "stub.gz"))  # header only


def test_empty_gzip_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"empty\.gz is empty \(0 bytes after gunzip\)"):
        read(write(tmp_path, gzip.compress(b""), "empty.gz"))


# -- unusable input -------------------------------------------------------------------


def test_empty_file_is_an_input_error(tmp_path: Path) -> None:
    path = write(tmp_path, b"")
    with pytest.raises(InputError) as info:
        open_sources([str(path)])
    assert str(info.value) == f"{path} is empty (0 bytes)"
    with pytest.raises(InputError, match="is empty"):
        list(Source(str(path), path).lines())


def test_binary_garbage_is_an_input_error(tmp_path: Path) -> None:
    path = write(tmp_path, random.Random(0).randbytes(200_000), "core.bin")
    with pytest.raises(InputError, match=r"core\.bin does not look like a text log \(\d+% of"):
        open_sources([str(path)])
    with pytest.raises(InputError, match="does not look like a text log"):
        list(Source(str(path), path).lines())


def test_gzipped_binary_is_an_input_error(tmp_path: Path) -> None:
    path = write(tmp_path, gzip.compress(bytes(range(32)) * 1000), "blob.gz")
    with pytest.raises(InputError, match="does not look like a text log"):
        open_sources([str(path)])


def test_other_compression_gets_a_helpful_message(tmp_path: Path) -> None:
    path = write(tmp_path, lzma.compress(log_text(2000)), "app.log.xz")
    with pytest.raises(InputError, match="xz-compressed; decompress it first"):
        open_sources([str(path)])


def test_a_few_bad_bytes_do_not_make_a_log_binary(tmp_path: Path) -> None:
    data = bytearray(log_text(2000))
    for i in range(0, len(data), 997):
        if data[i] != ord("\n"):
            data[i] = 0xFF if i % 2 else 0x00
    lines, source = read(write(tmp_path, bytes(data)))
    assert len(lines) == 2000
    assert 0 < source.stats.replaced_lines < 2000


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.log"
    with pytest.raises(InputError) as info:
        open_sources([str(missing)])
    assert str(info.value) == f"no such file: {missing}"


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root ignores permissions"
)
def test_unreadable_file_is_an_input_error(tmp_path: Path) -> None:
    path = write(tmp_path, b"secret\n")
    path.chmod(0)
    with pytest.raises(InputError, match="permission denied"):
        open_sources([str(path)])


def test_permission_error_on_open_is_one_clear_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The test above is skipped as root, so simulate what the OS would say.
    path = write(tmp_path, b"secret\n")

    def denied(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr("analyzer.sources.source.open", denied, raising=False)
    with pytest.raises(InputError) as info:
        open_sources([str(path)])
    assert str(info.value) == f"permission denied: {path}"


def test_no_paths_is_an_input_error() -> None:
    with pytest.raises(InputError):
        open_sources([])


# -- directories, stdin, FIFOs --------------------------------------------------------


def test_directory_of_rank_logs_sorted(tmp_path: Path) -> None:
    for rank in (2, 0, 1):
        write(tmp_path, f"rank {rank} ready\n".encode(), f"rank{rank}.log")
    sources = open_sources([str(tmp_path)])
    assert [s.name for s in sources] == [str(tmp_path / f"rank{r}.log") for r in range(3)]
    assert [next(s.lines()).text for s in sources] == [f"rank {r} ready" for r in range(3)]


def test_directory_sorts_rank_numbers_naturally(tmp_path: Path) -> None:
    for rank in (10, 2, 1):
        write(tmp_path, b"x\n", f"rank{rank}.log")
    names = [Path(s.name).name for s in open_sources([str(tmp_path)])]
    assert names == ["rank1.log", "rank2.log", "rank10.log"]


def test_directory_skips_hidden_and_recurses(tmp_path: Path) -> None:
    write(tmp_path, b"x\n", "a.log")
    write(tmp_path, b"x\n", ".a.log.swp")
    (tmp_path / ".git").mkdir()
    write(tmp_path / ".git", b"x\n", "HEAD")
    (tmp_path / "node1").mkdir()
    write(tmp_path / "node1", gzip.compress(b"x\n"), "b.log.gz")
    names = [s.name for s in open_sources([str(tmp_path)])]
    assert names == [str(tmp_path / "a.log"), str(tmp_path / "node1" / "b.log.gz")]


def test_directory_skips_unusable_files_with_a_note(tmp_path: Path) -> None:
    write(tmp_path, b"x\n", "a.log")
    write(tmp_path, b"", "b.log")
    write(tmp_path, random.Random(0).randbytes(5000), "core")
    skipped: list[str] = []
    sources = open_sources([str(tmp_path)], skipped=skipped)
    assert [Path(s.name).name for s in sources] == ["a.log"]
    assert len(skipped) == 2
    assert all(note.startswith("skipped ") and "\n" not in note for note in skipped)


def test_directory_without_readable_files_is_an_input_error(tmp_path: Path) -> None:
    write(tmp_path, b"", "empty.log")
    write(tmp_path, b"x\n", ".hidden.log")
    with pytest.raises(InputError, match="has no readable log files"):
        open_sources([str(tmp_path)])
    (tmp_path / "sub").mkdir()
    with pytest.raises(InputError, match="has no readable log files"):
        open_sources([str(tmp_path / "sub")])


def test_a_file_named_twice_is_read_once(tmp_path: Path) -> None:
    path = write(tmp_path, b"x\n")
    assert len(open_sources([str(tmp_path), str(path)])) == 1


def test_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    stdin = io.TextIOWrapper(io.BytesIO(b"one\r\ntwo\n"))
    monkeypatch.setattr(sys, "stdin", stdin)
    [source] = open_sources(["-"])
    assert (source.name, source.path, source.mtime_year()) == ("-", None, None)
    assert [line.text for line in source.lines()] == ["one", "two"]
    assert source.stats.lines == 2


def test_gzipped_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(gzip.compress(b"a\nb\n"))))
    [source] = open_sources(["-"])
    assert [line.text for line in source.lines()] == ["a", "b"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_is_read_as_a_stream(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    [source] = open_sources([str(fifo)])  # must not block: FIFOs are not probed

    def writer() -> None:
        with fifo.open("wb") as f:
            f.write(b"from\nthe pipe\n")

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    assert [line.text for line in source.lines()] == ["from", "the pipe"]
    thread.join(timeout=5)


def test_mtime_year(tmp_path: Path) -> None:
    path = write(tmp_path, b"x\n")
    os.utime(path, (1_620_000_000, 1_620_000_000))  # May 2021
    [source] = open_sources([str(path)])
    assert source.mtime_year() == 2021


def test_user_files_are_not_modified(tmp_path: Path) -> None:
    data = b"a\r\nb\x00\n\xff\n"
    path = write(tmp_path, data)
    os.utime(path, (1_600_000_000, 1_600_000_000))
    read(path)
    assert path.read_bytes() == data
    assert path.stat().st_mtime == 1_600_000_000


def test_reading_twice_resets_stats(tmp_path: Path) -> None:
    _, source = read(write(tmp_path, b"a\n\xff\n"))
    list(source.lines())
    assert (source.stats.lines, source.stats.replaced_lines) == (2, 1)


# -- property -------------------------------------------------------------------------


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.binary(max_size=4096))
def test_any_bytes_give_one_line_per_piece_or_an_input_error(tmp_path: Path, data: bytes) -> None:
    path = write(tmp_path, data, "any.log")
    source = Source(str(path), path)
    try:
        lines = list(source.lines())
    except InputError:
        return
    assert [line.lineno for line in lines] == list(range(1, len(lines) + 1))
    assert all("\n" not in line.text for line in lines)
    assert source.stats.lines == len(lines)
    if data.startswith(b"\x1f\x8b"):  # gzip magic: lines are of the decompressed stream
        return
    pieces = data.split(b"\n")
    if pieces[-1] == b"":
        pieces.pop()
    assert len(lines) == len(pieces)
    assert source.stats.bytes == len(data)


@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.text(alphabet=st.characters(exclude_characters="\n\r\x00",
                                                    exclude_categories=("Cs",))), min_size=1))
def test_gzip_round_trip(tmp_path: Path, lines: list[str]) -> None:
    data = "\n".join(lines).encode() + b"\n"
    path = write(tmp_path, gzip.compress(data), "any.gz")
    source = Source(str(path), path)
    try:
        got = [line.text for line in source.lines()]
    except InputError:  # generated text can be mostly control characters
        return
    assert got == lines
    assert source.stats.warnings == []


def test_line_range_matches_lines(tmp_path: Path) -> None:
    """The excerpt reader gives exactly the lines `lines()` gives, for any window."""
    body = b"".join(b"line %d\r\n" % i if i % 3 else b"l\xff%d\n" % i for i in range(1, 5000))
    body += b"last without newline"
    for name, data in (("a.log", body), ("a.log.gz", gzip.compress(body))):
        path = write(tmp_path, data, name)
        src = Source(str(path), path)
        every = {line.lineno: line.text for line in src.lines()}
        for lo, hi in ((1, 3), (2000, 2010), (4990, 6000), (5000, 5000), (7, 6)):
            assert src.line_range(lo, hi) == {k: v for k, v in every.items() if lo <= k <= hi}


# -- the fast path's batch reader -----------------------------------------------------
# series_batches() must give exactly the lines and damage counts of lines(): same numbers,
# same texts, whether polars split the batch or the careful path did.

PIECES = [b"a", b"bc", b" ", b"\n", b"\r", b"\r\n", b'"', b"\xc3\xa9", b"\xff", b"\x00", b"\x1f",
          b"#", b",", b"\t", b"\xe2\x82", b"\n\n", b"Traceback (most recent call last):"]


def batch_texts(source: Source, min_bytes: int) -> list[str]:
    out: list[str] = []
    for first, series in source.series_batches(min_bytes=min_bytes):
        assert first == len(out) + 1
        out.extend(series.to_list())
    return out


def stats_of(source: Source) -> tuple[int, int, int, int]:
    s = source.stats
    return s.lines, s.bytes, s.replaced_lines, s.truncated_lines


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=60), st.integers(1, 64),
       st.booleans())
def test_series_batches_equal_lines(tmp_path: Path, pieces: list[bytes], min_bytes: int,
                                    gz: bool) -> None:
    data = b"a header line long enough that no sample of pieces looks binary\n" * 4 + b"".join(pieces)
    path = write(tmp_path, gzip.compress(data) if gz else data)
    [source] = open_sources([str(path)])
    expected = [line.text for line in source.lines()]
    expected_stats = stats_of(source)
    assert batch_texts(source, min_bytes) == expected
    assert stats_of(source) == expected_stats


def test_series_batches_truncate_a_50mb_line_like_lines(tmp_path: Path) -> None:
    path = write(tmp_path, b"before\n" + b"x" * (50 << 20) + b"\nafter\n")
    [source] = open_sources([str(path)])
    got = batch_texts(source, 1 << 20)
    assert [len(t) for t in got] == [6, MAX_LINE_CHARS, 5]
    assert source.stats.truncated_lines == 1


def test_series_batches_from_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"one\r\ntwo\nthree")))
    [source] = open_sources(["-"])
    assert batch_texts(source, 4) == ["one", "two", "three"]


def test_line_range_after_series_batches_seeks_to_the_right_batch(tmp_path: Path) -> None:
    lines = [f"line {i} " + "x" * (i % 50) for i in range(1, 5001)]
    path = write(tmp_path, ("\n".join(lines) + "\n").encode())
    [source] = open_sources([str(path)])
    cold = source.line_range(2990, 3010)
    batch_texts(source, 4096)  # records where each batch starts
    assert len(source._marks) > 10
    warm = source.line_range(2990, 3010)
    assert warm == cold == {i: lines[i - 1] for i in range(2990, 3011)}
    assert source.line_range(1, 2) == {1: lines[0], 2: lines[1]}
    assert source.line_range(5000, 5003) == {5000: lines[-1]}


def test_a_directory_reads_its_logs_only_and_says_what_it_left_out(tmp_path: Path) -> None:
    """A run directory holds labels, configs and JSON beside the logs: only log-like names
    are read (a named file is read whatever its name), and a note lists the others."""
    (tmp_path / "rank0.log").write_text("RuntimeError: boom\n")
    (tmp_path / "stdout").write_text("hello\n")
    (tmp_path / "server.log.1").write_text("older\n")
    (tmp_path / "labels.jsonl").write_text('{"id": "x"}\n')
    (tmp_path / "config.yaml").write_text("tp: 8\n")
    sources = open_sources([str(tmp_path)])
    assert sorted(Path(s.name).name for s in sources) == ["rank0.log", "server.log.1", "stdout"]
    [note] = [n for s in sources for n in s.notes]
    assert "2 file(s) that are not logs" in note and "labels.jsonl" in note
    [named] = open_sources([str(tmp_path / "labels.jsonl")])  # named: read
    assert named.name.endswith("labels.jsonl")
