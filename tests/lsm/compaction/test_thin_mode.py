"""Thin-mode data files (no _KEY_ columns): tables pypaimon-rust writes, and data-file.thin-mode.

Paimon's readers take each key from its value column; so do ours. We write thin files exactly
when the table sets data-file.thin-mode, classic files otherwise, and buckets mixing both
compact correctly. pypaimon, pypaimon-rust and Paimon's Java reader read the results.
"""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pypaimon_rust.datafusion import SQLContext

from dagster_paimon.ingest.arrow import ingest_arrow
from dagster_paimon.io.kv import KEY_PREFIX
from dagster_paimon.io.paths import data_file_path
from dagster_paimon.kinds import health_of
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.table import TableSpec, create_table, open_table
from tests.conftest import write_with_pypaimon
from tests.lsm.kvmodel import read_rows
from tests.lsm.tables import compact_db_t as compact

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("v", pa.string())])


def rust_context(warehouse: str) -> SQLContext:
    """pypaimon-rust's SQL over the warehouse, as catalog `paimon`."""
    ctx = SQLContext()
    ctx.register_catalog("paimon", {"warehouse": warehouse})
    return ctx


def rust_rows(warehouse: str) -> dict[int, str]:
    """Every row pypaimon-rust reads, by id."""
    batches = rust_context(warehouse).sql("SELECT id, v FROM paimon.db.t")
    return {r["id"]: r["v"] for b in batches for r in b.to_pylist()}


def pypaimon_rows(warehouse: str) -> dict[int, str]:
    """Every row pypaimon reads, by id."""
    return {r["id"]: r["v"] for r in read_rows(open_table(warehouse, "db.t"))}


def file_columns(warehouse: str) -> dict[int, list[list[str]]]:
    """Per level, the column names of each live data file."""
    table = open_table(warehouse, "db.t")
    out: dict[int, list[list[str]]] = {}
    for b in read_levels(table).buckets:
        for f in b.levels.all_files():
            path = data_file_path(table, b.partition, b.bucket, f)
            out.setdefault(f.level, []).append(pq.read_schema(path).names)
    return out


def test_tables_pypaimon_rust_writes_compact_and_read_back_everywhere(warehouse, paimon_java):
    ctx = rust_context(warehouse)
    ctx.sql("CREATE DATABASE paimon.db")
    ctx.sql(
        "CREATE TABLE paimon.db.t (id INT NOT NULL, v STRING, PRIMARY KEY (id)) "
        "WITH ('bucket' = '2')"
    )
    rng = random.Random(4)
    model: dict[int, str] = {}
    for commit in range(6):
        rows = {k: f"c{commit}-{k}" for k in rng.sample(range(60), 15)}
        values = ", ".join(f"({k}, '{v}')" for k, v in rows.items())
        ctx.sql(f"INSERT INTO paimon.db.t VALUES {values}")
        model.update(rows)
        if commit in (2, 5):
            levels = file_columns(warehouse)
            assert all(not any(c.startswith(KEY_PREFIX) for c in cs) for cs in levels[0])
            compact(warehouse, full=commit == 5)
            assert pypaimon_rows(warehouse) == model
            assert rust_rows(warehouse) == model
    java = {r[0]: r[1] for r in paimon_java.read(warehouse, "db", "t")}
    assert java == model
    # the table does not ask for thin mode: what we wrote has the classic layout
    assert all(KEY_PREFIX + "id" in cs for cs in file_columns(warehouse)[5])


@pytest.mark.parametrize("options", [{}, {"deletion-vectors.enabled": "true"}])
def test_thin_mode_tables_get_thin_files_and_mixed_buckets_compact(warehouse, paimon_java, options):
    """pypaimon writes classic level-0 files; with data-file.thin-mode we write thin ones, and
    lookups (deletion vectors) read keys from thin files."""
    spec = TableSpec("db", "t", SCHEMA, ("id",), 1, (), {"data-file.thin-mode": "true", **options})
    create_table(warehouse, spec)
    model: dict[int, str] = {}

    def write(rows: dict[int, str]) -> None:
        data = pa.table({"id": list(rows), "v": list(rows.values())}, schema=SCHEMA)
        write_with_pypaimon(open_table(warehouse, "db.t"), data)
        model.update(rows)

    write({k: f"first-{k}" for k in range(0, 400)})
    assert all(KEY_PREFIX + "id" in cs for cs in file_columns(warehouse)[0])
    write({k: f"overlap-{k}" for k in range(0, 10)})
    compact(warehouse, full=True)  # two runs merged: a thin top level
    assert all(KEY_PREFIX + "id" not in cs for cs in file_columns(warehouse)[5])
    write({k: f"second-{k}" for k in range(20, 60)})
    third = {k: f"third-{k}" for k in range(50, 70)}
    ingest_arrow(
        open_table(warehouse, "db.t"),
        pa.table({"id": list(third), "v": list(third.values())}, schema=SCHEMA),
    )
    model.update(third)
    level0 = file_columns(warehouse)[0]
    assert sorted(KEY_PREFIX + "id" in cs for cs in level0) == [False, True]  # ours is thin
    compact(warehouse)  # classic and thin level 0 over a thin top level
    assert pypaimon_rows(warehouse) == model
    if options:
        health = health_of(read_levels(open_table(warehouse, "db.t"))).aggregate()
        assert health["deleted_rows"] > 0  # lookups found keys in the thin file
    compact(warehouse, full=True)
    levels = file_columns(warehouse)
    assert list(levels) == [5]
    assert all(not any(c.startswith(KEY_PREFIX) for c in cs) for cs in levels[5])
    assert pypaimon_rows(warehouse) == model
    assert rust_rows(warehouse) == model
    assert {r[0]: r[1] for r in paimon_java.read(warehouse, "db", "t")} == model
