"""ingest_arrow: level-0 files and one snapshot without Spark; pypaimon reads what it wrote."""

from __future__ import annotations

import pyarrow as pa
import pytest

from dagster_paimon.errors import InvalidArgumentError, SchemaMismatchError
from dagster_paimon.ingest.arrow import ingest_arrow
from dagster_paimon.table import create_table
from tests.conftest import ORDERS_SCHEMA, data_files_on_disk, orders_batch, orders_spec
from tests.lsm.kvmodel import apply_dedup, read_rows, sorted_rows

KEY = ("dt", "id")


def with_kinds(data: pa.Table, kinds: list[str]) -> pa.Table:
    return data.append_column("_row_kind", pa.array(kinds, pa.string()))


def test_appends_upserts_deletes_and_overwrites_read_back_as_the_model(warehouse):
    table = create_table(warehouse, orders_spec())
    model: dict = {}
    first = orders_batch(0)
    result = ingest_arrow(table, first)
    apply_dedup(model, [{**r, "_kind": "+I"} for r in first.to_pylist()], KEY)
    assert (result.snapshot_id, result.commit_kind, result.rows) == (1, "APPEND", 40)
    assert result.files_written == 4 and result.buckets == 4

    second = orders_batch(1)
    kinds = ["-D" if i % 5 == 0 else "+U" for i in range(second.num_rows)]
    ingest_arrow(table, with_kinds(second, kinds))
    rows = [{**r, "_kind": k} for r, k in zip(second.to_pylist(), kinds, strict=True)]
    apply_dedup(model, rows, KEY)
    assert sorted_rows(read_rows(table), KEY) == sorted_rows(model.values(), KEY)

    day = pa.table(
        {"dt": ["2024-01-02"] * 2, "id": [1000, 1001], "v": ["x", "y"]}, schema=ORDERS_SCHEMA
    )
    result = ingest_arrow(table, day, mode="overwrite")
    assert result.commit_kind == "OVERWRITE"
    kept = [r for r in model.values() if r["dt"] != "2024-01-02"]
    assert sorted_rows(read_rows(table), KEY) == sorted_rows(kept + day.to_pylist(), KEY)


def test_bad_input_changes_nothing(warehouse):
    table = create_table(warehouse, orders_spec())
    ingest_arrow(table, orders_batch(0))
    files = data_files_on_disk(table)
    null_key = pa.table({"dt": ["2024-01-01"], "id": [None], "v": ["x"]})
    with pytest.raises(SchemaMismatchError, match="primary key column 'id' is null"):
        ingest_arrow(table, null_key)
    with pytest.raises(SchemaMismatchError, match="missing columns"):
        ingest_arrow(table, pa.table({"dt": ["2024-01-01"], "id": [1]}))
    with pytest.raises(InvalidArgumentError, match="mode must be one of"):
        ingest_arrow(table, orders_batch(1), mode="upsert")
    assert data_files_on_disk(table) == files
    assert table.snapshot_manager().get_latest_snapshot().id == 1


def test_an_empty_table_commits_nothing(warehouse):
    table = create_table(warehouse, orders_spec())
    result = ingest_arrow(table, orders_batch(0).slice(0, 0))
    assert result.snapshot_id is None and "nothing to ingest" in result.summary()
    assert table.snapshot_manager().get_latest_snapshot() is None
