"""LevelsWatch: unchanged tables are not re-read, new snapshots, schemas and drops are seen;
the lean latest-snapshot probe agrees with pypaimon's reconciliation when the hint is stale."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pypaimon.schema.data_types import AtomicType
from pypaimon.schema.schema_change import SchemaChange

from dagster_paimon.errors import TableNotFoundError
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.lsm.model.watch import LevelsWatch
from dagster_paimon.snapshot.resolve import latest_snapshot_id
from dagster_paimon.table import create_table, open_catalog, open_table
from tests.conftest import orders_batch, orders_spec, write_with_pypaimon


@pytest.fixture
def catalog(warehouse):
    table = create_table(warehouse, orders_spec())
    write_with_pypaimon(table, orders_batch(0))
    return open_catalog(warehouse)


def hint(warehouse: str) -> Path:
    return Path(warehouse) / "db.db" / "orders" / "snapshot" / "LATEST"


def files(levels) -> list[tuple[str, int]]:
    return sorted((f.file_name, f.level) for b in levels.buckets for f in b.levels.all_files())


def test_an_unchanged_table_keeps_its_levels_and_a_commit_is_read(warehouse, catalog):
    watch = LevelsWatch()
    first = watch.levels(catalog, "db.orders")
    assert watch.levels(catalog, "db.orders") is first
    write_with_pypaimon(open_table(warehouse, "db.orders"), orders_batch(1))
    second = watch.levels(catalog, "db.orders")
    assert second.snapshot_id == first.snapshot_id + 1
    fresh = read_levels(open_table(warehouse, "db.orders"))
    assert files(second) == files(fresh)


def test_a_newer_schema_reopens_the_table(warehouse, catalog):
    watch = LevelsWatch()
    watch.levels(catalog, "db.orders")
    changes = [
        SchemaChange.add_column("note", AtomicType("STRING")),
        SchemaChange.set_option("num-sorted-run.compaction-trigger", "2"),
    ]
    catalog.alter_table("db.orders", changes)
    table = open_table(warehouse, "db.orders")
    write_with_pypaimon(table, orders_batch(1).append_column("note", pa.array(["n"] * 40)))
    levels = watch.levels(catalog, "db.orders")
    assert levels.snapshot_id == 2
    assert levels.options.num_sorted_run_compaction_trigger == 2


def test_options_altered_without_a_commit_show_once_the_handle_ages(warehouse, catalog):
    watch = LevelsWatch(table_max_age_s=0)
    assert watch.levels(catalog, "db.orders").options.num_sorted_run_compaction_trigger == 5
    trigger = SchemaChange.set_option("num-sorted-run.compaction-trigger", "2")
    catalog.alter_table("db.orders", [trigger])
    assert watch.levels(catalog, "db.orders").options.num_sorted_run_compaction_trigger == 2


def test_a_dropped_table_is_reported_missing(warehouse, catalog):
    watch = LevelsWatch()
    watch.levels(catalog, "db.orders")
    catalog.drop_table("db.orders")
    with pytest.raises(TableNotFoundError):
        watch.levels(catalog, "db.orders")


def test_a_stale_or_missing_hint_falls_back_to_the_listing(warehouse, catalog):
    table = open_table(warehouse, "db.orders")
    write_with_pypaimon(table, orders_batch(1))
    hint(warehouse).write_text("1")
    assert latest_snapshot_id(table) == 2
    hint(warehouse).unlink()
    assert latest_snapshot_id(table) == 2
    hint(warehouse).write_text("garbage")
    assert latest_snapshot_id(table) == 2
