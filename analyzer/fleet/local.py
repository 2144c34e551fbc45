"""The local engine: the per-log function in a process pool over all cores.

Each worker loads the knowledge and the grammars once (the pool's initializer), then takes
jobs; rows come back in the order they finish and are written at once, so a crash or Ctrl-C
loses no row already written. A worker that dies (the OOM killer, a segfault in a library)
breaks the pool: the jobs it was running are tried once more in a fresh pool, then given a
row with the error, and the scan goes on.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from analyzer.fleet.inputs import Job
from analyzer.fleet.row import analyse, empty_row

IN_FLIGHT_PER_WORKER = 4  # enough queued work to keep a worker busy, a bounded memory


def workers(jobs: int | None) -> int:
    """`--jobs N`, else every core this process may use."""
    if jobs is not None and jobs > 0:
        return jobs
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _warm(rules: tuple[str, ...]) -> None:
    """A worker's start: Ctrl-C is the parent's to handle; knowledge and grammars loaded."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from analyzer.knowledge import load
    from analyzer.parse.grammars import head_parsers, message_head_parsers, wrapper_parsers

    load(list(rules))
    wrapper_parsers()
    head_parsers()
    message_head_parsers()


def _context() -> Any:
    """fork where the platform has it: the workers inherit the imported analyzer."""
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def rows(jobs: Sequence[Job], *, n_workers: int | None = None, rules: Sequence[str] = (),
         redact: bool = True, year: int | None = None) -> Iterator[dict[str, Any]]:
    """One row per job, as each finishes."""
    n = min(workers(n_workers), max(1, len(jobs)))
    if n == 1:
        for job in jobs:
            yield analyse(job, rules=rules, redact=redact, year=year)
        return
    todo = list(reversed(jobs))  # popped from the end: the order named
    broken: dict[Job, int] = {}
    while todo:
        pool = ProcessPoolExecutor(max_workers=n, mp_context=_context(), initializer=_warm,
                                   initargs=(tuple(rules),))
        running: dict[Future[dict[str, Any]], Job] = {}
        try:
            while todo or running:
                while todo and len(running) < n * IN_FLIGHT_PER_WORKER:
                    job = todo.pop()
                    running[pool.submit(analyse, job, rules=rules, redact=redact,
                                        year=year)] = job
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in done:
                    job = running.pop(fut)
                    try:
                        yield fut.result()
                    except BrokenProcessPool:
                        raise
                    except Exception as exc:  # analyse catches its own; this is the pool's
                        row = empty_row(job)
                        row["error"] = f"internal error: {type(exc).__name__}: {exc}"
                        yield row
        except BrokenProcessPool:
            for job in running.values():
                broken[job] = broken.get(job, 0) + 1
                if broken[job] > 1:
                    row = empty_row(job)
                    row["error"] = "the worker analysing this log died (killed or crashed)"
                    yield row
                else:
                    todo.append(job)
            running.clear()
        finally:
            _stop(pool)


def _stop(pool: ProcessPoolExecutor) -> None:
    """Shut the pool down now (Ctrl-C, a broken pool, the end): queued jobs cancelled,
    workers that are still busy terminated."""
    procs = list(getattr(pool, "_processes", {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    for proc in procs:
        proc.join(timeout=5)
