"""The `paimon` data source's options: the table they name and the catalog options they carry,
in the options or sealed in a registration of their own."""

from __future__ import annotations

import uuid

import pytest
from pyspark.errors import PySparkException
from pyspark.sql.datasource import CaseInsensitiveDict

from dagster_paimon.errors import InvalidArgumentError
from dagster_paimon.spark.source import register_sealed, table_ref
from dagster_paimon.table import create_table
from tests.conftest import orders_batch, orders_spec, write_with_pypaimon


def test_catalog_options_get_pypaimons_spelling_back():
    options = CaseInsensitiveDict(
        {"warehouse": "s3://b/w", "path": "db.t", "catalog.fs.s3.accessKeyId": "AK"}
    )
    ref = table_ref(options)
    assert (ref.warehouse, ref.identifier) == ("s3://b/w", "db.t")
    assert ref.catalog_options == (("fs.s3.accessKeyId", "AK"),)
    with pytest.raises(InvalidArgumentError, match="warehouse"):
        table_ref(CaseInsensitiveDict({"path": "db.t"}))


@pytest.mark.spark
@pytest.mark.s3
def test_a_sealed_registration_reaches_s3_with_secrets_no_plan_or_error_shows(spark, s3_warehouse):
    uri, options = s3_warehouse
    table = create_table(uri, orders_spec(), options)
    write_with_pypaimon(table, orders_batch(0))
    secret = options["fs.s3.accessKeySecret"]
    name = register_sealed(spark, {"fs.s3.accessKeySecret": secret})
    shown = {k: v for k, v in options.items() if k != "fs.s3.accessKeySecret"}
    frame = (
        spark.read.format(name)
        .option("warehouse", uri)
        .options(**{f"catalog.{k}": v for k, v in shown.items()})
        .load("db.orders")
    )
    assert frame.count() == orders_batch(0).num_rows
    plans = frame._jdf.queryExecution().toString()
    assert name in plans and secret not in plans

    wrong = f"wrong-{uuid.uuid4().hex}"
    refused = register_sealed(spark, {"fs.s3.accessKeySecret": wrong})
    with pytest.raises(PySparkException) as failed:
        spark.read.format(refused).option("warehouse", uri).options(
            **{f"catalog.{k}": v for k, v in shown.items()}
        ).load("db.orders").count()
    assert "InvalidCredentialsError" in str(failed.value) and wrong not in str(failed.value)
