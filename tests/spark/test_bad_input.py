"""Bad input: one clear typed error, no new snapshot, no committed (or leftover) file."""

from __future__ import annotations

import pytest

from dagster_paimon.errors import InvalidOptionError, SchemaMismatchError
from dagster_paimon.spark.ingest import ingest_dataframe
from dagster_paimon.table import create_table
from tests.conftest import (
    committed_files,
    data_files_on_disk,
    latest_id,
    orders_batch,
    orders_spec,
    write_with_pypaimon,
)
from tests.lsm.kvmodel import read_rows

pytestmark = pytest.mark.spark

CASES = {
    "missing column": (
        [("2024-01-01", 1)],
        "dt string, id bigint",
        r"missing columns \['v'\]",
    ),
    "extra column": (
        [("2024-01-01", 1, "x", 7)],
        "dt string, id bigint, v string, extra int",
        r"columns \['extra'\] are not in the table",
    ),
    "incompatible type": (
        [("2024-01-01", "one", "x")],
        "dt string, id string, v string",
        r"column 'id' is string, the table wants int64",
    ),
    "narrowing type": (
        [("2024-01-01", 1, 2.5)],
        "dt string, id bigint, v double",
        r"column 'v' is double",
    ),
    "null primary key": (
        [("2024-01-01", 1, "x"), ("2024-01-01", None, "y")],
        "dt string, id bigint, v string",
        r"primary key column 'id' is null in 1 rows",
    ),
    # every write task has rows: the tasks that succeed delete their files when one fails
    "null primary key among many rows": (
        [("2024-01-01", i, "x") for i in range(40)] + [("2024-01-01", None, "y")],
        "dt string, id bigint, v string",
        r"primary key column 'id' is null in 1 rows",
    ),
    "unknown row kind": (
        [("2024-01-01", 1, "x", "+I"), ("2024-01-01", 2, "y", "U")],
        "dt string, id bigint, v string, _row_kind string",
        r"unknown row kinds \['U'\]",
    ),
    "row kind not a string": (
        [("2024-01-01", 1, "x", 0)],
        "dt string, id bigint, v string, _row_kind int",
        r"'_row_kind' must be a string column",
    ),
}


@pytest.fixture
def orders(warehouse):
    table = create_table(warehouse, orders_spec())
    write_with_pypaimon(table, orders_batch(0))
    return table


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_one_clear_error_and_changes_nothing(spark, warehouse, orders, case):
    rows, schema, message = CASES[case]
    before_rows, before_files = read_rows(orders), data_files_on_disk(orders)

    with pytest.raises(SchemaMismatchError, match=message):
        ingest_dataframe(spark.createDataFrame(rows, schema), warehouse, "db.orders")

    assert latest_id(orders) == 1
    assert read_rows(orders) == before_rows
    assert data_files_on_disk(orders) == before_files


def test_a_failing_task_of_a_direct_write_commits_nothing(spark, warehouse, orders):
    rows = [("2024-01-01", i, "x") for i in range(40)] + [("2024-01-02", None, "bad")]
    df = spark.createDataFrame(
        spark.sparkContext.parallelize(rows, 4), "dt string, id bigint, v string"
    )
    committed = committed_files(orders)

    with pytest.raises(Exception, match="primary key column 'id' is null"):
        df.write.format("paimon").option("warehouse", warehouse).mode("append").save("db.orders")

    assert latest_id(orders) == 1
    assert committed_files(orders) == committed


def test_postpone_bucket_tables_are_refused_naming_the_option(spark, warehouse):
    """Paimon's writers park rows of a postpone table; ours would write real buckets."""
    create_table(warehouse, orders_spec(bucket=-2))
    df = spark.createDataFrame([("2024-01-01", 1, "x")], "dt string, id bigint, v string")

    with pytest.raises(InvalidOptionError, match="'bucket' is -2"):
        ingest_dataframe(df, warehouse, "db.orders")
    with pytest.raises(Exception, match="'bucket' is -2"):
        df.write.format("paimon").option("warehouse", warehouse).mode("append").save("db.orders")


@pytest.mark.parametrize("function", ["mod", "hive"])
def test_other_bucket_functions_are_refused_naming_the_option(spark, warehouse, function):
    """Paimon's mod and hive bucket functions would put these keys in other buckets."""
    orders = create_table(warehouse, orders_spec(**{"bucket-function.type": function}))
    df = spark.createDataFrame([("2024-01-01", 1, "x")], "dt string, id bigint, v string")

    with pytest.raises(InvalidOptionError, match=r"bucket-function\.type"):
        ingest_dataframe(df, warehouse, "db.orders")
    with pytest.raises(Exception, match=r"bucket-function\.type"):
        df.write.format("paimon").option("warehouse", warehouse).mode("append").save("db.orders")
    assert latest_id(orders) is None
    assert data_files_on_disk(orders) == set()


def test_rowkind_field_tables_refuse_a_separate_row_kind_column(spark, warehouse):
    create_table(warehouse, orders_spec(**{"rowkind.field": "v"}))
    df = spark.createDataFrame(
        [("2024-01-01", 1, "+I", "+I")], "dt string, id bigint, v string, _row_kind string"
    )

    with pytest.raises(SchemaMismatchError, match="takes row kinds from its column 'v'"):
        ingest_dataframe(df, warehouse, "db.orders")
