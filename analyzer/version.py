"""The installed version, read from the package metadata only when something prints it.

importlib.metadata costs ~10 ms to import (it parses metadata with the email package); a
module-level lookup paid that on every `loglens explain`.
"""

from __future__ import annotations


def version() -> str:
    """'loglens X.Y.Z', or 'loglens dev' in a source tree without installed metadata."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as pkg_version

    try:
        return f"loglens {pkg_version('loglens')}"
    except PackageNotFoundError:
        return "loglens dev"
