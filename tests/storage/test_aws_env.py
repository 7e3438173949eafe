"""AWS conventions: AWS_ENDPOINT_URL[_S3] reach every client; IP endpoints get path-style."""

from __future__ import annotations

import pyarrow as pa
import pytest

from dagster_paimon.ingest.arrow import ingest_arrow
from dagster_paimon.storage.s3 import S3Settings, path_style_endpoint
from dagster_paimon.table import TableSpec, create_table, open_table
from tests.lsm.kvmodel import read_rows

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


@pytest.mark.parametrize(
    ("endpoint", "path_style"),
    [
        ("http://127.0.0.1:9000", True),
        ("10.0.0.5:9000", True),
        ("http://[::1]:9000", True),
        ("http://localhost:4566", True),
        ("https://s3.eu-west-1.amazonaws.com", False),
        ("https://minio.example.com", False),
        (None, False),
    ],
)
def test_path_style_follows_the_endpoint_host(endpoint, path_style):
    assert path_style_endpoint(endpoint) is path_style


def test_precedence_of_endpoint_and_path_style():
    """Options (PAIMON_S3_*, flags) win over AWS_ENDPOINT_URL_S3, which wins over the generic."""
    env = {"AWS_ENDPOINT_URL": "http://10.0.0.1:1", "AWS_ENDPOINT_URL_S3": "http://10.0.0.2:2"}
    assert S3Settings.from_options({}, env).endpoint == "http://10.0.0.2:2"
    assert S3Settings.from_options({}, {"AWS_ENDPOINT_URL": "http://10.0.0.1:1"}).path_style
    explicit = {"fs.s3.endpoint": "https://s3.example.com", "fs.s3.path-style-access": "false"}
    settings = S3Settings.from_options(explicit, env)
    assert (settings.endpoint, settings.path_style) == ("https://s3.example.com", False)
    forced = S3Settings.from_options({"s3.path.style.access": "false"}, env)
    assert (forced.endpoint, forced.path_style) == ("http://10.0.0.2:2", False)
    paimon = S3Settings.from_env({"PAIMON_S3_ENDPOINT": "http://127.0.0.1:5", **env})
    assert (paimon.endpoint, paimon.path_style) == ("http://127.0.0.1:5", True)


def test_aws_endpoint_url_alone_reaches_moto_on_an_ip(s3_server, monkeypatch):
    """Only the standard AWS variables are set: create, ingest (boto3 and pyarrow), read back."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_server.access_key_id)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret_access_key)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    assert "127.0.0.1" in s3_server.endpoint
    warehouse = f"s3://{s3_server.create_bucket()}/warehouse"
    create_table(warehouse, TableSpec("db", "t", SCHEMA, ("id",), 1))
    rows = pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA)
    ingest_arrow(open_table(warehouse, "db.t"), rows)
    assert sorted(r["id"] for r in read_rows(open_table(warehouse, "db.t"))) == [1, 2, 3]
