"""What every command shares: its options (declared once) and the one safe way to write -o.

Output never destroys input: a path that is (or, through a symlink or a hard link, resolves
to) one of the inputs, or lies inside an input directory, is refused before anything is
opened; everything else is written to a temporary file next to it and renamed into place, so
a failed or interrupted write leaves the old file as it was.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Annotated

import typer

from analyzer.errors import InputError, UsageError

Files = Annotated[list[str], typer.Argument(help="Log files, .gz files, directories of per-rank "
                                                 "logs, or - for stdin.", show_default=False)]
Year = Annotated[int | None, typer.Option(help="Year for timestamps that have none (vLLM, "
                                               "torch); default: from the log or file mtime.")]
Rules = Annotated[list[Path] | None, typer.Option(
    "--rules", help="Extra directory of signature/marker TOML files (repeatable).")]


def rule_dirs(rules: Sequence[Path] | None) -> list[str]:
    return [str(r) for r in rules or []]


def same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and
                                              os.path.samefile(a, b))
    except OSError:
        return False


def refuse_inputs(output: Path, inputs: Sequence[str]) -> None:
    """Never write over an input (or a file inside an input directory)."""
    for name in inputs:
        if name == "-":
            continue
        src = Path(name)
        if same_file(output, src):
            raise UsageError(f"refusing to overwrite the input {name}; choose another -o")
        with contextlib.suppress(OSError):
            if src.is_dir() and output.resolve().is_relative_to(src.resolve()):
                raise UsageError(f"refusing to write inside the input directory {name}; "
                                 "choose another -o")


@contextlib.contextmanager
def atomic(path: Path) -> Iterator[IO[bytes]]:
    """Write to a temporary file next to `path`, then rename: no half-written output."""
    parent = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
        os.chmod(tmp, 0o644 & ~_umask())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
