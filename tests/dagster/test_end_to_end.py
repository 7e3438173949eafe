"""The example's orders table end to end with Dagster's in-process APIs and local Spark."""

import pytest
from dagster import DagsterInstance, Definitions, build_sensor_context, materialize
from dagster_pyspark import LazyPySparkResource

from assets.cdc import expected_orders
from assets.shop import ORDERS, orders_feed
from dagster_paimon.dagster.factory import build_paimon_table_definitions
from dagster_paimon.dagster.maintenance import build_maintenance_definitions
from dagster_paimon.dagster.resources import PaimonWarehouse
from dagster_paimon.lsm.levels import read_levels
from tests.lsm.kvmodel import read_rows

pytestmark = [pytest.mark.spark, pytest.mark.slow]

INGESTS = {"2024-01-01": 4, "2024-01-02": 1, "2024-01-03": 4}


def day_rows(table, day: str) -> list[dict]:
    rows = [r for r in read_rows(table) if r["dt"] == day]
    return sorted(rows, key=lambda r: r["order_id"])


def test_ingest_sensor_compaction_and_maintenance(spark, warehouse):
    warehouse_resource = PaimonWarehouse(uri=warehouse)
    resources = {"warehouse": warehouse_resource, "pyspark": LazyPySparkResource(spark_config={})}
    table_defs = Definitions.merge(
        build_paimon_table_definitions(ORDERS, orders_feed), Definitions(resources=resources)
    )
    ingest = table_defs.resolve_assets_def(ORDERS.asset_key)
    compaction = table_defs.resolve_assets_def(ORDERS.compaction_asset_key)
    instance = DagsterInstance.ephemeral()

    for day, times in INGESTS.items():
        for _ in range(times):
            result = materialize([ingest], partition_key=day, instance=instance)
            assert result.success
    table = warehouse_resource.open_table(ORDERS.identifier)
    for day in INGESTS:
        assert day_rows(table, day) == expected_orders(day)

    sensor = table_defs.resolve_sensor_def("shop_orders_compaction_sensor")
    tick = sensor(build_sensor_context(instance=instance, resources=resources))
    assert sorted(r.partition_key for r in tick.run_requests) == ["2024-01-01", "2024-01-03"]

    for request in tick.run_requests:
        executor = "spark" if request.partition_key == "2024-01-03" else "local"
        result = materialize(
            [compaction],
            partition_key=request.partition_key,
            instance=instance,
            run_config={"ops": {"shop__orders__compaction": {"config": {"executor": executor}}}},
        )
        assert result.success
    trigger = ORDERS.compaction_options.num_sorted_run_compaction_trigger
    assert read_levels(table).health().summary()["max_sorted_runs"] <= trigger
    again = sensor(build_sensor_context(instance=instance, resources=resources, cursor=tick.cursor))
    assert again.run_requests == []

    maintenance = Definitions.merge(
        build_maintenance_definitions(ORDERS), Definitions(resources=resources)
    )
    for job in ("shop_orders_expire_snapshots", "shop_orders_compact_manifests"):
        assert maintenance.resolve_job_def(job).execute_in_process(instance=instance).success
    for day in INGESTS:
        assert day_rows(table, day) == expected_orders(day)
