"""Read one side of a diff: its post-mortem (unredacted) and the raw-line scan.

The only module of `analyzer.compare` that touches files. A stream (`-`, a FIFO, `<(...)`)
is copied to a temporary file first, so it can be read as often as the analysis needs.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any

from analyzer import api
from analyzer.compare import rawscan
from analyzer.errors import InputError, UsageError
from analyzer.sources.source import open_sources


def load(name: str, *, rules: Sequence[str] = (), year: int | None = None) -> dict[str, Any]:
    """The post-mortem of `name` (a file, .gz, directory, or `-`), with `scan` (environment
    variables, launch-command flags) and `name` (what the user typed) added."""
    with _readable(name) as path:
        data = api.postmortem([path], redact=False, rules=rules, year=year)
        data["scan"] = _scan(path)
    data["name"] = name
    return data


def check_names(a: str, b: str) -> None:
    """Refuse what can never be diffed, before anything is read."""
    if a == "-" and b == "-":
        raise UsageError("'-' (stdin) can only be given once")


def _scan(path: str) -> dict[str, Any]:
    env: dict[str, Any] = {}
    command: dict[str, Any] = {}
    for src in open_sources([path]):
        try:
            got = rawscan.scan(line.text for line in src.lines())
        finally:
            src.close()
        for key, entry in got["env"].items():
            if key not in env:
                env[key] = entry
            else:
                env[key]["values"] += [v for v in entry["values"]
                                       if v not in env[key]["values"]][:rawscan.MAX_VALUES]
        for key, entry in got["command"].items():
            command.setdefault(key, entry)
    return {"env": env, "command": command}


@contextlib.contextmanager
def _readable(name: str) -> Iterator[str]:
    """`name` itself, or a temporary copy of a stream (stdin, a FIFO, a character device)."""
    stream: Any = None
    if name == "-":
        stream = sys.stdin.buffer
    else:
        try:
            info = os.stat(name)
        except OSError:
            info = None  # the analysis says why, in the words `explain` uses
        if info is not None and not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
            try:
                stream = open(name, "rb")  # noqa: SIM115 - closed below
            except OSError as exc:
                raise InputError(f"{name}: {exc.strerror or exc}") from None
    if stream is None:
        yield name
        return
    tmpdir = tempfile.mkdtemp(prefix="loglens-diff-")
    try:
        path = os.path.join(tmpdir, "stdin.log" if name == "-" else os.path.basename(name)
                            or "stream.log")
        try:
            with open(path, "wb") as out:
                shutil.copyfileobj(stream, out, 1 << 20)
        except OSError as exc:
            raise InputError(f"cannot keep a copy of {name} to read it: "
                             f"{exc.strerror or exc}") from None
        finally:
            if stream is not sys.stdin.buffer:
                stream.close()
        yield path
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
