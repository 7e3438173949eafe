"""Discovery: the tables of a warehouse by name and kind, as adopting existing tables needs them."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from pypaimon import Schema

from dagster_paimon.discovery import Discovery, discover_tables, matches
from dagster_paimon.errors import (
    InvalidArgumentError,
    TableNotFoundError,
    WarehouseUnreachableError,
)
from dagster_paimon.table import TableSpec, create_table, open_catalog

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def populate(warehouse: str, catalog_options: dict | None = None) -> None:
    """Two PK tables (one excluded by name), an append-only table and a stray directory."""
    spec = TableSpec("shop", "orders", SCHEMA, ("id",), 2, (), {"deletion-vectors.enabled": "true"})
    create_table(warehouse, spec, catalog_options)
    create_table(warehouse, TableSpec("shop", "tmp_x", SCHEMA, ("id",), -1), catalog_options)
    catalog = open_catalog(warehouse, catalog_options)
    catalog.create_table("shop.log", Schema.from_pyarrow_schema(SCHEMA), False)


def test_discovery_adopts_tables_of_the_kinds_asked_and_says_why_others_are_skipped(warehouse):
    populate(warehouse)
    os.makedirs(os.path.join(warehouse, "shop.db", "notatable", "x"))
    found = discover_tables(
        warehouse, include=["shop.*"], exclude=["*.tmp_*"], kinds=["primary-key"]
    )
    assert [t.identifier for t in found.tables] == ["shop.orders"]
    orders = found.tables[0]
    assert (orders.primary_keys, orders.partition_keys, orders.bucket) == (("id",), (), 2)
    assert [(c.name, c.type) for c in orders.columns] == [
        ("id", "BIGINT NOT NULL"),
        ("v", "STRING"),
    ]
    assert orders.options["deletion-vectors.enabled"] == "true"
    assert orders.schema.equals(SCHEMA)
    assert orders.kind == "primary-key"
    assert dict(found.skipped) == {
        "shop.log": "append table: not among the kinds asked for ['primary-key']",
        "shop.notatable": "not a Paimon table (no schema)",
    }
    assert Discovery.from_json(found.to_json()) == found
    every = discover_tables(warehouse)
    assert [t.identifier for t in every.tables] == ["shop.log", "shop.orders", "shop.tmp_x"]
    log, _, tmp_x = every.tables
    assert (log.kind, log.primary_keys, log.bucket) == ("append", (), -1)
    assert tmp_x.bucket == -1
    assert Discovery.from_json(every.to_json()).tables[0].kind == "append"
    appends = discover_tables(warehouse, kinds=["append"])
    assert [t.identifier for t in appends.tables] == ["shop.log"]


def test_patterns_matching_nothing_and_bad_warehouses_are_specific_errors(warehouse, tmp_path):
    populate(warehouse)
    with pytest.raises(TableNotFoundError, match=r"matches include \['sales\.\*'\]"):
        discover_tables(warehouse, include=["sales.*"])
    with pytest.raises(TableNotFoundError, match=r"kinds \['append'\]"):
        discover_tables(warehouse, include=["shop.orders"], kinds=["append"])
    for kinds in ([], ["log"]):
        with pytest.raises(InvalidArgumentError, match="table kinds must be"):
            discover_tables(warehouse, kinds=kinds)
    with pytest.raises(WarehouseUnreachableError):
        discover_tables(str(tmp_path / "missing"))
    with pytest.raises(InvalidArgumentError, match="version"):
        Discovery.from_json('{"version": 99}')


def test_patterns():
    assert matches("shop.orders", [], [])
    assert matches("shop.orders", ["shop.*"], ["*.tmp_*"])
    assert not matches("shop.tmp_orders", ["shop.*"], ["*.tmp_*"])
    assert not matches("sales.orders", ["shop.*"], [])


def test_discovery_on_s3(s3_warehouse):
    warehouse, options = s3_warehouse
    populate(warehouse, options)
    found = discover_tables(warehouse, options, kinds=["primary-key"])
    assert [t.identifier for t in found.tables] == ["shop.orders", "shop.tmp_x"]
    assert ("shop.log", "append table: not among the kinds asked for ['primary-key']") in (
        found.skipped
    )
