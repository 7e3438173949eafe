"""Rescale: a fixed-bucket table's (or one partition's) rows rewritten into a new bucket count.

As Java 2.0's Spark `rescale` procedure: the partitions' merged rows land in files of buckets
< N whose manifest entries record `_TOTAL_BUCKETS` = N, in ONE OVERWRITE snapshot that fails
(nothing committed, new files removed) when another writer changed those partitions after the
snapshot the rescale read. pypaimon reads every row as the model (latest value per key).
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from pypaimon import Schema

from dagster_paimon.errors import (
    CommitConflictError,
    InvalidArgumentError,
    PartitionNotFoundError,
    UnsupportedLayoutError,
)
from dagster_paimon.lsm.compaction import LocalExecutor
from dagster_paimon.options import DYNAMIC_BUCKET, POSTPONE_BUCKET
from dagster_paimon.paimon_table import PaimonTable
from dagster_paimon.snapshot.entries import live_entries
from dagster_paimon.table import TableSpec, create_table, open_catalog, open_table
from tests.conftest import ORDERS_SCHEMA, committed_files, data_files_on_disk, latest_id
from tests.conftest import write_with_pypaimon as pypaimon_write
from tests.lsm.kvmodel import read_rows
from tests.lsm.tables import cdc_table, write_history

DAYS = ("2024-01-01", "2024-01-02")


def make(warehouse: str, *, bucket: int, partitioned: bool, **options: str):
    """db.t keyed by (dt, id), partitioned by dt or not."""
    keys = ("dt", "id")
    spec = TableSpec(
        "db", "t", ORDERS_SCHEMA, keys, bucket, ("dt",) if partitioned else (), options
    )
    return create_table(warehouse, spec)


def rows(ids, tag: str) -> pa.Table:
    """Rows of both days."""
    ids = list(ids)
    return pa.table(
        {"dt": [DAYS[i % 2] for i in ids], "id": ids, "v": [f"{tag}{i}" for i in ids]},
        schema=ORDERS_SCHEMA,
    )


class Model:
    """The latest value of each key; deletes remove it."""

    def __init__(self, warehouse: str):
        self.warehouse = warehouse
        self.rows: dict[tuple, dict] = {}

    def write(self, data: pa.Table) -> None:
        pypaimon_write(open_table(self.warehouse, "db.t"), data)
        for r in data.to_pylist():
            self.rows[(r["dt"], r["id"])] = r

    def check(self) -> None:
        got = {(r["dt"], r["id"]): r for r in read_rows(open_table(self.warehouse, "db.t"))}
        assert got == self.rows


def fill(warehouse: str) -> Model:
    """Three overlapping commits: several sorted runs per bucket."""
    model = Model(warehouse)
    model.write(rows(range(0, 60), "a"))
    model.write(rows(range(30, 90), "b"))
    model.write(rows(range(50, 70), "c"))
    return model


def entries(warehouse: str):
    table = open_table(warehouse, "db.t")
    return live_entries(table, table.snapshot_manager().get_latest_snapshot())


def buckets_by_partition(warehouse: str) -> dict[tuple, set[tuple[int, int]]]:
    out: dict[tuple, set[tuple[int, int]]] = {}
    for e in entries(warehouse):
        out.setdefault(tuple(e.partition.values), set()).add((e.bucket, e.total_buckets))
    return out


@pytest.mark.parametrize(("old", "new"), [(2, 4), (4, 1)])
def test_unpartitioned(warehouse, old, new):
    make(warehouse, bucket=old, partitioned=False)
    model = fill(warehouse)
    before = latest_id(open_table(warehouse, "db.t"))
    result = PaimonTable.open(warehouse, "db.t").rescale(bucket_num=new)
    table = open_table(warehouse, "db.t")
    assert result.snapshot_id == before + 1 == latest_id(table)
    assert table.snapshot_manager().get_latest_snapshot().commit_kind == "OVERWRITE"
    assert result.previous_buckets == (old,)
    model.check()
    for e in entries(warehouse):
        assert e.bucket < new and e.total_buckets == new
    assert len({e.bucket for e in entries(warehouse)}) == new
    # every file written is committed, nothing left behind but the replaced files
    assert result.to_dict()["bucket_num"] == new and "rescaled" in result.summary()


@pytest.mark.parametrize(("old", "new"), [(2, 4), (4, 1)])
def test_one_partition(warehouse, old, new):
    make(warehouse, bucket=old, partitioned=True)
    model = fill(warehouse)
    other = {
        e.file.file_name for e in entries(warehouse) if tuple(e.partition.values) != (DAYS[0],)
    }
    result = PaimonTable.open(warehouse, "db.t").rescale(
        bucket_num=new, partitions=[{"dt": DAYS[0]}]
    )
    assert result.partitions == ({"dt": DAYS[0]},)
    model.check()
    by_part = buckets_by_partition(warehouse)
    assert {t for _, t in by_part[(DAYS[0],)]} == {new}
    assert all(b < new for b, _ in by_part[(DAYS[0],)])
    assert by_part[(DAYS[1],)] == {(b, old) for b in range(old)}
    assert {
        e.file.file_name for e in entries(warehouse) if tuple(e.partition.values) == (DAYS[1],)
    } == other


THREE_DAYS = (*DAYS, "2024-01-03")


def three_days(ids, tag: str) -> pa.Table:
    """Rows spread over three partitions."""
    ids = list(ids)
    return pa.table(
        {"dt": [THREE_DAYS[i % 3] for i in ids], "id": ids, "v": [f"{tag}{i}" for i in ids]},
        schema=ORDERS_SCHEMA,
    )


def fill_three_days(warehouse: str) -> Model:
    """Two overlapping commits over three partitions."""
    model = Model(warehouse)
    model.write(three_days(range(0, 45), "a"))
    model.write(three_days(range(20, 60), "b"))
    return model


def test_several_partitions_in_one_overwrite(warehouse):
    make(warehouse, bucket=2, partitioned=True)
    model = fill_three_days(warehouse)
    before = latest_id(open_table(warehouse, "db.t"))
    kept = {e.file.file_name for e in entries(warehouse) if e.partition.values[0] == DAYS[1]}
    specs = [{"dt": THREE_DAYS[2]}, {"dt": THREE_DAYS[0]}, {"dt": THREE_DAYS[0]}]
    result = PaimonTable.open(warehouse, "db.t").rescale(bucket_num=3, partitions=specs)
    table = open_table(warehouse, "db.t")
    assert result.snapshot_id == before + 1 == latest_id(table)
    assert table.snapshot_manager().get_latest_snapshot().commit_kind == "OVERWRITE"
    assert result.partitions == ({"dt": THREE_DAYS[0]}, {"dt": THREE_DAYS[2]})
    model.check()
    by_part = buckets_by_partition(warehouse)
    for day in (THREE_DAYS[0], THREE_DAYS[2]):
        assert {t for _, t in by_part[(day,)]} == {3} and all(b < 3 for b, _ in by_part[(day,)])
    assert {e.file.file_name for e in entries(warehouse) if e.partition.values[0] == DAYS[1]} == (
        kept
    )


@pytest.mark.parametrize(
    ("partitions", "error", "match"),
    [
        ([{"region": "eu"}], InvalidArgumentError, "not partition keys"),
        ([{"dt": DAYS[0]}, {"dt": "1999-01-01"}], PartitionNotFoundError, "dt=1999-01-01"),
        ([], InvalidArgumentError, "empty"),
        ({"dt": DAYS[0]}, InvalidArgumentError, "list of partition specs"),
        (["dt=2024-01-01"], InvalidArgumentError, "mapping"),
    ],
)
@pytest.mark.parametrize("dry_run", [False, True])
def test_bad_partition_specs_change_nothing(warehouse, partitions, error, match, dry_run):
    make(warehouse, bucket=2, partitioned=True)
    model = fill(warehouse)
    table = open_table(warehouse, "db.t")
    before, files = latest_id(table), data_files_on_disk(table)
    with pytest.raises(error, match=match):
        PaimonTable.open(warehouse, "db.t").rescale(
            bucket_num=4, partitions=partitions, dry_run=dry_run
        )
    assert latest_id(open_table(warehouse, "db.t")) == before
    assert data_files_on_disk(open_table(warehouse, "db.t")) == files
    model.check()


def test_pypaimon_writes_after(warehouse):
    """Unpartitioned 2 -> 4, the table option altered to 4 as Flink's rescale asks, pypaimon
    then upserts into the new buckets and reads right."""
    make(warehouse, bucket=2, partitioned=False)
    model = fill(warehouse)
    PaimonTable.open(warehouse, "db.t").rescale(bucket_num=4)
    from pypaimon import CatalogFactory
    from pypaimon.schema.schema_change import SchemaChange

    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.alter_table("db.t", [SchemaChange.set_option("bucket", "4")], False)
    model.write(rows(range(40, 100), "e"))
    model.check()
    for e in entries(warehouse):
        assert e.bucket < 4 and e.total_buckets == 4


class RacingExecutor(LocalExecutor):
    """Runs the tasks, then lets pypaimon commit to the table before the rescale commits."""

    def __init__(self, race):
        super().__init__()
        self.race = race

    def run(self, table, ref, tasks, work=None):
        out = super().run(table, ref, tasks, work) if work else super().run(table, ref, tasks)
        self.race()
        return out


def test_concurrent_commit_conflicts(warehouse):
    make(warehouse, bucket=2, partitioned=True)
    model = fill(warehouse)
    table = open_table(warehouse, "db.t")
    on_disk = data_files_on_disk(table)

    def race():
        model.write(rows([0, 2, 4, 200], "race"))  # into partition DAYS[0]

    with pytest.raises(CommitConflictError, match="strict-mode"):
        PaimonTable.open(warehouse, "db.t").rescale(
            bucket_num=4,
            partitions=[{"dt": DAYS[0]}],
            executor=RacingExecutor(race),
        )
    table = open_table(warehouse, "db.t")
    model.check()
    assert table.snapshot_manager().get_latest_snapshot().commit_kind == "APPEND"
    # only the racing writer's files were added: every file the rescale wrote is gone
    assert data_files_on_disk(table) - on_disk == committed_files(table) - on_disk
    assert {t for _, t in buckets_by_partition(warehouse)[(DAYS[0],)]} == {2}


def test_concurrent_commit_elsewhere_is_fine(warehouse):
    make(warehouse, bucket=2, partitioned=True)
    model = fill(warehouse)

    def race():
        model.write(rows([1, 3, 201], "race"))  # into partition DAYS[1] only

    PaimonTable.open(warehouse, "db.t").rescale(
        bucket_num=3,
        partitions=[{"dt": DAYS[0]}],
        executor=RacingExecutor(race),
    )
    model.check()
    assert {t for _, t in buckets_by_partition(warehouse)[(DAYS[0],)]} == {3}


def test_dry_run_changes_nothing(warehouse):
    make(warehouse, bucket=2, partitioned=True)
    model = fill(warehouse)
    table = open_table(warehouse, "db.t")
    before, files = latest_id(table), data_files_on_disk(table)
    result = PaimonTable.open(warehouse, "db.t").rescale(bucket_num=4, dry_run=True)
    assert result.dry_run and result.snapshot_id is None
    assert result.files_read == len(committed_files(table))
    assert len(result.partitions) == 2 and "dry run" in result.summary()
    assert latest_id(open_table(warehouse, "db.t")) == before
    assert data_files_on_disk(open_table(warehouse, "db.t")) == files
    model.check()


@pytest.mark.parametrize("bucket", [DYNAMIC_BUCKET, POSTPONE_BUCKET])
def test_dynamic_and_postpone_refused(warehouse, bucket):
    make(warehouse, bucket=bucket, partitioned=False)
    with pytest.raises(UnsupportedLayoutError, match="bucket mode"):
        PaimonTable.open(warehouse, "db.t").rescale(bucket_num=4)


@pytest.mark.parametrize("num", [0, -1])
def test_bad_bucket_num_refused(warehouse, num):
    make(warehouse, bucket=2, partitioned=False)
    with pytest.raises(InvalidArgumentError, match="bucket_num"):
        PaimonTable.open(warehouse, "db.t").rescale(bucket_num=num)


def test_append_table_refused(warehouse):
    open_catalog(warehouse).create_database("db", True)
    open_catalog(warehouse).create_table("db.t", Schema.from_pyarrow_schema(ORDERS_SCHEMA), False)
    with pytest.raises(UnsupportedLayoutError, match=r"db\.t is an append table"):
        PaimonTable.open(warehouse, "db.t").rescale(bucket_num=4)


def test_empty_table_is_nothing_to_do(warehouse):
    make(warehouse, bucket=2, partitioned=False)
    result = PaimonTable.open(warehouse, "db.t").rescale(bucket_num=4)
    assert result.snapshot_id is None and "nothing" in result.summary()


@pytest.mark.parametrize(("old", "new"), [(2, 5), (3, 1)])
def test_deletes_and_updates_merged(warehouse, old, new):
    """Upserts and deletes (`rowkind.field`) over many commits: the rescaled partitions hold
    exactly the merged live rows, no retractions."""
    table = cdc_table(warehouse, bucket=old)
    model = write_history(table, commits=6)
    result = PaimonTable.open(warehouse, "db.cdc").rescale(bucket_num=new)
    table = open_table(warehouse, "db.cdc")
    got = {(r["dt"], r["id"]): r for r in read_rows(table)}
    assert got == model
    latest = table.snapshot_manager().get_latest_snapshot()
    live = live_entries(table, latest)
    assert {(e.total_buckets) for e in live} == {new}
    assert sum(e.file.row_count for e in live) == len(model)
    assert result.files_written == len(live)


def test_paimon_table_rescale(warehouse):
    from dagster_paimon import PaimonTable, RescaleResult

    make(warehouse, bucket=2, partitioned=True)
    model = fill(warehouse)
    table = PaimonTable.open(warehouse, "db.t")
    preview = table.rescale(bucket_num=3, partitions=[{"dt": DAYS[1]}], dry_run=True)
    assert isinstance(preview, RescaleResult) and preview.dry_run
    result = table.rescale(bucket_num=3, partitions=[{"dt": DAYS[1]}])
    assert result.metrics()["bucket_num"] == 3 and result.metrics()["files_written"] > 0
    model.check()
    assert {t for _, t in buckets_by_partition(warehouse)[(DAYS[1],)]} == {3}
    assert {t for _, t in buckets_by_partition(warehouse)[(DAYS[0],)]} == {2}


def test_cli_rescale(capsys, warehouse):
    import json

    from dagster_paimon.cli import main

    make(warehouse, bucket=2, partitioned=True)
    model = fill(warehouse)
    base = ["rescale", "--warehouse", warehouse, "--table", "db.t"]
    code = main([*base, "--bucket-num", "4", "--partition", f"dt={DAYS[0]}", "--dry-run"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "dry run" in out and latest_id(open_table(warehouse, "db.t")) == 3
    code = main([*base, "--bucket-num", "4", "--partition", f"dt={DAYS[0]}", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    payload = json.loads(out)
    assert payload["snapshot_id"] == 4 and payload["bucket_num"] == 4
    assert payload["partitions"] == [{"dt": DAYS[0]}]
    model.check()
    code = main([*base, "--bucket-num", "0"])
    _, err = capsys.readouterr()
    assert code != 0 and "bucket-num" in err
    code = main([*base, "--bucket-num", "3", "--partition", f"dt={DAYS[1]}", "--partition", "dt=x"])
    _, err = capsys.readouterr()
    assert code == 2 and "dt=x" in err
    assert latest_id(open_table(warehouse, "db.t")) == 4
    days = [arg for day in DAYS for arg in ("--partition", f"dt={day}")]
    code = main([*base, "--bucket-num", "3", *days, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["partitions"] == [{"dt": day} for day in DAYS]
    assert latest_id(open_table(warehouse, "db.t")) == 5
    assert {t for ts in buckets_by_partition(warehouse).values() for _, t in ts} == {3}
    model.check()


def test_our_ingest_refuses_a_partition_of_another_bucket_count(warehouse):
    """As Java's writers: appending with the table's old count into a rescaled partition
    would duplicate keys across buckets; refused, nothing written. Overwrite is allowed."""
    from dagster_paimon.errors import InvalidOptionError
    from dagster_paimon.ingest.arrow import ingest_arrow

    make(warehouse, bucket=2, partitioned=True)
    model = fill(warehouse)
    PaimonTable.open(warehouse, "db.t").rescale(bucket_num=4, partitions=[{"dt": DAYS[0]}])
    table = open_table(warehouse, "db.t")
    before, on_disk = latest_id(table), data_files_on_disk(table)
    with pytest.raises(InvalidOptionError, match="rescaled"):
        ingest_arrow(table, rows([0, 2, 300], "x"))
    assert latest_id(open_table(warehouse, "db.t")) == before
    assert data_files_on_disk(open_table(warehouse, "db.t")) == on_disk
    ingest_arrow(open_table(warehouse, "db.t"), rows([1, 3, 301], "y"))  # the other partition
    for r in rows([1, 3, 301], "y").to_pylist():
        model.rows[(r["dt"], r["id"])] = r
    model.check()


@pytest.mark.parametrize(
    "options",
    [
        {"deletion-vectors.enabled": "true"},
        {"merge-engine": "aggregation", "fields.amount.aggregate-function": "sum"},
        {"changelog-producer": "lookup"},
    ],
    ids=["deletion-vectors", "aggregation", "lookup-changelog"],
)
def test_other_merge_layouts_read_the_same(warehouse, options):
    """Rows pypaimon read before the rescale (after our compaction wrote deletion vectors or
    merged some buckets, then more commits) are the rows it reads after. A deletion-vector
    reader skips level 0, so there the rows are the model's: the rescale merged level 0 too."""
    from tests.lsm.tables import compact

    opts = dict(options)
    if opts.get("merge-engine") == "aggregation":
        opts["ignore-delete"] = "true"
    table = cdc_table(warehouse, bucket=2, **opts)
    model = write_history(table, commits=4)
    compact(open_table(warehouse, "db.cdc"), warehouse)
    write_history(open_table(warehouse, "db.cdc"), commits=3, seed=11, model=model)
    key = lambda r: (r["dt"], r["id"])  # noqa: E731
    before = sorted(read_rows(open_table(warehouse, "db.cdc")), key=key)
    PaimonTable.open(warehouse, "db.cdc").rescale(bucket_num=3)
    table = open_table(warehouse, "db.cdc")
    after = sorted(read_rows(table), key=key)
    if "deletion-vectors.enabled" in options:
        assert {key(r): r for r in after} == model
    else:
        assert after == before
    live = live_entries(table, table.snapshot_manager().get_latest_snapshot())
    assert {e.total_buckets for e in live} == {3}


def test_each_new_bucket_is_one_run_at_the_top_level(warehouse):
    """No level-0 file is left (deletion-vector readers skip level 0), one run per bucket,
    and no file the rescale wrote is left uncommitted."""
    make(warehouse, bucket=2, partitioned=False)
    fill(warehouse)
    table = open_table(warehouse, "db.t")
    on_disk = data_files_on_disk(table)
    PaimonTable.open(warehouse, "db.t").rescale(bucket_num=3)
    table = open_table(warehouse, "db.t")
    live = entries(warehouse)
    levels = {e.file.level for e in live}
    assert len(levels) == 1 and levels.pop() > 0
    assert len(live) == 3  # one file per bucket: these rows fit one file
    assert data_files_on_disk(table) - on_disk == committed_files(table)


def test_a_failing_merge_leaves_no_file_behind(warehouse, monkeypatch):
    """A failure after the level-0 files were written (here in the merge of a new bucket)
    removes every file the rescale wrote; the table is unchanged."""
    from dagster_paimon.lsm.compaction import rescale as module

    make(warehouse, bucket=2, partitioned=False)
    model = fill(warehouse)
    table = open_table(warehouse, "db.t")
    before, on_disk = latest_id(table), data_files_on_disk(table)

    def broken(table, task):
        raise OSError("disk full")

    monkeypatch.setattr(
        module, "TARGET_MERGE", module.Work("new buckets", broken, module.discard_placed)
    )
    with pytest.raises(OSError, match="disk full"):
        PaimonTable.open(warehouse, "db.t").rescale(bucket_num=3)
    table = open_table(warehouse, "db.t")
    assert latest_id(table) == before and data_files_on_disk(table) == on_disk
    model.check()
