"""spark.read.format("paimon") against pypaimon's reader, and partition pruning."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest

from dagster_paimon.kinds import health_of
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.snapshot.entries import live_entries
from dagster_paimon.spark.read import plan_splits
from dagster_paimon.table import create_table
from tests.conftest import DV, orders_spec, write_with_pypaimon
from tests.lsm.kvmodel import read_rows, sorted_rows
from tests.lsm.tables import DAYS, KEY, SCHEMA, cdc_table, compact, write_history
from tests.maintenance.appends import (
    ORDER,
    append_table,
    delete_beside,
    delete_positions,
    events,
    file_rows,
    latest,
    model,
    rows,
)

pytestmark = pytest.mark.spark


def spark_rows(df) -> list[dict]:
    return [r.asDict() for r in df.collect()]


@pytest.fixture
def layered(warehouse):
    """A CDC table with deletes spread over level 0 and a compacted higher level."""
    table = cdc_table(warehouse, **{"num-sorted-run.compaction-trigger": "3"})
    model = write_history(table, 4)
    compact(table, warehouse)
    write_history(table, 3, seed=13, model=model)
    return table, model


def test_reads_exactly_the_rows_pypaimon_reads(spark, warehouse, layered):
    table, model = layered
    levels = {f.level for b in read_levels(table).buckets for f in b.levels.all_files()}
    assert 0 in levels and max(levels) > 0

    df = spark.read.format("paimon").option("warehouse", warehouse).load("db.cdc")

    assert df.columns == ["dt", "id", "name", "amount", "op"]
    expected = sorted_rows(read_rows(table), KEY)
    assert sorted_rows(spark_rows(df), KEY) == expected
    assert expected == sorted_rows(model.values(), KEY)
    assert df.rdd.getNumPartitions() == len(read_levels(table).buckets)


def test_the_partition_option_prunes_whole_buckets(spark, warehouse, layered):
    table, _ = layered
    day = "2024-01-02"

    pruned = (
        spark.read.format("paimon")
        .option("warehouse", warehouse)
        .option("partition", f"dt={day}")
        .load("db.cdc")
    )

    buckets = [b for b in read_levels(table).buckets if b.partition.spec["dt"] == day]
    assert pruned.rdd.getNumPartitions() == len(buckets) < len(read_levels(table).buckets)
    expected = [r for r in read_rows(table) if r["dt"] == day]
    assert sorted_rows(spark_rows(pruned), KEY) == sorted_rows(expected, KEY)


def test_where_filters_on_a_reused_dataframe_read_the_right_rows(spark, warehouse, layered):
    table, _ = layered
    df = spark.read.format("paimon").option("warehouse", warehouse).load("db.cdc")
    everything = sorted_rows(read_rows(table), KEY)

    day = [r for r in everything if r["dt"] == "2024-01-02" and r["id"] > 40]
    assert sorted_rows(spark_rows(df.where("dt = '2024-01-02' and id > 40")), KEY) == day
    assert sorted_rows(spark_rows(df), KEY) == everything
    assert spark_rows(df.where("dt in ('1999-01-01')")) == []


def test_an_empty_table_reads_no_rows(spark, warehouse):
    create_table(warehouse, orders_spec())
    df = spark.read.format("paimon").option("warehouse", warehouse).load("db.orders")
    assert df.count() == 0


def test_deletion_vector_tables_read_through_their_vectors(spark, warehouse):
    """Level 0 skipped, vectors applied: Spark reads what pypaimon reads, before and after."""
    table = cdc_table(warehouse, **{"deletion-vectors.enabled": "true"})
    base = [
        {"dt": dt, "id": key, "name": "base", "amount": 0.0, "op": "+I"}
        for dt in DAYS
        for key in range(1000)
    ]
    write_with_pypaimon(table, pa.Table.from_pylist(base, schema=SCHEMA))
    model = {(r["dt"], r["id"]): r for r in base}
    compact(table, warehouse, full=True)
    write_history(table, 2, seed=13, model=model)
    df = spark.read.format("paimon").option("warehouse", warehouse).load("db.cdc")
    invisible_level0 = sorted_rows(read_rows(table), KEY)
    assert sorted_rows(spark_rows(df), KEY) == invisible_level0

    compact(table, warehouse)
    health = health_of(read_levels(table)).aggregate()
    assert health["deleted_rows"] > 0 and health["level0_files"] == 0
    df = spark.read.format("paimon").option("warehouse", warehouse).load("db.cdc")
    assert sorted_rows(spark_rows(df), KEY) == sorted_rows(model.values(), KEY)
    assert sorted_rows(read_rows(table), KEY) == sorted_rows(model.values(), KEY)


def test_a_bucket_whose_vectors_lie_in_several_index_files_reads_their_union(spark, warehouse):
    """Java's unaware-bucket DELETE leaves a partition's vectors in several index files: the
    split applies them all."""
    table = append_table(warehouse, "unaware", partitioned=False, **DV)
    batches = [events(c, 12) for c in range(3)]
    for batch in batches:
        write_with_pypaimon(table, batch)
    f0, f1, _ = sorted(
        (e.file for e in live_entries(table, latest(table))), key=lambda f: f.min_sequence_number
    )
    gone = [file_rows(table, f0.file_name)[0], *file_rows(table, f1.file_name)[1:3]]
    delete_positions(table, {f0.file_name: [0]})
    delete_beside(table, {f1.file_name: [1, 2]})
    (split,) = plan_splits(table)
    assert split.dv_index is not None and len(split.dv_index.files) == 2
    df = spark.read.format("paimon").option("warehouse", warehouse).load("db.events")
    expected = Counter(model(*batches)) - Counter(gone)
    assert Counter(tuple(r[k] for k in ORDER) for r in spark_rows(df)) == expected
    assert Counter(rows(table)) == expected


def test_append_tables_read_every_file_once(spark, warehouse):
    """Append files are all at level 0 and share no key: read whole, one after another (a
    deletion-vector table's level 0 is skipped only for primary-key tables)."""
    plain = append_table(warehouse, "unaware", partitioned=False, name="plain")
    bucketed = append_table(warehouse, "bucketed", name="fixed", **DV)
    batches = [events(c, 12) for c in range(3)]
    for table in (plain, bucketed):
        for batch in batches:
            write_with_pypaimon(table, batch)
        name = table.identifier.get_full_name()
        df = spark.read.format("paimon").option("warehouse", warehouse).load(name)
        read = Counter(tuple(r[k] for k in ORDER) for r in spark_rows(df))
        assert read == Counter(model(*batches)) == Counter(rows(table))
