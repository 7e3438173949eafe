"""Manifest fields newer Java writers add (1.0-1.4) survive every rewrite of ours: a fixture
whose manifests carry them, built per Java's DataFileMetaSerializer and ManifestFileMetaSerializer
(release-2.0.0), then manifest compaction and a compaction that upgrades files, decoded from the
Avro as written."""

from __future__ import annotations

import dataclasses
import uuid

import fastavro
from pypaimon.common.json_util import JSON
from pypaimon.manifest.manifest_list_manager import ManifestListManager

from dagster_paimon.format.manifest import ManifestReader
from dagster_paimon.paimon_table import PaimonTable
from dagster_paimon.snapshot.entries import live_entries
from dagster_paimon.storage.snapshots import create_snapshot_if_absent
from dagster_paimon.table import create_table, open_table
from tests.conftest import orders_batch, orders_spec, write_with_pypaimon
from tests.hooks import compact_manifests
from tests.lsm.kvmodel import read_rows, sorted_rows

NEWER = ("_EMBEDDED_FILE_INDEX", "_EXTRA_FILES", "_FIRST_ROW_ID", "_FILE_SOURCE")
"""Data-file fields we never produce for these files, each set to a non-default value."""


def with_newer_fields(warehouse: str) -> dict[str, dict]:
    """Rewrite the latest snapshot as one whose data files carry NEWER fields, as Java 1.3+
    would record them; returns the fields by file name."""
    table = open_table(warehouse, "db.orders")
    latest = table.snapshot_manager().get_latest_snapshot()
    entries, expected = [], {}
    for n, entry in enumerate(live_entries(table, latest, with_stats=True)):
        sidecar = f"{entry.file.file_name}.index"
        file = dataclasses.replace(
            entry.file,
            embedded_index=bytes([n, 1, 2]),
            extra_files=[sidecar],
            first_row_id=1000 * n,
            file_source=0,
        )
        entries.append(dataclasses.replace(entry, file=file))
        expected[file.file_name] = {
            "_EMBEDDED_FILE_INDEX": bytes([n, 1, 2]),
            "_EXTRA_FILES": [sidecar],
            "_FIRST_ROW_ID": 1000 * n,
            "_FILE_SOURCE": 0,
        }
    metas = ManifestReader(table).rolling_write(entries, 8 << 20, f"manifest-{uuid.uuid4()}")
    lists = ManifestListManager(table)
    base, delta = f"manifest-list-{uuid.uuid4()}-0", f"manifest-list-{uuid.uuid4()}-1"
    base_size, delta_size = lists.write(base, metas), lists.write(delta, [])
    forged = dataclasses.replace(
        latest,
        id=latest.id + 1,
        base_manifest_list=base,
        base_manifest_list_size=base_size,
        delta_manifest_list=delta,
        delta_manifest_list_size=delta_size,
        commit_kind="COMPACT",
        delta_record_count=0,
    )
    path = table.snapshot_manager().get_snapshot_path(forged.id)
    assert create_snapshot_if_absent(table.file_io, path, JSON.to_json(forged, indent=2))
    return expected


def written_files(warehouse: str) -> dict[str, dict]:
    """The `_FILE` record of every ADD entry of the latest snapshot, decoded from the Avro."""
    table = open_table(warehouse, "db.orders")
    latest = table.snapshot_manager().get_latest_snapshot()
    root = f"{table.table_path}/manifest"
    files: dict[str, dict] = {}
    for meta in ManifestListManager(table).read_all(latest):
        with table.file_io.new_input_stream(f"{root}/{meta.file_name}") as stream:
            for record in fastavro.reader(stream):
                if record["_KIND"] == 0:
                    files[record["_FILE"]["_FILE_NAME"]] = record["_FILE"]
                else:
                    files.pop(record["_FILE"]["_FILE_NAME"], None)
    return files


def manifest_list_records(warehouse: str) -> list[dict]:
    """The latest base manifest list's records, decoded."""
    table = open_table(warehouse, "db.orders")
    latest = table.snapshot_manager().get_latest_snapshot()
    path = f"{table.table_path}/manifest/{latest.base_manifest_list}"
    with table.file_io.new_input_stream(path) as stream:
        return list(fastavro.reader(stream))


def newer(files: dict[str, dict]) -> dict[str, dict]:
    """Only the NEWER fields of each file."""
    return {name: {k: f[k] for k in NEWER} for name, f in files.items()}


def test_newer_fields_survive_manifest_compaction_and_upgrades(warehouse):
    table = create_table(warehouse, orders_spec())
    write_with_pypaimon(table, orders_batch(0))
    expected_rows = sorted_rows(read_rows(table), ("dt", "id"))
    expected = with_newer_fields(warehouse)
    assert newer(written_files(warehouse)) == expected
    ranges = [(r["_MIN_ROW_ID"], r["_MAX_ROW_ID"]) for r in manifest_list_records(warehouse)]
    assert ranges and all(low is not None and high is not None for low, high in ranges)

    compact_manifests(open_table(warehouse, "db.orders"), full=True)
    assert newer(written_files(warehouse)) == expected
    merged = manifest_list_records(warehouse)
    assert [(r["_MIN_ROW_ID"], r["_MAX_ROW_ID"]) for r in merged] == [
        (min(e["_FIRST_ROW_ID"] for e in expected.values()), max(r[1] for r in ranges))
    ]
    assert {(r["_MIN_LEVEL"], r["_MAX_LEVEL"]) for r in merged} == {(0, 0)}

    # one level-0 file per bucket: a full compaction moves each up without rewriting it
    PaimonTable.open(warehouse, "db.orders").compact(full=True)
    upgraded = written_files(warehouse)
    assert {f["_LEVEL"] for f in upgraded.values()} == {5}
    assert newer(upgraded) == expected
    assert sorted_rows(read_rows(open_table(warehouse, "db.orders")), ("dt", "id")) == expected_rows
