"""The `paimon` data source's options: the table they name and the catalog options they carry."""

from __future__ import annotations

import pytest
from pyspark.sql.datasource import CaseInsensitiveDict

from dagster_paimon.spark.source import table_ref


def test_catalog_options_get_pypaimons_spelling_back():
    options = CaseInsensitiveDict(
        {"warehouse": "s3://b/w", "path": "db.t", "catalog.fs.s3.accessKeyId": "AK"}
    )
    ref = table_ref(options)
    assert (ref.warehouse, ref.identifier) == ("s3://b/w", "db.t")
    assert ref.catalog_options == (("fs.s3.accessKeyId", "AK"),)
    with pytest.raises(ValueError, match="warehouse"):
        table_ref(CaseInsensitiveDict({"path": "db.t"}))
