"""Every Paimon mode we do not implement is refused by name, and the table is left as it was."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta

import pytest
from pypaimon.common.json_util import JSON
from pypaimon.schema.data_types import AtomicType, DataField, DataType, VectorType
from pypaimon.schema.schema_manager import SchemaManager

from dagster_paimon.cli import main
from dagster_paimon.errors import (
    InvalidArgumentError,
    InvalidOptionError,
    InvalidTableSpecError,
    UnsupportedLayoutError,
)
from dagster_paimon.ingest.arrow import ingest_arrow
from dagster_paimon.kinds import compact_open_table
from dagster_paimon.maintenance.consumers import clear_consumers
from dagster_paimon.maintenance.options import RetentionOverrides
from dagster_paimon.maintenance.partitions import expire_partitions
from dagster_paimon.maintenance.rollback import rollback_to
from dagster_paimon.maintenance.tags import create_tag
from dagster_paimon.table import TableRef, create_table, open_table
from dagster_paimon.unsupported import (
    COMPACTION,
    CONSUMERS,
    EXPIRY,
    INGEST,
    MANIFEST_COMPACTION,
    MODES,
    OPERATIONS,
    ORPHAN_REMOVAL,
    OVERWRITE,
    PARTITION_EXPIRY,
    ROLLBACK,
    TAGS,
    check_supported_layout,
    unsupported_modes,
)
from tests.conftest import orders_batch, orders_spec, write_with_pypaimon
from tests.hooks import compact_manifests, expire_changelogs, expire_snapshots, remove_orphans
from tests.tablefiles import files_on_disk, snapshot_ids, table_root

IDENTIFIER = "db.orders"
DAY_MS = 24 * 3600 * 1000


def _run(operation: str, warehouse: str) -> object:
    """Run one operation on the table as it would change it, were it not refused."""
    table = open_table(warehouse, IDENTIFIER)
    if operation == COMPACTION:
        return compact_open_table(table, TableRef(warehouse, IDENTIFIER), full=True)
    if operation == INGEST:
        return ingest_arrow(table, orders_batch(9))
    if operation == OVERWRITE:
        return ingest_arrow(table, orders_batch(9), mode="overwrite")
    if operation == EXPIRY:
        return expire_snapshots(table, overrides=RetentionOverrides(retain_min=1, retain_max=1))
    if operation == MANIFEST_COMPACTION:
        return compact_manifests(table, full=True)
    if operation == PARTITION_EXPIRY:
        return expire_partitions(table, expiration_time=timedelta(0))
    if operation == TAGS:
        return create_tag(table, "t")
    if operation == ROLLBACK:
        return rollback_to(table, snapshot_id=1)
    if operation == CONSUMERS:
        return clear_consumers(table)
    now = int(time.time() * 1000) + DAY_MS
    return remove_orphans(table, older_than_ms=1, now_ms=now)


def _column(name: str, data_type: DataType) -> Callable:
    """A schema change adding one column of a type we do not implement."""

    def change(schema):
        field = DataField(schema.highest_field_id + 1, name, data_type)
        return replace(
            schema, fields=[*schema.fields, field], highest_field_id=schema.highest_field_id + 1
        )

    return change


def _options(**options: str) -> Callable:
    """A schema change setting table options."""
    return lambda schema: replace(schema, options={**schema.options, **options})


# one table per mode of MODES, the way Java's writer would have left it
TABLES: dict[str, Callable] = {
    "table type": _options(type="object-table"),
    "dynamic-partition-overwrite": _options(**{"dynamic-partition-overwrite": "false"}),
    "MAP shared shredding": _options(**{"fields.v.map.storage-layout": "shared-shredding"}),
    "manifest.format": _options(**{"manifest.format": "parquet"}),
    "partition.timestamp-format.strict": _options(
        **{"partition.timestamp-format.strict": "true", "partition.timestamp-formatter": "yyyy"}
    ),
    "upsert-key": lambda s: _options(**{"upsert-key": "id"})(replace(s, primary_keys=[])),
    "Iceberg compatibility": _options(**{"metadata.iceberg.storage": "hive-catalog"}),
    "metastore partition sync": _options(**{"metastore.tag-to-partition": "dt"}),
    "commit callbacks": _options(**{"commit.callbacks": "com.example.Audit"}),
    "tag callbacks": _options(**{"tag.callbacks": "com.example.Audit"}),
    "row-tracking.enabled": lambda s: _options(**{"row-tracking.enabled": "true"})(
        replace(s, primary_keys=[])
    ),
    "data-evolution.enabled": lambda s: _options(
        **{"data-evolution.enabled": "true", "row-tracking.enabled": "true"}
    )(replace(s, primary_keys=[])),
    "BLOB on an append table": lambda s: _column("b", AtomicType("BLOB"))(
        replace(s, primary_keys=[])
    ),
    "clustering.incremental": lambda s: _options(
        **{"clustering.incremental": "true", "clustering.columns": "v"}
    )(replace(s, primary_keys=[])),
    "pk-clustering-override": _options(
        **{"pk-clustering-override": "true", "clustering.columns": "v"}
    ),
    "sequence.snapshot-ordering": _options(
        **{"sequence.snapshot-ordering": "true", "write-only": "true"}
    ),
    "chain-table.enabled": _options(**{"chain-table.enabled": "true"}),
    "deletion-vectors.modifiable": _options(**{"deletion-vectors.modifiable": "true"}),
    "primary-key.nullable": _options(**{"primary-key.nullable": "true"}),
    "blob-field": lambda s: _options(**{"blob-field": "b"})(_column("b", AtomicType("BLOB"))(s)),
    "pk-btree.index.columns": _options(**{"pk-btree.index.columns": "v"}),
    "pk-bitmap.index.columns": _options(**{"pk-bitmap.index.columns": "v"}),
    "pk-vector.index.columns": lambda s: _options(
        **{"pk-vector.index.columns": "e", "fields.e.pk-vector.index.type": "ivf"}
    )(_column("e", VectorType(True, AtomicType("FLOAT"), 4))(s)),
    "pk-full-text.index.columns": _options(**{"pk-full-text.index.columns": "v"}),
    "VARIANT type": _column("payload", AtomicType("VARIANT")),
    "BLOB type": _column("image", AtomicType("BLOB")),
    "VECTOR type": _column("embedding", VectorType(True, AtomicType("FLOAT"), 4)),
    "lance / vortex / mosaic file format": _options(**{"file.format": "lance"}),
    "file-index on columns Java cannot index": _options(**{"file-index.bsi.columns": "v"}),
    "data-file.external-paths.strategy": _options(
        **{
            "data-file.external-paths": "file:/elsewhere",
            "data-file.external-paths.strategy": "hash-ring",
        }
    ),
}


def _table_with(warehouse: str, change: Callable) -> None:
    """Four pypaimon commits, then a schema carrying the mode, as Java's schema evolution does.

    The schema is written as SchemaManager.commit writes it, without pypaimon's own option
    checks (they refuse, say, a BLOB column on a primary-key table, which Paimon 2.0 allows).
    """
    table = create_table(warehouse, orders_spec())
    for commit in range(4):
        write_with_pypaimon(table, orders_batch(commit))
    manager = SchemaManager(table.file_io, str(table.table_path))
    latest = manager.latest()
    evolved = change(replace(latest, id=latest.id + 1))
    path = manager._to_schema_path(evolved.id)
    assert manager.file_io.try_to_write_atomic(path, JSON.to_json(evolved, indent=2))
    bucket = table_root(table) / "dt=2024-01-01" / "bucket-0"
    orphan = bucket / "data-orphan-0.parquet"  # what orphan removal would delete
    orphan.write_bytes(b"orphan")
    os.utime(orphan, (0, 0))


def test_every_mode_has_a_table():
    assert sorted(TABLES) == sorted(m.name for m in MODES)


REFUSALS = [
    pytest.param(mode.name, op, id=f"{mode.name}-{op}")
    for mode in MODES
    for op in OPERATIONS
    if op in mode.operations
]


@pytest.mark.parametrize(("mode", "operation"), REFUSALS)
def test_refused_before_anything_changes(warehouse, mode, operation):
    _table_with(warehouse, TABLES[mode])
    table = open_table(warehouse, IDENTIFIER)
    before = (snapshot_ids(table), files_on_disk(table))
    with pytest.raises(UnsupportedLayoutError) as refused:
        _run(operation, warehouse)
    found = {m.name: f for m, f in unsupported_modes(table.table_schema)}[mode]
    message = str(refused.value)
    assert operation in message
    assert found in message
    assert (snapshot_ids(table), files_on_disk(table)) == before


@pytest.mark.parametrize("mode", ["pk-clustering-override", "VARIANT type"])
def test_operations_the_mode_does_not_change_still_run(warehouse, mode):
    _table_with(warehouse, TABLES[mode])
    for operation in (EXPIRY, MANIFEST_COMPACTION, ORPHAN_REMOVAL):
        _run(operation, warehouse)
    table = open_table(warehouse, IDENTIFIER)
    assert len(snapshot_ids(table)) == 2  # expired to one, plus the manifest compaction
    assert "dt=2024-01-01/bucket-0/data-orphan-0.parquet" not in files_on_disk(table)


def test_changelog_expiry_reaches_the_check(warehouse, monkeypatch):
    _table_with(warehouse, TABLES["pk-clustering-override"])
    monkeypatch.setattr(
        "dagster_paimon.unsupported.MODES",
        tuple(replace(m, operations=frozenset({EXPIRY})) for m in MODES),
    )
    with pytest.raises(UnsupportedLayoutError, match="pk-clustering-override"):
        expire_changelogs(open_table(warehouse, IDENTIFIER))


@pytest.mark.parametrize(
    "options",
    [
        {"pk-clustering-override": "false"},
        {"sequence.snapshot-ordering": "FALSE"},
        {"chain-table.enabled": "false", "deletion-vectors.modifiable": "false"},
        {"primary-key.nullable": "false", "pk-btree.index.columns": ""},
        {"file.format": "parquet", "file.format.per.level": "0:avro,3:orc"},
    ],
    ids=lambda o: ",".join(o),
)
def test_default_values_are_not_refused(warehouse, options):
    _table_with(warehouse, _options(**options))
    for operation in (INGEST, COMPACTION):
        _run(operation, warehouse)
    assert len(snapshot_ids(open_table(warehouse, IDENTIFIER))) == 6


def test_a_foreign_format_for_one_level_is_refused(warehouse):
    _table_with(warehouse, _options(**{"file.format.per.level": "0:avro,5:vortex"}))
    table = open_table(warehouse, IDENTIFIER)
    with pytest.raises(UnsupportedLayoutError, match="'5:vortex'"):
        check_supported_layout(table.table_schema, operation=COMPACTION)


def test_blob_leaves_orphan_removal_of_append_tables_alone(warehouse):
    _table_with(warehouse, TABLES["BLOB type"])
    schema = open_table(warehouse, IDENTIFIER).table_schema
    check_supported_layout(replace(schema, primary_keys=[]), operation=ORPHAN_REMOVAL)


def test_the_error_is_a_table_spec_error_the_cli_maps_to_exit_2(warehouse, capsys):
    _table_with(warehouse, TABLES["sequence.snapshot-ordering"])
    assert issubclass(UnsupportedLayoutError, InvalidTableSpecError)
    code = main(["compact", "--warehouse", warehouse, "--table", IDENTIFIER])
    assert code == 2
    assert "sequence.snapshot-ordering" in capsys.readouterr().err


def test_health_reports_the_mode_and_keeps_working(warehouse, capsys):
    _table_with(warehouse, TABLES["pk-clustering-override"])
    code = main(["health", "--warehouse", warehouse, "--table", IDENTIFIER, "--json"])
    assert code == 0
    out = capsys.readouterr().out
    assert "pk-clustering-override" in out


def test_an_unknown_operation_is_a_bad_argument(orders_table):
    with pytest.raises(InvalidArgumentError, match="operation"):
        check_supported_layout(orders_table.table_schema, operation="vacuum")


def test_a_malformed_flag_is_an_option_error(warehouse):
    _table_with(warehouse, _options(**{"pk-clustering-override": "yes"}))
    with pytest.raises(InvalidOptionError, match="pk-clustering-override"):
        check_supported_layout(open_table(warehouse, IDENTIFIER).table_schema, operation=INGEST)
