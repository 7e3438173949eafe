"""The example's orders table end to end with Dagster's in-process APIs and local Spark.

The warehouse resource is built as the example deployment builds it, from PAIMON_WAREHOUSE and
the PAIMON_S3_* variables: once for a local directory, once for a bucket on the moto server.
"""

import os
import uuid
from collections.abc import Callable

import pytest
from dagster import DagsterInstance, Definitions, build_sensor_context, materialize
from dagster_pyspark import LazyPySparkResource

from assets.cdc import expected_orders
from assets.shop import ORDERS, orders_feed
from dagster_paimon.dagster.factory import build_paimon_table_definitions
from dagster_paimon.dagster.maintenance import build_maintenance_definitions
from dagster_paimon.dagster.resources import PaimonWarehouse
from dagster_paimon.kinds import health_of
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.lsm.model.options import CompactionOptions
from dagster_paimon.storage.s3 import ENV as S3_ENV
from resources.warehouse import WAREHOUSE_ENV, warehouse_resource
from tests.lsm.kvmodel import read_rows

pytestmark = [pytest.mark.spark, pytest.mark.slow]

INGESTS = {"2024-01-01": 4, "2024-01-02": 1, "2024-01-03": 4}


def day_rows(table, day: str) -> list[dict]:
    rows = [r for r in read_rows(table) if r["dt"] == day]
    return sorted(rows, key=lambda r: r["order_id"])


def snapshot_ids(table) -> list[int]:
    return [s.id for s in table.snapshot_manager().list_snapshots()]


def op_config(op: str, **config) -> dict:
    return {"ops": {op: {"config": config}}}


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
def example_warehouse(request, monkeypatch) -> tuple[PaimonWarehouse, Callable[[], set[str]]]:
    """The example's warehouse resource from its env vars, and a listing of the store's files.

    The files are listed past pypaimon (os.walk, boto3), so a write that silently went to the
    wrong place shows up as missing.
    """
    for var in S3_ENV.values():
        monkeypatch.delenv(var, raising=False)
    if request.param == "local":
        root = request.getfixturevalue("warehouse")
        monkeypatch.setenv(WAREHOUSE_ENV, root)

        def stored() -> set[str]:
            return {os.path.join(d, f) for d, _, files in os.walk(root) for f in files}

    else:
        s3_server = request.getfixturevalue("s3_server")
        bucket = s3_server.create_bucket()
        monkeypatch.setenv(WAREHOUSE_ENV, f"s3://{bucket}/warehouse")
        for name, value in s3_server.paimon_env().items():
            monkeypatch.setenv(name, value)

        def stored() -> set[str]:
            return {f"s3://{bucket}/{key}" for key in s3_server.keys(bucket)}

    return warehouse_resource(), stored


def test_ingest_sensor_compaction_and_maintenance(spark, example_warehouse):
    warehouse, stored = example_warehouse
    resources = {"warehouse": warehouse, "pyspark": LazyPySparkResource(spark_config={})}
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
    table = warehouse.open_table(ORDERS.identifier)
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
            run_config=op_config("shop__orders__compaction", executor=executor),
        )
        assert result.success
    trigger = CompactionOptions.from_table_options(ORDERS.options).num_sorted_run_compaction_trigger
    assert health_of(read_levels(table)).aggregate()["max_sorted_runs"] <= trigger
    again = sensor(build_sensor_context(instance=instance, resources=resources, cursor=tick.cursor))
    assert again.run_requests == []

    maintenance = Definitions.merge(
        build_maintenance_definitions(ORDERS), Definitions(resources=resources)
    )

    def run_job(name: str, **config) -> None:
        job = maintenance.resolve_job_def(f"shop_orders_{name}")
        run_config = op_config(f"shop_orders_{name}_op", **config)
        assert job.execute_in_process(run_config=run_config, instance=instance).success

    # keep only the last two snapshots, however young: the compacted-away files go with the rest
    before = snapshot_ids(table)
    run_job("expire_snapshots", retain_min=1, retain_max=2)
    assert len(before) > 2
    assert snapshot_ids(table) == before[-2:]

    run_job("compact_manifests")

    # a data file no snapshot references, as a crashed writer leaves behind; orphans must be
    # older than the cutoff, and this one is older than a millisecond by the time the job lists
    stray = f"{table.table_path}/dt=2024-01-01/bucket-0/data-{uuid.uuid4()}-0.parquet"
    table.file_io.write_file(stray, "x", overwrite=False)
    files = stored()
    assert stray in files
    run_job("remove_orphans", older_than="1 ms")
    assert not table.file_io.exists(stray)
    assert stored() == files - {stray}

    for day in INGESTS:
        assert day_rows(table, day) == expected_orders(day)
    latest = snapshot_ids(table)[-1]
    assert f"{warehouse.uri}/shop.db/orders/snapshot/snapshot-{latest}" in stored()
