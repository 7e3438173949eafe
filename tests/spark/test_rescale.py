"""Rescale with its source buckets rewritten on Spark executors: the same rows as in process."""

from __future__ import annotations

import pytest

from dagster_paimon.paimon_table import PaimonTable
from dagster_paimon.snapshot.entries import live_entries
from dagster_paimon.spark.executor import SparkExecutor
from dagster_paimon.table import open_table
from tests.lsm.kvmodel import read_rows
from tests.lsm.tables import cdc_table, write_history

pytestmark = pytest.mark.spark


def test_spark_rescale_matches_the_model(spark, tmp_path):
    warehouse = str(tmp_path / "wh")
    model = write_history(cdc_table(warehouse, bucket=2), commits=5)
    result = PaimonTable.open(warehouse, "db.cdc").rescale(
        bucket_num=3, executor=SparkExecutor(spark)
    )
    table = open_table(warehouse, "db.cdc")
    assert result.snapshot_id == table.snapshot_manager().get_latest_snapshot().id
    assert {(r["dt"], r["id"]): r for r in read_rows(table)} == model
    live = live_entries(table, table.snapshot_manager().get_latest_snapshot())
    assert {e.total_buckets for e in live} == {3} and all(e.bucket < 3 for e in live)
