"""The `loglens` console entry point, kept import-light on purpose.

Ctrl-C in the first second of a run used to land inside the imports of the CLI (typer, polars,
lark) and print a KeyboardInterrupt traceback. The handler is installed here, before anything
heavy is imported, and turns an interrupt at any moment into exit 130 with no traceback;
`finally` blocks still run (the -o writer removes its temporary file).
"""

from __future__ import annotations

import signal
import sys
from types import FrameType

from analyzer.version import version

EXIT_INTERRUPTED = 130


def _interrupted(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(EXIT_INTERRUPTED)


def main() -> None:
    """Install the quiet interrupt handler, then run the CLI. `--version` alone is answered
    here, without importing the CLI (typer, rich, the analyzer): a script's version probe
    costs a twentieth of a second, not a quarter."""
    if sys.argv[1:] in (["--version"], ["-V"]):
        print(version())
        sys.exit(0)
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:  # ignored: leave it so (nohup)
        signal.signal(signal.SIGINT, _interrupted)
    from analyzer.cli import main as cli_main

    cli_main()
    sys.exit(0)
