"""The compaction asset: universal (or full) compaction of one partition's buckets."""

from typing import Literal

from dagster import AssetExecutionContext, AssetsDefinition, Config, MaterializeResult, asset
from pydantic import Field

from dagster_paimon.dagster.metadata import health_metadata, metric_metadata
from dagster_paimon.dagster.retries import retried_when_transient
from dagster_paimon.dagster.specs import PaimonTableSpec
from dagster_paimon.kinds import compact_open_table, health_of
from dagster_paimon.lsm.model.levels import read_levels


class CompactionConfig(Config):
    """How to compact: Paimon's universal pick, or everything into the highest level."""

    full: bool = Field(default=False, description="Full compaction into the highest level.")
    executor: Literal["local", "spark"] = Field(
        default="local", description="Run rewrite tasks in-process or on Spark executors."
    )


def build_compaction_asset(spec: PaimonTableSpec) -> AssetsDefinition:
    """<db>/<table>/compaction, downstream of the ingest asset with the same partitions.

    Needs the spec's warehouse resource and its PySpark resource, which is only started when
    the run's config asks for the Spark executor (use LazyPySparkResource).

    Raises nothing for a valid PaimonTableSpec; a run fails with what compact_table raises.
    """

    @asset(
        key=spec.compaction_asset_key,
        deps=[spec.asset_key],
        partitions_def=spec.partitions_def,
        pool=spec.pool,
        group_name=spec.database,
        kinds={"paimon"},
        description=f"Compaction of {spec.identifier}: merges sorted runs per bucket.",
        required_resource_keys={spec.warehouse_key, spec.spark_key},
    )
    def compaction(context: AssetExecutionContext, config: CompactionConfig) -> MaterializeResult:
        warehouse = spec.warehouse(context.resources)
        partition = spec.paimon_partition(
            context.partition_key if context.has_partition_key else None
        )
        executor = None
        if config.executor == "spark":
            from dagster_paimon.spark.executor import SparkExecutor

            executor = SparkExecutor(getattr(context.resources, spec.spark_key).spark_session)
        with retried_when_transient(context.op_execution_context):
            table = warehouse.open_table(spec.identifier)
            report = compact_open_table(
                table,
                warehouse.table_ref(spec.identifier),
                full=config.full,
                partition=partition,
                executor=executor,
            )
            health = health_of(read_levels(table, partition=partition))
        context.log.info(report.summary())
        return MaterializeResult(
            # the compaction's snapshot id wins over the health's (None when nothing was done)
            metadata={**health_metadata(health), **metric_metadata(report.metrics())}
        )

    return compaction
