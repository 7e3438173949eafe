"""Each table's health check: `lsm_health` (sorted runs and size amplification against Paimon's
limits) on a primary-key table, `small_files` (what Paimon's append compaction would rewrite) on
an append table. Either warns when another writer compacts the table beside us (it is not
write-only and a foreign commit user wrote a recent COMPACT snapshot): both compacting makes that
writer's commits fail and its job restart, which a WARN brings to the operator's eye."""

from collections.abc import Mapping
from typing import Any

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    MetadataValue,
    asset_check,
)

from dagster_paimon.dagster.metadata import NAMESPACE, health_metadata
from dagster_paimon.dagster.specs import PaimonTableSpec
from dagster_paimon.lsm.compaction import plan_append_tasks
from dagster_paimon.lsm.model.compactors import ConflictingCompactors, conflicting_compactors
from dagster_paimon.lsm.model.health import TableHealth
from dagster_paimon.lsm.model.levels import TableLevels, read_levels
from dagster_paimon.unsupported import option_findings

LSM_HEALTH_CHECK = "lsm_health"
NO_FINDINGS: Mapping[str, list[str]] = {}
SMALL_FILES_CHECK = "small_files"


def compactor_warnings(compactors: ConflictingCompactors | None) -> list[str]:
    """The warning a conflicting compactor adds to a check, whatever else it found."""
    return [compactors.warning()] if compactors is not None else []


def census_warnings(findings: Mapping[str, list[str]]) -> list[str]:
    """What the option census finds in the table's options (unsupported.option_findings), as
    warnings: the modes whose operations dagster-paimon refuses, the keys it does not know."""
    found = []
    if findings.get("unsupported"):
        found.append(
            "dagster-paimon refuses some operations: " + "; ".join(findings["unsupported"])
        )
    if findings.get("unknown_options"):
        found.append(
            "options the census does not know (operations warn): "
            + ", ".join(findings["unknown_options"])
        )
    return found


def _census_metadata(findings: Mapping[str, list[str]]) -> dict[str, Any]:
    """The census findings as check metadata, only when there are some."""
    return {f"{NAMESPACE}{k}": MetadataValue.json(v) for k, v in findings.items() if v}


def evaluate_health(
    health: TableHealth,
    trigger: int,
    stop: int,
    max_amp: int,
    findings: Mapping[str, list[str]] = NO_FINDINGS,
) -> AssetCheckResult:
    """Warn above the compaction trigger or beside another compactor; fail above the stop
    trigger or the size-amp limit."""
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
    found = (
        (problems or warnings)
        + compactor_warnings(health.conflicting_compactors)
        + census_warnings(findings)
    )
    return AssetCheckResult(
        passed=not found,
        severity=AssetCheckSeverity.ERROR if problems else AssetCheckSeverity.WARN,
        description="; ".join(found) or "LSM trees within Paimon's limits",
        metadata={**health_metadata(health), **_census_metadata(findings)},
    )


def evaluate_small_files(
    levels: TableLevels,
    compactors: ConflictingCompactors | None = None,
    findings: Mapping[str, list[str]] = NO_FINDINGS,
) -> AssetCheckResult:
    """Warn where Paimon's append compaction would rewrite files now, or beside another
    compactor (an append table has no write stall to fail on)."""
    assert levels.schema is not None  # an append table has a schema
    tasks = plan_append_tasks(levels, levels.schema.options)
    due = sorted({t.partition.label() for t in tasks})
    files = sum(len(t.files) for t in tasks)
    found = compactor_warnings(compactors) + census_warnings(findings)
    if tasks:
        found.insert(
            0,
            f"{files} small files in {len(due)} partitions are due for compaction: "
            + ", ".join(due[:10])
            + (f" and {len(due) - 10} more" if len(due) > 10 else ""),
        )
    return AssetCheckResult(
        passed=not found,
        severity=AssetCheckSeverity.WARN,
        description="; ".join(found) or "no files due for compaction",
        metadata={
            **health_metadata(levels.append_health(compactors)),
            **_census_metadata(findings),
        },
    )


def build_health_check(spec: PaimonTableSpec) -> AssetChecksDefinition:
    """The check of the table's kind: `lsm_health` (primary key) or `small_files` (append)."""
    return build_lsm_health_check(spec) if spec.primary_keys else build_small_files_check(spec)


def build_small_files_check(spec: PaimonTableSpec) -> AssetChecksDefinition:
    """An append table's check, on its asset.

    Raises nothing itself; the check fails with what read_levels raises.
    """

    @asset_check(
        asset=spec.asset_key,
        name=SMALL_FILES_CHECK,
        description="Small files Paimon's append compaction would rewrite now.",
        required_resource_keys={spec.warehouse_key},
    )
    def small_files(context: AssetCheckExecutionContext) -> AssetCheckResult:
        table = spec.warehouse(context.resources).open_table(spec.identifier)
        levels = read_levels(table)
        return evaluate_small_files(
            levels,
            conflicting_compactors(table, levels.snapshot_id),
            option_findings(table.table_schema),
        )

    return small_files


def build_lsm_health_check(spec: PaimonTableSpec) -> AssetChecksDefinition:
    """A primary-key table's check, on its ingest asset.

    Raises nothing itself; the check fails with what read_levels raises.
    """

    @asset_check(
        asset=spec.asset_key,
        name=LSM_HEALTH_CHECK,
        description="Sorted runs and size amplification of every bucket vs Paimon's triggers.",
        required_resource_keys={spec.warehouse_key},
    )
    def lsm_health(context: AssetCheckExecutionContext) -> AssetCheckResult:
        table = spec.warehouse(context.resources).open_table(spec.identifier)
        levels = read_levels(table)
        options = levels.options
        return evaluate_health(
            levels.health(conflicting_compactors(table, levels.snapshot_id)),
            options.num_sorted_run_compaction_trigger,
            options.num_sorted_run_stop_trigger,
            options.max_size_amplification_percent,
            option_findings(table.table_schema),
        )

    return lsm_health
