"""One call turns a table spec and an ingest function into every Dagster definition it needs."""

from typing import Literal

from dagster import Definitions, define_asset_job

from dagster_paimon.dagster.checks import build_health_check
from dagster_paimon.dagster.compaction import build_compaction_asset
from dagster_paimon.dagster.ingest import IngestFunction, build_ingest_asset
from dagster_paimon.dagster.sensors import build_compaction_sensor
from dagster_paimon.dagster.specs import PaimonTableSpec


def compaction_job_name(spec: PaimonTableSpec) -> str:
    """The job the sensor launches for one table."""
    return f"compact_{spec.database}_{spec.name}"


def build_paimon_table_definitions(
    spec: PaimonTableSpec,
    ingest: IngestFunction,
    *,
    mode: Literal["append", "overwrite"] = "append",
    single_run_backfill: bool = False,
    sensor_interval_seconds: int = 60,
) -> Definitions:
    """Ingest asset, compaction asset, lsm_health check, compaction job and health sensor."""
    compaction = build_compaction_asset(spec)
    job = define_asset_job(compaction_job_name(spec), selection=[spec.compaction_asset_key])
    return Definitions(
        assets=[
            build_ingest_asset(spec, ingest, mode=mode, single_run_backfill=single_run_backfill),
            compaction,
        ],
        asset_checks=[build_health_check(spec)],
        jobs=[job],
        sensors=[build_compaction_sensor(spec, job, sensor_interval_seconds)],
    )
