"""Append-table compaction on Spark executors: the same tasks, rows and commit as locally."""

from __future__ import annotations

from collections import Counter

import pytest

from dagster_paimon.paimon_table import PaimonTable
from dagster_paimon.spark.executor import SparkExecutor
from dagster_paimon.table import open_table
from tests.lsm.compaction.test_append import (
    REF,
    bucket_order,
    file_counts,
    make_append_table,
    multiset,
    pypaimon_rows,
    write_commits,
)
from tests.lsm.compaction.test_append_dv import (
    DV,
    bucket_files,
    delete_and_model,
    vectors,
    write,
)
from tests.lsm.compaction.test_append_dv import REF as DV_REF
from tests.maintenance.appends import append_table
from tests.maintenance.appends import rows as table_rows

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("bucket", [2, -1])
def test_append_tasks_run_on_spark_executors(spark, warehouse, bucket):
    make_append_table(warehouse, bucket=bucket, partitioned=True)
    rows = write_commits(warehouse, 5)
    before = bucket_order(warehouse)
    result = PaimonTable.open(warehouse, REF).compact(full=True, executor=SparkExecutor(spark))
    assert result.snapshot_id is not None
    assert set(file_counts(warehouse).values()) == {1}
    if bucket > 0:
        assert bucket_order(warehouse) == before
    assert multiset(pypaimon_rows(warehouse)) == multiset(rows)


def test_vectors_apply_on_spark_executors(spark, warehouse):
    table = append_table(warehouse, "unaware", partitioned=True, **DV)
    everything = write(table, 3)
    deletions = {files[0].file_name: [0, 2] for files in bucket_files(table).values()}
    expected = delete_and_model(table, deletions, everything)
    result = PaimonTable.open(warehouse, DV_REF).compact(executor=SparkExecutor(spark))
    assert {f.file_name for t in result.tasks for f in t.files} == set(deletions)
    table = open_table(warehouse, DV_REF)
    assert vectors(table) == {} and Counter(table_rows(table)) == expected
