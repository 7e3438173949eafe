"""Full compaction of a lone top-level run, as Paimon 1.2+'s CompactStrategy.pickFullCompaction
(release-2.0.0) decides it: files with a deletion vector are rewritten and their vectors
dropped (#8783), `compaction.force-rewrite-all-files` rewrites every file, anything else is
left alone (no snapshot)."""

from __future__ import annotations

import pyarrow as pa
from pypaimon.schema.schema_change import SchemaChange

from dagster_paimon.ingest.arrow import ingest_arrow
from dagster_paimon.io.index import deleted_rows, deletion_indexes
from dagster_paimon.paimon_table import PaimonTable
from dagster_paimon.snapshot.entries import live_entries
from dagster_paimon.table import create_table, open_catalog, open_table
from tests.conftest import ORDERS_SCHEMA, orders_batch, orders_spec
from tests.lsm.kvmodel import read_rows, sorted_rows

KEY = ("dt", "id")


def compact(warehouse: str, *, full: bool):
    """One compaction of db.orders, as the CLI runs it."""
    return PaimonTable.open(warehouse, "db.orders").compact(full=full)


def live(warehouse: str) -> dict[str, int]:
    """Live data files by name, with their level."""
    table = open_table(warehouse, "db.orders")
    latest = table.snapshot_manager().get_latest_snapshot()
    return {e.file.file_name: e.file.level for e in live_entries(table, latest)}


def vectors(warehouse: str) -> set[str]:
    """Data files the latest snapshot's deletion vectors name."""
    table = open_table(warehouse, "db.orders")
    latest = table.snapshot_manager().get_latest_snapshot()
    return {
        name for index in deletion_indexes(table, latest).values() for name in deleted_rows(index)
    }


def rows(warehouse: str) -> list[dict]:
    return sorted_rows(read_rows(open_table(warehouse, "db.orders")), KEY)


def deletes(ids: list[int]) -> pa.Table:
    """-D rows of these ids on the first day."""
    schema = ORDERS_SCHEMA.append(pa.field("_row_kind", pa.string()))
    n = len(ids)
    return pa.table(
        {"dt": ["2024-01-01"] * n, "id": ids, "v": ["x"] * n, "_row_kind": ["-D"] * n},
        schema=schema,
    )


def test_a_top_level_file_with_a_deletion_vector_is_rewritten_and_its_vector_dropped(warehouse):
    create_table(warehouse, orders_spec(bucket=1, **{"deletion-vectors.enabled": "true"}))
    ingest_arrow(open_table(warehouse, "db.orders"), orders_batch(0))
    compact(warehouse, full=True)
    top = live(warehouse)
    assert set(top.values()) == {5}

    # deletes only: the lookup marks the top file's rows, the output drops the -D records
    ingest_arrow(open_table(warehouse, "db.orders"), deletes([0, 2, 4]))
    compact(warehouse, full=False)
    assert live(warehouse) == top
    marked = vectors(warehouse)
    assert len(marked) == 1 and marked < set(top)  # the first day's file
    expected = rows(warehouse)
    assert {r["id"] for r in expected}.isdisjoint({0, 2, 4})

    result = compact(warehouse, full=True)
    assert result.snapshot_id is not None
    after = live(warehouse)
    assert set(after.values()) == {5}
    assert set(top) - set(after) == marked  # the other day's file has no vector: left alone
    assert len(after) == len(top)
    assert vectors(warehouse) == set()
    assert rows(warehouse) == expected


def test_force_rewrite_all_files_rewrites_a_compacted_table_and_nothing_else_does(warehouse):
    table = create_table(warehouse, orders_spec())
    ingest_arrow(table, orders_batch(0))
    compact(warehouse, full=True)
    top = live(warehouse)
    expected = rows(warehouse)

    assert compact(warehouse, full=True).snapshot_id is None
    assert live(warehouse) == top

    option = SchemaChange.set_option("compaction.force-rewrite-all-files", "true")
    open_catalog(warehouse).alter_table("db.orders", [option])
    assert compact(warehouse, full=True).snapshot_id is not None
    after = live(warehouse)
    assert len(after) == len(top) and set(after).isdisjoint(top)
    assert set(after.values()) == {5}
    assert rows(warehouse) == expected
