"""Parsers of what a caller types: table identifiers, partition specs, durations.

Kept free of pypaimon, pyarrow, Spark and Dagster so the CLI validates every argument (and
answers a bad one) before importing the engine or touching a warehouse.
"""

from __future__ import annotations

import re
from datetime import timedelta

from dagster_paimon.errors import InvalidArgumentError

# Paimon's duration units (TimeUtils.parseDuration, pypaimon's parse_duration) in microseconds,
# the resolution of timedelta; a bare number is milliseconds, as Paimon reads it.
_MICROS = {
    **dict.fromkeys(("ns", "nano", "nanosecond", "nanoseconds"), 0.001),
    **dict.fromkeys(("µs", "micro", "microsecond", "microseconds"), 1),
    **dict.fromkeys(("", "ms", "milli", "millisecond", "milliseconds"), 1_000),
    **dict.fromkeys(("s", "sec", "second", "seconds"), 1_000_000),
    **dict.fromkeys(("m", "min", "minute", "minutes"), 60_000_000),
    **dict.fromkeys(("h", "hour", "hours"), 3_600_000_000),
    **dict.fromkeys(("d", "day", "days"), 86_400_000_000),
}
_DURATION = re.compile(r"(\d+)\s*(\D*)")


def parse_identifier(identifier: str) -> tuple[str, str]:
    """Split 'db.table' so every entry point rejects malformed names the same way.

    Raises InvalidArgumentError (not DB.TABLE).
    """
    database, sep, name = identifier.partition(".")
    if not sep or not database or not name or "." in name:
        raise InvalidArgumentError(f"table identifier must look like DB.TABLE, got {identifier!r}")
    return database, name


def parse_partition_spec(text: str | None) -> dict[str, str] | None:
    """`K=V[,K=V]` (values as Paimon spells them in paths) into a dict; None when absent.

    Raises InvalidArgumentError (not K=V[,K=V], or a key twice).
    """
    if text is None:
        return None
    spec: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or not key or key in spec:
            raise InvalidArgumentError(f"partition must look like K=V[,K=V], got {text!r}")
        spec[key] = value.strip()
    return spec


def parse_duration(text: str) -> timedelta:
    """A Paimon duration ('30s', '15 min', '12h', '7d'; a bare number is milliseconds).

    The units are those of Paimon's table options (ns, µs, ms, s, m/min, h, d and their long
    names). Raises InvalidArgumentError (not a number followed by a known unit).
    """
    match = _DURATION.fullmatch(text.strip().lower())
    unit = match.group(2).strip() if match else None
    if match is None or unit not in _MICROS:
        raise InvalidArgumentError(
            f"{text!r} is not a duration: give a number and a unit, like 30s, 15m, 12h or 7d "
            "(a bare number is milliseconds)"
        )
    try:
        return timedelta(microseconds=round(int(match.group(1)) * _MICROS[unit]))
    except OverflowError as e:
        raise InvalidArgumentError(f"duration {text!r} is too long") from e


def duration_text(duration: timedelta) -> str:
    """A duration in Paimon's largest whole unit (`1d`), as help texts show a default."""
    micros = duration // timedelta(microseconds=1)
    for unit, size in (("d", 86_400_000_000), ("h", 3_600_000_000), ("min", 60_000_000)):
        if micros % size == 0:
            return f"{micros // size}{unit}"
    return f"{micros // 1000}ms"
