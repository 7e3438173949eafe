"""Data file names as Java's DataFilePathFactory (release-2.0.0) makes them."""

from __future__ import annotations

import pytest

from dagster_paimon.ingest.arrow import ingest_arrow
from dagster_paimon.io.paths import file_extension
from dagster_paimon.paimon_table import PaimonTable
from dagster_paimon.snapshot.entries import live_entries
from dagster_paimon.table import create_table, open_table
from tests.conftest import orders_batch, orders_spec
from tests.lsm.kvmodel import read_rows, sorted_rows


@pytest.mark.parametrize(
    ("fmt", "compression", "include", "expected"),
    [
        ("parquet", "zstd", True, ".zst.parquet"),
        ("orc", "gzip", True, ".gz.orc"),
        ("avro", "SNAPPY", True, ".snappy.avro"),
        ("parquet", "brotli", True, ".brotli.parquet"),  # not a Hadoop codec: its own name
        ("parquet", "none", True, ".parquet"),  # HadoopCompressionType.NONE has no extension
        ("parquet", "zstd", False, ".parquet"),
    ],
)
def test_extensions(fmt, compression, include, expected):
    assert file_extension(fmt, compression, include_compression=include) == expected


def live_names(warehouse: str) -> list[str]:
    """Names of the latest snapshot's data files."""
    table = open_table(warehouse, "db.orders")
    latest = table.snapshot_manager().get_latest_snapshot()
    return [e.file.file_name for e in live_entries(table, latest)]


def test_suffix_include_compression_names_what_we_write(warehouse):
    options = {"file.suffix.include.compression": "true", "file.compression.per.level": "5:gzip"}
    table = create_table(warehouse, orders_spec(**options))
    ingest_arrow(table, orders_batch(0))
    ingest_arrow(open_table(warehouse, "db.orders"), orders_batch(1))
    assert live_names(warehouse) and all(n.endswith(".zst.parquet") for n in live_names(warehouse))
    expected = sorted_rows(read_rows(open_table(warehouse, "db.orders")), ("dt", "id"))
    PaimonTable.open(warehouse, "db.orders").compact()
    PaimonTable.open(warehouse, "db.orders").compact(full=True)
    assert live_names(warehouse) and all(n.endswith(".gz.parquet") for n in live_names(warehouse))
    assert sorted_rows(read_rows(open_table(warehouse, "db.orders")), ("dt", "id")) == expected
