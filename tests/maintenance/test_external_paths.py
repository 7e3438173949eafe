"""Expiry and orphan removal of data files Java keeps under `data-file.external-paths`.

The fixture is laid out as Paimon's Java writer (release-2.0.0) lays it out, which pypaimon's
writer does not quite: DataFilePathFactory.newPathFromName records the path as
org.apache.paimon.fs.Path prints it, `file:/.../dt=2024-01-01 10%3A00/bucket-0/data-...`
(pypaimon 2.1 records a local path with `%` in it without the scheme), and a file index is an
`_EXTRA_FILES` sidecar `<data file name>.index` beside its data file, under the external root
(DataFilePathFactory.dataFileToFileIndexPath; readers find it with toAlignedPath). pypaimon
writes the rows; the metadata is then made Java's before the commit.
"""

from __future__ import annotations

import os

import pyarrow as pa
from pypaimon_rust.datafusion import SQLContext

from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.table import open_table
from tests.hooks import expire_snapshots, remove_orphans
from tests.lsm.kvmodel import apply_dedup, read_rows, sorted_rows
from tests.lsm.tables import KEY, SCHEMA, cdc_table, compact
from tests.maintenance.histories import EXPIRE_ALL_BUT_LAST, later_ms
from tests.maintenance.oracle import age_tree, all_files

HOUR = "2024-01-01 10:00"  # escaped as dt=2024-01-01 10%3A00 in paths


def java_commit(table, rows: list[dict]) -> list:
    """pypaimon writes the rows; each file's metadata is made as Java's writer records it, with
    a file index sidecar beside it. The committed metas."""
    builder = table.new_batch_write_builder()
    writer, committer = builder.new_write(), builder.new_commit()
    try:
        writer.write_arrow(pa.Table.from_pylist(rows, schema=SCHEMA))
        messages = writer.prepare_commit()
        for message in messages:
            for f in message.new_files:
                recorded = f.external_path
                assert recorded, "pypaimon placed the file in the table folder"
                f.external_path = recorded if recorded.startswith("file:") else f"file:{recorded}"
                f.extra_files = [f"{f.file_name}.index"]
                directory = os.path.dirname(physical(f.external_path))
                with open(os.path.join(directory, f.extra_files[0]), "wb") as out:
                    out.write(b"file index")
        committer.commit(messages)
    finally:
        writer.close()
        committer.close()
    return [f for m in messages for f in m.new_files]


def rows_of(commit: int) -> list[dict]:
    """Upserts (and a delete) of the HOUR partition and one plain day."""
    rows = [
        {"dt": dt, "id": i, "name": f"c{commit}-{i}", "amount": commit * 1.0, "op": "+I"}
        for dt in (HOUR, "2024-01-02")
        for i in range(commit, commit + 6)
    ]
    rows[0]["op"] = "-D" if commit else "+I"
    return rows


def physical(path: str) -> str:
    """Where a recorded `file:/...` path is on disk (its text: `%3A` is literal)."""
    return path.removeprefix("file:")


def rust_rows(warehouse: str) -> list[dict]:
    """Every row pypaimon-rust reads."""
    ctx = SQLContext()
    ctx.register_catalog("paimon", {"warehouse": warehouse})
    found = [r for b in ctx.sql("SELECT * FROM paimon.db.cdc") for r in b.to_pylist()]
    return sorted_rows(found, KEY)


def test_expiry_and_orphans_handle_javas_external_files_and_their_sidecars(warehouse, tmp_path):
    root = tmp_path / "ext"
    table = cdc_table(
        warehouse,
        **{
            "data-file.external-paths": f"file://{root}",
            "data-file.external-paths.strategy": "round-robin",
        },
    )
    model: dict = {}
    written = []
    for commit in range(3):
        rows = rows_of(commit)
        written += java_commit(table, rows)
        apply_dedup(model, [{**r, "_kind": r["op"]} for r in rows], KEY)
    expected = sorted_rows(model.values(), KEY)
    escaped = [f for f in written if "dt=2024-01-01 10%3A00/bucket-" in f.external_path]
    assert escaped and all(f.external_path.startswith(f"file:{root}/") for f in written)
    sidecars = {
        os.path.join(os.path.dirname(physical(f.external_path)), f.extra_files[0]) for f in written
    }
    assert all(os.path.isfile(s) for s in sidecars)
    assert sorted_rows(read_rows(table), KEY) == expected
    assert rust_rows(warehouse) == expected

    # referenced sidecars are not orphans, however old
    age_tree(str(root))
    age_tree(table.table_path)
    stale = f"{root}/dt=2024-01-01 10%3A00/bucket-0/data-stale-0.parquet.index"
    os.makedirs(os.path.dirname(stale), exist_ok=True)
    with open(stale, "wb") as out:
        out.write(b"old")
    age_tree(str(root))
    assert remove_orphans(table).orphans == (stale,)
    assert sidecars <= all_files(str(root))

    # our compaction reads Java's paths and writes in Java's form; expiry then deletes each
    # replaced file and its sidecar beside it under the external root
    compact(table, warehouse, full=True)
    table = open_table(warehouse, "db.cdc")
    live = [f for b in read_levels(table).buckets for f in b.levels.all_files()]
    assert live and all(f.external_path.startswith(f"file:{root}/dt=") for f in live)
    assert any("10%3A00" in f.external_path for f in live)
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    left = all_files(str(root))
    assert not any(physical(f.external_path) in left for f in written)
    assert not sidecars & left
    assert left == {physical(f.external_path) for f in live}
    assert sorted_rows(read_rows(table), KEY) == expected
    assert rust_rows(warehouse) == expected
