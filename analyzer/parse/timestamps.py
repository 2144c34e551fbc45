"""Turn the many timestamp shapes into ISO 8601, inferring the year where a format omits it.

vLLM, c10 and torch's glog lines carry no year. We borrow it from the newest dated line seen
in the same input (SGLang, NCCL WARN, torchelastic), else from `--year` or the file's mtime,
and step it forward when the month goes backwards (a Dec -> Jan rollover inside one file).
"""

from __future__ import annotations

import datetime as _dt

MONTHS = {m: i for i, m in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}


class YearResolver:
    """Remembers the current year and month of an input while it streams by."""

    __slots__ = ("_month", "year")

    def __init__(self, year: int | None = None) -> None:
        self.year = year if year is not None else _dt.date.today().year
        self._month = 0

    def dated(self, year: int, month: int) -> None:
        """A line with a full date: it sets the year for the lines that follow."""
        self.year, self._month = year, month

    def month(self, month: int) -> int:
        """The year for a yearless line in `month`, stepping over a new-year rollover."""
        if self._month and month < self._month and self._month - month >= 6:
            self.year += 1
        self._month = month
        return self.year


def iso(year: int, month: int, day: int, time: str, frac: str | None = None) -> str | None:
    """ISO 8601 text, or None when the parts do not form a real date."""
    try:
        _dt.date(year, month, day)
    except ValueError:
        return None
    frac_part = ""
    if frac:
        digits = frac.lstrip(".,")[:6]
        frac_part = "." + digits.ljust(3, "0") if digits else ""
    return f"{year:04d}-{month:02d}-{day:02d}T{time}{frac_part}"


def seconds_between(start: str | None, end: str | None) -> float | None:
    """Seconds from one ISO timestamp to another, or None when either is missing."""
    if not start or not end:
        return None
    try:
        delta = _dt.datetime.fromisoformat(end) - _dt.datetime.fromisoformat(start)
    except ValueError:
        return None
    return delta.total_seconds()


def epoch(ts: str | None) -> float | None:
    """Seconds for an ISO timestamp from the log, in the log's own (naive) clock."""
    if not ts or ts.startswith("-"):
        return None
    try:
        value = _dt.datetime.fromisoformat(ts)
    except ValueError:
        return None
    if value.tzinfo is not None:
        value = value.replace(tzinfo=None)
    return (value - _dt.datetime(1970, 1, 1)).total_seconds()
