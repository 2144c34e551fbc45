"""The Examples and Exit codes that close each command's --help (typer's rich epilog).

Kept apart from the commands so the help reads as one voice and the exit codes are written
once, from `analyzer.errors`, the same numbers the README documents.
"""

from __future__ import annotations

from collections.abc import Sequence

from analyzer.errors import ExitCode

_BAD = (ExitCode.BAD_INPUT, "bad input or arguments")
_BUG = (ExitCode.INTERNAL, "internal error (a bug: please report it)")
_INTERRUPTED = (ExitCode.INTERRUPTED, "interrupted (Ctrl-C)")
EXIT_CODES: dict[str, Sequence[tuple[int, str]]] = {
    "explain": ((ExitCode.OK, "the analysis ran, whatever the verdict"),
                (ExitCode.FAILED, "--fail-on matched the verdict"), _BAD, _INTERRUPTED, _BUG),
    "events": ((ExitCode.OK, "written"), _BAD, _INTERRUPTED, _BUG),
    "rules": ((ExitCode.OK, "listed"), (ExitCode.BAD_INPUT, "a broken --rules file"), _BUG),
    "watch": ((ExitCode.OK, "ready"), (ExitCode.FAILED, "failed, or the --pid died first"),
              (ExitCode.STALLED, "stalled or timed out"), _BAD, _INTERRUPTED, _BUG),
    "report": ((ExitCode.OK, "written"), _BAD, _INTERRUPTED, _BUG),
    "redact": ((ExitCode.OK, "written"), _BAD, _INTERRUPTED, _BUG),
    "diff": ((ExitCode.OK, "compared, whatever the verdicts"), _BAD, _INTERRUPTED, _BUG),
    "scan": ((ExitCode.OK, "scanned, whatever the verdicts (unreadable logs are rows too)"),
             (ExitCode.FAILED, "--fail-on matched a log's verdict"),
             (ExitCode.BAD_INPUT, "bad arguments, or not one input could be read"),
             _INTERRUPTED, _BUG),
}

EXAMPLES: dict[str, Sequence[tuple[str, str]]] = {
    "explain": (
        ("loglens explain server.log", "root cause, cascade, timeline and fix"),
        ("loglens explain logs/", "a directory of per-rank logs, read as one job"),
        ("kubectl logs pod/x --prefix | loglens explain -", "from stdin"),
        ("loglens explain server.log --json | jq .root_cause", "the JSON contract"),
        ("loglens explain job.log --fail-on crash,hang", "exit 1 in CI when it died"),
    ),
    "events": (
        ("loglens events server.log | head", "one JSON object per event"),
        ("loglens events server.log -f table", "a table for the terminal"),
        ("loglens events logs/ -f parquet -o events.parquet", "for polars / DuckDB"),
    ),
    "rules": (
        ("loglens rules --kind failure", "the failure signatures"),
        ("loglens rules --rules my_rules/", "with your own TOML signatures"),
    ),
    "watch": (
        ("loglens watch server.log --pid $PID --timeout 1800", "fail fast while it starts"),
        ("loglens watch server.log --health-url http://127.0.0.1:30000/health",
         "ready only when /health answers"),
        ("loglens watch server.log --json", "NDJSON state changes for a script"),
    ),
    "report": (
        ("loglens report server.log -o postmortem.html", "one self-contained page, redacted"),
        ("loglens report server.log -f markdown -o - | gh issue comment 123 -F -",
         "a ticket comment"),
    ),
    "redact": (
        ("loglens redact server.log -o server.redacted.log", "a copy safe to attach"),
    ),
    "diff": (
        ("loglens diff yesterday.log today.log", "what changed: config, phases, outcome"),
        ("loglens diff good/ bad/ -f markdown -o diff.md", "per-rank directories, for a ticket"),
        ("loglens diff a.log b.log -f json | jq .headline", "the loglens.diff/1 JSON"),
    ),
    "scan": (
        ("loglens scan /var/log/jobs/", "every log below, one row each, and a summary"),
        ("loglens scan runs/ --group-by-dir -o fleet.parquet", "one row per job directory"),
        ("loglens scan 'runs/**/*.log' --since 2026-11-30 -f csv -o last-night.csv",
         "last night's logs (re-run: only new ones are read)"),
        ("find /data -name '*.err' | loglens scan - -f jsonl", "paths on stdin"),
        ("loglens scan s3://bucket/logs/ --engine ray -o fleet.parquet", "on a Ray cluster"),
    ),
}


def epilog(command: str) -> str:
    """Examples and exit codes in typer's rich markup (a blank line keeps lines apart)."""
    lines = ["[bold]Examples[/bold]"]
    for cmd, what in EXAMPLES[command]:
        lines.append(f"  [cyan]{cmd}[/cyan]  [dim]# {what}[/dim]")
    codes = "; ".join(f"{int(code)} {meaning}" for code, meaning in EXIT_CODES[command])
    lines.append(f"[bold]Exit codes[/bold]: {codes}")
    return "\n\n".join(lines)
