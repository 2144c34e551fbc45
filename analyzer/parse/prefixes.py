"""Prefixes a file teaches: a wrapper no grammar knows, inferred from the file itself.

A pasted log often carries a prefix in front of every record that no list of wrappers can
keep up with: a quote (`> `), a CI runner's or a scheduler's label (`job-name.node-1 [stderr] `),
padded `srun -l` labels (` 3: `), a timestamp cut by the selection (`056444Z `), line numbers
(`  12 | `). What they have in common is the shape: the same text, up to its numbers, at the
start of most lines, and the program's own records (heads the grammars know, tracebacks)
behind it. Inference looks for that shape in the first lines of an input and accepts it only
when peeling it makes more lines recognisable, so a log whose records merely start alike
(`INFO 05-01 ...`, `[2025-03-07 ...`) keeps its heads.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence

from analyzer.model import Frame

SAMPLE_LINES = 400
MIN_SHARE = 0.6  # of the sampled lines with words: a prefix that makes more lines known
ALL_SHARE = 0.9  # a literal prefix (up to its numbers) on nearly every line: peeled anyway
MIN_LINES = 5
MAX_TOKENS = 3
MAX_PREFIX = 80
MAX_ROUNDS = 3
TOKEN = re.compile(r"\s*\S+(?:\s+|$)")
DIGITS = re.compile(r"\d+")
WORD = re.compile(r"[A-Za-z]{2}")
LETTERS = re.compile(r"[A-Za-z]+")
NAME = re.compile(r"[a0](?:[a0._\-]*[a0])?")  # after LETTERS/DIGITS: a host name, an IP
RECORD_START = re.compile(r"(?:Traceback \(most recent call last\):|\s*File \"|"
                          r"(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt)\b)")


def _shapes(prefix: str) -> tuple[str, str, str]:
    """The prefix up to its numbers (level 0), its words (1), or its names (2: a host name
    and an IP address alike, as pdsh's `localhost: ` and `10.0.0.2: ` of one job); each
    level refines the one before."""
    s0 = DIGITS.sub("0", prefix.strip())
    s1 = LETTERS.sub("a", s0)
    return s0, s1, NAME.sub("h", s1)


def _regex(shape: str, level: int) -> str:
    out = []
    for part in re.split(r"(0|a|h|\s+)", shape):
        if not part:
            continue
        if part == "0":
            out.append(r"\d+")
        elif part == "h" and level >= 2:
            out.append(r"[A-Za-z0-9][\w.\-]*")
        elif part == "a" and level >= 1:
            out.append(r"[A-Za-z]+")
        elif part.isspace():
            out.append(r"\s+")
        else:
            out.append(re.escape(part))
    return r"\s*" + "".join(out) + r"(?:\s|$)"  # one separator: the record keeps its indent


def _candidates(texts: Sequence[str]) -> list[tuple[re.Pattern[str], bool, int]]:
    """Prefix regexes covering most of `texts`, shortest shape first at each level, each
    with whether it is on nearly every line, and its level (0: literal up to numbers)."""
    out: list[tuple[re.Pattern[str], bool, int]] = []
    worded = sum(1 for t in texts if WORD.search(t))
    need = max(MIN_LINES, int(worded * MIN_SHARE))
    indent = _common_indent(texts, worded)
    if indent:  # spaces only for what they gain (a traceback's own indentation stays); a
        # tab before every line is never a program's own
        out.append((re.compile(re.escape(indent)), indent == "\t", 0))
    # each line's first 1..MAX_TOKENS tokens at the three levels, computed once
    split: list[list[tuple[bool, tuple[str, str, str]]]] = [[] for _ in range(MAX_TOKENS)]
    for t in texts:
        stripped = len(t.rstrip())
        pos = 0
        for tokens in range(MAX_TOKENS):
            m = TOKEN.match(t, pos)
            if m is None or m.end() > MAX_PREFIX:
                break
            pos = m.end()
            bare = pos >= stripped  # the line is the prefix alone (a blank record)
            split[tokens].append((bare, _shapes(t if bare else t[:pos])))
    for level in (0, 1, 2):
        for tokens in range(MAX_TOKENS):
            shapes: Counter[str] = Counter()
            bare_shapes: Counter[str] = Counter()
            for bare, by_level in split[tokens]:
                (bare_shapes if bare else shapes)[by_level[level]] += 1
            if not shapes:
                continue
            shape, n = shapes.most_common(1)[0]
            # words alone (a progress bar's description) are part of the record
            if n >= need and shape and not shape.replace(" ", "").isalpha():
                on_all = n + bare_shapes[shape] >= worded * ALL_SHARE
                out.append((re.compile(_regex(shape, level)), on_all, level))
    return out


def _common_indent(texts: Sequence[str], worded: int) -> str:
    """The indentation a paste put before every line (a tab from a notes app, the spaces of
    a Markdown list item), when nearly every line has it: a tab, or four spaces or more.
    Deeper lines (a traceback's frames) keep what they have beyond it."""
    lines = [t for t in texts if t.strip()]
    for indent in ("\t", *(" " * k for k in range(12, 3, -1))):
        if sum(1 for t in lines if t.startswith(indent)) >= max(MIN_LINES, worded * ALL_SHARE):
            return indent
    return ""


def sample_text(frame: Frame) -> str:
    """What inference reads of a framed line: its body after the known wrappers, but a quote
    (`> `) stays, since on the lines it is not taken for one (before no known record)
    inference must still see it."""
    body = frame.clean[sum(len(p.text) for p in frame.prefixes):]
    if frame.prefixes and frame.prefixes[0].kind == "quote":
        return frame.prefixes[0].text + body
    return body


def infer(texts: Sequence[str], recognised: Callable[[str], bool],
          peel: Callable[[str], str] | None = None) -> list[re.Pattern[str]]:
    """The prefixes to peel from this input's lines, outermost first (maybe none).

    `texts` are the input's first lines with the known wrappers already peeled; `recognised`
    tells whether a text starts with something the grammars know (a head or a wrapper);
    `peel` removes the known wrappers again after each round, since an unknown label may sit
    before a known one (`job.node-1 [stderr] (Worker pid=1) ERROR 2025-11-05 ...`), and the
    next round must see what follows both, as it would without the label.
    """
    lines = [t for t in texts[:SAMPLE_LINES] if t.strip()]
    found: list[re.Pattern[str]] = []
    memo: dict[str, bool] = {}  # each candidate asks again about the same lines and tails

    def known(text: str) -> bool:
        hit = memo.get(text)
        if hit is None:
            hit = memo[text] = _known(text, recognised)
        return hit

    for _ in range(MAX_ROUNDS):
        if len(lines) < MIN_LINES:
            break
        best: tuple[int, re.Pattern[str], list[str]] | None = None
        for pattern, everywhere, level in _candidates(lines):
            before = after = 0
            rest: list[str] = []
            for t in lines:
                m = pattern.match(t)
                if m is None:
                    rest.append(t)
                    continue
                tail = t[m.end():]
                rest.append(tail)
                before += known(t)
                after += known(tail)
            gain = after - before
            # on nearly every line: a literal prefix is peeled unless it costs recognised
            # lines; a coarser shape (pdsh's host names and IPs) when it gains some
            enough = gain >= max(2, len(lines) // 5) or (
                everywhere and gain >= (0 if level == 0 else 2))
            if enough and (best is None or gain > best[0]):
                best = (gain, pattern, rest)
        if best is None:
            break
        found.append(best[1])
        lines = [t for t in (best[2] if peel is None else map(peel, best[2])) if t.strip()]
    return found


def _known(text: str, recognised: Callable[[str], bool]) -> bool:
    return recognised(text) or RECORD_START.match(text) is not None
