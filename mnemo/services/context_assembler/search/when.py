"""Time in questions and turns beyond ``timerefs.py``: questions that ask *when*, turns that say when (pure).

Temporal questions ask when something happened ("When did Fahim catch a cold?") far more often than they name
a time, and the turn that answers says when relative to the day it was written ("I caught a cold yesterday",
"two weeks ago I started..."): on the whole REALTALK set 54 % of the temporal questions' evidence turns carry
such an expression, against 17 % of all turns. So:

- :func:`asks_when`: the question asks for a time ("when", "what date", "how long ago", "which year", and the
  same in the languages round 2 supports: 什么时候 / 何时, いつ, 언제, когда, wann, quand, cuándo, quando);
- :func:`states_time`: a turn carries a time expression (relative days and weeks, weekdays, months, dates in
  digits; the same languages): a regex, no parsing, so it costs nothing per candidate;
- :func:`dated_window`: the time a turn's own expression refers to, resolved against the day the turn was
  written ("yesterday" on 10 Jan 2024 is 9 Jan 2024), so a question about a time ("What did Kate do on 9
  January?") also matches the turn that tells of it a day later;
- :func:`parsed_window`: expressions the fixed patterns of ``timerefs.py`` do not know ("last Saturday", "two
  weeks ago", "вчера", "昨天"), resolved with ``dateparser`` (a well-kept library with ~200 locales, used rather
  than more hand-written patterns). It costs tens of milliseconds a call (seconds for the first, which loads
  its locales), so it runs only when asked (``rank_candidates``' ``parse_dates``, off by default) and only on a
  question that :func:`states_time` flags and ``timerefs.py`` did not resolve; what it cannot parse gives None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any, Protocol

from mnemo.services.context_assembler.search.timerefs import TimeWindow, referred_window

__all__ = ["PARSE_LANGUAGES", "TimeLevers", "asks_when", "dated_window", "matches", "parsed_window", "states_time"]

#: The languages ``dateparser`` tries (round 2's scripts and the common Latin-script ones): naming them keeps a
#: call in the tens of milliseconds; detecting among all its locales takes seconds.
PARSE_LANGUAGES = ("en", "zh", "ja", "ko", "ru", "de", "fr", "es", "it", "pt")

_ASKS = re.compile(
    r"\b(?:when|what (?:date|day|time|year|month|week)|which (?:date|day|year|month|week)|how long ago|since when|"
    r"wann|quand|cu[aá]ndo|quando|когда|в какой день|какого числа)\b|什么时候|什麼時候|何时|何時|哪天|哪一天|几号|"
    r"哪一年|いつ|何日|何月|何年|언제|며칠|몇 월|몇 년",
    re.IGNORECASE,
)
# states_time runs on every candidate of a question that asks when: word sets and substring checks, because one
# regex of all these alternatives took ~0.7 ms per turn (Python's engine tries each alternative at each offset).
_TIME_WORDS = frozenset(
    [
        "yesterday",
        "today",
        "tonight",
        "tomorrow",
        "ago",
        "weekend",
        "weekends",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "mondays",
        "saturdays",
        "sundays",
        "january",
        "february",
        "march",
        "april",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "jan",
        "feb",
        "aug",
        "sept",
        "oct",
        "nov",
        "dec",
        "вчера",
        "сегодня",
        "позавчера",
        "завтра",
        "назад",
    ]
)
_TIME_PREFIXES = (
    "выходн", "понедельник", "вторник", "среду", "четверг", "пятниц", "суббот", "воскресен", "прошл", "январ",
    "феврал", "апрел", "июн", "июл", "август", "сентябр", "октябр", "ноябр", "декабр",
)  # fmt: skip
_TIME_SUBSTRINGS = (
    "昨天", "今天", "前天", "明天", "上周", "上个月", "上個月", "去年", "周末", "星期", "昨日", "今日", "先週", "先月",
    "週末", "曜日", "어제", "오늘", "그저께", "내일", "지난주", "지난달", "작년", "주말", "요일",
)  # fmt: skip
_TIME_PHRASES = re.compile(  # on lowercased text: IGNORECASE slows every alternative
    r"\b(?:last|this|next|past) (?:night|week|weekend|month|year|morning|afternoon|evening)\b|"
    r"\b(?:in|during|since|before|after|until|of) may\b"
)
_TIME_DIGITS = re.compile(r"\d{1,2}/\d{1,2}|\b(?:19|20)\d\d\b|\d\s*[月日号號월일]")
_DIGIT = re.compile(r"\d")
_WORDS = re.compile(r"\w+")


def asks_when(query: str) -> bool:
    """Whether ``query`` asks for a time (see the module)."""
    return _ASKS.search(query.lower()) is not None


def states_time(text: str) -> bool:
    """Whether ``text`` carries a time expression (see the module): cheap, no parsing."""
    lowered = text.lower()
    words = _WORDS.findall(lowered)
    if not _TIME_WORDS.isdisjoint(words) or any(w.startswith(_TIME_PREFIXES) for w in words if not w.isascii()):
        return True
    if not lowered.isascii() and any(c in lowered for c in _TIME_SUBSTRINGS):
        return True
    if _TIME_PHRASES.search(lowered):
        return True
    return _DIGIT.search(lowered) is not None and _TIME_DIGITS.search(lowered) is not None


def dated_window(text: str, written_at: float, parse: bool = False) -> TimeWindow | None:
    """The time ``text``'s own expression refers to, resolved against ``written_at`` (epoch seconds): the
    patterns of ``timerefs.py``, then (``parse``) ``dateparser``; None when it names no time."""
    if not states_time(text):
        return None
    return referred_window(text, written_at) or (parsed_window(text, written_at) if parse else None)


def matches(window: TimeWindow, dated: TimeWindow | None) -> bool:
    """Whether a turn's ``dated`` window (a day, week or month) falls in the question's ``window``: its first
    instant does. A window with an open side or without its year (``timerefs``' "Jan 6") says too little."""
    if dated is None or dated.start is None or dated.end is None or dated.month is not None:
        return False
    return window.contains(dated.start)


_SETTINGS = {"PREFER_DATES_FROM": "past", "RETURN_AS_TIMEZONE_AWARE": False}


@lru_cache(maxsize=1)
def _parser() -> tuple[Any, Any]:
    # Imported on first use: dateparser costs ~0.1 s to import and loads its locales lazily.
    from dateparser.date import DateDataParser
    from dateparser.search import search_dates

    return search_dates, DateDataParser(languages=list(PARSE_LANGUAGES), settings=_SETTINGS)


def _period_window(when: datetime, period: str | None) -> TimeWindow:
    day = datetime(when.year, when.month, when.day, tzinfo=UTC)
    if period == "year":
        start, end = day.replace(month=1, day=1), day.replace(year=day.year + 1, month=1, day=1)
    elif period == "month":
        start = day.replace(day=1)
        end = (start + timedelta(days=32)).replace(day=1)
    elif period == "week":  # "two weeks ago" is the day 14 days back, give or take a few
        start, end = day - timedelta(days=3), day + timedelta(days=4)
    else:
        start, end = day, day + timedelta(days=1)
    return TimeWindow(start.timestamp(), end.timestamp())


def parsed_window(text: str, base: float) -> TimeWindow | None:
    """The first time expression ``dateparser`` finds in ``text``, relative ones (and a month or weekday
    without its year or date) resolved into the past of ``base`` (epoch seconds), as the day, week, month or
    year it names. None when nothing is found or the library fails on the text (never an error)."""
    search_dates, parser = _parser()
    try:
        found = search_dates(
            text,
            languages=list(PARSE_LANGUAGES),
            settings=_SETTINGS | {"RELATIVE_BASE": datetime.fromtimestamp(base, UTC).replace(tzinfo=None)},
        )
        for span, when in found or ():
            if states_time(span):  # not "now", "may" the verb or a bare number
                return _period_window(when, parser.get_date_data(span).period)
    except Exception:  # a third-party parser failing on odd text means "no time named"
        return None
    return None


class Dated(Protocol):
    """What :class:`TimeLevers` reads of a candidate (``ranking.Candidate``)."""

    @property
    def created_at(self) -> float | None: ...
    @property
    def text(self) -> str: ...


@dataclass(frozen=True)
class TimeLevers:
    """One query's time boosts (``ranking.rank_candidates``, its steps 4 and 11): ``window`` the time it refers
    to (or None), ``time_boost`` for a turn in it (written then or, with ``turn_dates``, telling of it),
    ``when_boost`` (0 unless the query asks when) for a turn that says when; ``parse`` resolves the turns'
    expressions with ``dateparser`` too."""

    window: TimeWindow | None
    time_boost: float
    turn_dates: bool
    parse: bool
    when_boost: float

    def factor(self, c: Dated) -> float:
        """``c``'s score multiplier."""
        if self.window is not None and c.created_at is not None:
            if self.window.contains(c.created_at):
                return 1 + self.time_boost
            if self.turn_dates and matches(self.window, dated_window(c.text, c.created_at, self.parse)):
                return 1 + self.time_boost
        if self.when_boost > 0 and states_time(c.text):
            return 1 + self.when_boost
        return 1.0

    def best(self) -> float:
        """The largest :meth:`factor` possible (the relevance's scale)."""
        return max(1 + (self.time_boost if self.window else 0.0), 1 + self.when_boost)
