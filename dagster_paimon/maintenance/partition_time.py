"""The time of a partition from its values (Java's PartitionTimeExtractor), for values-time expiry.

`partition.timestamp-pattern` (e.g. `$dt $hour:00:00`) builds one string from the partition
values, each `$key` replaced by its value in key order; without it the first value is the
string. `partition.timestamp-formatter` is a java.time pattern (`yyyyMMdd`, `yyyy-MM-dd HH`);
the string is read as a date-time, else as a date at midnight, as Java's `LocalDateTime.parse`
then `LocalDate.parse` (SMART resolver: a day 29-31 past the month's end is clamped). Without a
formatter Java's lenient default applies: `y-M-d[ H:m:s[.fraction]]` with 1-10 digit years and
1-2 digit fields, out-of-range months, days and times rolling over.

The formatter letters implemented are those of dates and times of day: `y`/`u` (year), `M`
(numeric month), `d`, `H`, `m`, `s`, `S` (fraction), quoted text and literal punctuation. Any
other letter (month names, 12-hour clocks, zones, optional sections) is refused with
InvalidOptionError naming the option, before anything is read.

A DATE partition column counts as its ISO text (`2024-01-01`), the way its partition directory
spells it; Java 2.0 uses the internal day number there and never expires such partitions
(apache/paimon#6439), which we do not copy.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from dagster_paimon.errors import InvalidOptionError

TIMESTAMP_FORMATTER = "partition.timestamp-formatter"
TIMESTAMP_PATTERN = "partition.timestamp-pattern"

# the default: Java's lenient 'y-M-d[ H:m:s[.n]]' (PartitionTimeExtractor.TIMESTAMP_FORMATTER)
_DEFAULT = re.compile(
    r"(?P<y>-?\d{1,10})-(?P<M>\d{1,2})-(?P<d>\d{1,2})"
    r"(?: (?P<H>\d{1,2}):(?P<m>\d{1,2}):(?P<s>\d{1,2})(?:\.(?P<S>\d{1,9}))?)?"
)

_NUMERIC = {"y": "y", "u": "y", "M": "M", "d": "d", "H": "H", "m": "m", "s": "s"}


class UnparseableTime(ValueError):
    """A partition's time string does not match the formatter (Java's DateTimeParseException)."""


@dataclass(frozen=True)
class JavaFormatter:
    """A java.time `DateTimeFormatter.ofPattern` pattern, compiled to one regular expression."""

    pattern: str
    regex: re.Pattern[str]
    two_digit_year: bool

    @classmethod
    def compile(cls, pattern: str) -> JavaFormatter:
        """Translate the pattern; raises InvalidOptionError for letters we do not implement."""
        parts: list[str] = []
        seen: set[str] = set()
        two_digit_year = False
        i = 0
        while i < len(pattern):
            c = pattern[i]
            if c == "'":
                end = pattern.find("'", i + 1)
                if end < 0:
                    raise _bad(pattern, "an unclosed quote")
                text = pattern[i + 1 : end] or "'"  # '' is one quote
                parts.append(re.escape(text))
                i = end + 1
                continue
            if not c.isalpha():
                if c in "[]{}#":
                    raise _bad(pattern, f"{c!r} (optional sections and reserved characters)")
                parts.append(re.escape(c))
                i += 1
                continue
            n = 1
            while i + n < len(pattern) and pattern[i + n] == c:
                n += 1
            i += n
            if c == "S":
                group = "S"
                regex = rf"\d{{{n}}}"
            elif c in _NUMERIC:
                group = _NUMERIC[c]
                if c in "yu":
                    if n == 2:
                        two_digit_year = True
                        regex = r"\d{2}"
                    else:
                        regex = rf"\d{{{n if n > 2 else 1},19}}"
                elif n > 2:
                    raise _bad(pattern, f"{c * n!r} (only numeric {c} or {c * 2} is implemented)")
                else:
                    regex = r"\d{2}" if n == 2 else r"\d{1,2}"
            else:
                raise _bad(pattern, f"the pattern letter {c!r}")
            if group in seen:
                raise _bad(pattern, f"{c!r} twice")
            seen.add(group)
            parts.append(f"(?P<{group}>{regex})")
        return cls(pattern, re.compile("".join(parts)), two_digit_year)

    def parse(self, text: str) -> datetime:
        """LocalDateTime.parse, else LocalDate.parse at midnight; UnparseableTime if neither."""
        match = self.regex.fullmatch(text)
        if match is None:
            raise UnparseableTime(f"{text!r} does not match {self.pattern!r}")
        g = {k: v for k, v in match.groupdict().items() if v is not None}
        if not {"y", "M", "d"} <= g.keys():
            raise UnparseableTime(f"{self.pattern!r} names no full date")
        year = int(g["y"]) + (2000 if self.two_digit_year else 0)
        month, day = int(g["M"]), int(g["d"])
        if not 1 <= month <= 12 or not 1 <= day <= 31:
            raise UnparseableTime(f"{text!r} has no such month or day")
        if not 1 <= year <= 9999:
            raise UnparseableTime(f"year {year} is outside 1..9999")
        day = min(day, calendar.monthrange(year, month)[1])  # SMART: 2023-02-30 is 02-28
        midnight = datetime(year, month, day)
        time = _time_of_day(g)
        return midnight if time is None else midnight + time


def _time_of_day(g: dict[str, str]) -> timedelta | None:
    """The time Java's resolver builds, None where it builds none (the date alone then counts).

    An hour alone defaults minutes and seconds to 0; minutes without an hour, or seconds or a
    fraction without the fields above them, make no time.
    """
    if "H" not in g:
        return None
    hour = int(g["H"])
    minute, second = g.get("m"), g.get("s")
    fraction = g.get("S")
    if (minute is None and (second is not None or fraction is not None)) or (
        minute is not None and second is None and fraction is not None
    ):
        return None
    m, s = int(minute or 0), int(second or 0)
    if hour > 23 or m > 59 or s > 59:
        raise UnparseableTime(f"{hour}:{m}:{s} is no time of day")
    micros = int((fraction or "0").ljust(6, "0")[:6])
    return timedelta(hours=hour, minutes=m, seconds=s, microseconds=micros)


def _bad(pattern: str, what: str) -> InvalidOptionError:
    """The formatter option refused, naming what in it we cannot read."""
    return InvalidOptionError(
        f"table option '{TIMESTAMP_FORMATTER}'={pattern!r} uses {what}; dagster-paimon reads "
        "numeric years, months, days, hours, minutes, seconds and fractions, quoted text and "
        "punctuation (set partition.expiration-strategy=update-time to expire by write time)"
    )


def parse_default(text: str) -> datetime:
    """Java's lenient default formatter: `y-M-d[ H:m:s[.n]]`, out-of-range fields rolling over."""
    match = _DEFAULT.fullmatch(text)
    if match is None:
        raise UnparseableTime(f"{text!r} is not yyyy-MM-dd[ HH:mm:ss]")
    g = match.groupdict()
    year = int(g["y"])
    months = year * 12 + int(g["M"]) - 1
    try:
        base = date(months // 12, months % 12 + 1, 1) + timedelta(days=int(g["d"]) - 1)
        result = datetime(base.year, base.month, base.day)
        if g["H"] is not None:
            micros = int((g["S"] or "0").ljust(6, "0")[:6])
            result += timedelta(
                hours=int(g["H"]), minutes=int(g["m"]), seconds=int(g["s"]), microseconds=micros
            )
    except (ValueError, OverflowError) as e:
        raise UnparseableTime(f"{text!r} is outside the years 1..9999") from e
    return result


@dataclass(frozen=True)
class PartitionTimeExtractor:
    """The partition's time from its values (path-spelled strings), as Java extracts it."""

    pattern: str | None = None
    formatter: JavaFormatter | None = None

    @classmethod
    def of(cls, pattern: str | None, formatter: str | None) -> PartitionTimeExtractor:
        """From the two table options; raises InvalidOptionError for a formatter we refuse."""
        return cls(pattern, None if formatter is None else JavaFormatter.compile(formatter))

    def text(self, keys: Sequence[str], values: Sequence[str]) -> str:
        """The string the formatter reads: the pattern with every `$key` replaced, in key order
        (Java's replaceAll per key), else the first value."""
        if self.pattern is None:
            return values[0]
        text = self.pattern
        for key, value in zip(keys, values, strict=True):
            text = text.replace(f"${key}", value)
        return text

    def extract(self, keys: Sequence[str], values: Sequence[str]) -> datetime:
        """The partition's local date-time; UnparseableTime when the formatter cannot read it."""
        text = self.text(keys, values)
        if self.formatter is None:
            return parse_default(text)
        return self.formatter.parse(text)

    @property
    def described(self) -> str:
        """The formatter in force, for messages."""
        if self.formatter is None:
            return "the default formatter yyyy-MM-dd[ HH:mm:ss]"
        return f"{TIMESTAMP_FORMATTER}={self.formatter.pattern!r}"
