"""Whether an input is big enough for a producer process: a stat, kept apart from `producer`
so that deciding "no" (every pasted log) imports none of its process and socket machinery."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from analyzer.sources.source import Source

SPLIT_BYTES = 32 << 20


def wanted(source: Source) -> bool:
    """Whether `source` is worth a producer process."""
    if os.environ.get("LOGLENS_PRODUCER", "1") == "0" or source.path is None:
        return False
    split = int(os.environ.get("LOGLENS_SPLIT_BYTES", SPLIT_BYTES))
    try:
        return source.path.is_file() and source.path.stat().st_size >= split
    except OSError:
        return False


_VALUED = ("--format", "-f", "--rules", "--fail-on", "-o", "--output", "--year")


def explain_target(argv: Sequence[str]) -> tuple[Source, tuple[str, ...]] | None:
    """The first file of `loglens explain FILE ...` and its `--rules`, read from argv before the
    CLI parses it, when that file is worth a producer; None for everything else (a pasted log
    is decided here, with no import of the producer)."""
    if len(argv) < 2 or argv[0] != "explain" or "--help" in argv:
        return None
    files: list[str] = []
    rules: list[str] = []
    i = 1
    while i < len(argv):
        arg = argv[i]
        name = arg.split("=", 1)[0]
        if name in _VALUED:
            value = arg.split("=", 1)[1] if "=" in arg else (argv[i + 1] if i + 1 < len(argv)
                                                              else "")
            if name == "--rules":
                rules.append(value)
            i += 1 if "=" in arg else 2
            continue
        if not arg.startswith("-") or arg == "-":
            files.append(arg)
        i += 1
    if not files or files[0] == "-":
        return None
    source = Source(files[0], Path(files[0]))
    return (source, tuple(rules)) if wanted(source) else None
