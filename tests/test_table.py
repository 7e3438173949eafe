"""Table access: create/open through pypaimon's catalog, and every error being specific."""

from __future__ import annotations

import pickle
from pathlib import Path

import pyarrow as pa
import pytest

from dagster_paimon.errors import (
    DatabaseNotFoundError,
    InvalidArgumentError,
    InvalidTableSpecError,
    SchemaMismatchError,
    TableNotFoundError,
    WarehouseUnreachableError,
)
from dagster_paimon.table import TableRef, TableSpec, create_table, open_table, parse_identifier
from tests.conftest import ORDERS_SCHEMA, orders_batch, orders_spec, write_with_pypaimon


def test_create_then_open_round_trips_the_layout(warehouse):
    create_table(warehouse, orders_spec(bucket=3, **{"merge-engine": "deduplicate"}))
    table = open_table(warehouse, "db.orders")
    schema = table.table_schema
    assert [f.name for f in schema.fields] == ["dt", "id", "v"]
    assert schema.primary_keys == ["dt", "id"]
    assert schema.partition_keys == ["dt"]
    assert schema.options["bucket"] == "3"
    assert schema.options["merge-engine"] == "deduplicate"


def test_create_is_idempotent_and_keeps_data(warehouse):
    table = create_table(warehouse, orders_spec())
    write_with_pypaimon(table, orders_batch(0))
    again = create_table(warehouse, orders_spec())
    assert again.snapshot_manager().get_latest_snapshot().id == 1


def test_create_makes_a_missing_local_warehouse(tmp_path):
    target = tmp_path / "new" / "warehouse"
    create_table(str(target), orders_spec())
    assert (target / "db.db" / "orders" / "schema" / "schema-0").is_file()


def test_existing_table_with_another_layout_is_a_schema_mismatch(warehouse):
    create_table(warehouse, orders_spec(bucket=2))
    with pytest.raises(SchemaMismatchError, match="bucket 2 != 4"):
        create_table(warehouse, orders_spec(bucket=4))
    other = pa.schema([*ORDERS_SCHEMA, pa.field("extra", pa.int32())])
    with pytest.raises(SchemaMismatchError, match="columns"):
        create_table(warehouse, TableSpec("db", "orders", other, ("dt", "id"), 2, ("dt",)))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (TableSpec("db", "t", ORDERS_SCHEMA, ("nope",), 2), "primary keys \\['nope'\\]"),
        (TableSpec("db", "t", ORDERS_SCHEMA, (), 2), "needs a 'bucket-key'"),
        (TableSpec("db", "t", ORDERS_SCHEMA, (), -2), "needs a primary key"),
        (TableSpec("db", "t", ORDERS_SCHEMA, (), -1, (), {"bucket-key": "id"}), "cannot have"),
        (TableSpec("db", "t", ORDERS_SCHEMA, (), 2, (), {"bucket-key": "x"}), "bucket keys"),
        (TableSpec("db", "t", ORDERS_SCHEMA, ("id",), 2, ("dt",)), "must also be primary keys"),
        (TableSpec("db", "t", ORDERS_SCHEMA, ("dt", "id"), 2, ("x",)), "partition keys \\['x'\\]"),
        (TableSpec("db", "t", ORDERS_SCHEMA, ("dt",), 2, ("dt",)), "non-partition column"),
        (TableSpec("db", "t", ORDERS_SCHEMA, ("id",), 0), "bucket must be >= 1"),
        (TableSpec("db", "t", ORDERS_SCHEMA, ("id",), -3), "bucket must be >= 1"),
        (TableSpec("db", "t", ORDERS_SCHEMA, ("id",), 2, (), {"bucket": "5"}), "not as an option"),
    ],
)
def test_invalid_specs_are_rejected_before_anything_is_written(warehouse, spec, message):
    with pytest.raises(InvalidTableSpecError, match=message):
        create_table(warehouse, spec)
    assert not (Path(warehouse) / "db.db").exists()


@pytest.mark.parametrize("bucket", [-1, -2, 1])
def test_dynamic_and_postpone_buckets_are_valid_specs(bucket):
    TableSpec("db", "t", ORDERS_SCHEMA, ("id",), bucket).validate()


@pytest.mark.parametrize(("bucket", "options"), [(-1, {}), (3, {"bucket-key": "id, dt"})])
def test_append_tables_are_created_as_paimon_defines_them(warehouse, bucket, options):
    spec = TableSpec("db", "log", ORDERS_SCHEMA, (), bucket, ("dt",), options)
    schema = create_table(warehouse, spec).table_schema
    assert (schema.primary_keys, schema.partition_keys) == ([], ["dt"])
    assert schema.options["bucket"] == str(bucket)
    assert create_table(warehouse, spec).table_schema == schema  # idempotent


def test_unknown_table_database_and_warehouse_have_their_own_errors(warehouse, tmp_path):
    create_table(warehouse, orders_spec())
    with pytest.raises(TableNotFoundError, match=r"db\.missing"):
        open_table(warehouse, "db.missing")
    with pytest.raises(DatabaseNotFoundError, match="'nodb'"):
        open_table(warehouse, "nodb.orders")
    with pytest.raises(WarehouseUnreachableError, match="does not exist"):
        open_table(str(tmp_path / "absent"), "db.orders")


@pytest.mark.parametrize("bad", ["orders", ".orders", "db.", "a.b.c", ""])
def test_malformed_identifiers_are_value_errors(bad):
    with pytest.raises(InvalidArgumentError, match=r"DB\.TABLE"):
        parse_identifier(bad)


def test_table_refs_show_secret_options_masked_but_keep_them():
    options = {"fs.s3.accessKeyId": "AKIA", "fs.s3.accessKeySecret": "s3cr3t-value"}
    ref = TableRef.of("s3://b/w", "db.t", {**options, "fs.s3.securityToken": "t0k3n-value"})
    for shown in (repr(ref), str(ref), f"{ref}", repr([ref])):
        assert "s3cr3t-value" not in shown and "t0k3n-value" not in shown
        assert "'fs.s3.accessKeySecret', '****'" in shown and "AKIA" in shown
    assert dict(pickle.loads(pickle.dumps(ref)).catalog_options)["fs.s3.accessKeySecret"] == (
        "s3cr3t-value"
    )
