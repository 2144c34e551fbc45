"""Hard wraps: a paste cut into physical lines at a terminal's width.

A log copied from a terminal, a pager or a web console is often cut at the window's width
(116, 149, 204 columns): a record's head is on the first piece and its message goes on over
headless pieces, so a signature that needs the whole sentence ("ProcessGroupNCCL's watchdog
got stuck", "exits with return code = -9") sees neither half. What such pastes have in
common is their shape: the longest line length is a width that several lines reach exactly
(no line can be longer than the window), and the lines that reach it are followed by a line
no grammar knows. `wrap_width` finds that width in an input's first lines; the Assembler then
joins a record that reaches it to the headless pieces that follow (blocks.Assembler).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from analyzer.model import Frame, Prefix

MIN_WIDTH = 80  # narrower "widths" are ordinary short lines
MAX_WIDTH = 320  # wider is no window: ranks printing one long message reach one length
MIN_AT_WIDTH = 3  # lines that reach the width exactly
MIN_FOLLOWED = 2  # ... and of them, followed by a line that starts nothing known
DIGITS = re.compile(r"\d+")
PADDED = "  "  # a line that ends in padding ended there (a console pads to its width)


def wrap_width(frames: Sequence[Frame]) -> int | None:
    """The width this input was hard-wrapped at, or None (most inputs). `frames` are the
    input's first lines as framed (a piece has no head of its own after its wrappers)."""
    if not frames:
        return None
    lengths = [len(f.raw) for f in frames]
    width = max(lengths)
    if not MIN_WIDTH <= width <= MAX_WIDTH:
        return None
    at = [i for i, n in enumerate(lengths) if n == width]
    if len(at) < MIN_AT_WIDTH:
        return None
    # (before this input's own prefixes are inferred, a piece may still carry one: a line
    # number's padding is not indentation here)
    followed = sum(1 for i in at if i + 1 < len(frames) and cut_at(frames[i].raw, width)
                   and headless(frames[i + 1]) and frames[i + 1].message.strip())
    return width if followed >= MIN_FOLLOWED else None


def headless(frame: Frame) -> bool:
    """A line with no record head of its own (at most its wrappers)."""
    return frame.head is None or frame.head.fmt == "wrapper"


def same_wrapper(a: Prefix, b: Prefix) -> bool:
    """The same wrapper on two physical lines: its kind, or its text up to the numbers a
    per-line timestamp or line number changes (one `> ` is a quote or an inferred prefix)."""
    return a.kind == b.kind or DIGITS.sub("0", a.text) == DIGITS.sub("0", b.text)


def cut_at(text: str, width: int | None) -> bool:
    """Whether a physical line was cut by the wrap (it reaches the width, not padded to it)."""
    return width is not None and len(text) == width and not text.endswith(PADDED)


def continues(before: str, text: str) -> bool:
    """Whether `text` can be the rest of a cut line: it has text, it is not a blank line's
    padding, and it is not indented (a source echo, a frame, a continuation of its own)."""
    return bool(text.strip()) and not text.startswith(PADDED) and not before.endswith(PADDED)
