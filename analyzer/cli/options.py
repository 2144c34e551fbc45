"""What every command shares: its options (declared once) and the one safe way to write -o.

Output never destroys input: a path that is (or, through a symlink or a hard link, resolves
to) one of the inputs, or lies inside an input directory, is refused before anything is
opened; everything else is written to a temporary file next to it and renamed into place, so
a failed or interrupted write leaves the old file as it was.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Annotated

import typer

from analyzer.errors import InputError, UsageError

Files = Annotated[list[str], typer.Argument(help="Log files, .gz files, directories of per-rank "
                                                 "logs, or - for stdin.", show_default=False)]
Year = Annotated[int | None, typer.Option(
    metavar="YEAR",
    help="Year for timestamps that have none (vLLM, torch); default: from the log or file mtime.")]
Rules = Annotated[list[Path] | None, typer.Option(
    "--rules", metavar="DIR", help="Extra directory of signature/marker TOML files (repeatable).")]


def rule_dirs(rules: Sequence[Path] | None) -> list[str]:
    return [str(r) for r in rules or []]


def same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and
                                              os.path.samefile(a, b))
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop (before Python 3.13)
        return False


def refuse_inputs(output: Path, inputs: Sequence[str]) -> None:
    """Never write over an input (or a file inside an input directory)."""
    for name in inputs:
        if name == "-":
            continue
        src = Path(name)
        if same_file(output, src):
            raise UsageError(f"refusing to overwrite the input {name}; choose another -o")
        with contextlib.suppress(OSError, RuntimeError):
            if src.is_dir() and output.resolve().is_relative_to(src.resolve()):
                raise UsageError(f"refusing to write inside the input directory {name}; "
                                 "choose another -o")


@contextlib.contextmanager
def atomic(path: Path) -> Iterator[IO[bytes]]:
    """Write `path` so that a failure leaves what was there intact.

    A regular file (or a new one) is written to a temporary file next to it, synced and
    renamed into place, keeping an existing file's permissions; a symlink is followed, so
    the link stays a link. Anything else that exists (a device such as /dev/null or
    /dev/stdout, a FIFO) is opened and written to, never replaced.
    """
    target = Path(os.path.realpath(path))
    try:
        info: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise InputError(f"cannot write {path}: it is a directory; name a file with -o")
    if info is not None and not stat.S_ISREG(info.st_mode):
        with _write_errors(path), open(target, "wb") as stream:  # written, not replaced
            yield stream
        return
    mode = stat.S_IMODE(info.st_mode) if info is not None else 0o666 & ~_umask()
    with _write_errors(path):
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                                   dir=target.parent)
    try:
        with _write_errors(path), os.fdopen(fd, "wb") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        with _write_errors(path):
            os.chmod(tmp, mode)
            os.replace(tmp, target)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


@contextlib.contextmanager
def _write_errors(path: Path) -> Iterator[None]:
    """ENOSPC, EFBIG, EACCES, ELOOP, ... as one line and exit 2."""
    try:
        yield
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def text_width() -> int:
    """A text report's width: $COLUMNS, else the terminal's, else 100 (a pipe, a file);
    NO_COLOR and --no-color drop colour only (no-color.org), not the terminal's width."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return min(max(int(columns), 60), 240)
    if not sys.stdout.isatty():
        return 100
    try:
        return min(max(os.get_terminal_size().columns, 60), 160)
    except OSError:
        return 100
