"""Append tables whose files our ingest cannot shape are refused before anything is written."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dagster_paimon.errors import InvalidOptionError, UnsupportedLayoutError
from dagster_paimon.lsm.write.layout import check_append_writable
from dagster_paimon.unsupported import INGEST, check_supported_layout
from tests.ingest.test_append import BUCKETED, create_log


@pytest.fixture
def log_schema(warehouse):
    return create_log(warehouse, "log", partitioned=True, **BUCKETED).table_schema


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"row-tracking.enabled": "true"}, UnsupportedLayoutError, "first row id"),
        ({"data-evolution.enabled": "true"}, UnsupportedLayoutError, "row tracking"),
        ({"blob-field": "v"}, UnsupportedLayoutError, "'.blob' files"),
        ({"bucket-key": ""}, InvalidOptionError, "needs the table option 'bucket-key'"),
    ],
)
def test_refused(log_schema, options, error, match):
    schema = replace(log_schema, options={**log_schema.options, **options})
    with pytest.raises(error, match=match):
        check_supported_layout(schema, operation=INGEST)
        check_append_writable(schema)


def test_a_bucketed_table_with_a_bucket_key_and_an_unaware_one_are_writable(log_schema):
    check_append_writable(log_schema)
    check_append_writable(replace(log_schema, options={"bucket": "-1"}))
