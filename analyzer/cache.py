"""Where loglens keeps what it can rebuild: Lark's analysed grammars, the loaded knowledge.

Building the LALR tables of the grammars costs ~0.3 s at every start, and loading the
knowledge (TOML, required literals, the literal scanner) ~0.3 s more: most of what `loglens
explain` needs for a small log. Both are pickled (Lark's `cache=`, `pickled` here) into a
private per-user directory (never a shared /tmp, where another user could plant a pickle),
under a name that is the hash of what they were built from, so an edit rebuilds them. Any
failure just means no cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


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
    import lark

    base = cache_dir()
    if base is None:
        return False
    py = "".join(map(str, sys.version_info[:2]))
    return str(base / f"{name}.lark{lark.__version__}.py{py}.cache")


def pickled(name: str, inputs: Iterable[Path], build: Callable[[], T], kind: type[T]) -> T:
    """`build()`, or its result pickled by an earlier run from the same `inputs` (files whose
    bytes, and paths, name the cache entry; the Python version too, since pickles of compiled
    patterns are not portable across it). A missing, stale or unreadable entry is rebuilt."""
    base = cache_dir()
    if base is None:
        return build()
    digest = hashlib.sha256("".join(map(str, sys.version_info[:2])).encode())
    for path in inputs:
        digest.update(str(path).encode() + b"\0")
        try:
            digest.update(path.read_bytes())
        except OSError:
            return build()  # the build reports an unreadable file in its own words
    entry = base / f"{name}-{digest.hexdigest()[:32]}.pickle"
    try:
        with entry.open("rb") as f:
            value = pickle.load(f)
        if isinstance(value, kind):
            return value
    except Exception:  # a damaged entry of any kind is only a cache miss
        pass
    value = build()
    with contextlib.suppress(OSError, pickle.PicklingError, TypeError, AttributeError):
        tmp = entry.with_suffix(f".{os.getpid()}.tmp")
        with tmp.open("wb") as f:
            pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
        tmp.replace(entry)
    return value
