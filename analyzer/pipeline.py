"""The one driver: an input's lines -> framing -> block assembly -> timestamp inheritance.

Every command runs its input through a `Pipeline`: `explain` (every line, or only the lines
the prefilter selects), `events`, the post-mortem collector of `report`, and `watch`, which
feeds a growing file line by line and asks what the events would be if the log ended now.
So the rules that turn lines into events (which wrappers an input teaches, how blocks of
interleaved writers are assembled, which timestamp a line without one inherits) are written
once, here, and every command sees the same events for the same lines.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from analyzer.model import Event, Frame, SourceLine
from analyzer.parse.blocks import Assembler, record_event
from analyzer.parse.framing import Framer

if TYPE_CHECKING:  # the analyzer is the prefiltered path's one consumer
    from analyzer.analysis.engine import Analyzer
    from analyzer.scan import prefilter


class Stamper:
    """Timestamp inheritance: a line without a timestamp takes the nearest earlier one, marked
    as inferred (a traceback's frames, a tqdm bar, a launcher's bare line)."""

    def __init__(self) -> None:
        self.last: str | None = None

    def stamp(self, ev: Event) -> Event:
        if ev.timestamp is None and self.last is not None:
            ev.timestamp, ev.timestamp_inferred = self.last, True
        elif ev.timestamp is not None:
            self.last = ev.timestamp
        return ev


class Pipeline:
    """One input's events, in line order, from its lines (see the module docstring)."""

    def __init__(self, name: str, year: int | None = None,
                 prefixes: Sequence[re.Pattern[str]] = (), wrap_width: int | None = None
                 ) -> None:
        self.name = name
        self.framer = Framer(year, list(prefixes))
        self.assembler = Assembler(wrap_width)
        self.stamper = Stamper()

    # -- line by line ----------------------------------------------------------------------
    def frame(self, line: SourceLine) -> Frame:
        return self.framer.frame(line)

    def assemble(self, frame: Frame) -> Iterator[Event]:
        """The events this frame completes (a block ends only when the next record starts)."""
        for ev in self.assembler.feed(frame):
            yield self._deliver(ev)

    def feed(self, line: SourceLine) -> Iterator[Event]:
        return self.assemble(self.frame(line))

    def finish(self) -> Iterator[Event]:
        """Close the open blocks: the input has ended."""
        for ev in self.assembler.finish():
            yield self._deliver(ev)

    def run(self, lines: Iterable[SourceLine]) -> Iterator[Event]:
        """Every event of the lines, then of the blocks still open at the end."""
        for line in lines:
            yield from self.feed(line)
        yield from self.finish()

    def pending(self) -> bool:
        """Whether lines are held (an open block, a cut record, or lines queued behind)."""
        return self.assembler.pending()

    def peek(self) -> list[Event]:
        """The events the held lines would give if the input ended now; nothing is consumed
        and the pipeline's own state (open blocks, the timestamp to inherit) is untouched."""
        stamper = copy.copy(self.stamper)
        out = []
        for ev in self.assembler.peek():
            ev.source = self.name
            out.append(stamper.stamp(ev))
        return out

    def _deliver(self, ev: Event) -> Event:
        ev.source = self.name
        return self.stamper.stamp(ev)

    # -- the prefiltered path --------------------------------------------------------------
    def analyze_prefiltered(self, analyzer: Analyzer,
                            batches: Iterable[prefilter.Batch]) -> None:
        """Framing and analysis only for the lines that can matter (scan/prefilter.py); the
        lines it skips are counted and sampled, and a skipped line's timestamp is what the
        next analysed line inherits, as on the full path."""
        framer = self.framer
        name = self.name
        skipped_last: list[SourceLine | None] = [None]  # framed only if a line needs its time

        def deliver(ev: Event) -> None:
            pending = skipped_last[0]
            if pending is not None and pending.lineno < ev.line_start:
                skipped_last[0] = None
                if ev.timestamp is None:
                    stamp = framer.timestamp(pending)
                    if stamp:
                        self.stamper.last = stamp
            analyzer.feed(self._deliver(ev))

        def feed(line: SourceLine) -> None:
            for ev in self.assembler.feed(framer.frame(line)):
                deliver(ev)

        def feed_edge(line: SourceLine) -> None:
            frame = framer.frame(line)
            if self.assembler.holding() or not analyzer.summarise(record_event(frame)):
                for ev in self.assembler.feed(frame):
                    deliver(ev)
            elif frame.head is not None and frame.head.timestamp:  # summarised, but its
                skipped_last[0], self.stamper.last = None, frame.head.timestamp  # time counts

        def alive_line(text: str) -> bool:
            """Whether a line the prefilter took for alive evidence (by its literals) is one:
            a successful serving line or a training step, as PhaseTracker counts them."""
            body = framer.body(text)
            return any(m.alive(g) for m, g in analyzer.knowledge.markers_for(body))

        def skip(last: SourceLine, count: int) -> None:
            analyzer.skipped += count
            analyzer.note_writer(name, last.lineno, last.text)
            analyzer.note_ordinary(count, framer.body(last.text))
            analyzer.note_skipped(last.lineno, last.text, framer.body(last.text))
            skipped_last[0] = last  # its timestamp is what the next line would inherit

        def blank(text: str) -> bool:
            return not framer.body(text).strip()

        scanner = analyzer.knowledge.sig_index.scanner
        from analyzer.analysis.engine import KNOWN_TEXT  # (only this path needs the engine)
        from analyzer.scan import prefilter  # nor the prefilter: a pasted log never loads it

        for batch in batches:
            if not analyzer.known_events and batch.lines is not None \
                    and batch.lines.str.contains(KNOWN_TEXT).any():
                analyzer.known_events = 1  # what feeding every line would have found
            scanner.prime({batch.texts[i]: lits for i, lits in batch.literals.items()})
            prefilter.walk(batch, name, self.assembler.holding, feed, skip,
                           feed_edge, blank,
                           lambda line: analyzer.note_writer(name, line.lineno, line.text))
            # after the walk: the batch's last serving lines come after every line it fed, and
            # the tracker keeps only the latest few (noted first, they were pushed out again
            # by the earlier lines the walk fed: a b26 PD log's health polls after its errors)
            analyzer.phases.note_alive(batch.first + i for i in batch.alive
                                       if alive_line(batch.text(i)))
        scanner.prime({})
        for ev in self.assembler.finish():
            deliver(ev)

