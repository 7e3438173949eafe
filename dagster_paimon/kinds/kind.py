"""The protocol every table kind implements: what a caller asks of a table without knowing
whether it has a primary key (LSM trees) or not (append files)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from dagster_paimon.kinds.health import KindReport, TableHealth
from dagster_paimon.lsm.compaction.compact import CompactionPlan
from dagster_paimon.lsm.model.append_options import AppendOptions
from dagster_paimon.lsm.model.compactors import ConflictingCompactors
from dagster_paimon.lsm.model.levels import TableLevels
from dagster_paimon.lsm.model.options import CompactionOptions

# a Paimon partition as its sorted (key, value) pairs; () for an unpartitioned table
PartitionKey = tuple[tuple[str, str], ...]
# what a kind's compaction and health read from the table's options
KindOptions = CompactionOptions | AppendOptions


@dataclass(frozen=True)
class Assessment:
    """A table's health judged against its kind's limits: problems fail a health check,
    warnings (used when there is no problem) only warn; `healthy` says all is well."""

    health: TableHealth
    healthy: str
    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    def findings(self) -> list[str]:
        """The problems, or else the warnings."""
        return list(self.problems or self.warnings)


class TableKind(KindReport, Protocol):
    """Options, health, compaction planning and the partitions due for compaction of one kind
    of table; each table resolves its kind once (kinds/resolve.py)."""

    @property
    def check_name(self) -> str:
        """The name of the kind's Dagster health check."""

    @property
    def check_description(self) -> str:
        """What that check looks at."""

    def options(self, table_options: Mapping[str, str]) -> KindOptions:
        """What the kind's compaction and health read from the table's options.

        Raises InvalidOptionError (a malformed value).
        """

    def health(
        self, levels: TableLevels, compactors: ConflictingCompactors | None = None
    ) -> TableHealth:
        """The health report of `levels`, naming other writers compacting the table."""

    def assess(
        self, levels: TableLevels, compactors: ConflictingCompactors | None = None
    ) -> Assessment:
        """The health of `levels` judged against the table's own limits."""

    def plan(self, levels: TableLevels, *, full: bool = False) -> CompactionPlan:
        """A compaction of every bucket in `levels`: Paimon's pick, or everything (full)."""

    def partitions_to_compact(
        self, levels: TableLevels, *, trigger: int | None = None, max_amp: int | None = None
    ) -> set[PartitionKey]:
        """The partitions that need compaction now; `trigger` and `max_amp` override the
        table's sorted-run trigger and size-amplification limit where the kind has them."""
