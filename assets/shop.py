"""The shop's tables: orders (deduplicate CDC) and customer profiles (partial-update)."""

import random

import pyarrow as pa
import pyarrow.compute as pc
from dagster import AssetExecutionContext, DailyPartitionsDefinition
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from assets.cdc import ORDER_EVENTS, order_events
from dagster_paimon.dagster.specs import PaimonTableSpec

DAYS = DailyPartitionsDefinition(start_date="2024-01-01")

ORDERS = PaimonTableSpec(
    database="shop",
    name="orders",
    schema=pa.schema([f for f in ORDER_EVENTS if f.name != "_row_kind"]),
    primary_keys=("dt", "order_id"),
    partition_keys=("dt",),
    bucket=4,
    options={"merge-engine": "deduplicate", "num-sorted-run.compaction-trigger": "3"},
    partitions_def=DAYS,
    description="Orders by day, upserted from a CDC feed (+I/-U/+U/-D); last write wins.",
)

PROFILES = PaimonTableSpec(
    database="shop",
    name="customer_profiles",
    schema=pa.schema(
        [
            pa.field("dt", pa.string(), nullable=False),
            pa.field("customer_id", pa.int64(), nullable=False),
            pa.field("email", pa.string()),
            pa.field("tier", pa.string()),
            pa.field("last_order_id", pa.int64()),
            pa.field("last_order_amount", pa.float64()),
        ]
    ),
    primary_keys=("dt", "customer_id"),
    partition_keys=("dt",),
    bucket=2,
    options={"merge-engine": "partial-update", "num-sorted-run.compaction-trigger": "3"},
    partitions_def=DAYS,
    description="Daily customer profiles assembled column by column from two feeds.",
)


def orders_feed(context: AssetExecutionContext, spark: SparkSession) -> DataFrame:
    """The day's order events; `_row_kind` tells the table which are updates and deletes.

    Spark reads naive Arrow timestamps as local-zone timestamps; the table's are zone-less.
    """
    events = spark.createDataFrame(order_events(context.partition_key))
    return events.withColumn("updated_at", F.col("updated_at").cast("timestamp_ntz"))


def profiles_feed(context: AssetExecutionContext, spark: SparkSession) -> DataFrame:
    """Half the columns from the CRM, half from the day's orders; partial-update merges them."""
    day = context.partition_key
    events = order_events(day)
    orders = events.filter(pc.equal(events["_row_kind"], "+I"))
    rng = random.Random(f"crm-{day}")
    customers = sorted(set(orders["customer_id"].to_pylist()))
    crm = pa.table(
        {
            "dt": [day] * len(customers),
            "customer_id": customers,
            "email": [f"c{c}@example.com" for c in customers],
            "tier": [rng.choice(["bronze", "silver", "gold"]) for _ in customers],
            "last_order_id": pa.nulls(len(customers), pa.int64()),
            "last_order_amount": pa.nulls(len(customers), pa.float64()),
        },
        schema=PROFILES.schema,
    )
    last = orders.group_by("customer_id").aggregate([("order_id", "max")])
    amounts = dict(zip(orders["order_id"].to_pylist(), orders["amount"].to_pylist(), strict=True))
    order_side = pa.table(
        {
            "dt": [day] * last.num_rows,
            "customer_id": last["customer_id"],
            "email": pa.nulls(last.num_rows, pa.string()),
            "tier": pa.nulls(last.num_rows, pa.string()),
            "last_order_id": last["order_id_max"],
            "last_order_amount": [amounts[o] for o in last["order_id_max"].to_pylist()],
        },
        schema=PROFILES.schema,
    )
    return spark.createDataFrame(pa.concat_tables([crm, order_side]))
