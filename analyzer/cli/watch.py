"""`loglens watch`: the typer command over `analyzer.watch.loop` (registered by `analyzer.cli`).

Exit codes (documented in `loglens watch --help`): 0 ready, 1 failed (fatal error in the log,
or the watched process exited before ready), 3 stalled or timed out, 2 bad arguments.
"""

from __future__ import annotations

import gc
import os
import sys
import urllib.parse
from pathlib import Path
from typing import Annotated

import typer

from analyzer.cli.help import epilog
from analyzer.cli.options import Rules
from analyzer.errors import UsageError

HELP = (
    "Follow a starting server's log until it is ready (exit 0), failed (1) or stalled / timed "
    "out (3). A WARNING never fails the watch unless a signature says it is fatal; a fatal error "
    "is explained like `loglens explain` (root cause, cascade, fix) within about a second."
)


def register(app: typer.Typer) -> None:
    """Add the `watch` command to `app`."""

    @app.command("watch", help=HELP, epilog=epilog("watch"))
    def watch_command(
        file: Annotated[str, typer.Argument(help="The server's log file (it may not exist yet).",
                                            show_default=False)],
        pid: Annotated[int | None, typer.Option(
            help="The server's process id: exit 1 as soon as it dies before ready; the stall "
                 "report says whether it is alive and using CPU.")] = None,
        health_url: Annotated[str | None, typer.Option(
            help="Ready also needs this URL to answer HTTP 200, e.g. http://127.0.0.1:30000/health."
        )] = None,
        timeout: Annotated[float | None, typer.Option(
            help="Give up (exit 3) after this many seconds.", min=0)] = None,
        stall: Annotated[float | None, typer.Option(
            help="Seconds without any new output that count as stalled (exit 3). Default: "
                 "adaptive per phase (minutes for weight loading and CUDA graph capture, longer "
                 "when a progress bar ticks slowly or earlier starts took longer).",
            min=0)] = None,
        json_out: Annotated[bool, typer.Option(
            "--json", metavar="",
            help="NDJSON: one object per state change, ending with the verdict."
        )] = False,
        history: Annotated[Path | None, typer.Option(
            help="Where phase durations of earlier starts are kept (default: "
                 "$XDG_CACHE_HOME/loglens/history).")] = None,
        rules: Rules = None,
    ) -> None:
        """Follow a starting server's log until it is ready, failed or stalled."""
        if os.path.isdir(file):
            raise UsageError(f"{file} is a directory; watch follows one log file")
        if health_url is not None:
            _check_url(health_url)
        from analyzer.watch.history import default_history_dir  # only when watching
        from analyzer.watch.loop import WatchOptions, watch

        opts = WatchOptions(path=file, pid=pid, health_url=health_url, timeout=timeout,
                            stall=stall, history_dir=history or default_history_dir(),
                            rules=[str(r) for r in rules or []])
        if json_out:
            mode = "json"
        elif sys.stdout.isatty() and os.environ.get("TERM") != "dumb":
            mode = "live"
        else:
            mode = "plain"
        code = watch(opts, mode=mode)
        # A caller waits on our exit: skip the interpreter's final garbage collection of the
        # analysis state (~0.3 s), which changes nothing on disk or on screen.
        gc.freeze()
        # sys.exit, not typer.Exit: with standalone_mode=False (as cli.main runs the app) click
        # *returns* a typer.Exit's code instead of exiting with it, and the code is the point.
        sys.exit(code)


def main(argv: list[str] | None = None) -> int:
    """`python -m analyzer.cli.watch FILE ...`: the command alone, with the CLI's error handling."""
    from analyzer.errors import LoglensError

    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    register(app)
    try:
        rv = app(args=argv, standalone_mode=False)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 0
    except LoglensError as exc:
        typer.echo(f"loglens: {exc}", err=True)
        return exc.exit_code
    except typer.Exit as exc:
        return exc.exit_code
    except (KeyboardInterrupt, typer.Abort):
        return 130
    except typer.TyperException as exc:  # click's usage errors (typer vendors click)
        fmt = getattr(exc, "format_message", None)
        typer.echo(f"loglens: {fmt() if callable(fmt) else exc}", err=True)
        return 2
    return rv if isinstance(rv, int) else 0


if __name__ == "__main__":
    sys.exit(main())


def _check_url(url: str) -> None:
    """A --health-url urllib can open: http(s), a host, a valid port (else exit 2, one line)."""
    if not url.startswith(("http://", "https://")):
        raise UsageError("--health-url must start with http:// or https://")
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port  # raises for a port that is not a number or out of range
    except ValueError as exc:
        raise UsageError(f"--health-url {url!r} is not a valid URL ({exc})") from None
    if not parts.hostname:
        raise UsageError(f"--health-url {url!r} names no host")
    del port

