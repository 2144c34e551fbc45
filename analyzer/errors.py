"""Errors a user can cause, each with the exit code the CLI documents.

The CLI turns every `LoglensError` into one line on stderr and its exit code; nothing
else should reach the user as a traceback.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAIL_ON = 1  # `--fail-on` matched the verdict
EXIT_BAD_INPUT = 2  # unusable input or arguments


class LoglensError(Exception):
    """Base class: a problem with what the user gave us, not a bug in loglens."""

    exit_code = EXIT_BAD_INPUT


class InputError(LoglensError):
    """The input cannot be read or is not a text log at all."""


class UsageError(LoglensError):
    """Bad arguments or options."""


class RulesError(LoglensError):
    """A signature or phase file (shipped or from --rules) is malformed."""
