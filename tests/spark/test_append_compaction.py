"""Append-table compaction on Spark executors: the same tasks, rows and commit as locally."""

from __future__ import annotations

import pytest

from dagster_paimon.lsm.compaction.compact import compact_table
from dagster_paimon.spark.executor import SparkExecutor
from dagster_paimon.table import TableRef
from tests.lsm.compaction.test_append import (
    REF,
    bucket_order,
    file_counts,
    make_append_table,
    multiset,
    pypaimon_rows,
    write_commits,
)

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("bucket", [2, -1])
def test_append_tasks_run_on_spark_executors(spark, warehouse, bucket):
    make_append_table(warehouse, bucket=bucket, partitioned=True)
    rows = write_commits(warehouse, 5)
    before = bucket_order(warehouse)
    result = compact_table(TableRef(warehouse, REF), full=True, executor=SparkExecutor(spark))
    assert result.snapshot_id is not None
    assert set(file_counts(warehouse).values()) == {1}
    if bucket > 0:
        assert bucket_order(warehouse) == before
    assert multiset(pypaimon_rows(warehouse)) == multiset(rows)
