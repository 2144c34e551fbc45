"""Where loglens keeps what it can rebuild: Lark's analysed grammars.

Building the LALR tables of the grammars costs ~0.3 s at every start, which is most of what
`loglens explain` needs for a small log. Lark can pickle them (`cache=`); they go to a private
per-user directory (never a shared /tmp, where another user could plant a pickle). Lark checks
the grammar's hash on load, so an edited grammar rebuilds its cache. Any failure just means
no cache.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import lark


def cache_dir() -> Path | None:
    """`$LOGLENS_CACHE_DIR`, else `$XDG_CACHE_HOME/loglens`, else `~/.cache/loglens`; None
    when it cannot be created privately or `LOGLENS_CACHE_DIR` is empty (no cache)."""
    explicit = os.environ.get("LOGLENS_CACHE_DIR")
    if explicit is not None:
        if not explicit:
            return None
        base = Path(explicit)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (Path(xdg) if xdg else Path.home() / ".cache") / "loglens"
    try:
        base.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = base.stat()
        if hasattr(os, "getuid") and info.st_uid != os.getuid():
            return None
    except (OSError, RuntimeError):
        return None
    return base


def lark_cache(name: str) -> str | bool:
    """The `cache=` argument for the Lark parser called `name`."""
    base = cache_dir()
    if base is None:
        return False
    py = "".join(map(str, sys.version_info[:2]))
    return str(base / f"{name}.lark{lark.__version__}.py{py}.cache")
