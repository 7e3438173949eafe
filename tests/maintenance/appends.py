"""Append tables (no primary key) written by pypaimon's own writer, and their row model."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pypaimon import Schema
from pypaimon.manifest.index_manifest_entry import IndexManifestEntry
from pypaimon.utils.file_store_path_factory import canonical_data_file_path

from dagster_paimon.commit.changes import BucketChange
from dagster_paimon.commit.producers import CompactProducer
from dagster_paimon.format.manifest import IndexManifestWriter
from dagster_paimon.io.filekind import ADD
from dagster_paimon.io.index import BucketVectors, deletion_indexes, index_entries
from dagster_paimon.partition import Partition
from dagster_paimon.snapshot.entries import live_entries
from dagster_paimon.table import open_catalog
from tests.conftest import write_with_pypaimon
from tests.lsm.kvmodel import read_rows

APPEND_SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string()),
        pa.field("id", pa.int64()),
        pa.field("v", pa.string()),
    ]
)
ORDER = ("dt", "id", "v")
DAYS = ("2024-01-01", "2024-01-02", "2024-01-03")
# the layouts issue 30 names: fixed buckets on a bucket key, and unaware buckets (-1)
LAYOUTS = {
    "bucketed": {"bucket": "2", "bucket-key": "id"},
    "unaware": {"bucket": "-1"},
}


def append_table(
    warehouse: str,
    layout: str = "bucketed",
    *,
    partitioned: bool = True,
    name: str = "events",
    **options: str,
):
    """db.<name>, an append table of the layout, partitioned by dt or not."""
    catalog = open_catalog(warehouse, create=True)
    catalog.create_database("db", True)
    schema = Schema.from_pyarrow_schema(
        APPEND_SCHEMA,
        partition_keys=["dt"] if partitioned else [],
        options={**LAYOUTS[layout], **options},
    )
    catalog.create_table(f"db.{name}", schema, False)
    return catalog.get_table(f"db.{name}")


def events(commit: int, rows: int = 12, days: tuple[str, ...] = DAYS) -> pa.Table:
    """Rows of one commit spread over the days, ids unique across commits."""
    ids = range(commit * 100, commit * 100 + rows)
    return pa.table(
        {
            "dt": [days[i % len(days)] for i in range(rows)],
            "id": list(ids),
            "v": [f"c{commit}"] * rows,
        },
        schema=APPEND_SCHEMA,
    )


def append_commits(table, commits: int, first: int = 0) -> None:
    """`commits` pypaimon commits of events, each adding files to every day."""
    for commit in range(first, first + commits):
        write_with_pypaimon(table, events(commit))


def overwrite(table, data: pa.Table, partition: dict[str, str] | None = None) -> None:
    """One pypaimon OVERWRITE commit (of one partition, or the whole table): its DELETE
    entries are what make files expirable in an append table."""
    write_with_pypaimon(table, data, overwrite=partition or {})


def rows(table, snapshot_id: int | None = None) -> list[tuple]:
    """Every row pypaimon reads at a snapshot (the latest by default), sorted."""
    return sorted(tuple(r[k] for k in ORDER) for r in read_rows(table, snapshot_id))


def model(*batches: pa.Table) -> list[tuple]:
    """The rows an append table holds after the batches: each row kept as written."""
    found = [tuple(r[k] for k in ORDER) for b in batches for r in b.to_pylist()]
    return sorted(found)


def delete_positions(table, deletions: dict[str, list[int]]) -> None:
    """Mark rows of live files deleted in their buckets' deletion vectors, in one commit (as
    Java's DELETE on an append table with `deletion-vectors.enabled` does); `deletions` maps a
    file name to row positions in it."""
    live = {e.file.file_name: e for e in live_entries(table, latest(table))}
    indexes = deletion_indexes(table, latest(table))
    changes = {}
    for name, positions in deletions.items():
        entry = live[name]
        key = (Partition.of_row(entry.partition), entry.bucket)
        if key not in changes:
            base = indexes.get(key)
            changes[key] = (entry.total_buckets, base, BucketVectors.restore(table, *key, base))
        changes[key][2].delete(name, np.array(positions, dtype=np.int64))
    CompactProducer(
        table,
        [
            BucketChange(
                part,
                bucket,
                total,
                index=vectors.write(table, part, bucket),
                base_index=base.names if base else (),
            )
            for (part, bucket), (total, base, vectors) in changes.items()
        ],
    ).commit()


def delete_beside(table, deletions: dict[str, list[int]]) -> None:
    """Mark rows of files without a vector deleted in a new index file per bucket, beside the
    bucket's other index files: the layout Java's unaware-bucket DELETE leaves
    (AppendDeleteFileMaintainer keeps the index files it does not touch). Our commits replace a
    bucket's index files, so the latest snapshot's index manifest is rewritten in place."""
    snapshot = latest(table)
    live = {e.file.file_name: e for e in live_entries(table, snapshot)}
    grouped: dict[tuple, BucketVectors] = {}
    for name, positions in deletions.items():
        entry = live[name]
        key = (Partition.of_row(entry.partition), entry.bucket)
        vectors = grouped.setdefault(key, BucketVectors({}, bitmap64=False))
        vectors.delete(name, np.array(positions, dtype=np.int64))
    added = [
        IndexManifestEntry(ADD, part.row(), bucket, vectors.write(table, part, bucket))
        for (part, bucket), vectors in grouped.items()
    ]
    manifest = IndexManifestWriter(table).write(index_entries(table, snapshot) + added)
    path = table.snapshot_manager().get_snapshot_path(snapshot.id)
    text = table.file_io.read_file_utf8(path)
    if snapshot.index_manifest:
        text = text.replace(snapshot.index_manifest, manifest)
    else:
        text = text.replace('"indexManifest" : null', f'"indexManifest" : "{manifest}"')
    table.file_io.overwrite_file_utf8(path, text)
    assert latest(table).index_manifest == manifest


def latest(table):
    """The latest snapshot (None for an empty table)."""
    return table.snapshot_manager().get_latest_snapshot()


def file_rows(table, name: str) -> list[tuple]:
    """The rows of one live data file, in file order, read with pyarrow alone."""
    entry = next(e for e in live_entries(table, latest(table)) if e.file.file_name == name)
    path = canonical_data_file_path(table, tuple(entry.partition.values), entry.bucket, name)
    data = pq.ParquetFile(path).read()
    partition = dict(zip(table.partition_keys, entry.partition.values, strict=True))
    columns = {k: data[k].to_pylist() if k in data.column_names else None for k in ORDER}
    return [
        tuple(partition[k] if columns[k] is None else columns[k][i] for k in ORDER)
        for i in range(data.num_rows)
    ]


def overwrite_history(warehouse, layout, partitioned, **options):
    """Three appends, an overwrite (of the first day, or everything) and one more append:
    snapshots 1..5; returns the table and the model of each snapshot."""
    table = append_table(warehouse, layout, partitioned=partitioned, **options)
    append_commits(table, 3)
    kept = [events(c) for c in range(3)]
    models = {i + 1: model(*kept[: i + 1]) for i in range(3)}
    replacement = events(7, days=DAYS[:1])
    if partitioned:
        overwrite(table, replacement, {"dt": DAYS[0]})
        kept = [b.filter(pc.not_equal(b["dt"], DAYS[0])) for b in kept] + [replacement]
    else:
        overwrite(table, replacement)
        kept = [replacement]
    models[4] = model(*kept)
    append_commits(table, 1, first=8)
    models[5] = model(*kept, events(8))
    return table, models
