"""Append tables (no primary key): small-file compaction as Paimon 2.0's append compaction.

pypaimon writes bucketed (bucket=2, bucket-key) and unaware-bucket (bucket=-1) tables,
partitioned and not, one small file per bucket per commit; after our compaction pypaimon,
pypaimon-rust and Paimon's Java reader read exactly the model's rows, and within a bucket the
rows keep the order of its files by sequence number.
"""

from __future__ import annotations

import json
from collections import Counter

import pyarrow as pa
import pypaimon
import pytest
from pypaimon_rust.datafusion import SQLContext

from dagster_paimon.cli import main
from dagster_paimon.errors import InvalidArgumentError, UnsupportedLayoutError
from dagster_paimon.io.read import read_file
from dagster_paimon.lsm.compaction.append_plan import (
    pack_unaware,
    pick_bucketed,
    pick_bucketed_full,
)
from dagster_paimon.lsm.compaction.executor import LocalExecutor
from dagster_paimon.lsm.model.append_options import AppendOptions
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.paimon_table import PaimonTable
from dagster_paimon.table import open_table
from tests.conftest import committed_files, data_files_on_disk, latest_id, write_with_pypaimon

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
    ]
)
DAYS = ("d1", "d2")
REF = "db.t"


def make_append_table(
    warehouse: str, *, bucket: int, partitioned: bool, **options: str
) -> pypaimon.catalog.catalog.Catalog:
    """An append table written by pypaimon's catalog, as the oracle creates one."""
    catalog = pypaimon.CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("db", True)
    opts = {"bucket": str(bucket), **options}
    if bucket > 0:
        opts["bucket-key"] = "id"
    schema = pypaimon.Schema.from_pyarrow_schema(
        SCHEMA, partition_keys=["dt"] if partitioned else None, options=opts
    )
    catalog.create_table(REF, schema, False)
    return catalog


def write_commits(warehouse: str, commits: int, rows: int = 24, start: int = 0) -> list[dict]:
    """`commits` pypaimon commits of small batches; every row written, in write order."""
    written = []
    for c in range(start, start + commits):
        batch = [{"dt": DAYS[i % 2], "id": c * 1000 + i, "name": f"c{c}-{i}"} for i in range(rows)]
        write_with_pypaimon(open_table(warehouse, REF), pa.Table.from_pylist(batch, SCHEMA))
        written += batch
    return written


def multiset(rows) -> Counter:
    """Rows as a multiset of tuples."""
    return Counter((r["dt"], r["id"], r["name"]) for r in rows)


def pypaimon_rows(warehouse: str) -> list[dict]:
    """What pypaimon's reader returns."""
    table = open_table(warehouse, REF)
    read = table.new_read_builder()
    return read.new_read().to_arrow(read.new_scan().plan().splits()).to_pylist()


def ids_of(table, partition, bucket: int, files) -> list[int]:
    """The ids of `files`, file after file."""
    ids: list[int] = []
    for f in files:
        for batch in read_file(table, partition, bucket, f, 1024, columns=["id"]):
            ids += batch.column("id").to_pylist()
    return ids


def bucket_order(warehouse: str) -> dict[tuple, list[int]]:
    """Each bucket's ids, its files in write order (by sequence number, then creation time:
    pypaimon numbers every append file from 1)."""
    table = open_table(warehouse, REF)
    return {
        (tuple(b.partition.spec.items()), b.bucket): ids_of(
            table,
            b.partition,
            b.bucket,
            sorted(
                b.levels.all_files(),
                key=lambda f: (f.min_sequence_number, f.creation_time.get_millisecond()),
            ),
        )
        for b in read_levels(table).buckets
    }


def assert_tasks_kept_order(warehouse: str, result, before: dict[tuple, list[int]]) -> None:
    """Each bucket task's new files hold its bucket's first rows, in their order before."""
    table = open_table(warehouse, REF)
    for task, done in zip(result.tasks, result.results, strict=True):
        ids = ids_of(table, task.partition, task.bucket, done.new_files)
        assert ids == before[(tuple(task.partition.spec.items()), task.bucket)][: len(ids)]
        assert len(ids) == sum(f.row_count for f in task.files)


def file_counts(warehouse: str) -> dict[tuple, int]:
    """Live files per (partition, bucket)."""
    return {
        (tuple(b.partition.spec.items()), b.bucket): len(b.levels.all_files())
        for b in read_levels(open_table(warehouse, REF)).buckets
    }


def assert_every_reader_reads(warehouse: str, expected: Counter, *javas) -> None:
    """pypaimon, pypaimon-rust and Paimon's Java readers (0.9, 1.0) read exactly `expected`."""
    assert multiset(pypaimon_rows(warehouse)) == expected
    ctx = SQLContext()
    ctx.register_catalog("paimon", {"warehouse": warehouse})
    rust = [r for b in ctx.sql("SELECT * FROM paimon.db.t") for r in b.to_pylist()]
    assert multiset(rust) == expected
    for paimon_java in javas:
        read = paimon_java.read(warehouse, "db", "t")
        assert multiset(dict(zip(SCHEMA.names, r, strict=True)) for r in read) == expected


LAYOUTS = [
    pytest.param(2, True, id="bucketed-partitioned"),
    pytest.param(2, False, id="bucketed"),
    pytest.param(-1, True, id="unaware-partitioned"),
    pytest.param(-1, False, id="unaware"),
]


@pytest.mark.parametrize(("bucket", "partitioned"), LAYOUTS)
def test_compaction_keeps_every_row_and_each_buckets_order(
    warehouse, paimon_java, bucket, partitioned
):
    make_append_table(warehouse, bucket=bucket, partitioned=partitioned)
    rows = write_commits(warehouse, 7)
    before_order = bucket_order(warehouse)
    before = file_counts(warehouse)
    # a bucket: its first min.file-num (5) files by sequence number become one; unaware: the
    # coordinator's last bin holds every small file of a partition (at least 5)
    picked = {k: (5 if bucket > 0 else n) if n >= 5 else 0 for k, n in before.items()}
    assert sum(picked.values()) > 0

    result = PaimonTable.open(warehouse, REF).compact()

    assert result.snapshot_id == latest_id(open_table(warehouse, REF))
    assert file_counts(warehouse) == {k: n - picked[k] + (picked[k] > 0) for k, n in before.items()}
    if bucket > 0:
        assert_tasks_kept_order(warehouse, result, before_order)
    assert len(result.tasks) == sum(1 for n in picked.values() if n)
    assert result.metrics()["rewritten_files"] == sum(picked.values())
    replaced = {f.file_name for t in result.tasks for f in t.files}
    table = open_table(warehouse, REF)
    assert data_files_on_disk(table) == committed_files(table) | replaced  # nothing stray
    assert_every_reader_reads(warehouse, multiset(rows), paimon_java)

    again = PaimonTable.open(warehouse, REF).compact()
    assert again.snapshot_id is None and not again.tasks


def test_new_files_are_compact_files_numbered_from_the_first(warehouse):
    make_append_table(warehouse, bucket=1, partitioned=False)
    write_commits(warehouse, 5)
    files = read_levels(open_table(warehouse, REF)).buckets[0].levels.all_files()
    first = min(f.min_sequence_number for f in files)
    rows = sum(f.row_count for f in files)
    PaimonTable.open(warehouse, REF).compact()
    (new,) = read_levels(open_table(warehouse, REF), with_stats=True).buckets[0].levels.all_files()
    assert (new.level, new.file_source, new.row_count) == (0, 1, rows)
    assert (new.min_sequence_number, new.max_sequence_number) == (first, first + rows - 1)
    assert new.value_stats.min_values.get_field(1) == 0  # id's minimum


def test_full_compaction_of_a_bucket_rewrites_every_small_file(
    warehouse, paimon_java, paimon_java_1_0
):
    make_append_table(warehouse, bucket=2, partitioned=True)
    rows = write_commits(warehouse, 4)
    before = bucket_order(warehouse)
    assert PaimonTable.open(warehouse, REF).compact().snapshot_id is None  # 4 < min.file-num
    result = PaimonTable.open(warehouse, REF).compact(full=True)
    assert result.snapshot_id is not None
    assert set(file_counts(warehouse).values()) == {1}  # every bucket had 3 files or more
    assert bucket_order(warehouse) == before  # one file per bucket now
    assert_every_reader_reads(warehouse, multiset(rows), paimon_java, paimon_java_1_0)


def test_below_min_file_num_nothing_is_done(warehouse):
    make_append_table(warehouse, bucket=-1, partitioned=True, **{"compaction.min.file-num": "10"})
    write_commits(warehouse, 6)
    snapshot = latest_id(open_table(warehouse, REF))
    result = PaimonTable.open(warehouse, REF).compact()
    assert result.snapshot_id is None and not result.tasks
    assert latest_id(open_table(warehouse, REF)) == snapshot


def test_dry_run_plans_without_writing(warehouse):
    make_append_table(warehouse, bucket=-1, partitioned=True)
    write_commits(warehouse, 5)
    table = open_table(warehouse, REF)
    snapshot, files = latest_id(table), committed_files(table)
    result = PaimonTable.open(warehouse, REF).compact(dry_run=True, executor=LocalExecutor())
    assert result.dry_run and len(result.tasks) == 2
    assert [u["input_files"] for u in result.units] == [5, 5]
    assert latest_id(open_table(warehouse, REF)) == snapshot
    assert data_files_on_disk(open_table(warehouse, REF)) == files


def test_one_partition_only(warehouse):
    make_append_table(warehouse, bucket=-1, partitioned=True)
    rows = write_commits(warehouse, 5)
    PaimonTable.open(warehouse, REF).compact(partition={"dt": "d1"})
    assert file_counts(warehouse) == {((("dt", "d1"),), 0): 1, ((("dt", "d2"),), 0): 5}
    assert multiset(pypaimon_rows(warehouse)) == multiset(rows)


def test_unknown_partition_key_is_refused_and_nothing_changes(warehouse):
    make_append_table(warehouse, bucket=-1, partitioned=True)
    write_commits(warehouse, 5)
    snapshot = latest_id(open_table(warehouse, REF))
    with pytest.raises(InvalidArgumentError, match="not partition keys"):
        PaimonTable.open(warehouse, REF).compact(partition={"day": "d1"})
    assert latest_id(open_table(warehouse, REF)) == snapshot


@pytest.mark.parametrize("option", ["row-tracking.enabled", "data-evolution.enabled"])
def test_modes_we_do_not_compact_are_refused(warehouse, option):
    options = {option: "true"}
    if option == "data-evolution.enabled":
        options["row-tracking.enabled"] = "true"
    make_append_table(warehouse, bucket=-1, partitioned=False, **options)
    with pytest.raises(UnsupportedLayoutError, match=option):
        PaimonTable.open(warehouse, REF).compact()


class _File:
    """Just the metadata the pickers read."""

    def __init__(self, name: str, size: int, seq: int):
        self.file_name, self.file_size, self.min_sequence_number = name, size, seq
        self.creation_time = None


def test_bucketed_pick_slides_past_big_windows():
    options = AppendOptions(target_file_size=100, min_file_num=3)
    files = [_File("a", 150, 0), _File("b", 60, 1), _File("c", 10, 2), _File("d", 10, 3)]
    # a+b reach 2 * target: the window drops a, then b, c, d make min.file-num
    assert [f.file_name for f in pick_bucketed(files, options)] == ["b", "c", "d"]
    assert pick_bucketed(files[:3], options) == []


def test_bucketed_full_skips_leading_big_files_and_needs_more_small_ones():
    options = AppendOptions(target_file_size=100)  # small: below 70
    files = [_File("a", 90, 0), _File("b", 10, 1), _File("c", 10, 2), _File("d", 80, 3)]
    assert [f.file_name for f in pick_bucketed_full(files, options)] == ["b", "c", "d"]
    assert pick_bucketed_full([files[0], files[3], files[1]], options) == []


def test_unaware_pack_drains_bins_by_size_with_open_file_cost():
    options = AppendOptions(target_file_size=100, open_file_cost=10, min_file_num=3)
    files = [_File(n, s, 0) for n, s in (("a", 60), ("b", 5), ("c", 50), ("d", 6))]
    # by size: b(15) d(16) c(60) -> 91; a(70) -> 161 >= 200? no; the last bin has 4 >= 3 files
    assert [[f.file_name for f in b] for b in pack_unaware(files, options)] == [
        ["b", "d", "c", "a"]
    ]
    big = AppendOptions(target_file_size=40, open_file_cost=10, min_file_num=5)
    assert [[f.file_name for f in b] for b in pack_unaware(files, big)] == [
        ["b", "d", "c"],
    ]


def test_cli_and_paimon_table_compact_append_tables(warehouse, capsys):
    make_append_table(warehouse, bucket=-1, partitioned=True)
    rows = write_commits(warehouse, 5)
    code = main(["compact", "--warehouse", warehouse, "--table", REF, "--dry-run", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["dry_run"] and len(out["units"]) == 2
    code = main(["compact", "--warehouse", warehouse, "--table", REF, "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["rewritten_files"] == 10 and out["files_written"] == 2
    rows += write_commits(warehouse, 5, start=5)
    result = PaimonTable.open(warehouse, REF).compact(partition={"dt": "d2"})
    assert result.metrics()["rewritten_files"] == 6
    assert file_counts(warehouse) == {((("dt", "d1"),), 0): 6, ((("dt", "d2"),), 0): 1}
    assert multiset(pypaimon_rows(warehouse)) == multiset(rows)
