"""Postpone-bucket tables (`bucket` = -2): compaction moves parked rows into real buckets.

pypaimon parks every commit in `bucket-postpone` (Avro files, invisible to readers). Our
compaction gives each partition its bucket count as Paimon's PostponeUtils does, replays the
parked files writer by writer, hashes rows into buckets with fresh sequence numbers, compacts
those buckets and deletes the parked files in one COMPACT snapshot. pypaimon and pypaimon-rust
then read exactly the model.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from pypaimon_rust.datafusion import SQLContext

from dagster_paimon.errors import InvalidOptionError
from dagster_paimon.io.read import read_file
from dagster_paimon.kinds import health_of, kind_of
from dagster_paimon.lsm.compaction.postpone import replay_order, writer_prefix
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.lsm.write.bucket import binary_row_hashes, buckets_of
from dagster_paimon.options import POSTPONE_BUCKET
from dagster_paimon.table import TableSpec, create_table, open_table
from tests.conftest import committed_files, data_files_on_disk, write_with_pypaimon
from tests.lsm.kvmodel import read_rows
from tests.lsm.tables import compact_db_t as compact
from tests.tablefiles import load_snapshot

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        pa.field("v", pa.string()),
    ]
)


def make_table(warehouse: str, **options: str):
    """A partitioned postpone-bucket table."""
    spec = TableSpec("db", "t", SCHEMA, ("dt", "id"), POSTPONE_BUCKET, ("dt",), options)
    return create_table(warehouse, spec)


def batch(ids: range, tag: str) -> pa.Table:
    """Rows alternating between two days."""
    ids = list(ids)
    return pa.table(
        {
            "dt": ["a", "b"] * (len(ids) // 2) + ["a"] * (len(ids) % 2),
            "id": ids,
            "v": [tag] * len(ids),
        },
        schema=SCHEMA,
    )


class Model:
    """The rows a reader must return: the last write of each key wins."""

    def __init__(self) -> None:
        self.rows: dict[tuple, dict] = {}

    def write(self, warehouse: str, data: pa.Table) -> None:
        """pypaimon writes `data`; the model applies it."""
        write_with_pypaimon(open_table(warehouse, "db.t"), data)
        for r in data.to_pylist():
            self.rows[(r["dt"], r["id"])] = r


def pypaimon_rows(warehouse: str) -> dict[tuple, dict]:
    """Every row pypaimon reads."""
    return {(r["dt"], r["id"]): r for r in read_rows(open_table(warehouse, "db.t"))}


def rust_rows(warehouse: str) -> dict[tuple, dict]:
    """Every row pypaimon-rust reads."""
    ctx = SQLContext()
    ctx.register_catalog("paimon", {"warehouse": warehouse})
    batches = ctx.sql("SELECT dt, id, v FROM paimon.db.t")
    return {(r["dt"], r["id"]): r for b in batches for r in b.to_pylist()}


def buckets_by_key(warehouse: str) -> dict[tuple, tuple[int, int]]:
    """(bucket, totalBuckets) of every live row of the real buckets."""
    table = open_table(warehouse, "db.t")
    found = {}
    for b in read_levels(table).buckets:
        assert b.bucket != POSTPONE_BUCKET, "no postpone file is left"
        for f in b.levels.all_files():
            for rows in read_file(table, b.partition, b.bucket, f, 1024):
                for r in rows.to_pylist():
                    found[(r["dt"], r["id"])] = (b.bucket, b.total_buckets)
    return found


def test_compaction_moves_parked_rows_into_real_buckets(warehouse):
    """Three overlapping commits become visible, last write winning, in one COMPACT snapshot."""
    make_table(warehouse)
    model = Model()
    for commit in range(3):
        model.write(warehouse, batch(range(commit * 4, commit * 4 + 10), f"c{commit}"))
    assert pypaimon_rows(warehouse) == {}, "parked rows are invisible before compaction"
    health = health_of(read_levels(open_table(warehouse, "db.t")))
    assert health.aggregate()["postponed_files"] == 6
    assert health.aggregate()["postponed_rows"] == 30
    levels = read_levels(open_table(warehouse, "db.t"))
    assert kind_of(levels.schema).partitions_to_compact(levels) == {
        (("dt", "a"),),
        (("dt", "b"),),
    }

    result = compact(warehouse)
    table = open_table(warehouse, "db.t")
    assert load_snapshot(table, result.snapshot_id).commit_kind == "COMPACT"
    assert result.metrics()["postponed_files_moved"] == 6
    assert result.metrics()["postponed_rows_moved"] == 30
    assert pypaimon_rows(warehouse) == model.rows
    assert rust_rows(warehouse) == model.rows
    # one bucket each: no real bucket yet, 1 gb per bucket by default
    assert set(buckets_by_key(warehouse).values()) == {(0, 1)}
    assert health_of(read_levels(table)).aggregate()["postponed_files"] == 0
    levels = read_levels(table)
    assert kind_of(levels.schema).partitions_to_compact(levels) == set()
    written = {f for f in data_files_on_disk(table) if not f.endswith(".avro")}
    assert written == committed_files(table), "every file the move wrote is committed"


def test_default_bucket_count_and_paimon_hash(warehouse):
    """postpone.default-bucket-num fixes new partitions' count; rows go to Paimon's hash bucket."""
    make_table(warehouse, **{"postpone.default-bucket-num": "3"})
    model = Model()
    model.write(warehouse, batch(range(40), "x"))
    compact(warehouse)
    placed = buckets_by_key(warehouse)
    assert open_table(warehouse, "db.t").table_schema.bucket_keys == ["id"]
    keys = pa.array([k[1] for k in placed], pa.int64())
    expected = buckets_of(binary_row_hashes([keys]), 3)
    assert [b for b, _ in placed.values()] == expected.tolist()
    assert len({b for b, _ in placed.values()}) == 3
    assert {t for _, t in placed.values()} == {3}
    assert pypaimon_rows(warehouse) == model.rows


def test_target_row_count_estimates_the_bucket_count(warehouse):
    """postpone.target-row-num-per-bucket: ceil(parked rows / target) buckets per partition."""
    make_table(warehouse, **{"postpone.target-row-num-per-bucket": "4"})
    model = Model()
    model.write(warehouse, batch(range(20), "x"))  # 10 rows per partition -> 3 buckets
    result = compact(warehouse)
    assert {m.num_buckets for m in result.moves} == {3}
    assert {t for _, t in buckets_by_key(warehouse).values()} == {3}
    assert pypaimon_rows(warehouse) == rust_rows(warehouse) == model.rows


def test_the_row_target_wins_over_the_default_bucket_count(warehouse):
    """PostponeUtils.determineBucketNum: a partition's known count, then the row target, then
    postpone.default-bucket-num."""
    make_table(
        warehouse,
        **{"postpone.target-row-num-per-bucket": "4", "postpone.default-bucket-num": "7"},
    )
    Model().write(warehouse, batch(range(20), "x"))
    assert {m.num_buckets for m in compact(warehouse).moves} == {3}


def test_later_moves_keep_the_partition_bucket_count_and_sequence_order(warehouse):
    """A partition with real buckets keeps their count; moved rows override older values."""
    make_table(warehouse, **{"postpone.default-bucket-num": "2"})
    model = Model()
    model.write(warehouse, batch(range(20), "first"))
    compact(warehouse)
    table = open_table(warehouse, "db.t")
    before = {
        (b.partition, b.bucket): max(f.max_sequence_number for f in b.levels.all_files())
        for b in read_levels(table).buckets
    }
    model.write(warehouse, batch(range(10, 30), "second"))
    model.write(warehouse, batch(range(25, 35), "third"))
    compact(warehouse)
    assert pypaimon_rows(warehouse) == rust_rows(warehouse) == model.rows
    assert {t for _, t in buckets_by_key(warehouse).values()} == {2}
    after = read_levels(open_table(warehouse, "db.t"))
    for b in after.buckets:
        top = max(f.max_sequence_number for f in b.levels.all_files())
        assert top > before[(b.partition, b.bucket)], "moved rows continue the bucket's numbers"


def test_full_compaction_and_dry_run(warehouse):
    """A dry run lists the moves and changes nothing; a full run ends with one run per bucket."""
    make_table(warehouse, **{"postpone.default-bucket-num": "2"})
    model = Model()
    for commit in range(2):
        model.write(warehouse, batch(range(commit * 5, commit * 5 + 12), f"c{commit}"))
    table = open_table(warehouse, "db.t")
    latest = table.snapshot_manager().get_latest_snapshot().id
    preview = compact(warehouse, dry_run=True)
    assert [m["postponed_files"] for m in preview.to_dict()["postponed"]] == [2, 2]
    assert "postponed: 2 files" in preview.summary()
    assert open_table(warehouse, "db.t").snapshot_manager().get_latest_snapshot().id == latest

    compact(warehouse, full=True)
    levels = read_levels(open_table(warehouse, "db.t"))
    assert all(b.levels.number_of_sorted_runs() == 1 for b in levels.buckets)
    assert all(not b.levels.level0 for b in levels.buckets)
    assert pypaimon_rows(warehouse) == model.rows


def test_deletion_vector_postpone_table(warehouse):
    """A deletion-vector postpone table: moved rows are compacted out of level 0 and read back."""
    make_table(
        warehouse, **{"deletion-vectors.enabled": "true", "postpone.default-bucket-num": "2"}
    )
    model = Model()
    model.write(warehouse, batch(range(30), "base"))
    compact(warehouse)
    model.write(warehouse, batch(range(10, 20), "update"))
    compact(warehouse)
    assert pypaimon_rows(warehouse) == rust_rows(warehouse) == model.rows
    levels = read_levels(open_table(warehouse, "db.t"))
    assert all(not b.levels.level0 for b in levels.buckets), "DV readers skip level 0"


def test_replay_order_follows_writers_and_creation_time(warehouse):
    """Each writer's files in creation order; writers in the order of their first file."""
    make_table(warehouse)
    model = Model()
    for commit in range(3):
        model.write(warehouse, batch(range(2), f"c{commit}"))
    parked = next(b for b in read_levels(open_table(warehouse, "db.t")).buckets)
    ordered = replay_order(parked.levels.all_files())
    times = [f.creation_time.get_millisecond() for f in ordered]
    assert times == sorted(times)
    assert len({writer_prefix(f.file_name) for f in ordered}) == 3
    with pytest.raises(Exception, match="postpone writer naming"):
        writer_prefix("data-123.parquet")


@pytest.mark.parametrize("function", ["mod", "hive"])
def test_other_bucket_functions_are_refused_before_moving_rows(warehouse, function):
    """A move chooses each row's bucket; Paimon's mod and hive functions are not ours."""
    make_table(warehouse, **{"bucket-function.type": function})
    Model().write(warehouse, batch(range(4), "x"))
    latest = open_table(warehouse, "db.t").snapshot_manager().get_latest_snapshot().id
    with pytest.raises(InvalidOptionError, match=f"'bucket-function.type' is '{function}'"):
        compact(warehouse)
    assert open_table(warehouse, "db.t").snapshot_manager().get_latest_snapshot().id == latest


def test_input_changelog_postpone_table_is_refused(warehouse):
    """Moving rows of an input-changelog table would need changelog files we do not write."""
    make_table(warehouse, **{"changelog-producer": "input"})
    Model().write(warehouse, batch(range(4), "x"))
    table = open_table(warehouse, "db.t")
    latest = table.snapshot_manager().get_latest_snapshot().id
    with pytest.raises(InvalidOptionError, match="changelog-producer"):
        compact(warehouse)
    assert open_table(warehouse, "db.t").snapshot_manager().get_latest_snapshot().id == latest
