"""The protocol every table kind implements: what a caller asks of a table without knowing
whether it has a primary key (LSM trees) or not (append files)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from dagster_paimon.lsm.compaction.compact import CompactionPlan
from dagster_paimon.lsm.model.compactors import ConflictingCompactors
from dagster_paimon.lsm.model.levels import TableLevels
from dagster_paimon.results import Metrics, Reported

# a Paimon partition as its sorted (key, value) pairs; () for an unpartitioned table
PartitionKey = tuple[tuple[str, str], ...]


class Health(Protocol):
    """A table's health report, whatever its kind: per-bucket rows, totals, a summary."""

    @property
    def kind(self) -> str:
        """The table's kind: "primary-key" or "append"."""

    @property
    def table(self) -> str:
        """The table's full name."""

    @property
    def snapshot_id(self) -> int | None:
        """The snapshot measured; None for an empty table."""

    @property
    def buckets(self) -> Sequence[Reported]:
        """One row per bucket."""

    @property
    def totals(self) -> Reported:
        """The buckets' figures summed."""

    @property
    def conflicting_compactors(self) -> ConflictingCompactors | None:
        """Other writers compacting the table beside us."""

    def aggregate(self) -> dict:
        """The totals as a dict."""

    def summary(self) -> str:
        """The report as readable text (the CLI's output)."""

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON (the CLI's --json)."""

    def metrics(self) -> Metrics:
        """The report's numbers (Dagster's plotted metadata)."""


@dataclass(frozen=True)
class Assessment:
    """A table's health judged against its kind's limits: problems fail a health check,
    warnings (used when there is no problem) only warn; `healthy` says all is well."""

    health: Health
    healthy: str
    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    def findings(self) -> list[str]:
        """The problems, or else the warnings."""
        return list(self.problems or self.warnings)


class TableKind(Protocol):
    """Health, compaction planning and the partitions due for compaction of one kind of table;
    each table resolves its kind once (kinds/resolve.py)."""

    @property
    def name(self) -> str:
        """ "primary-key" or "append", as reports and `tables` spell it."""

    @property
    def check_name(self) -> str:
        """The name of the kind's Dagster health check."""

    @property
    def check_description(self) -> str:
        """What that check looks at."""

    def health(
        self, levels: TableLevels, compactors: ConflictingCompactors | None = None
    ) -> Health:
        """The health report of `levels`, naming other writers compacting the table."""

    def assess(
        self, levels: TableLevels, compactors: ConflictingCompactors | None = None
    ) -> Assessment:
        """The health of `levels` judged against the table's own limits."""

    def plan_compaction(self, levels: TableLevels, *, full: bool = False) -> CompactionPlan:
        """A compaction of every bucket in `levels`: Paimon's pick, or everything (full)."""

    def partitions_to_compact(
        self, levels: TableLevels, *, trigger: int | None = None, max_amp: int | None = None
    ) -> set[PartitionKey]:
        """The partitions that need compaction now; `trigger` and `max_amp` override the
        table's sorted-run trigger and size-amplification limit where the kind has them."""
