"""Run an iterator in a thread of its own, a bounded number of items ahead of its consumer.

Reading a file, gunzipping it and splitting it with polars all release the GIL, so a producer
thread overlaps them with whatever the consumer does; the bound keeps memory flat.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Generator, Iterator
from typing import TypeVar

T = TypeVar("T")


def prefetched(items: Iterator[T], ahead: int, name: str = "loglens-prefetch"
               ) -> Generator[T, None, None]:
    """`items`, produced by a daemon thread at most `ahead` items in advance. An exception in
    the producer is raised in the consumer; closing the consumer stops the producer."""
    box: queue.Queue[tuple[T] | BaseException | None] = queue.Queue(maxsize=ahead)
    stop = threading.Event()

    def run() -> None:
        try:
            for item in items:
                if stop.is_set():
                    return
                box.put((item,))
        except BaseException as exc:  # re-raised in the consumer
            box.put(exc)
            return
        box.put(None)

    worker = threading.Thread(target=run, name=name, daemon=True)
    worker.start()
    try:
        while (got := box.get()) is not None:
            if isinstance(got, BaseException):
                raise got
            yield got[0]
    finally:
        stop.set()
        while worker.is_alive():  # unblock a producer waiting on a full queue
            try:
                box.get_nowait()
            except queue.Empty:
                worker.join(0.01)
