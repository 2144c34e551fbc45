"""Errors a user can cause, each with the exit code the CLI documents.

The CLI turns every `LoglensError` into one line on stderr and its exit code; nothing
else should reach the user as a traceback.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Every exit code loglens documents, in one place (README "Exit codes")."""

    OK = 0  # explain/report: done; watch: the server became ready
    FAILED = 1  # explain: `--fail-on` matched the verdict; watch: the server failed
    BAD_INPUT = 2  # unusable input, arguments or --rules
    STALLED = 3  # watch: no progress for the stall threshold, or --timeout elapsed
    INTERRUPTED = 130  # Ctrl-C or SIGTERM: 128 + SIGINT, as shells report it
    INTERNAL = 70  # EX_SOFTWARE: a bug in loglens (reported, never a bare traceback)


EXIT_OK = ExitCode.OK
EXIT_FAIL_ON = ExitCode.FAILED
EXIT_BAD_INPUT = ExitCode.BAD_INPUT


class LoglensError(Exception):
    """Base class: a problem with what the user gave us, not a bug in loglens."""

    exit_code = EXIT_BAD_INPUT


class InputError(LoglensError):
    """The input cannot be read or is not a text log at all."""


class UsageError(LoglensError):
    """Bad arguments or options."""


class RulesError(LoglensError):
    """A signature or phase file (shipped or from --rules) is malformed."""
