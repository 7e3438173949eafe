"""The shop's orders table: a deduplicate primary-key table partitioned by day."""

import pyarrow as pa
from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset

from dagster_paimon.lsm.levels import read_levels
from dagster_paimon.table import TableSpec, create_table
from resources.warehouse import warehouse_uri

ORDERS = TableSpec(
    database="shop",
    name="orders",
    schema=pa.schema(
        [
            pa.field("dt", pa.string(), nullable=False),
            pa.field("order_id", pa.int64(), nullable=False),
            pa.field("customer_id", pa.int64()),
            pa.field("status", pa.string()),
            pa.field("amount", pa.float64()),
            pa.field("updated_at", pa.timestamp("us")),
        ]
    ),
    primary_keys=("dt", "order_id"),
    partition_keys=("dt",),
    bucket=4,
    options={"merge-engine": "deduplicate", "num-sorted-run.compaction-trigger": "5"},
)


@asset(key=["shop", "orders"], group_name="shop")
def orders_table(context: AssetExecutionContext) -> MaterializeResult:
    """Create shop.orders if absent and record its LSM health."""
    table = create_table(warehouse_uri(), ORDERS)
    summary = read_levels(table).health().summary()
    context.log.info(f"shop.orders health: {summary}")
    return MaterializeResult(
        metadata={
            "warehouse": MetadataValue.path(warehouse_uri()),
            "files": summary["files"],
            "total_bytes": summary["total_bytes"],
            "max_sorted_runs": summary["max_sorted_runs"],
            "max_size_amplification_percent": summary["max_size_amplification_percent"],
        }
    )
