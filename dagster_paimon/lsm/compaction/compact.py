"""Compaction of a table's buckets: levels -> strategy -> unit -> task plan per bucket
(primary-key tables) or the files append compaction rewrites (append tables), run, one commit.
Which planner a table takes is its kind's choice (kinds/)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from dagster_paimon.commit.producers import CompactProducer
from dagster_paimon.errors import InvalidOptionError, transient_errors
from dagster_paimon.format.manifest import DataFileMeta
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.lsm.compaction.append_plan import (
    AppendTask,
    plan_append_tasks,
)
from dagster_paimon.lsm.compaction.append_task import APPEND_COMPACTION
from dagster_paimon.lsm.compaction.executor import COMPACTION as COMPACTION_WORK
from dagster_paimon.lsm.compaction.executor import LocalExecutor, TaskExecutor, Work
from dagster_paimon.lsm.compaction.plan import TaskPlan, plan_task
from dagster_paimon.lsm.compaction.postpone import (
    PLACEMENT,
    PostponeMove,
    check_movable,
    discard_placed,
    moved_changes,
)
from dagster_paimon.lsm.compaction.strategy import (
    drop_delete,
    strategy_from_options,
    trigger_compaction,
)
from dagster_paimon.lsm.compaction.task import CompactResult
from dagster_paimon.lsm.model.append_options import AppendOptions
from dagster_paimon.lsm.model.levels import BucketLevels, TableLevels
from dagster_paimon.lsm.model.options import CompactionOptions
from dagster_paimon.lsm.model.record_expiry import RecordLevelExpire
from dagster_paimon.lsm.write.level0 import BucketWrite
from dagster_paimon.options import (
    CHANGELOG_PRODUCER,
    DELETION_VECTORS,
    FIRST_ROW,
    POSTPONE_BUCKET,
)
from dagster_paimon.results import DETAIL, METRIC, Reported
from dagster_paimon.table import TableRef
from dagster_paimon.unsupported import COMPACTION, check_supported_layout

log = logging.getLogger(__name__)


def check_supported(options: CompactionOptions) -> None:
    """Refuse option combinations Paimon itself rejects, and those we do not compact yet."""
    if options.deletion_vectors_enabled and options.changelog_producer == "full-compaction":
        raise InvalidOptionError(
            f"table options '{DELETION_VECTORS}' and '{CHANGELOG_PRODUCER}'='full-compaction' "
            "cannot be combined: Paimon supports deletion vectors only with the none, input "
            "or lookup changelog producer"
        )
    if options.merge_engine == FIRST_ROW and options.deletion_vectors_enabled:
        raise InvalidOptionError(
            f"table option '{DELETION_VECTORS}' is true on a first-row table: Paimon refuses "
            "it, the first-row merge engine never deletes old data"
        )
    if options.merge_engine == FIRST_ROW and options.changelog_producer == "full-compaction":
        raise InvalidOptionError(
            f"table option '{CHANGELOG_PRODUCER}' is 'full-compaction' on a first-row table: "
            "Paimon supports only 'none' and 'lookup' with the first-row merge engine"
        )


def compaction_job_options(options: CompactionOptions) -> CompactionOptions:
    """We are a dedicated compaction job: like Paimon's, it ignores write-only."""
    return replace(options, write_only=False)


def plan_bucket(
    bucket: BucketLevels,
    options: CompactionOptions,
    *,
    full: bool,
    expired: Callable[[DataFileMeta], bool] | None = None,
) -> TaskPlan | None:
    """The task Paimon's compact manager would run for one bucket now, or None.

    `expired` tells files record-level expiry must rewrite (RecordLevelExpire.isExpireFile).
    """
    levels = bucket.levels
    strategy = strategy_from_options(options, restore_files=levels.all_files())
    unit = trigger_compaction(
        levels.level_sorted_runs(),
        levels.number_of_levels(),
        strategy,
        full,
        options,
        record_level_expire=expired or False,
        dv_files=set(bucket.deleted_rows()) if options.deletion_vectors_enabled else None,
    )
    if unit is None:
        return None
    plan = plan_task(
        unit,
        max_level=levels.max_level(),
        drop_delete=drop_delete(
            unit.output_level, levels.non_empty_highest_level(), options.deletion_vectors_enabled
        ),
        options=options,
        partition=bucket.partition,
        bucket=bucket.bucket,
        total_buckets=bucket.total_buckets,
        levels=levels,
        dv_index=bucket.dv_index,
        record_level_expire=expired,
    )
    return None if plan.is_empty else plan


def _unit_line(unit: Mapping[str, Any], executed: bool) -> str:
    """One bucket's task as the CLI prints it."""
    where = f"  {unit['partition_label']} bucket {unit['bucket']}: {unit['input_files']} files"
    if executed:
        extras = ""
        if unit["changelog_file_names"]:
            extras += f", {len(unit['changelog_file_names'])} changelog files"
        if unit["deletion_vector_index"]:
            extras += ", new deletion vectors"
        return (
            f"{where} -> {unit['output_files']} new at level {unit['output_level']}, "
            f"{unit['upgraded_files']} upgraded{extras}"
        )
    return (
        f"{where} -> level {unit['output_level']}, rewrite {unit['rewritten_files']} "
        f"({unit['rewritten_bytes']} bytes), upgrade {unit['upgraded_files']}, "
        f"drop deletes {'yes' if unit['drop_delete'] else 'no'}"
    )


@dataclass(frozen=True, kw_only=True)
class CompactionResult(Reported):
    """What a compaction committed (None if nothing to do), or with dry_run what it would do."""

    table: str
    snapshot_id: int | None
    base_snapshot_id: int | None
    dry_run: bool
    tasks: tuple[TaskPlan | AppendTask, ...] = ()
    results: tuple[CompactResult, ...] = ()
    moves: tuple[PostponeMove, ...] = ()
    placed_bytes: int = 0
    seconds: float = 0.0

    FIELDS = {
        "table": DETAIL,
        "snapshot_id": METRIC,
        "base_snapshot_id": DETAIL,
        "dry_run": DETAIL,
        "units": METRIC,
        "postponed": DETAIL,
        "rewritten_files": METRIC,
        "upgraded_files": METRIC,
        "files_written": METRIC,
        "bytes_read": METRIC,
        "bytes_written": METRIC,
        "bytes_to_read": DETAIL,
        "changelog_files_written": METRIC,
        "deletion_vector_indexes_written": METRIC,
        "postponed_files_moved": METRIC,
        "postponed_rows_moved": METRIC,
        "seconds": METRIC,
    }

    @property
    def bytes_read(self) -> int:
        """Bytes of the files rewritten, and of the postponed files moved."""
        parked = sum(f.file_size for m in self.moves for f in m.files) if not self.dry_run else 0
        return sum(r.bytes_read for r in self.results) + parked

    @property
    def bytes_written(self) -> int:
        """Bytes of the files written: compaction output and moved rows left at level 0."""
        return sum(r.bytes_written for r in self.results) + self.placed_bytes

    @property
    def bytes_to_read(self) -> int:
        """Bytes the plan rewrites or moves: what a dry run would read."""
        return sum(t.rewritten_bytes for t in self.tasks) + sum(
            f.file_size for m in self.moves for f in m.files
        )

    @property
    def rewritten_files(self) -> int:
        """Files merged into new ones (0 in a dry run: the units say what is planned)."""
        return sum(r.rewritten_files for r in self.results)

    @property
    def upgraded_files(self) -> int:
        """Files that only moved to a higher level."""
        return sum(r.upgraded_files for r in self.results)

    @property
    def files_written(self) -> int:
        """Data files the tasks wrote."""
        return sum(len(r.new_files) for r in self.results)

    @property
    def changelog_files_written(self) -> int:
        """Changelog files the tasks wrote."""
        return sum(len(r.change.changelog) for r in self.results)

    @property
    def deletion_vector_indexes_written(self) -> int:
        """Buckets whose deletion vectors got a new index file."""
        return sum(1 for r in self.results if r.change.index is not None)

    @property
    def postponed_files_moved(self) -> int:
        """Postpone-bucket files moved into real buckets."""
        return sum(len(m.files) for m in self.moves)

    @property
    def postponed_rows_moved(self) -> int:
        """Rows of those files."""
        return sum(m.rows for m in self.moves)

    @property
    def postponed(self) -> list[dict[str, Any]]:
        """Each postponed partition's move."""
        return [m.to_dict() for m in self.moves]

    @property
    def units(self) -> list[dict[str, Any]]:
        """Each task's plan, with what it did once executed (a file planned as an upgrade may
        have been rewritten: its metadata hid retractions)."""
        units = []
        for i, task in enumerate(self.tasks):
            unit = task.to_dict()
            result = self.results[i] if self.results else None
            if result is not None:
                unit["rewritten_files"] = result.rewritten_files
                unit["upgraded_files"] = result.upgraded_files
            change = result.change if result else None
            written = change.new_files if change else None
            unit["output_files"] = None if written is None else len(written)
            unit["output_file_names"] = [f.file_name for f in written or ()]
            unit["changelog_file_names"] = [f.file_name for f in change.changelog] if change else []
            index = change.index if change else None
            unit["deletion_vector_index"] = index.file_name if index else None
            units.append(unit)
        return units

    def summary(self) -> str:
        """One line for the run, then one per bucket task."""
        if not self.tasks and not self.moves:
            return f"{self.table}: nothing to compact at snapshot {self.base_snapshot_id}"
        if self.dry_run:
            head = (
                f"{self.table}: {len(self.tasks)} tasks, {len(self.moves)} postponed partitions "
                f"to move at snapshot {self.base_snapshot_id} (dry run)"
            )
        else:
            head = (
                f"{self.table}: committed COMPACT snapshot {self.snapshot_id} "
                f"(base {self.base_snapshot_id}) in {self.seconds:.2f} s, "
                f"{self.bytes_read} bytes read, {self.bytes_written} bytes written"
            )
        units = self.units
        for unit, task in zip(units, self.tasks, strict=True):
            unit["partition_label"] = task.partition.label()
        moves = [
            f"  {m.partition.label()} postponed: {len(m.files)} files, {m.rows} rows -> "
            f"{m.num_buckets} buckets"
            for m in self.moves
        ]
        return "\n".join([head, *moves, *(_unit_line(u, not self.dry_run) for u in units)])


MovePlanner = Callable[[PostponeMove, "tuple[BucketWrite, ...]"], "tuple[TaskPlan, ...]"]


@dataclass(frozen=True)
class CompactionPlan:
    """Every bucket's task against one base snapshot; the commit checks it is still valid.

    `moves` are postpone partitions whose rows go into real buckets first; those buckets are
    planned by `plan_moved` once the move has written their level-0 files. `work` runs the
    tasks: the LSM merge, or an append table's rewrite.
    """

    table: str
    base_snapshot_id: int | None
    tasks: tuple[TaskPlan | AppendTask, ...]
    moves: tuple[PostponeMove, ...] = ()
    plan_moved: MovePlanner | None = None
    work: Work[Any, CompactResult] = COMPACTION_WORK

    def preview(self) -> CompactionResult:
        """The tasks, not run."""
        return CompactionResult(
            table=self.table,
            snapshot_id=None,
            base_snapshot_id=self.base_snapshot_id,
            dry_run=True,
            tasks=self.tasks,
            moves=self.moves,
        )


def plan_lsm_compaction(levels: TableLevels, *, full: bool = False) -> CompactionPlan:
    """Plan a compaction of every LSM tree in `levels` (already filtered to a partition if
    wanted): Paimon's pick per bucket, or full; postponed rows move into real buckets first.

    Raises InvalidOptionError (malformed or contradictory table options), UnsupportedLayoutError (a
    Paimon mode we do not compact).
    """
    if levels.schema is not None:
        check_supported_layout(levels.schema, operation=COMPACTION)
    options = compaction_job_options(levels.options)
    check_supported(options)
    expire = RecordLevelExpire.for_table(levels.schema) if levels.schema else None
    expired = (
        (lambda f: expire.is_expired_file(f, levels.schemas.get)) if expire is not None else None
    )

    def planner(bucket: BucketLevels) -> TaskPlan | None:
        return plan_bucket(bucket, options, full=full, expired=expired)

    def plan_moved(move: PostponeMove, writes: tuple[BucketWrite, ...]) -> tuple[TaskPlan, ...]:
        targets = move.targets(writes, options.num_levels)
        return tuple(t for b in targets if (t := planner(b)))

    parked = [b for b in levels.buckets if b.bucket == POSTPONE_BUCKET]
    moves: tuple[PostponeMove, ...] = ()
    if parked:
        assert levels.schema is not None, "a table with files has a schema"
        check_movable(levels.schema, parked)
        moves = tuple(
            PostponeMove.of(
                p,
                [b for b in levels.buckets if b.partition == p.partition and b.bucket >= 0],
                levels.schema.options,
            )
            for p in parked
        )
    moving = {m.partition for m in moves}
    tasks = tuple(
        t
        for b in levels.buckets
        if b.partition not in moving and b.bucket >= 0 and (t := planner(b))
    )
    log.info(
        "planned %d compaction tasks over %d buckets and %d postponed partitions of %s at "
        "snapshot %s",
        len(tasks),
        len(levels.buckets),
        len(moves),
        levels.table,
        levels.snapshot_id,
    )
    return CompactionPlan(levels.table, levels.snapshot_id, tasks, moves, plan_moved)


def plan_append_compaction(
    levels: TableLevels, options: AppendOptions, *, full: bool = False
) -> CompactionPlan:
    """Plan a compaction of an append table's buckets in `levels` with its `options`: the files
    Paimon's append compaction would rewrite now, or all of them (full).

    Raises InvalidOptionError (a malformed table option), UnsupportedLayoutError (a Paimon mode
    we do not compact).
    """
    assert levels.schema is not None, "an append table has a schema"
    check_supported_layout(levels.schema, operation=COMPACTION)
    appends = plan_append_tasks(levels, options, full=full)
    log.info(
        "planned %d append compaction tasks over %d buckets of %s at snapshot %s",
        len(appends),
        len(levels.buckets),
        levels.table,
        levels.snapshot_id,
    )
    return CompactionPlan(levels.table, levels.snapshot_id, appends, work=APPEND_COMPACTION)


def execute_compaction(
    table: FileStoreTable,
    ref: TableRef,
    plan: CompactionPlan,
    executor: TaskExecutor | None = None,
) -> CompactionResult:
    """Run every task and commit one COMPACT snapshot; the table is unchanged on any failure.

    Postponed rows move first (one task per partition), then every task runs, the moved
    partitions' buckets planned with their new level-0 files.

    Raises no input error; CommitConflictError, CorruptMetadataError, TransientStoreError leave the
    table unchanged.
    """
    start = time.perf_counter()
    if not plan.tasks and not plan.moves:
        return replace(plan.preview(), dry_run=False)
    executor = executor or LocalExecutor()
    with transient_errors(table_unchanged=True):  # the tasks only write new files
        placed = executor.run(table, ref, plan.moves, PLACEMENT)
        try:
            # plan_moved (Optional) is set whenever there are moves to plan after
            moved = tuple(
                t
                for move, writes in zip(plan.moves, placed, strict=True)
                for t in plan.plan_moved(move, writes)  # type: ignore[misc]
            )
            tasks = (*plan.tasks, *moved)
            results = executor.run(table, ref, tasks, plan.work)
        except BaseException:
            discard_placed(table, placed)
            raise
    own = len(plan.tasks)
    changes = [r.change for r in results[:own]]
    changes += moved_changes(table, plan.moves, placed, results[own:])
    outcome = CompactProducer(
        table,
        changes,
        first_sequences={(w.partition, w.bucket): w.first_sequence for ws in placed for w in ws},
    ).commit()
    return CompactionResult(
        table=plan.table,
        snapshot_id=outcome.snapshot.id,
        base_snapshot_id=plan.base_snapshot_id,
        dry_run=False,
        tasks=tasks,
        results=tuple(results),
        moves=plan.moves,
        placed_bytes=sum(f.file_size for ws in placed for w in ws for f in w.files),
        seconds=time.perf_counter() - start,
    )
