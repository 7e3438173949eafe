"""The shape every operation shares: plan, then preview (a dry run) or execute; timed results.

Compaction, snapshot and changelog expiry, manifest compaction and orphan removal each have a
`plan_x` returning a plan whose `preview()` is the dry-run result, an `execute_x` that carries a
plan out, and `x(..., dry_run=)` joining the two through `run_planned`. Results are frozen,
keyword-only dataclasses with `to_dict()` (the CLI's JSON), `summary()` (its human line) and
`metrics()` (unprefixed names; the Dagster layer namespaces them).

Every result (and health report) derives from `Reported`: its `FIELDS` map declares each key once,
and `to_dict()` and `metrics()` both read it, so a key has one spelling in the JSON and the metrics.
Summaries that print a table of figures line it up with `aligned`, the one column aligner.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Mapping
from dataclasses import Field, dataclass, replace
from datetime import timedelta
from typing import Any, ClassVar, Final, Literal, Protocol, TypeVar

from dagster_paimon.errors import InternalError, InvalidArgumentError, transient_errors

Metrics = dict[str, int | float | None]

# a key of a field map is a DETAIL (in to_dict only) or a METRIC (in to_dict and metrics)
DETAIL: Final = "detail"
METRIC: Final = "metric"
Kind = Literal["detail", "metric"]
# floats in the JSON and the metrics keep this many decimals (milliseconds for seconds)
DECIMALS = 3


def jsonable(value: Any) -> Any:
    """A reported value as JSON: nested reports and records by their to_dict, tuples as lists."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return round(value, DECIMALS)
    if hasattr(value, "to_dict"):
        return jsonable(value.to_dict())
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    raise InternalError(f"cannot report a {type(value).__name__} as JSON: {value!r}")


def metric(value: Any) -> int | float | None:
    """A reported value as a number: a flag as 0/1, a collection as its size."""
    if value is None or isinstance(value, int):
        return int(value) if isinstance(value, bool) else value
    if isinstance(value, float):
        return round(value, DECIMALS)
    if isinstance(value, list | tuple | set | frozenset | Mapping):
        return len(value)
    raise InternalError(f"cannot report a {type(value).__name__} as a metric: {value!r}")


def aligned(headers: list[str], rows: list[list[str]]) -> list[str]:
    """Headers and rows in columns as wide as their widest cell, so figures read down a column;
    a cell beyond the headers (a trailing note) is left unpadded, trailing blanks dropped."""
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(row, [*widths, 0], strict=False)).rstrip()
        for row in [headers, *rows]
    ]


@dataclass(frozen=True)
class Reported:
    """Base of every result and report: `to_dict()` and `metrics()` from one field map.

    `FIELDS` maps each key, in JSON order, to DETAIL (in `to_dict()` only) or METRIC (in both);
    its value is the attribute of that name (a field, a property or a method taking no
    arguments). In the metrics a collection counts its items and a flag is 0 or 1, so
    `expired` is the list of ids in the JSON and their number in the metrics; a nested
    `Reported` marked METRIC contributes its own metrics.
    """

    FIELDS: ClassVar[Mapping[str, Kind]] = {}
    # keys a report may lack (a figure only some table kinds have): left out while None
    OPTIONAL: ClassVar[frozenset[str]] = frozenset()

    def reported(self, key: str) -> Any:
        """The value of one key of the field map."""
        value = getattr(self, key)
        return value() if inspect.ismethod(value) else value

    def fields(self) -> dict[str, Kind]:
        """The keys this report has: the field map less the OPTIONAL keys holding None."""
        return {
            key: kind
            for key, kind in self.FIELDS.items()
            if key not in self.OPTIONAL or self.reported(key) is not None
        }

    def to_dict(self) -> dict[str, Any]:
        """Every key this report has, as JSON (the CLI's --json)."""
        return {key: jsonable(self.reported(key)) for key in self.fields()}

    def metrics(self) -> Metrics:
        """The METRIC keys as numbers, under unprefixed names (Dagster adds `paimon/`)."""
        found: Metrics = {}
        for key, kind in self.fields().items():
            if kind != METRIC:
                continue
            value = self.reported(key)
            if isinstance(value, Reported):
                found.update(value.metrics())
            else:
                found[key] = metric(value)
        return found


class Result(Protocol):
    """What an operation did, or with dry_run what it would do (a frozen dataclass)."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]  # what dataclasses.replace needs

    @property
    def dry_run(self) -> bool:
        """Whether this previews a plan (nothing was changed)."""
        ...

    @property
    def seconds(self) -> float:
        """Wall time of planning and executing (or previewing)."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """The JSON the CLI prints with --json."""
        ...

    def summary(self) -> str:
        """The human summary the CLI prints."""
        ...

    def metrics(self) -> Metrics:
        """Numbers worth plotting, under unprefixed names."""
        ...


R = TypeVar("R", bound=Result)
R_co = TypeVar("R_co", covariant=True)


class Plan(Protocol[R_co]):
    """What an operation decided to do, before doing it."""

    def preview(self) -> R_co:
        """The dry-run result: what executing this plan would do."""
        ...


P = TypeVar("P", bound=Plan)


def timedelta_ms(value: timedelta, name: str) -> int:
    """A duration the public operations take as a timedelta, in the milliseconds Paimon counts.

    Raises InvalidArgumentError for anything but a timedelta of zero or more.
    """
    if not isinstance(value, timedelta):
        raise InvalidArgumentError(f"{name} must be a datetime.timedelta, got {value!r}")
    if value < timedelta(0):
        raise InvalidArgumentError(f"{name} cannot be negative, got {value}")
    return value // timedelta(milliseconds=1)


def run_planned(plan: Callable[[], P], execute: Callable[[P], R], *, dry_run: bool) -> R:
    """Plan, then preview or execute; the result's seconds cover both steps."""
    start = time.perf_counter()
    with transient_errors(table_unchanged=True):  # planning only reads
        planned = plan()
    with transient_errors():
        result = planned.preview() if dry_run else execute(planned)
    return replace(result, seconds=time.perf_counter() - start)
