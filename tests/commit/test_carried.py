"""What our snapshots carry over from the latest one, as Java's FileStoreCommitImpl writes it:
the statistics file of the current schema, watermark and nextRowId, and the highest sequence
number under `write.sequence-number-init-mode=snapshot`."""

from __future__ import annotations

import dataclasses
import json

import pyarrow as pa
from pypaimon.common.json_util import JSON
from pypaimon.schema.data_types import AtomicType
from pypaimon.schema.schema_change import SchemaChange

from dagster_paimon.commit.carried import MAX_SEQUENCE_NUMBER
from dagster_paimon.ingest.arrow import ingest_arrow
from dagster_paimon.paimon_table import PaimonTable
from dagster_paimon.snapshot.entries import live_entries
from dagster_paimon.storage.snapshots import create_snapshot_if_absent
from dagster_paimon.table import create_table, open_catalog, open_table
from tests.conftest import orders_batch, orders_spec, write_with_pypaimon


def analyze(table, schema_id: int, watermark: int | None = None) -> str:
    """Commit statistics as Java's FileStoreCommitImpl.commitStatistics does: a stats file
    (Statistics JSON) and an ANALYZE snapshot with the latest's manifests naming it."""
    name = f"stats-{schema_id}-0"
    stats = {
        "snapshotId": table.snapshot_manager().get_latest_snapshot().id,
        "schemaId": schema_id,
        "mergedRecordCount": 80,
        "mergedRecordSize": 4096,
        "colStats": {},
    }
    directory = table.path_factory().statistics_path().rstrip("/")
    table.file_io.mkdirs(directory)
    with table.file_io.new_output_stream(f"{directory}/{name}") as out:
        out.write(json.dumps(stats).encode())
    latest = table.snapshot_manager().get_latest_snapshot()
    analyzed = dataclasses.replace(
        latest,
        id=latest.id + 1,
        commit_kind="ANALYZE",
        delta_record_count=0,
        statistics=name,
        watermark=watermark,
        next_row_id=17,
    )
    path = table.snapshot_manager().get_snapshot_path(analyzed.id)
    assert create_snapshot_if_absent(table.file_io, path, JSON.to_json(analyzed, indent=2))
    return name


def compact_full(warehouse: str) -> None:
    """A full compaction of db.orders, as the CLI runs it."""
    PaimonTable.open(warehouse, "db.orders").compact(full=True)


def latest(warehouse: str):
    return open_table(warehouse, "db.orders").snapshot_manager().get_latest_snapshot()


def test_compaction_keeps_the_statistics_watermark_and_next_row_id(warehouse):
    table = create_table(warehouse, orders_spec())
    for commit in range(3):
        write_with_pypaimon(table, orders_batch(commit))
    name = analyze(table, schema_id=0, watermark=1_700_000_000_000)
    compact_full(warehouse)
    snapshot = latest(warehouse)
    assert snapshot.commit_kind == "COMPACT"
    assert (snapshot.statistics, snapshot.watermark, snapshot.next_row_id) == (
        name,
        1_700_000_000_000,
        17,
    )
    assert snapshot.properties is None


def test_statistics_of_an_older_schema_are_not_inherited(warehouse):
    table = create_table(warehouse, orders_spec())
    write_with_pypaimon(table, orders_batch(0))
    analyze(table, schema_id=0)
    open_catalog(warehouse).alter_table(
        "db.orders", [SchemaChange.add_column("note", AtomicType("STRING"))]
    )
    evolved = open_table(warehouse, "db.orders")
    ingest_arrow(evolved, orders_batch(1).append_column("note", pa.array(["n"] * 40)))
    snapshot = latest(warehouse)
    assert snapshot.schema_id == 1
    assert snapshot.statistics is None


def test_snapshot_init_mode_records_the_highest_sequence_number(warehouse):
    table = create_table(warehouse, orders_spec(**{"write.sequence-number-init-mode": "snapshot"}))
    for commit in range(2):
        write_with_pypaimon(table, orders_batch(commit))
    # pypaimon's snapshots lack the property: our first commit scans every manifest, as Java's
    ingest_arrow(open_table(warehouse, "db.orders"), orders_batch(2))
    now = open_table(warehouse, "db.orders")
    highest = max(e.file.max_sequence_number for e in live_entries(now, latest(warehouse)))
    assert latest(warehouse).properties == {MAX_SEQUENCE_NUMBER: str(highest)}
    # a compaction's outputs keep their sequence numbers: the recorded maximum stays
    compact_full(warehouse)
    assert latest(warehouse).properties == {MAX_SEQUENCE_NUMBER: str(highest)}


def test_scan_init_mode_writes_no_properties(warehouse):
    table = create_table(warehouse, orders_spec())
    write_with_pypaimon(table, orders_batch(0))
    ingest_arrow(open_table(warehouse, "db.orders"), orders_batch(1))
    assert latest(warehouse).properties is None
