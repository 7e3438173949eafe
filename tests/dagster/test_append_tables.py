"""An append table declared in Python: the ingest asset appends Spark rows (duplicates kept),
the `small_files` check warns once Paimon's coordinator would compact, the per-table sensor
requests that compaction and the compaction asset runs it; rows are unchanged throughout."""

from collections import Counter

import pyarrow as pa
import pytest
from dagster import (
    AssetExecutionContext,
    DagsterInstance,
    Definitions,
    StaticPartitionsDefinition,
    build_sensor_context,
    materialize,
)
from dagster_pyspark import LazyPySparkResource

from dagster_paimon.dagster.checks import evaluate_levels
from dagster_paimon.dagster.factory import build_paimon_table_definitions
from dagster_paimon.dagster.resources import PaimonWarehouse
from dagster_paimon.dagster.specs import PaimonTableSpec
from dagster_paimon.lsm.model.levels import read_levels
from tests.lsm.kvmodel import read_rows

pytestmark = [pytest.mark.spark]

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64()),
        pa.field("v", pa.string()),
    ]
)
EVENTS = PaimonTableSpec(
    "logs",
    "events",
    SCHEMA,
    (),
    -1,
    ("dt",),
    partitions_def=StaticPartitionsDefinition(["2024-01-01", "2024-01-02"]),
)


def events_feed(context: AssetExecutionContext, spark):
    """Three rows of the day, the same each run (one Spark partition: one file), kept in
    every copy by an append table."""
    day = context.partition_key
    return spark.createDataFrame(
        [(day, i, f"e{i}") for i in range(3)], "dt string, id long, v string"
    ).coalesce(1)


def test_an_append_table_ingests_and_compacts_through_its_assets(spark, tmp_path):
    warehouse = PaimonWarehouse(uri=str(tmp_path / "wh"))
    resources = {"warehouse": warehouse, "pyspark": LazyPySparkResource(spark_config={})}
    built = build_paimon_table_definitions(EVENTS, events_feed)
    defs = Definitions.merge(built, Definitions(resources=resources))
    assets = {a.key: a for a in built.assets}
    ingest, compaction = assets[EVENTS.asset_key], assets[EVENTS.compaction_asset_key]
    (check,) = built.asset_checks
    assert [k.name for k in check.check_keys] == ["small_files"]
    instance = DagsterInstance.ephemeral()
    for run in range(5):  # five files in the first day: Paimon's coordinator compacts 5 or more
        result = materialize(
            [ingest, check], partition_key="2024-01-01", instance=instance, resources=resources
        )
        (evaluation,) = result.get_asset_check_evaluations()
        assert evaluation.passed == (run < 4), evaluation.description
    assert "5 small files in 1 partitions are due" in (evaluation.description or "")
    assert materialize(
        [ingest], partition_key="2024-01-02", instance=instance, resources=resources
    ).success
    table = warehouse.open_table(EVENTS.identifier)
    model = Counter({("2024-01-01", i, f"e{i}"): 5 for i in range(3)})
    model.update({("2024-01-02", i, f"e{i}"): 1 for i in range(3)})

    def rows() -> Counter:
        return Counter(
            (r["dt"], r["id"], r["v"]) for r in read_rows(warehouse.open_table(EVENTS.identifier))
        )

    assert rows() == model
    sensor = defs.resolve_sensor_def("logs_events_compaction_sensor")
    tick = sensor(build_sensor_context(instance=instance, resources=resources))
    assert [r.partition_key for r in tick.run_requests] == ["2024-01-01"]
    result = materialize(
        [compaction], partition_key="2024-01-01", instance=instance, resources=resources
    )
    assert result.success
    files = {b.partition.label(): len(b.levels.all_files()) for b in read_levels(table).buckets}
    assert files == {"dt=2024-01-01": 1, "dt=2024-01-02": 1}
    assert rows() == model
    assert evaluate_levels(read_levels(table)).passed
