"""`dagster-paimon ingest` and `compact --executor spark`: JSON contract and exit codes."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dagster_paimon.cli import EXIT_OK, EXIT_USAGE, main
from dagster_paimon.table import create_table
from tests.conftest import ORDERS_SCHEMA, latest_id, orders_batch, orders_spec, write_with_pypaimon
from tests.lsm.kvmodel import read_rows, sorted_rows

pytestmark = pytest.mark.spark


def run(capsys, *argv: str) -> tuple[int, dict | None, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, json.loads(out) if code == EXIT_OK else None, err


def test_ingest_prints_the_snapshot_rows_and_files(spark, warehouse, tmp_path, capsys):
    table = create_table(warehouse, orders_spec())
    source = tmp_path / "orders.parquet"
    pq.write_table(orders_batch(0), source)

    code, payload, _ = run(
        capsys, "ingest", "--warehouse", warehouse, "--table", "db.orders",
        "--source", str(source), "--spark-master", "local[2]", "--json",
    )  # fmt: skip

    assert code == EXIT_OK
    assert payload["snapshot_id"] == 1
    assert payload["rows"] == orders_batch(0).num_rows
    assert payload["files_written"] == 4
    assert sorted_rows(read_rows(table), ("dt", "id")) == sorted_rows(
        orders_batch(0).to_pylist(), ("dt", "id")
    )


def test_ingest_csv_overwrite_casts_text_columns(spark, warehouse, tmp_path, capsys):
    table = create_table(warehouse, orders_spec())
    source = tmp_path / "orders.csv"
    source.write_text("dt,id,v\n2024-01-01,1,a\n2024-01-01,2,b\n2024-01-01,1,c\n")

    code, payload, _ = run(
        capsys, "ingest", "--warehouse", warehouse, "--table", "db.orders",
        "--source", str(source), "--format", "csv", "--mode", "overwrite", "--json",
    )  # fmt: skip

    assert code == EXIT_OK
    assert payload["commit_kind"] == "OVERWRITE"
    assert sorted_rows(read_rows(table), ("dt", "id")) == [
        {"dt": "2024-01-01", "id": 1, "v": "c"},
        {"dt": "2024-01-01", "id": 2, "v": "b"},
    ]


def test_bad_ingest_input_exits_2_with_one_line(spark, warehouse, tmp_path, capsys):
    table = create_table(warehouse, orders_spec())
    source = tmp_path / "wrong.parquet"
    wrong = pa.schema([*ORDERS_SCHEMA, pa.field("extra", pa.int32())])
    pq.write_table(pa.table({"dt": ["d"], "id": [1], "v": ["x"], "extra": [1]}, wrong), source)

    code, _, err = run(
        capsys, "ingest", "--warehouse", warehouse, "--table", "db.orders",
        "--source", str(source),
    )  # fmt: skip
    missing, _, missing_err = run(
        capsys, "ingest", "--warehouse", warehouse, "--table", "db.orders",
        "--source", str(tmp_path / "absent.parquet"),
    )  # fmt: skip

    assert code == missing == EXIT_USAGE
    assert "columns ['extra'] are not in the table" in err
    assert "does not exist" in missing_err
    assert latest_id(table) is None


def test_compact_on_spark_executors(spark, warehouse, capsys):
    table = create_table(warehouse, orders_spec())
    for commit in range(3):
        write_with_pypaimon(table, orders_batch(commit))
    expected = sorted_rows(read_rows(table), ("dt", "id"))

    code, payload, _ = run(
        capsys, "compact", "--warehouse", warehouse, "--table", "db.orders", "--full",
        "--executor", "spark", "--json",
    )  # fmt: skip

    assert code == EXIT_OK
    assert payload["snapshot_id"] == 4
    assert len(payload["units"]) == 4
    assert sorted_rows(read_rows(table), ("dt", "id")) == expected
