"""The compaction asset: universal (or full) compaction of one partition's buckets."""

from dagster import AssetExecutionContext, AssetsDefinition, MaterializeResult, asset

from dagster_paimon.dagster.config import arguments, config_class
from dagster_paimon.dagster.metadata import health_metadata, metric_metadata
from dagster_paimon.dagster.retries import retried_when_transient
from dagster_paimon.dagster.specs import PaimonTableSpec
from dagster_paimon.operations import operation

COMPACT = operation("compact")
CompactionConfig = config_class("compact", leave_out=("partition",))
"""Universal or full compaction, here or on Spark; the partition is the asset's."""


def build_compaction_asset(spec: PaimonTableSpec) -> AssetsDefinition:
    """<db>/<table>/compaction, downstream of the ingest asset with the same partitions.

    Needs the spec's warehouse resource and its PySpark resource, which is only started when
    the run's config asks for the Spark executor (use LazyPySparkResource).

    Raises nothing for a valid PaimonTableSpec; a run fails with what PaimonTable.compact
    raises.
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
    # dagster reads the config class from this annotation at run time: a variable, so no static
    # type
    def compaction(context: AssetExecutionContext, config: CompactionConfig) -> MaterializeResult:  # type: ignore[valid-type]
        warehouse = spec.warehouse(context.resources)
        partition = spec.paimon_partition(
            context.partition_key if context.has_partition_key else None
        )
        from dagster_paimon.spark.executor import executor_named

        given = arguments(COMPACT, config)
        session = lambda: getattr(context.resources, spec.spark_key).spark_session  # noqa: E731
        given["executor"] = executor_named(given["executor"], session)
        with retried_when_transient(context.op_execution_context):
            table = warehouse.table(spec.identifier)
            report = table.compact(partition=partition, **given)
            health = table.health(partition=partition)
        context.log.info(report.summary())
        return MaterializeResult(
            # the compaction's snapshot id wins over the health's (None when nothing was done)
            metadata={**health_metadata(health), **metric_metadata(report.metrics())}
        )

    return compaction
