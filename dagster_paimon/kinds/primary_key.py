"""Primary-key tables: one LSM tree per bucket, judged by sorted runs and size amplification
against Paimon's triggers, compacted by Paimon's strategies (postponed rows moved first)."""

from __future__ import annotations

from dagster_paimon.kinds.kind import Assessment, PartitionKey
from dagster_paimon.lsm.compaction.compact import CompactionPlan, plan_lsm_compaction
from dagster_paimon.lsm.model.compactors import ConflictingCompactors
from dagster_paimon.lsm.model.health import BucketHealth, TableHealth
from dagster_paimon.lsm.model.levels import TableLevels
from dagster_paimon.table import PRIMARY_KEY


def needs_compaction(
    bucket: BucketHealth, trigger: int, max_amp: int, *, lift_level0: bool = False
) -> bool:
    """More sorted runs than the trigger, or more size amplification than allowed; for lookup
    tables (`lift_level0`) any level-0 file, as Paimon compacts it up at every trigger
    (ForceUpLevel0Compaction) and readers of deletion-vector tables do not see level 0; for a
    postpone bucket any file, as its rows stay invisible until compaction moves them."""
    if bucket.postponed:
        return bucket.files > 0
    return (
        bucket.sorted_runs > trigger
        or bucket.size_amplification_percent > max_amp
        or (lift_level0 and bucket.level0_files > 0)
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

    def health(
        self, levels: TableLevels, compactors: ConflictingCompactors | None = None
    ) -> TableHealth:
        """Per-tree LSM metrics and their totals."""
        return levels.health(compactors)

    def assess(
        self, levels: TableLevels, compactors: ConflictingCompactors | None = None
    ) -> Assessment:
        """The trees against the table's compaction trigger, stop trigger and size-amp limit."""
        options = levels.options
        return assess_lsm_health(
            levels.health(compactors),
            options.num_sorted_run_compaction_trigger,
            options.num_sorted_run_stop_trigger,
            options.max_size_amplification_percent,
        )

    def plan_compaction(self, levels: TableLevels, *, full: bool = False) -> CompactionPlan:
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
            if needs_compaction(b.health(), trigger, max_amp, lift_level0=options.needs_lookup)
        }


PRIMARY_KEY_KIND = PrimaryKeyKind()
