"""Append tables (no primary key): no LSM tree, files concatenated; judged and compacted by
what Paimon's append compaction would rewrite (small files, rows deletion vectors mark)."""

from __future__ import annotations

from collections.abc import Mapping

from dagster_paimon.kinds.append_health import AppendTableHealth
from dagster_paimon.kinds.kind import Assessment, PartitionKey
from dagster_paimon.lsm.compaction.append_plan import AppendTask, plan_append_tasks
from dagster_paimon.lsm.compaction.compact import CompactionPlan, plan_append_compaction
from dagster_paimon.lsm.model.compactors import ConflictingCompactors
from dagster_paimon.lsm.model.levels import TableLevels
from dagster_paimon.table import APPEND


def _options(levels: TableLevels) -> Mapping[str, str]:
    """The table's options (an append table has a schema)."""
    assert levels.schema is not None, "an append table has a schema"
    return levels.schema.options


def _due(levels: TableLevels) -> tuple[AppendTask, ...]:
    """The tasks Paimon's append compaction would run now (its coordinator, or a bucket's
    compaction manager)."""
    return plan_append_tasks(levels, _options(levels))


class AppendKind:
    """The kind of a table without a primary key."""

    name = APPEND
    check_name = "small_files"
    check_description = "Small files Paimon's append compaction would rewrite now."

    def health(
        self, levels: TableLevels, compactors: ConflictingCompactors | None = None
    ) -> AppendTableHealth:
        """Per-bucket file metrics and their totals."""
        return AppendTableHealth.of(levels, compactors)

    def assess(
        self, levels: TableLevels, compactors: ConflictingCompactors | None = None
    ) -> Assessment:
        """A warning where Paimon's append compaction would rewrite files now (an append table
        has no write stall to fail on)."""
        tasks = _due(levels)
        due = sorted({t.partition.label() for t in tasks})
        files = sum(len(t.files) for t in tasks)
        warnings = (
            (
                f"{files} small files in {len(due)} partitions are due for compaction: "
                + ", ".join(due[:10])
                + (f" and {len(due) - 10} more" if len(due) > 10 else ""),
            )
            if tasks
            else ()
        )
        return Assessment(
            AppendTableHealth.of(levels, compactors), "no files due for compaction", (), warnings
        )

    def plan_compaction(self, levels: TableLevels, *, full: bool = False) -> CompactionPlan:
        """The files Paimon's append compaction would rewrite now, or all of them (full)."""
        return plan_append_compaction(levels, full=full)

    def partitions_to_compact(
        self, levels: TableLevels, *, trigger: int | None = None, max_amp: int | None = None
    ) -> set[PartitionKey]:
        """The partitions Paimon's append compaction would rewrite files of now; an append
        table has no sorted runs nor amplification, so `trigger` and `max_amp` do not apply."""
        return {tuple(sorted(t.partition.spec.items())) for t in _due(levels)}


APPEND_KIND = AppendKind()
