"""Warehouses refuse to start with one specific message per cause, before writing anything."""

from __future__ import annotations

import socket

import pyarrow as pa
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError

from dagster_paimon.cli import main
from dagster_paimon.errors import (
    AccessDeniedError,
    BucketNotFoundError,
    EndpointUnreachableError,
    InvalidCredentialsError,
    InvalidOptionError,
    MissingCredentialsError,
    UnsupportedWarehouseError,
)
from dagster_paimon.storage.s3 import (
    ACCESS_DENIED_CODES,
    CREDENTIAL_CODES,
    MISSING_BUCKET_CODES,
    WRONG_REGION_CODES,
    S3Settings,
    specific_error,
)
from dagster_paimon.storage.warehouse import LocalWarehouse, S3Warehouse, warehouse_for
from dagster_paimon.table import TableSpec, create_table, open_table
from tests.conftest import write_with_pypaimon
from tests.lsm.kvmodel import read_rows
from tests.s3server import REGION

pytestmark = pytest.mark.s3

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
SPEC = TableSpec("db", "t", SCHEMA, ("id",), 1)
READ_ONLY_OBJECTS = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}],
}


@pytest.fixture
def bucket(s3_server) -> str:
    """An empty bucket whose contents the tests inspect afterwards."""
    return s3_server.create_bucket()


def refused(s3_server, bucket: str, options: dict[str, str], error: type[Exception]) -> str:
    """Try to create a table; return the error message after checking nothing was written."""
    with pytest.raises(error) as caught:
        create_table(f"s3://{bucket}/warehouse", SPEC, options)
    assert s3_server.keys(bucket) == []
    return str(caught.value)


def test_a_wrong_access_key_is_rejected_by_name(s3_server, bucket):
    options = {**s3_server.catalog_options(), "fs.s3.accessKeyId": "AKIAWRONGKEY"}
    message = refused(s3_server, bucket, options, InvalidCredentialsError)
    assert "InvalidAccessKeyId" in message and "AKIAWRONGKEY" in message


def test_a_wrong_secret_is_rejected(s3_server, bucket):
    options = {**s3_server.catalog_options(), "fs.s3.accessKeySecret": "not-the-secret"}
    message = refused(s3_server, bucket, options, InvalidCredentialsError)
    assert "SignatureDoesNotMatch" in message and "not-the-secret" not in message


def test_no_credentials_anywhere_is_missing_credentials(s3_server, bucket, monkeypatch, tmp_path):
    for var in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    options = {"fs.s3.endpoint": s3_server.endpoint, "fs.s3.region": REGION}
    message = refused(s3_server, bucket, options, MissingCredentialsError)
    assert "fs.s3.accessKeyId" in message and "credential chain" in message


def test_half_a_key_pair_is_missing_credentials(s3_server, bucket):
    options = {**s3_server.catalog_options()}
    del options["fs.s3.accessKeySecret"]
    message = refused(s3_server, bucket, options, MissingCredentialsError)
    assert "fs.s3.accessKeySecret is not" in message


def test_an_unknown_bucket_is_named(s3_server):
    with pytest.raises(BucketNotFoundError, match="'no-such-bucket-here' does not exist"):
        create_table("s3://no-such-bucket-here/warehouse", SPEC, s3_server.catalog_options())


def test_an_endpoint_nobody_listens_on_is_unreachable(s3_server):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    options = {**s3_server.catalog_options(), "fs.s3.endpoint": dead}
    with pytest.raises(EndpointUnreachableError, match=f"cannot connect to the S3 endpoint {dead}"):
        create_table("s3://any-bucket/warehouse", SPEC, options)


def test_valid_keys_without_list_permission_are_access_denied(s3_server, bucket):
    reader = s3_server.new_user(f"reader-{bucket}", READ_ONLY_OBJECTS)
    options = {
        **s3_server.catalog_options(),
        "fs.s3.accessKeyId": reader.access_key_id,
        "fs.s3.accessKeySecret": reader.secret_access_key,
    }
    message = refused(s3_server, bucket, options, AccessDeniedError)
    assert "credentials are valid but not allowed" in message


def test_opening_an_existing_table_with_bad_keys_fails_the_same_way(s3_warehouse):
    uri, options = s3_warehouse
    create_table(uri, SPEC, options)
    with pytest.raises(InvalidCredentialsError):
        open_table(uri, SPEC.identifier, {**options, "fs.s3.accessKeyId": "AKIAWRONGKEY"})


def test_path_style_addressing_reaches_the_same_table(s3_warehouse):
    uri, options = s3_warehouse
    path_style = {**options, "fs.s3.path-style-access": "true"}
    settings = S3Settings.from_options(path_style)
    assert settings.client().meta.config.s3["addressing_style"] == "path"
    table = create_table(uri, SPEC, path_style)
    write_with_pypaimon(table, pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    reopened = open_table(uri, SPEC.identifier, options)
    assert read_rows(reopened) == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]


def test_path_style_must_be_a_boolean():
    with pytest.raises(InvalidOptionError, match=r"path-style-access.*must be true or false"):
        S3Settings.from_options({"fs.s3.path-style-access": "sometimes"})


def test_settings_read_every_spelling_pypaimon_reads():
    settings = S3Settings.from_options(
        {
            "s3a.endpoint": "http://minio:9000",
            "fs.s3a.region": "eu-west-1",
            "s3.access-key": "AKIA",
            "fs.s3.secret.key": "secret",
            "s3.session-token": "token",
            "fs.s3a.path.style.access": "TRUE",
        }
    )
    assert settings == S3Settings("http://minio:9000", "eu-west-1", "AKIA", "secret", "token", True)
    assert S3Settings.from_options(settings.catalog_options()) == settings


def test_settings_show_the_secret_and_token_masked():
    settings = S3Settings("http://minio:9000", "eu-west-1", "AKIA", "s3cr3t-value", "t0k3n-value")
    for shown in (
        repr(settings),
        str(settings),
        f"{settings}",
        repr(S3Warehouse("s3://b", settings)),
    ):
        assert "s3cr3t-value" not in shown and "t0k3n-value" not in shown
        assert "secret_access_key='****'" in shown and "access_key_id='AKIA'" in shown


@pytest.mark.parametrize(
    "code",
    [*CREDENTIAL_CODES, *WRONG_REGION_CODES, *ACCESS_DENIED_CODES, *MISSING_BUCKET_CODES],
)
def test_our_errors_never_carry_the_secret_or_token(code):
    settings = S3Settings("http://minio:9000", "eu-west-1", "AKIA", "s3cr3t-value", "t0k3n-value")
    for failure in (
        ClientError({"Error": {"Code": code, "Message": "refused"}}, "ListObjectsV2"),
        NoCredentialsError(),
        EndpointConnectionError(endpoint_url="http://minio:9000"),
    ):
        message = str(specific_error(failure, "s3://b/w", settings))
        assert "s3cr3t-value" not in message and "t0k3n-value" not in message


def test_uris_pick_their_warehouse(tmp_path):
    assert isinstance(warehouse_for(str(tmp_path)), LocalWarehouse)
    assert isinstance(warehouse_for(f"file://{tmp_path}"), LocalWarehouse)
    s3 = warehouse_for("s3a://bucket/wh", {"fs.s3.region": "eu-west-1"})
    assert isinstance(s3, S3Warehouse) and s3.settings.region == "eu-west-1"
    with pytest.raises(UnsupportedWarehouseError, match="'hdfs' scheme"):
        warehouse_for("hdfs://namenode/warehouse")


def test_cli_flags_override_the_env_and_bad_keys_fail_in_one_line(
    s3_server, bucket, monkeypatch, capsys
):
    monkeypatch.setenv("PAIMON_S3_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("PAIMON_S3_ACCESS_KEY_ID", "AKIAWRONGKEY")
    monkeypatch.setenv("PAIMON_S3_SECRET_ACCESS_KEY", "wrong")
    code = main(
        ["health", "--warehouse", f"s3://{bucket}/warehouse", "--table", "db.t",
         "--s3-endpoint", s3_server.endpoint, "--s3-region", REGION, "--s3-path-style"]
    )  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.count("\n") == 0 and "rejected the S3 credentials" in err
