"""The time a query refers to: "on 29 Dec 2023", "in May", "before January 4th, 2024", "yesterday".

Pure and English-only (the words users write in chat). :func:`referred_window` returns the first time
expression it recognises as a :class:`TimeWindow`, or None; relative expressions are anchored at ``now``
(epoch seconds, the time of the question), in UTC because message times are stored in UTC:

- a day: ``29 Dec 2023``, ``29th of December, 2023``, ``December 28 2023``, ``Jan 6`` (no year: that day of
  any year);
- a month: ``in May``, ``in January 2024``, ``May 2024`` (no year: that month of any year);
- ``before`` / ``until`` / ``after`` / ``since`` in front of a day or month opens the window on that side;
- ``today``, ``yesterday``, ``N days ago``, ``last week``, ``this week``, ``last month``, ``this month``.

What is not recognised gives None (no time preference), never an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

__all__ = ["TimeWindow", "referred_window"]

_MONTHS = {
    m: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for m in names
}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s+(?P<year>(?:19|20)\d\d))?"
_OPEN = r"(?:(?P<side>before|until|till|after|since)\s+(?:the\s+)?)?"
_DAY_FIRST = re.compile(_OPEN + _DAY + r"\s+(?:of\s+)?" + _MONTH + _YEAR + r"\b", re.IGNORECASE)
_MONTH_FIRST = re.compile(_OPEN + _MONTH + r"\s+" + _DAY + r"\b" + _YEAR + r"\b", re.IGNORECASE)
_MONTH_ONLY = re.compile(
    r"\b(?:(?P<side>before|until|till|after|since)|in|during|of)\s+(?:the\s+month\s+of\s+)?"
    + _MONTH
    + r"(?:\s+(?P<year>(?:19|20)\d\d))?\b",
    re.IGNORECASE,
)
_DAYS_AGO = re.compile(r"\b(?P<n>\d{1,2})\s+days?\s+ago\b", re.IGNORECASE)
_RELATIVE = re.compile(r"\b(today|yesterday|last week|this week|last month|this month)\b", re.IGNORECASE)
_DAY_S = 86400.0


@dataclass(frozen=True)
class TimeWindow:
    """``start <= t < end`` (either side open when None), and when set, the calendar ``month`` / ``day``
    of ``t`` (UTC) must match (a date written without its year)."""

    start: float | None = None
    end: float | None = None
    month: int | None = None
    day: int | None = None

    def contains(self, t: float) -> bool:
        if self.start is not None and t < self.start:
            return False
        if self.end is not None and t >= self.end:
            return False
        if self.month is None:
            return True
        when = datetime.fromtimestamp(t, UTC)
        return when.month == self.month and (self.day is None or when.day == self.day)


def _open(side: str | None, start: float, end: float) -> TimeWindow:
    if side in ("before", "until", "till"):
        return TimeWindow(end=start if side == "before" else end)
    if side in ("after", "since"):
        return TimeWindow(start=end if side == "after" else start)
    return TimeWindow(start, end)


def _dated(m: re.Match[str]) -> TimeWindow | None:
    month = _MONTHS[m["month"].lower()]
    day = int(m["day"])
    if not 1 <= day <= 31:
        return None
    side = m["side"].lower() if m["side"] else None
    if m["year"] is None:
        return None if side else TimeWindow(month=month, day=day)
    try:
        start = datetime(int(m["year"]), month, day, tzinfo=UTC)
    except ValueError:
        return None
    return _open(side, start.timestamp(), start.timestamp() + _DAY_S)


def _month_window(m: re.Match[str]) -> TimeWindow | None:
    month = _MONTHS[m["month"].lower()]
    side = m["side"].lower() if m["side"] else None
    if m["year"] is None:
        return None if side else TimeWindow(month=month)
    year = int(m["year"])
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
    return _open(side, start.timestamp(), end.timestamp())


def _relative(word: str, now: float) -> TimeWindow:
    today = datetime.fromtimestamp(now, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    t0 = today.timestamp()
    week = t0 - today.weekday() * _DAY_S
    month_start = today.replace(day=1)
    previous_month = (month_start - timedelta(days=1)).replace(day=1)
    return {
        "today": TimeWindow(t0, t0 + _DAY_S),
        "yesterday": TimeWindow(t0 - _DAY_S, t0),
        "this week": TimeWindow(week, t0 + _DAY_S),
        "last week": TimeWindow(week - 7 * _DAY_S, week),
        "this month": TimeWindow(month_start.timestamp(), t0 + _DAY_S),
        "last month": TimeWindow(previous_month.timestamp(), month_start.timestamp()),
    }[word]


def referred_window(text: str, now: float) -> TimeWindow | None:
    """The window of the first day, month or relative expression in ``text`` (see the module docstring)."""
    for pattern in (_DAY_FIRST, _MONTH_FIRST):
        if (m := pattern.search(text)) and (window := _dated(m)):
            return window
    if (m := _MONTH_ONLY.search(text)) and (window := _month_window(m)):
        return window
    if m := _DAYS_AGO.search(text):
        t0 = datetime.fromtimestamp(now, UTC).replace(hour=0, minute=0, second=0, microsecond=0).timestamp()
        start = t0 - int(m["n"]) * _DAY_S
        return TimeWindow(start, start + _DAY_S)
    if m := _RELATIVE.search(text):
        return _relative(m[1].lower(), now)
    return None
