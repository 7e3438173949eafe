"""Spark ingest into append tables: executors write each task's rows, the driver commits once;
pypaimon reads exactly the rows, bucketed rows where pypaimon's own writer puts them."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest

from dagster_paimon.spark.ingest import ingest_dataframe
from dagster_paimon.table import open_table
from tests.conftest import write_with_pypaimon
from tests.ingest.test_append import (
    BUCKETED,
    bucket_ids,
    create_log,
    ingest_checked,
    live,
    log_batch,
    multiset,
)
from tests.lsm.kvmodel import read_rows

pytestmark = pytest.mark.spark

SPARK_LOG = "dt string, id bigint, v string"


def frame(spark, data: pa.Table, partitions: int = 3):
    """The rows as a DataFrame spread over several Spark partitions."""
    return spark.createDataFrame(data.to_pylist(), SPARK_LOG).repartition(partitions)


def test_bucketed_append_and_overwrite_match_pypaimons_writer(spark, warehouse):
    create_log(warehouse, "log", partitioned=True, **BUCKETED)
    twin = create_log(warehouse, "twin", partitioned=True, **BUCKETED)
    model: Counter = Counter()
    for commit in range(2):
        result = ingest_dataframe(frame(spark, log_batch(commit)), warehouse, "db.log")
        assert (result.commit_kind, result.rows) == ("APPEND", 30)
        write_with_pypaimon(twin, log_batch(commit))
        model += multiset(log_batch(commit).to_pylist())
    ingest_checked(warehouse, "db.log", log_batch(2), unaware=False)  # continues Spark's numbers
    write_with_pypaimon(twin, log_batch(2))
    model += multiset(log_batch(2).to_pylist())
    assert bucket_ids(warehouse, "db.log") == bucket_ids(warehouse, "db.twin")
    assert multiset(read_rows(open_table(warehouse, "db.log"))) == model

    day = [r for r in log_batch(3).to_pylist() if r["dt"] == "2024-01-01"]
    result = ingest_dataframe(
        spark.createDataFrame(day, SPARK_LOG), warehouse, "db.log", mode="overwrite"
    )
    assert result.commit_kind == "OVERWRITE"
    kept = Counter({r: n for r, n in model.items() if dict(r)["dt"] != "2024-01-01"})
    assert multiset(read_rows(open_table(warehouse, "db.log"))) == kept + multiset(day)


def test_unaware_tasks_write_bucket_0_side_by_side(spark, warehouse):
    create_log(warehouse, "log", partitioned=False)
    data = pa.concat_tables([log_batch(0), log_batch(1)])
    result = ingest_dataframe(frame(spark, data), warehouse, "db.log")
    assert (result.commit_kind, result.rows) == ("APPEND", 60)
    entries = live(warehouse, "db.log")
    assert {(e.bucket, e.total_buckets) for e in entries} == {(0, -1)}
    assert all(e.file.min_sequence_number == 0 for e in entries)  # every writer numbers from 0
    assert multiset(read_rows(open_table(warehouse, "db.log"))) == multiset(data.to_pylist())
