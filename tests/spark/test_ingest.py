"""Ingest through the paimon data source on real tables; pypaimon's reader is the oracle."""

from __future__ import annotations

import datetime
import decimal
import random
from collections import defaultdict
from itertools import pairwise

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.snapshot.entries import live_entries
from dagster_paimon.spark.ingest import (
    ARROW_BYTES_CAP,
    NO_BYTES_CAP,
    batches_capped_by_rows,
    default_parallelism,
    ingest_dataframe,
    ingest_files,
)
from dagster_paimon.table import TableSpec, create_table, open_table
from tests.conftest import (
    ORDERS_SCHEMA,
    committed_files,
    data_files_on_disk,
    orders_batch,
    orders_spec,
    write_with_pypaimon,
)
from tests.lsm.kvmodel import apply_dedup, read_rows, sorted_rows
from tests.lsm.tables import KEY, cdc_batch, cdc_table
from tests.lsm.write.test_dynamic import apply, batch, layout, make_table, readers_agree

pytestmark = pytest.mark.spark

ORDER_KEY = ("dt", "id")
KINDS = ["+I", "+I", "+U", "-U", "-D"]
SPARK_CDC = "dt string, id bigint, name string, amount double, op string"


def changes(seed: int, rows: int = 120, keys: int = 25) -> list[dict]:
    """Inserts, updates and deletes over a small key space: every key changes several times."""
    rng = random.Random(seed)
    return [
        {
            "dt": rng.choice(["2024-01-01", "2024-01-02"]),
            "id": rng.randrange(keys),
            "v": f"s{seed}-{i}",
            "_row_kind": rng.choice(KINDS),
        }
        for i in range(rows)
    ]


def last_wins(rows: list[dict], model: dict | None = None) -> dict:
    model = {} if model is None else model
    kinds = [
        {**{k: v for k, v in r.items() if k != "_row_kind"}, "_kind": r["_row_kind"]} for r in rows
    ]
    apply_dedup(model, kinds, ORDER_KEY)
    return model


def with_kinds(rows: list[dict]) -> pa.Table:
    schema = ORDERS_SCHEMA.append(pa.field("_row_kind", pa.string()))
    return pa.Table.from_pylist(rows, schema=schema)


def test_parquet_with_duplicates_and_deletes_lands_in_level_0_as_one_append(
    spark, warehouse, tmp_path
):
    table = create_table(warehouse, orders_spec(bucket=3))
    rows = changes(seed=1)
    source = tmp_path / "changes.parquet"
    pq.write_table(with_kinds(rows), source)

    report = ingest_files(spark, warehouse, "db.orders", str(source))

    model = last_wins(rows)
    assert sorted_rows(read_rows(table), ORDER_KEY) == sorted_rows(model.values(), ORDER_KEY)
    snapshot = table.snapshot_manager().get_latest_snapshot()
    assert (snapshot.id, snapshot.commit_kind) == (1, "APPEND")
    live = live_entries(table, snapshot)
    assert {e.file.level for e in live} == {0}
    assert {e.file.file_source for e in live} == {0}
    assert report.snapshot_id == 1
    assert report.files_written == len(live) == len(committed_files(table))
    assert report.rows == snapshot.total_record_count == sum(e.file.row_count for e in live)
    deletes = sum(
        1 for r in {(r["dt"], r["id"]): r for r in rows}.values() if r["_row_kind"][0] == "-"
    )
    assert sum(e.file.delete_row_count for e in live) == deletes
    assert data_files_on_disk(table) == committed_files(table)


def test_a_direct_write_resolves_duplicates_in_dataframe_order(spark, warehouse):
    table = create_table(warehouse, orders_spec(bucket=2))
    rows = changes(seed=2, rows=90, keys=10)
    tuples = [(r["dt"], r["id"], r["v"], r["_row_kind"]) for r in rows]
    df = spark.createDataFrame(
        spark.sparkContext.parallelize(tuples, 3),
        "dt string, id bigint, v string, _row_kind string",
    )

    df.write.format("paimon").option("warehouse", warehouse).mode("append").save("db.orders")

    model = last_wins(rows)
    assert sorted_rows(read_rows(table), ORDER_KEY) == sorted_rows(model.values(), ORDER_KEY)
    assert table.snapshot_manager().get_latest_snapshot().commit_kind == "APPEND"


def test_rowkind_field_and_a_second_ingest_continue_each_buckets_sequence(spark, warehouse):
    table = cdc_table(warehouse)
    rng = random.Random(3)
    model: dict = {}
    for commit in range(2):
        rows = cdc_batch(rng, commit)
        ingest_dataframe(spark.createDataFrame(rows, schema=SPARK_CDC), warehouse, "db.cdc")
        apply_dedup(model, [{**r, "_kind": r["op"]} for r in rows], KEY)

    assert sorted_rows(read_rows(table), KEY) == sorted_rows(model.values(), KEY)
    for bucket in read_levels(table).buckets:
        files = sorted(bucket.levels.level0, key=lambda f: f.min_sequence_number)
        for older, newer in pairwise(files):
            assert newer.min_sequence_number > older.max_sequence_number


@pytest.mark.parametrize("own_cap", [None, "16MB"])
def test_the_arrow_byte_cap_is_lifted_for_the_write_only_unless_the_session_sets_one(
    spark, warehouse, own_cap
):
    table = cdc_table(warehouse)
    rows = cdc_batch(random.Random(4), 0)
    if own_cap:
        spark.conf.set(ARROW_BYTES_CAP, own_cap)
    try:
        with batches_capped_by_rows(spark):
            assert spark.conf.get(ARROW_BYTES_CAP) == (own_cap or NO_BYTES_CAP)
        ingest_dataframe(spark.createDataFrame(rows, schema=SPARK_CDC), warehouse, "db.cdc")
        assert spark.conf.get(ARROW_BYTES_CAP, None) == own_cap  # the session's, as it was
    finally:
        spark.conf.unset(ARROW_BYTES_CAP)
    model: dict = {}
    apply_dedup(model, [{**r, "_kind": r["op"]} for r in rows], KEY)
    assert sorted_rows(read_rows(table), KEY) == sorted_rows(model.values(), KEY)


def test_overwrite_replaces_only_the_partitions_written(spark, warehouse):
    table = create_table(warehouse, orders_spec())
    write_with_pypaimon(table, orders_batch(0))
    snapshot = table.snapshot_manager().get_latest_snapshot()
    kept = {
        e.file.file_name
        for e in live_entries(table, snapshot)
        if e.partition.values[0] == "2024-01-02"
    }
    new_rows = [("2024-01-01", i, "fresh") for i in range(5)]

    report = ingest_dataframe(
        spark.createDataFrame(new_rows, "dt string, id bigint, v string"),
        warehouse,
        "db.orders",
        mode="overwrite",
    )

    assert report.commit_kind == "OVERWRITE"
    day_two = [r for r in orders_batch(0).to_pylist() if r["dt"] == "2024-01-02"]
    expected = [{"dt": d, "id": i, "v": v} for d, i, v in new_rows] + day_two
    assert sorted_rows(read_rows(table), ORDER_KEY) == sorted_rows(expected, ORDER_KEY)
    assert kept <= committed_files(table)
    assert sorted_rows(read_rows(table, snapshot_id=1), ORDER_KEY) == sorted_rows(
        orders_batch(0).to_pylist(), ORDER_KEY
    )


BUCKET_KEY_SCHEMA = pa.schema(
    [
        pa.field("region", pa.string(), nullable=False),
        pa.field("id", pa.int32(), nullable=False),
        pa.field("day", pa.date32(), nullable=False),
        pa.field("price", pa.decimal128(12, 2), nullable=False),
        pa.field("at", pa.timestamp("us"), nullable=False),
        pa.field("note", pa.string()),
    ]
)


def buckets_by_key(table, key: tuple[str, ...]) -> dict[tuple, int]:
    """Which bucket pypaimon's reader finds each key in."""
    builder = table.new_read_builder()
    found = {}
    for split in builder.new_scan().plan().splits():
        for row in builder.new_read().to_arrow([split]).to_pylist():
            found[tuple(row[k] for k in key)] = split.bucket
    return found


@pytest.mark.parametrize(
    "key",
    [
        ("region", "id", "day", "price", "at"),  # a timestamp: hashed by the Arrow UDF
        ("region", "id", "day", "price"),  # hashed in the JVM
    ],
)
def test_every_key_lands_in_the_bucket_pypaimons_writer_chooses(spark, warehouse, key):
    rng = random.Random(4)
    rows = [
        {
            "region": rng.choice(["eu", "us-east-1", "ap-southeast-2"]),
            "id": rng.randrange(-1000, 1000),
            "day": datetime.date(2024, 1, 1) + datetime.timedelta(days=rng.randrange(60)),
            "price": decimal.Decimal(rng.randrange(10**6)) / 100,
            "at": datetime.datetime(2024, 1, 1, 12)
            + datetime.timedelta(microseconds=rng.randrange(10**12)),
            "note": "n",
        }
        for _ in range(300)
    ]
    specs = [TableSpec("db", name, BUCKET_KEY_SCHEMA, key, 5) for name in ("ours", "theirs")]
    ours, theirs = (create_table(warehouse, s) for s in specs)
    write_with_pypaimon(theirs, pa.Table.from_pylist(rows, schema=BUCKET_KEY_SCHEMA))
    df = spark.createDataFrame(
        [tuple(r.values()) for r in rows],
        "region string, id int, day date, price decimal(12,2), at timestamp_ntz, note string",
    )

    ingest_dataframe(df, warehouse, "db.ours")

    expected = buckets_by_key(theirs, key)
    assert buckets_by_key(ours, key) == expected
    per_bucket = defaultdict(int)
    for bucket in expected.values():
        per_bucket[bucket] += 1
    assert len(per_bucket) == 5


def test_dynamic_bucket_ingest_keeps_the_hash_index(spark, warehouse):
    """Spark ingest into a bucket=-1 table pypaimon wrote: assigner tasks keep known keys in
    their buckets, new keys fill buckets to the target, HASH files match the rows; pypaimon
    writes on top of our index and reads the model."""
    make_table(warehouse)
    model: dict = {}
    first = batch(range(20), "p0")
    write_with_pypaimon(open_table(warehouse, "db.t"), first)
    apply(model, first)
    before = layout(warehouse)
    ours = batch(range(10, 60), "spark")
    result = ingest_dataframe(spark.createDataFrame(ours.to_pandas()), warehouse, "db.t")
    assert result.snapshot_id is not None
    apply(model, ours)
    after = layout(warehouse)
    assert {k: after[k] for k in before} == before
    readers_agree(warehouse, model)
    more = batch(range(55, 70), "p1")
    write_with_pypaimon(open_table(warehouse, "db.t"), more)
    apply(model, more)
    readers_agree(warehouse, model)
    assert len(layout(warehouse)) == len(model)
    bare = spark.createDataFrame(batch(range(3), "x").to_pandas())
    with pytest.raises(Exception, match="one assigner per key"):
        bare.write.format("paimon").option("warehouse", warehouse).mode("append").save("db.t")


def test_default_parallelism_is_the_contexts_without_asking_it(spark):
    """Read from a range's partitions, as on Spark Connect, which has no SparkContext."""
    assert default_parallelism(spark) == spark.sparkContext.defaultParallelism
