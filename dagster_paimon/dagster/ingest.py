"""The ingest asset: the user's Spark DataFrame lands in the table as level-0 files."""

from collections.abc import Callable
from typing import Literal, cast

from dagster import (
    AssetExecutionContext,
    AssetsDefinition,
    BackfillPolicy,
    MaterializeResult,
    asset,
)
from pyspark.sql import DataFrame, SparkSession

from dagster_paimon.dagster.metadata import column_schema, health_metadata, metric_metadata
from dagster_paimon.dagster.specs import PaimonTableSpec
from dagster_paimon.spark.ingest import ingest_dataframe
from dagster_paimon.spark.source import register

IngestFunction = Callable[[AssetExecutionContext, SparkSession], DataFrame]


def _partition_frames(
    context: AssetExecutionContext, spark: SparkSession, fn: IngestFunction
) -> DataFrame:
    """The user's DataFrame; a single-run backfill over a range unions one per partition key."""
    if not context.has_partition_key_range or len(context.partition_keys) <= 1:
        return fn(context, spark)
    frames = []
    for key in context.partition_keys:
        context.log.info(f"building the DataFrame of partition {key}")
        keyed = cast(AssetExecutionContext, _KeyedContext(context, key))  # a stand-in proxy
        frames.append(fn(keyed, spark))
    combined = frames[0]
    for frame in frames[1:]:
        combined = combined.unionByName(frame)
    return combined


class _KeyedContext:
    """The asset context as one partition of a range sees it: partition_key is that key."""

    def __init__(self, context: AssetExecutionContext, key: str):
        self._context = context
        self.partition_key = key

    def __getattr__(self, name: str):
        """Everything else comes from the real context."""
        return getattr(self._context, name)


def build_ingest_asset(
    spec: PaimonTableSpec,
    fn: IngestFunction,
    *,
    mode: Literal["append", "overwrite"] = "append",
    single_run_backfill: bool = False,
) -> AssetsDefinition:
    """<db>/<table>: create the table on first run, then write `fn`'s DataFrame.

    Needs the spec's warehouse resource and its PySpark resource (dagster-pyspark's
    PySparkResource or LazyPySparkResource).
    """

    @asset(
        key=spec.asset_key,
        partitions_def=spec.partitions_def,
        backfill_policy=BackfillPolicy.single_run() if single_run_backfill else None,
        group_name=spec.database,
        kinds={"paimon", "spark"},
        description=spec.description or f"Primary-key Paimon table {spec.identifier}.",
        metadata={"dagster/column_schema": column_schema(spec.schema, spec.primary_keys)},
        required_resource_keys={spec.warehouse_key, spec.spark_key},
    )
    def ingest(context: AssetExecutionContext) -> MaterializeResult:
        warehouse = spec.warehouse(context.resources)
        warehouse.create_table(spec)
        spark = getattr(context.resources, spec.spark_key).spark_session
        register(spark)
        report = ingest_dataframe(
            _partition_frames(context, spark, fn),
            warehouse.uri,
            spec.identifier,
            mode=mode,
            catalog_options=warehouse.paimon_options(),
        )
        context.log.info(report.summary())
        partition = (
            spec.paimon_partition(context.partition_key)
            if context.has_partition_key and not context.has_partition_key_range
            else None
        )
        health = warehouse.table(spec.identifier).health(partition=partition)
        return MaterializeResult(
            metadata={
                "dagster/row_count": report.rows,
                "dagster/column_schema": column_schema(spec.schema, spec.primary_keys),
                **health_metadata(health),
                # the ingest's snapshot id wins over the health's
                **metric_metadata({**report.metrics(), "commit_kind": report.commit_kind}),
            }
        )

    return ingest
