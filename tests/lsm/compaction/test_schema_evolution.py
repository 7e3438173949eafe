"""Compaction across schema changes: files of older schemas merge into the latest schema.

For every change pypaimon's alter_table makes (add, drop, rename, reorder, widen a type, relax
nullability) pypaimon writes under the old schema, the table is altered, pypaimon writes under
the new one, and our full compaction's output (latest schema id) must read back as the model
through pypaimon, pypaimon-rust and Paimon's Java reader. Columns are matched by field id, as
Paimon's readers do, so a dropped column re-added under the same name starts empty.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from pypaimon.schema.data_types import AtomicType
from pypaimon.schema.schema_change import Move, SchemaChange
from pypaimon_rust.datafusion import SQLContext

from dagster_paimon.errors import SchemaMismatchError
from dagster_paimon.ingest.arrow import ingest_arrow
from dagster_paimon.io.kv import value_schema
from dagster_paimon.kinds import compact_open_table
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.table import TableRef, TableSpec, create_table, open_catalog, open_table
from tests.conftest import write_with_pypaimon
from tests.lsm.kvmodel import read_rows

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("a", pa.int32()),
        pa.field("b", pa.string()),
        pa.field("c", pa.float32(), nullable=False),
    ]
)
OLD_ROWS = [{"id": i, "a": i, "b": f"b{i}", "c": float(i)} for i in range(6)]

# change, the rows written after it, and how an old row reads after it
CASES = {
    "add": (
        [SchemaChange.add_column("d", AtomicType("STRING"))],
        [{"id": i, "a": -i, "b": "new", "c": 0.5, "d": f"d{i}"} for i in range(3, 9)],
        lambda r: {**r, "d": None},
    ),
    "drop": (
        [SchemaChange.drop_column("b")],
        [{"id": i, "a": -i, "c": 0.5} for i in range(3, 9)],
        lambda r: {k: v for k, v in r.items() if k != "b"},
    ),
    "rename": (
        [SchemaChange.rename_column("b", "bee")],
        [{"id": i, "a": -i, "bee": "new", "c": 0.5} for i in range(3, 9)],
        lambda r: {"id": r["id"], "a": r["a"], "bee": r["b"], "c": r["c"]},
    ),
    "reorder": (
        [SchemaChange.update_column_position(Move.first("c"))],
        [{"c": 0.5, "id": i, "a": -i, "b": "new"} for i in range(3, 9)],
        lambda r: r,
    ),
    "widen": (
        [
            SchemaChange.update_column_type("a", AtomicType("BIGINT")),
            SchemaChange.update_column_type("c", AtomicType("DOUBLE NOT NULL")),
        ],
        [{"id": i, "a": 2**40 + i, "b": "new", "c": 0.25} for i in range(3, 9)],
        lambda r: r,
    ),
    "nullability": (
        [SchemaChange.update_column_nullability("c", True)],
        [{"id": i, "a": -i, "b": "new", "c": None} for i in range(3, 9)],
        lambda r: r,
    ),
    "drop-and-re-add": (
        [SchemaChange.drop_column("b"), SchemaChange.add_column("b", AtomicType("STRING"))],
        [{"id": i, "a": -i, "c": 0.5, "b": "again"} for i in range(3, 9)],
        lambda r: {"id": r["id"], "a": r["a"], "c": r["c"], "b": None},
    ),
}


def normalized(rows: list[dict]) -> dict[int, dict]:
    """Rows by id, floats as Python floats."""
    return {
        r["id"]: {k: (float(v) if isinstance(v, float) else v) for k, v in r.items()} for r in rows
    }


@pytest.mark.parametrize("case", sorted(CASES))
def test_files_of_older_schemas_compact_into_the_latest(warehouse, paimon_java, case):
    changes, new_rows, evolve = CASES[case]
    create_table(warehouse, TableSpec("db", "t", SCHEMA, ("id",), 1, (), {}))
    write_with_pypaimon(open_table(warehouse, "db.t"), pa.Table.from_pylist(OLD_ROWS, SCHEMA))
    open_catalog(warehouse).alter_table("db.t", changes)
    table = open_table(warehouse, "db.t")
    write_with_pypaimon(table, pa.Table.from_pylist(new_rows, value_schema(table.table_schema)))
    model = normalized([evolve(r) for r in OLD_ROWS])
    model.update(normalized(new_rows))

    result = compact_open_table(table, TableRef(warehouse, "db.t"), full=True)
    assert result.snapshot_id is not None
    table = open_table(warehouse, "db.t")
    files = [f for b in read_levels(table).buckets for f in b.levels.all_files()]
    assert {f.schema_id for f in files} == {table.table_schema.id}
    assert normalized(read_rows(table)) == model

    ctx = SQLContext()
    ctx.register_catalog("paimon", {"warehouse": warehouse})
    rust = [r for b in ctx.sql("SELECT * FROM paimon.db.t") for r in b.to_pylist()]
    assert normalized(rust) == model
    names = [f.name for f in table.table_schema.fields]
    java = [dict(zip(names, row, strict=True)) for row in paimon_java.read(warehouse, "db", "t")]
    assert normalized(java) == model


@pytest.mark.parametrize("case", ["add", "drop", "rename", "widen"])
def test_ingest_of_an_older_or_wider_dataframe_names_the_difference(warehouse, case):
    """Data shaped like the schema before a change is refused naming the columns (as Paimon's
    writers without schema merging do); data in the new shape lands; nothing else changes."""
    changes, new_rows, _ = CASES[case]
    create_table(warehouse, TableSpec("db", "t", SCHEMA, ("id",), 1, (), {}))
    write_with_pypaimon(open_table(warehouse, "db.t"), pa.Table.from_pylist(OLD_ROWS, SCHEMA))
    open_catalog(warehouse).alter_table("db.t", changes)
    table = open_table(warehouse, "db.t")
    latest = table.snapshot_manager().get_latest_snapshot().id
    old_shape = pa.Table.from_pylist(OLD_ROWS, SCHEMA)
    expected = {
        "add": r"missing columns \['d'\]",
        "drop": r"columns \['b'\] are not in the table",
        "rename": r"missing columns \['bee'\].*columns \['b'\] are not in the table",
        "widen": None,  # int -> bigint and float -> double widen losslessly: accepted
    }[case]
    if expected is None:
        ingest_arrow(table, old_shape)
    else:
        with pytest.raises(SchemaMismatchError, match=expected):
            ingest_arrow(table, old_shape)
        assert open_table(warehouse, "db.t").snapshot_manager().get_latest_snapshot().id == latest
    ingest_arrow(
        open_table(warehouse, "db.t"),
        pa.Table.from_pylist(new_rows, value_schema(table.table_schema)),
    )
    model = normalized([r if expected is None else CASES[case][2](r) for r in OLD_ROWS])
    model.update(normalized(new_rows))
    assert normalized(read_rows(open_table(warehouse, "db.t"))) == model
