"""`loglens scan`: a fleet of job logs into one table (one row per log, or per directory).

    inputs (paths -> jobs) -> an engine (local process pool, or Ray Data) -> rows -> sink

The per-log function is `row.analyse`: `api.survey` flattened, so each row's verdict and
root cause are what `loglens explain` says of that log. Python entry point:

    from analyzer.fleet import scan
    df = scan(["/var/log/jobs"], engine="local")   # a polars.DataFrame, one row per log
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from analyzer.errors import UsageError
from analyzer.fleet.inputs import Job, jobs

if TYPE_CHECKING:
    import polars as pl

ENGINES = ("local", "ray")


def rows(todo: Sequence[Job], *, engine: str = "local", n_workers: int | None = None,
         rules: Sequence[str] = (), redact: bool = True, year: int | None = None
         ) -> Iterator[dict[str, Any]]:
    """The rows of these jobs from the chosen engine, as they finish (any order)."""
    if engine == "local":
        from analyzer.fleet import local

        return local.rows(todo, n_workers=n_workers, rules=rules, redact=redact, year=year)
    if engine == "ray":
        from analyzer.fleet import ray_engine

        return ray_engine.rows(todo, n_workers=n_workers, rules=rules, redact=redact,
                               year=year)
    raise UsageError(f"--engine: unknown engine {engine!r} (choose: {', '.join(ENGINES)})")


def scan(paths: Sequence[str], *, engine: str = "local", n_workers: int | None = None,
         group_by_dir: bool = False, since: datetime | None = None,
         rules: Sequence[str] = (), redact: bool = True, year: int | None = None
         ) -> pl.DataFrame:
    """One row per log (per directory with `group_by_dir`), sorted by path."""
    from analyzer.fleet.table import frame

    todo = jobs(paths, group_by_dir=group_by_dir, since=since)
    out = list(rows(todo, engine=engine, n_workers=n_workers, rules=rules, redact=redact,
                    year=year))
    return frame(sorted(out, key=lambda r: str(r["path"])))
