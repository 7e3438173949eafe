"""Table-wide compaction: the table's kind plans it, lsm/compaction runs the tasks and commits."""

from __future__ import annotations

from collections.abc import Mapping

from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.kinds.resolve import kind_of
from dagster_paimon.lsm.compaction.compact import (
    CompactionPlan,
    CompactionResult,
    execute_compaction,
)
from dagster_paimon.lsm.compaction.executor import TaskExecutor
from dagster_paimon.lsm.model.levels import TableLevels, read_levels
from dagster_paimon.options import RECORD_LEVEL_EXPIRE_TIME
from dagster_paimon.results import run_planned
from dagster_paimon.table import TableRef
from dagster_paimon.unsupported import COMPACTION, check_supported_layout


def plan_compaction(levels: TableLevels, *, full: bool = False) -> CompactionPlan:
    """Plan a compaction of every bucket in `levels` (already filtered to a partition if wanted)
    as the table's kind compacts it.

    Raises InvalidOptionError (malformed or contradictory table options), UnsupportedLayoutError (a
    Paimon mode we do not compact).
    """
    return kind_of(levels.schema).plan(levels, full=full)


def compact_open_table(
    table: FileStoreTable,
    ref: TableRef,
    *,
    full: bool = False,
    partition: Mapping[str, str] | None = None,
    executor: TaskExecutor | None = None,
    dry_run: bool = False,
) -> CompactionResult:
    """Plan (Paimon's pick per bucket, or full) and, unless dry_run, run and commit it; the
    engine under `PaimonTable.compact`, `ref` reopening the same table in other processes
    (Spark executors).

    Raises InvalidOptionError (malformed or contradictory table options),
    UnsupportedLayoutError (a Paimon mode we do not compact); not input: CommitConflictError,
    CorruptMetadataError, TransientStoreError.
    """
    check_supported_layout(table.table_schema, operation=COMPACTION)  # before reading levels

    def plan() -> CompactionPlan:
        levels = read_levels(
            table,
            partition=partition,
            # record-level expiry judges files by their statistics, even in a dry run
            with_stats=not dry_run or RECORD_LEVEL_EXPIRE_TIME in table.table_schema.options,
        )
        return plan_compaction(levels, full=full)

    return run_planned(
        plan, lambda plan: execute_compaction(table, ref, plan, executor), dry_run=dry_run
    )
