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
from dagster_paimon.kinds import (
    APPEND_KIND,
    PRIMARY_KEY_KIND,
    Assessment,
    TableHealth,
    TableKind,
    assess_lsm_health,
    kind_for_keys,
    kind_of,
)
from dagster_paimon.lsm.model.compactors import ConflictingCompactors
from dagster_paimon.lsm.model.levels import TableLevels

NO_FINDINGS: Mapping[str, list[str]] = {}


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


def check_result(
    assessment: Assessment, findings: Mapping[str, list[str]] = NO_FINDINGS
) -> AssetCheckResult:
    """Fail on the kind's problems; warn on its warnings, beside another compactor, or on what
    the option census finds."""
    health = assessment.health
    found = (
        assessment.findings()
        + compactor_warnings(health.conflicting_compactors)
        + census_warnings(findings)
    )
    return AssetCheckResult(
        passed=not found,
        severity=AssetCheckSeverity.ERROR if assessment.problems else AssetCheckSeverity.WARN,
        description="; ".join(found) or assessment.healthy,
        metadata={**health_metadata(health), **_census_metadata(findings)},
    )


def evaluate_health(
    health: TableHealth,
    trigger: int,
    stop: int,
    max_amp: int,
    findings: Mapping[str, list[str]] = NO_FINDINGS,
) -> AssetCheckResult:
    """A primary-key table's check against given limits: warn above the compaction trigger or
    beside another compactor; fail above the stop trigger or the size-amp limit."""
    return check_result(assess_lsm_health(health, trigger, stop, max_amp), findings)


def evaluate_levels(
    levels: TableLevels,
    compactors: ConflictingCompactors | None = None,
    findings: Mapping[str, list[str]] = NO_FINDINGS,
) -> AssetCheckResult:
    """The check of the table's kind against the table's own limits."""
    return check_result(kind_of(levels.schema).assess(levels, compactors), findings)


def build_health_check(spec: PaimonTableSpec) -> AssetChecksDefinition:
    """The check of the table's kind: `lsm_health` (primary key) or `small_files` (append)."""
    return _build_check(spec, kind_for_keys(spec.primary_keys))


def build_small_files_check(spec: PaimonTableSpec) -> AssetChecksDefinition:
    """An append table's check (`small_files`), on its asset."""
    return _build_check(spec, APPEND_KIND)


def build_lsm_health_check(spec: PaimonTableSpec) -> AssetChecksDefinition:
    """A primary-key table's check (`lsm_health`), on its ingest asset."""
    return _build_check(spec, PRIMARY_KEY_KIND)


def _build_check(spec: PaimonTableSpec, kind: TableKind) -> AssetChecksDefinition:
    """The check `kind` names, on the table's asset.

    Raises nothing itself; the check fails with what read_levels raises.
    """

    @asset_check(
        asset=spec.asset_key,
        name=kind.check_name,
        description=kind.check_description,
        required_resource_keys={spec.warehouse_key},
    )
    def health(context: AssetCheckExecutionContext) -> AssetCheckResult:
        table = spec.warehouse(context.resources).table(spec.identifier)
        return check_result(table.assess(), table.option_findings())

    return health
