"""Primary-key tables: one LSM tree per bucket, judged by sorted runs and size amplification
against Paimon's triggers, compacted by Paimon's strategies (postponed rows moved first)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dagster_paimon.kinds.health import BucketHealth, HealthTotals, TableHealth, shared_totals
from dagster_paimon.kinds.kind import Assessment, PartitionKey
from dagster_paimon.lsm.compaction.compact import CompactionPlan, plan_lsm_compaction
from dagster_paimon.lsm.model.compactors import ConflictingCompactors
from dagster_paimon.lsm.model.levels import BucketLevels, TableLevels
from dagster_paimon.lsm.model.options import CompactionOptions
from dagster_paimon.lsm.model.runs import run_size, size_amplification_percent
from dagster_paimon.table import PRIMARY_KEY


def tree_health(tree: BucketLevels) -> BucketHealth:
    """Measure one tree from its sorted runs (Levels.level_sorted_runs: each level-0 file,
    then the non-empty levels), with the rows its deletion vectors mark.

    Size amplification compares file bytes, as Paimon's pickForSizeAmp does: rows a
    deletion vector marks still take their bytes until a compaction rewrites the file.
    """
    runs = tree.levels.level_sorted_runs()
    level0 = sum(1 for r in runs if r.level == 0)
    per_level = {"0": level0}
    per_level.update({str(r.level): len(r.run.files) for r in runs if r.level > 0})
    return BucketHealth(
        partition=tree.partition.spec,
        bucket=tree.bucket,
        files=sum(per_level.values()),
        total_bytes=sum(run_size(r.run) for r in runs),
        rows=sum(f.row_count for r in runs for f in r.run.files),
        deleted_rows=sum(tree.deleted_rows().values()),
        level0_files=level0,
        sorted_runs=len(runs),
        levels={k: v for k, v in per_level.items() if v},
        size_amplification_percent=round(size_amplification_percent(runs), 2),
    )


def needs_compaction(
    bucket: BucketHealth, trigger: int, max_amp: int, *, lift_level0: bool = False
) -> bool:
    """More sorted runs than the trigger, or more size amplification than allowed; for lookup
    tables (`lift_level0`) any level-0 file, as Paimon compacts it up at every trigger
    (ForceUpLevel0Compaction) and readers of deletion-vector tables do not see level 0; for a
    postpone bucket any file, as its rows stay invisible until compaction moves them."""
    if bucket.postponed:
        return bucket.files > 0
    assert bucket.sorted_runs is not None and bucket.size_amplification_percent is not None
    return (
        bucket.sorted_runs > trigger
        or bucket.size_amplification_percent > max_amp
        or (lift_level0 and bool(bucket.level0_files))
    )


def assess_lsm_health(health: TableHealth, trigger: int, stop: int, max_amp: int) -> Assessment:
    """Problems above the stop trigger or the size-amp limit; warnings above the compaction
    trigger, and for rows parked in postpone buckets."""
    aggregate = health.aggregate()
    runs, amp = aggregate["max_sorted_runs"], aggregate["max_size_amplification_percent"]
    problems = []
    if runs > stop:
        problems.append(f"{runs} sorted runs exceed num-sorted-run.stop-trigger {stop}")
    if amp > max_amp:
        problems.append(f"size amplification {amp:.0f}% exceeds {max_amp}%")
    warnings = (
        []
        if problems or runs <= trigger
        else [f"{runs} sorted runs exceed num-sorted-run.compaction-trigger {trigger}"]
    )
    if aggregate["postponed_files"] and not problems:
        warnings.append(
            f"{aggregate['postponed_rows']} rows in {aggregate['postponed_files']} postpone-bucket "
            "files are invisible to readers until a compaction moves them into real buckets"
        )
    return Assessment(health, "LSM trees within Paimon's limits", tuple(problems), tuple(warnings))


class PrimaryKeyKind:
    """The kind of a table with a primary key."""

    name = PRIMARY_KEY
    check_name = "lsm_health"
    check_description = "Sorted runs and size amplification of every bucket vs Paimon's triggers."
    summary_title = "table"
    summary_headers = (
        "partition",
        "bucket",
        "files",
        "bytes",
        "L0",
        "runs",
        "levels",
        "size-amp %",
    )

    def options(self, table_options: Mapping[str, str]) -> CompactionOptions:
        """What the LSM engine reads from the table's options."""
        return CompactionOptions.from_table_options(table_options)

    def health(
        self, levels: TableLevels, compactors: ConflictingCompactors | None = None
    ) -> TableHealth:
        """Per-tree LSM metrics and their totals."""
        return TableHealth(
            table=levels.table,
            snapshot_id=levels.snapshot_id,
            buckets=[tree_health(b) for b in levels.buckets],
            conflicting_compactors=compactors,
            reporter=self,
        )

    def totals(self, buckets: Sequence[BucketHealth]) -> HealthTotals:
        """The trees' figures summed; postpone buckets count as files, bytes, rows and the
        postponed backlog only."""
        trees = [b for b in buckets if not b.postponed]
        parked = [b for b in buckets if b.postponed]
        runs = [b.sorted_runs or 0 for b in trees]
        return HealthTotals(
            buckets=len(trees),
            **shared_totals(buckets),
            level0_files=sum(b.level0_files or 0 for b in trees),
            max_sorted_runs=max(runs, default=0),
            mean_sorted_runs=round(sum(runs) / len(runs), 2) if runs else 0.0,
            max_size_amplification_percent=max(
                (b.size_amplification_percent or 0.0 for b in trees), default=0.0
            ),
            postponed_files=sum(b.files for b in parked),
            postponed_rows=sum(b.rows for b in parked),
        )

    def summary_row(self, bucket: BucketHealth) -> list[str]:
        """A tree's files, bytes, level 0, sorted runs, levels and amplification."""
        return [
            bucket.label(),
            "postpone" if bucket.postponed else str(bucket.bucket),
            str(bucket.files),
            str(bucket.total_bytes),
            str(bucket.level0_files),
            str(bucket.sorted_runs),
            " ".join(f"L{k}:{v}" for k, v in (bucket.levels or {}).items()),
            f"{bucket.size_amplification_percent:.1f}",
        ]

    def summary_footer(self, health: TableHealth) -> list[str]:
        """The totals, and the backlog of postponed rows."""
        s = health.aggregate()
        lines = [
            f"{s['buckets']} buckets, {s['files']} files, {s['total_bytes']} bytes, "
            f"max sorted runs {s['max_sorted_runs']}, "
            f"max size amplification {s['max_size_amplification_percent']:.1f}%, "
            f"{s['deleted_rows']} of {s['rows']} rows deleted by deletion vectors"
        ]
        if s["postponed_files"]:
            lines.append(
                f"{s['postponed_rows']} rows in {s['postponed_files']} postpone-bucket files wait "
                "for a compaction to move them into real buckets"
            )
        return lines

    def assess(
        self, levels: TableLevels, compactors: ConflictingCompactors | None = None
    ) -> Assessment:
        """The trees against the table's compaction trigger, stop trigger and size-amp limit."""
        options = levels.options
        return assess_lsm_health(
            self.health(levels, compactors),
            options.num_sorted_run_compaction_trigger,
            options.num_sorted_run_stop_trigger,
            options.max_size_amplification_percent,
        )

    def plan(self, levels: TableLevels, *, full: bool = False) -> CompactionPlan:
        """Paimon's pick per tree, or full; postponed rows move into real buckets first."""
        return plan_lsm_compaction(levels, full=full)

    def partitions_to_compact(
        self, levels: TableLevels, *, trigger: int | None = None, max_amp: int | None = None
    ) -> set[PartitionKey]:
        """Partitions with at least one bucket over a limit (the limits default to the table's
        own Paimon options)."""
        options = levels.options
        trigger = options.num_sorted_run_compaction_trigger if trigger is None else trigger
        max_amp = options.max_size_amplification_percent if max_amp is None else max_amp
        return {
            tuple(sorted(b.partition.spec.items()))
            for b in levels.buckets
            if needs_compaction(tree_health(b), trigger, max_amp, lift_level0=options.needs_lookup)
        }


PRIMARY_KEY_KIND = PrimaryKeyKind()
