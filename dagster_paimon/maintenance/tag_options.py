"""The tag.* options Paimon's TagAutoManager reads, and its periods (TagPeriodHandler).

Ports TagPeriodHandler and the option parsing of TagAutoManager and TagTimeExtractor
(release-2.0.0): automatic creation modes, periods and name formats, delays, retention, the
time zones commit times and watermarks are read in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dagster_paimon.errors import InvalidArgumentError, InvalidOptionError
from dagster_paimon.options import (
    TAG_CREATE_SUCCESS_FILE,
    at_least,
    boolean,
    choice,
    duration_ms,
    flag,
    read_option,
)

EPOCH = datetime(1970, 1, 1)
MODES = ("none", "process-time", "watermark", "batch")
PERIODS = ("daily", "hourly", "two-hours")
FORMATTERS = ("with_dashes", "without_dashes", "without_dashes_and_spaces")


def _zone(text: str | None) -> tzinfo | None:
    """A Java ZoneId ('UTC', 'Asia/Shanghai', '+08:00'); None is the machine's zone."""
    if text is None:
        return None
    match = re.fullmatch(r"(?:UTC|GMT)?([+-])(\d{1,2})(?::?(\d{2}))?", text.strip())
    if match:
        sign = -1 if match.group(1) == "-" else 1
        offset = timedelta(hours=int(match.group(2)), minutes=int(match.group(3) or 0))
        return timezone(sign * offset)
    if text.strip().upper() in ("Z", "UTC", "GMT"):
        return UTC
    try:
        return ZoneInfo(text.strip())
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise InvalidArgumentError(f"unknown time zone {text!r}") from e


def _zone_option(options: Mapping[str, str], key: str, default: str | None) -> tzinfo | None:
    """A time zone option, checked."""
    return read_option(options, key, _zone, _zone(default))


def local_time(epoch_ms: int, zone: tzinfo | None) -> datetime:
    """Java's Instant.ofEpochMilli(ms).atZone(zone).toLocalDateTime(), naive."""
    instant = datetime.fromtimestamp(epoch_ms // 1000, zone) + timedelta(
        milliseconds=epoch_ms % 1000
    )
    return instant.replace(tzinfo=None)


@dataclass(frozen=True)
class PeriodHandler:
    """TagPeriodHandler: a period and the name format of its tags."""

    period: timedelta
    pattern: str
    daily: bool = False

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> PeriodHandler:
        """tag.creation-period-duration, else tag.creation-period with tag.period-formatter."""
        duration = read_option(options, "tag.creation-period-duration", duration_ms, None)
        if duration is not None:
            if duration <= 0:
                raise InvalidOptionError(
                    "table option 'tag.creation-period-duration' must be positive"
                )
            return cls(timedelta(milliseconds=duration), "%Y%m%d%H%M")
        period = read_option(options, "tag.creation-period", choice(PERIODS), "daily")
        formatter = read_option(options, "tag.period-formatter", choice(FORMATTERS), FORMATTERS[0])
        if period == "daily":
            pattern = "%Y-%m-%d" if formatter == "with_dashes" else "%Y%m%d"
            return cls(timedelta(days=1), pattern, daily=True)
        if period == "hourly":
            pattern = {
                "with_dashes": "%Y-%m-%d %H",
                "without_dashes": "%Y%m%d %H",
                "without_dashes_and_spaces": "%Y%m%d%H",
            }[formatter]
            return cls(timedelta(hours=1), pattern)
        return cls(timedelta(hours=2), "%Y-%m-%d %H")

    def to_name(self, time_: datetime) -> str:
        """timeToTag."""
        return f"{time_.year:04d}" + time_.strftime(self.pattern.replace("%Y", "", 1))

    def to_time(self, name: str) -> datetime | None:
        """tagToTime, strict (fixed widths, real dates); None if not this period's name."""
        if self.daily:
            name = name.split(" ")[0]
        regex = re.escape(self.pattern)
        for code in ("%Y", "%m", "%d", "%H", "%M"):
            width = 4 if code == "%Y" else 2
            regex = regex.replace(re.escape(code), rf"(?P<{code[1]}>\d{{{width}}})")
        match = re.fullmatch(regex, name)
        if match is None:
            return None
        parts = match.groupdict()
        try:
            return datetime(
                int(parts["Y"]),
                int(parts["m"]),
                int(parts["d"]),
                int(parts.get("H") or 0),
                int(parts.get("M") or 0),
            )
        except ValueError:
            return None

    def is_auto(self, name: str) -> bool:
        """isAutoTag: the name parses as this period's tag."""
        return self.to_time(name) is not None

    def previous_tag(self, time_: datetime) -> datetime:
        """normalizeToPreviousTag: the local time floored to a period (counted from the epoch
        as if it were UTC, as Java's Timestamp does), minus one period."""
        ms = (time_ - EPOCH) // timedelta(milliseconds=1)
        period_ms = self.period // timedelta(milliseconds=1)
        floored = (abs(ms) // period_ms) * period_ms * (1 if ms >= 0 else -1)  # Java's long /
        return EPOCH + timedelta(milliseconds=floored) - self.period


@dataclass(frozen=True)
class TagOptions:
    """The tag.* options TagAutoManager reads."""

    mode: str = "none"
    delay: timedelta = timedelta(0)
    num_retained_max: int | None = None
    default_time_retained: timedelta | None = None
    time_expire_enabled: bool = True
    automatic_completion: bool = False
    batch_name: str | None = None
    process_zone: tzinfo | None = None
    watermark_zone: tzinfo | None = UTC
    handler: PeriodHandler | None = None
    success_file: bool = False

    @classmethod
    def from_table_options(cls, options: Mapping[str, str]) -> TagOptions:
        """Read and check the options; InvalidOptionError for malformed values."""
        mode = read_option(options, "tag.automatic-creation", choice(MODES), "none")
        retained = read_option(options, "tag.default-time-retained", duration_ms, None)
        handler = PeriodHandler.from_options(options) if mode != "none" else None
        delay = timedelta(milliseconds=read_option(options, "tag.creation-delay", duration_ms, 0))
        if handler is not None and mode != "batch" and not delay < handler.period:
            raise InvalidOptionError(
                f"table option 'tag.creation-delay' ({delay}) must be shorter than the period "
                f"({handler.period})"
            )
        return cls(
            mode=mode,
            delay=delay,
            num_retained_max=read_option(options, "tag.num-retained-max", at_least(0), None),
            default_time_retained=None if retained is None else timedelta(milliseconds=retained),
            time_expire_enabled=read_option(options, "tag.time-expire-enabled", boolean, True),
            automatic_completion=read_option(options, "tag.automatic-completion", boolean, False),
            batch_name=options.get("tag.batch.customized-name"),
            process_zone=_zone_option(options, "sink.process-time-zone", None),
            watermark_zone=_zone_option(options, "sink.watermark-time-zone", "UTC"),
            handler=handler,
            success_file=flag(options, TAG_CREATE_SUCCESS_FILE),
        )


def success_file_enabled(options: Mapping[str, str]) -> bool:
    """tag.create-success-file, read alone: deleting needs no other tag option to be valid."""
    return flag(options, TAG_CREATE_SUCCESS_FILE)
