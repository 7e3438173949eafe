"""The shape every operation shares: plan, then preview (a dry run) or execute; timed results.

Compaction, snapshot and changelog expiry, manifest compaction and orphan removal each have a
`plan_x` returning a plan whose `preview()` is the dry-run result, an `execute_x` that carries a
plan out, and `x(..., dry_run=)` joining the two through `run_planned`. Results are frozen,
keyword-only dataclasses with `to_dict()` (the CLI's JSON), `summary()` (its human line) and
`metrics()` (unprefixed names; the Dagster layer namespaces them).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import Field, replace
from typing import Any, ClassVar, Protocol, TypeVar

from dagster_paimon.errors import transient_errors

Metrics = dict[str, int | float | None]


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


def run_planned(plan: Callable[[], P], execute: Callable[[P], R], *, dry_run: bool) -> R:
    """Plan, then preview or execute; the result's seconds cover both steps."""
    start = time.perf_counter()
    with transient_errors(table_unchanged=True):  # planning only reads
        planned = plan()
    with transient_errors():
        result = planned.preview() if dry_run else execute(planned)
    return replace(result, seconds=time.perf_counter() - start)
