"""ingest_arrow into append tables: rows land as they come, in the buckets Paimon assigns.

Every table is created by pypaimon; what it reads back (and pypaimon-rust, Java) is compared with
a multiset of every row ingested. Bucketed rows must land where pypaimon's own writer puts them
(a twin table it writes), and each bucket's sequence numbers continue across commits, ours and
pypaimon's alike, as Java's BucketedAppendFileStoreWrite restores them.
"""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pypaimon import Schema
from pypaimon.manifest.manifest_list_manager import ManifestListManager
from pypaimon_rust.datafusion import SQLContext

from dagster_paimon.errors import InvalidArgumentError, SchemaMismatchError, UnsupportedLayoutError
from dagster_paimon.format.manifest import ManifestReader
from dagster_paimon.ingest.arrow import ingest_arrow
from dagster_paimon.ingest.commit import commit_ingest
from dagster_paimon.io.filekind import ADD
from dagster_paimon.io.write import write_all
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.lsm.write.layout import plan_write_layout
from dagster_paimon.lsm.write.level0 import Level0Writer
from dagster_paimon.lsm.write.level0 import max_sequences as max_sequences_of
from dagster_paimon.paimon_table import PaimonTable
from dagster_paimon.snapshot.entries import live_entries
from dagster_paimon.table import open_catalog, open_table
from tests.conftest import data_files_on_disk, write_with_pypaimon
from tests.lsm.kvmodel import read_rows

LOG_SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64()),
        pa.field("v", pa.string()),
    ]
)
BUCKETED = {"bucket": "3", "bucket-key": "id"}


def create_log(warehouse: str, name: str, *, partitioned: bool, **options: str):
    """An append table created by pypaimon."""
    catalog = open_catalog(warehouse, create=True)
    catalog.create_database("db", True)
    parts = ["dt"] if partitioned else []
    schema = Schema.from_pyarrow_schema(LOG_SCHEMA, partition_keys=parts, options=options)
    catalog.create_table(f"db.{name}", schema, False)
    return open_table(warehouse, f"db.{name}")


def log_batch(commit: int, rows: int = 30) -> pa.Table:
    """Rows over two days, ids repeating across commits, some nulls where the schema allows."""
    ids = [None if i % 7 == 3 else (commit * 11 + i) % 17 for i in range(rows)]
    values = [None if i % 5 == 0 else f"c{commit}-{i}" for i in range(rows)]
    return pa.table(
        {"dt": ["2024-01-01", "2024-01-02"] * (rows // 2), "id": ids, "v": values},
        schema=LOG_SCHEMA,
    )


def multiset(rows) -> Counter:
    """Rows as a multiset: an append table keeps duplicates, in no order."""
    return Counter(tuple(sorted(r.items())) for r in rows)


def live(warehouse: str, identifier: str) -> list:
    """Live data-file entries of the table's latest snapshot."""
    table = open_table(warehouse, identifier)
    return live_entries(table, table.snapshot_manager().get_latest_snapshot())


def bucket_ids(warehouse: str, identifier: str) -> dict[tuple, Counter]:
    """Per (partition, bucket): the ids pypaimon reads from that bucket's split."""
    table = open_table(warehouse, identifier)
    builder = table.new_read_builder()
    out: dict[tuple, Counter] = {}
    for split in builder.new_scan().plan().splits():
        rows = builder.new_read().to_arrow([split]).column("id").to_pylist()
        out.setdefault((tuple(split.partition.values), split.bucket), Counter()).update(rows)
    return out


def sequence_ranges(warehouse: str, identifier: str) -> dict[tuple, list[tuple[int, int, int]]]:
    """Per (partition, bucket): (min, max sequence, rows) of each live file."""
    ranges: dict[tuple, list[tuple[int, int, int]]] = {}
    for e in live(warehouse, identifier):
        f = e.file
        key = (tuple(e.partition.values), e.bucket)
        ranges.setdefault(key, []).append(
            (f.min_sequence_number, f.max_sequence_number, f.row_count)
        )
    return ranges


def rust_rows(warehouse: str, identifier: str) -> list[dict]:
    """Every row pypaimon-rust's SELECT returns."""
    ctx = SQLContext()
    ctx.register_catalog("paimon", {"warehouse": warehouse})
    return [r for b in ctx.sql(f"SELECT dt, id, v FROM paimon.{identifier}") for r in b.to_pylist()]


def added(table, snapshot_id: int) -> list:
    """The ADD entries of one snapshot's delta."""
    snapshot = table.snapshot_manager().get_snapshot_by_id(snapshot_id)
    metas = ManifestListManager(table).read_delta(snapshot)
    return [e for e in ManifestReader(table).read_entries_parallel(metas) if e.kind == ADD]


def max_sequences(warehouse: str, identifier: str) -> dict[tuple, int]:
    """Per (partition, bucket): the largest sequence number of its live files."""
    out: dict[tuple, int] = {}
    for e in live(warehouse, identifier):
        key = (tuple(e.partition.values), e.bucket)
        out[key] = max(out.get(key, -1), e.file.max_sequence_number)
    return out


def ingest_checked(warehouse: str, identifier: str, data: pa.Table, *, unaware: bool) -> None:
    """Ingest and check what the APPEND snapshot added: level-0 append files without keys, each
    bucket numbered densely on from its maximum (from 0 in an unaware table, bucket 0)."""
    before = max_sequences(warehouse, identifier)
    table = open_table(warehouse, identifier)
    result = ingest_arrow(table, data)
    assert (result.commit_kind, result.rows) == ("APPEND", data.num_rows)
    by_bucket: dict[tuple, list] = {}
    for e in added(table, result.snapshot_id):
        f = e.file
        assert (f.level, f.file_source, f.delete_row_count) == (0, 0, 0)
        assert list(f.min_key.values) == [] and list(f.max_key.values) == []
        assert f.max_sequence_number - f.min_sequence_number + 1 == f.row_count
        assert e.total_buckets == (-1 if unaware else 3)
        by_bucket.setdefault((tuple(e.partition.values), e.bucket), []).append(f)
    for key, files in by_bucket.items():
        expected = 0 if unaware else before.get(key, -1) + 1
        for f in sorted(files, key=lambda f: f.min_sequence_number):
            assert f.min_sequence_number == expected
            expected = f.max_sequence_number + 1
    if unaware:
        assert {bucket for _, bucket in by_bucket} == {0}


@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "unpartitioned"])
def test_bucketed_rows_land_where_pypaimon_puts_them_and_sequences_continue(warehouse, partitioned):
    create_log(warehouse, "ours", partitioned=partitioned, **BUCKETED)
    twin = create_log(warehouse, "twin", partitioned=partitioned, **BUCKETED)
    model: Counter = Counter()
    for commit in range(5):
        data = log_batch(commit)
        if commit == 3:  # pypaimon's own writer in between: we continue after it
            write_with_pypaimon(open_table(warehouse, "db.ours"), data)
        else:
            ingest_checked(warehouse, "db.ours", data, unaware=False)
        write_with_pypaimon(twin, data)
        model += multiset(data.to_pylist())
    assert bucket_ids(warehouse, "db.ours") == bucket_ids(warehouse, "db.twin")
    assert multiset(read_rows(open_table(warehouse, "db.ours"))) == model
    assert multiset(rust_rows(warehouse, "db.ours")) == model


@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "unpartitioned"])
def test_unaware_tables_take_every_row_into_bucket_0(warehouse, partitioned):
    create_log(warehouse, "log", partitioned=partitioned)
    model: Counter = Counter()
    for commit in range(3):
        if commit == 1:
            write_with_pypaimon(open_table(warehouse, "db.log"), log_batch(commit))
        else:
            ingest_checked(warehouse, "db.log", log_batch(commit), unaware=True)
        model += multiset(log_batch(commit).to_pylist())
    assert multiset(read_rows(open_table(warehouse, "db.log"))) == model
    assert multiset(rust_rows(warehouse, "db.log")) == model


def test_overwrite_replaces_the_partitions_written(warehouse):
    create_log(warehouse, "log", partitioned=True, **BUCKETED)
    table = open_table(warehouse, "db.log")
    ingest_arrow(table, log_batch(0))
    ingest_arrow(table, log_batch(1))
    day = log_batch(2).filter(pc.equal(log_batch(2).column("dt"), "2024-01-02"))
    result = ingest_arrow(open_table(warehouse, "db.log"), day, mode="overwrite")
    assert result.commit_kind == "OVERWRITE"
    kept = [
        r for r in log_batch(0).to_pylist() + log_batch(1).to_pylist() if r["dt"] != "2024-01-02"
    ]
    assert multiset(read_rows(open_table(warehouse, "db.log"))) == multiset(kept + day.to_pylist())


def test_deletion_vector_tables_take_plain_appends(warehouse):
    create_log(warehouse, "log", partitioned=False, **{"deletion-vectors.enabled": "true"})
    for commit in range(2):
        ingest_checked(warehouse, "db.log", log_batch(commit), unaware=True)
    model = multiset(log_batch(0).to_pylist() + log_batch(1).to_pylist())
    assert multiset(read_rows(open_table(warehouse, "db.log"))) == model


def test_bad_input_and_unsupported_tables_change_nothing(warehouse):
    create_log(warehouse, "log", partitioned=True, **BUCKETED)
    table = open_table(warehouse, "db.log")
    ingest_arrow(table, log_batch(0))
    files = data_files_on_disk(table)
    with pytest.raises(SchemaMismatchError, match="missing columns"):
        ingest_arrow(table, log_batch(1).drop_columns(["v"]))
    null_day = pa.table({"dt": [None], "id": [1], "v": ["x"]})
    with pytest.raises(SchemaMismatchError, match="'dt' is NOT NULL"):
        ingest_arrow(table, null_day)
    deletes = log_batch(1).append_column("_row_kind", pa.array(["+I", "-D"] * 15))
    with pytest.raises(InvalidArgumentError, match="only \\+I and \\+U rows"):
        ingest_arrow(table, deletes)
    assert data_files_on_disk(table) == files
    assert table.snapshot_manager().get_latest_snapshot().id == 1

    tracked = create_log(
        warehouse, "tracked", partitioned=False, **{"row-tracking.enabled": "true"}
    )
    with pytest.raises(UnsupportedLayoutError, match=r"row-tracking\.enabled"):
        ingest_arrow(tracked, log_batch(0))
    assert data_files_on_disk(tracked) == set()


def test_ignore_delete_drops_retractions(warehouse):
    create_log(warehouse, "log", partitioned=False, **{"ignore-delete": "true"})
    kinds = ["+I", "-D", "+U", "-U"] * 5
    data = log_batch(0, rows=20).append_column("_row_kind", pa.array(kinds))
    result = ingest_arrow(open_table(warehouse, "db.log"), data)
    kept = [r for r, k in zip(log_batch(0, rows=20).to_pylist(), kinds, strict=True) if k[0] == "+"]
    assert result.rows == len(kept)
    assert multiset(read_rows(open_table(warehouse, "db.log"))) == multiset(kept)


def test_paimon_table_ingests_into_an_append_table(warehouse):
    create_log(warehouse, "log", partitioned=True, **BUCKETED)
    table = PaimonTable.open(warehouse, "db.log")
    result = table.ingest_arrow(log_batch(0))
    assert (result.commit_kind, result.rows) == ("APPEND", 30)
    expected = multiset(log_batch(0).to_pylist())
    assert multiset(read_rows(open_table(warehouse, "db.log"))) == expected


def test_interleaved_appends_both_land_as_javas_do(warehouse):
    create_log(warehouse, "log", partitioned=True, **BUCKETED)
    table = open_table(warehouse, "db.log")
    ingest_arrow(table, log_batch(0))
    base = max_sequences_of(read_levels(table))
    layout = plan_write_layout(table.table_schema, LOG_SCHEMA)
    writes = [
        write_all(Level0Writer(table, layout, base), log_batch(n).to_batches()) for n in (1, 2)
    ]
    for n, w in enumerate(writes):  # both planned on snapshot 1: no order among append rows
        commit_ingest(table, w, overwrite=None, commit_user=f"w{n}", identifier=n)
    rows = log_batch(0).to_pylist() + log_batch(1).to_pylist() + log_batch(2).to_pylist()
    assert multiset(read_rows(open_table(warehouse, "db.log"))) == multiset(rows)
