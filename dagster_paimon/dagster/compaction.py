"""The compaction asset: universal (or full) compaction of one partition's buckets."""

from typing import Any, Literal

from dagster import (
    AssetExecutionContext,
    AssetsDefinition,
    Config,
    MaterializeResult,
    ResourceParam,
    asset,
)
from pydantic import Field

from dagster_paimon.dagster.metadata import health_metadata, metric_metadata
from dagster_paimon.dagster.resources import PaimonWarehouse
from dagster_paimon.dagster.specs import PaimonTableSpec
from dagster_paimon.lsm.compaction import compact_table
from dagster_paimon.lsm.model.levels import read_levels


class CompactionConfig(Config):
    """How to compact: Paimon's universal pick, or everything into the highest level."""

    full: bool = Field(default=False, description="Full compaction into the highest level.")
    executor: Literal["local", "spark"] = Field(
        default="local", description="Run rewrite tasks in-process or on Spark executors."
    )


def build_compaction_asset(spec: PaimonTableSpec) -> AssetsDefinition:
    """<db>/<table>/compaction, downstream of the ingest asset with the same partitions.

    Needs the `warehouse` resource and a `pyspark` resource, which is only started when the
    run's config asks for the Spark executor (use LazyPySparkResource).
    """

    @asset(
        key=spec.compaction_asset_key,
        deps=[spec.asset_key],
        partitions_def=spec.partitions_def,
        pool=spec.pool,
        group_name=spec.database,
        kinds={"paimon"},
        description=f"Compaction of {spec.identifier}: merges sorted runs per bucket.",
    )
    def compaction(
        context: AssetExecutionContext,
        config: CompactionConfig,
        warehouse: PaimonWarehouse,
        pyspark: ResourceParam[Any],
    ) -> MaterializeResult:
        table = warehouse.open_table(spec.identifier)
        partition = spec.paimon_partition(
            context.partition_key if context.has_partition_key else None
        )
        executor = None
        if config.executor == "spark":
            from dagster_paimon.spark.executor import SparkExecutor

            executor = SparkExecutor(pyspark.spark_session)
        report = compact_table(
            table,
            warehouse.table_ref(spec.identifier),
            full=config.full,
            partition=partition,
            executor=executor,
        )
        context.log.info(report.summary())
        health = read_levels(table, partition=partition).health()
        return MaterializeResult(
            metadata={**metric_metadata(report.metrics()), **health_metadata(health)}
        )

    return compaction
