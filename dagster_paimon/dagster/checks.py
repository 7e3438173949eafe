"""The `lsm_health` asset check: sorted runs and size amplification against Paimon's limits."""

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    asset_check,
)

from dagster_paimon.dagster.metadata import health_metadata
from dagster_paimon.dagster.specs import PaimonTableSpec
from dagster_paimon.lsm.model.health import TableHealth
from dagster_paimon.lsm.model.levels import read_levels

LSM_HEALTH_CHECK = "lsm_health"


def evaluate_health(health: TableHealth, trigger: int, stop: int, max_amp: int) -> AssetCheckResult:
    """Warn above the compaction trigger; fail above the stop trigger or the size-amp limit."""
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
    return AssetCheckResult(
        passed=not problems and not warnings,
        severity=AssetCheckSeverity.ERROR if problems else AssetCheckSeverity.WARN,
        description="; ".join(problems or warnings) or "LSM trees within Paimon's limits",
        metadata=health_metadata(health),
    )


def build_lsm_health_check(spec: PaimonTableSpec) -> AssetChecksDefinition:
    """One health check per table, on its ingest asset.

    Raises nothing itself; the check fails with what read_levels raises.
    """

    @asset_check(
        asset=spec.asset_key,
        name=LSM_HEALTH_CHECK,
        description="Sorted runs and size amplification of every bucket vs Paimon's triggers.",
        required_resource_keys={spec.warehouse_key},
    )
    def lsm_health(context: AssetCheckExecutionContext) -> AssetCheckResult:
        levels = read_levels(spec.warehouse(context.resources).open_table(spec.identifier))
        options = levels.options
        return evaluate_health(
            levels.health(),
            options.num_sorted_run_compaction_trigger,
            options.num_sorted_run_stop_trigger,
            options.max_size_amplification_percent,
        )

    return lsm_health
