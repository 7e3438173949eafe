"""Append tables (no primary key) written by pypaimon's own writer, and their row model."""

from __future__ import annotations

import pyarrow as pa
from pypaimon import Schema

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
    builder = table.new_batch_write_builder().overwrite(partition or {})
    writer = builder.new_write()
    committer = builder.new_commit()
    try:
        writer.write_arrow(data)
        committer.commit(writer.prepare_commit())
    finally:
        writer.close()
        committer.close()


def rows(table, snapshot_id: int | None = None) -> list[tuple]:
    """Every row pypaimon reads at a snapshot (the latest by default), sorted."""
    return sorted(tuple(r[k] for k in ORDER) for r in read_rows(table, snapshot_id))


def model(*batches: pa.Table) -> list[tuple]:
    """The rows an append table holds after the batches: each row kept as written."""
    found = [tuple(r[k] for k in ORDER) for b in batches for r in b.to_pylist()]
    return sorted(found)
