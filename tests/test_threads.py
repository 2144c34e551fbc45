"""The prefetching thread: order kept, errors re-raised, an early stop ends the producer."""

from __future__ import annotations

import itertools
import threading

import pytest

from analyzer.sources.prefetch import prefetched


def test_items_arrive_in_order() -> None:
    assert list(prefetched(iter(range(100)), 3)) == list(range(100))


def test_a_producer_error_is_raised_in_the_consumer() -> None:
    def items() -> itertools.chain[int]:
        return itertools.chain([1, 2], (1 // 0 for _ in [0]))

    got = prefetched(items(), 2)
    assert [next(got), next(got)] == [1, 2]
    with pytest.raises(ZeroDivisionError):
        next(got)


def test_closing_early_stops_an_endless_producer() -> None:
    before = threading.active_count()
    stream = prefetched(itertools.count(), 2, "endless")
    assert next(stream) == 0
    stream.close()
    assert not any(t.name == "endless" for t in threading.enumerate())
    assert threading.active_count() == before
