"""Shared fixtures: real tables written by pypaimon's own writer in a temporary warehouse."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

from dagster_paimon.snapshot.entries import live_entries
from dagster_paimon.spark.class_archive import SWITCH_ENV
from dagster_paimon.table import TableSpec, create_table
from tests.s3server import S3Server, moto_server

# The suite opts in to the driver JVM's class-data archive (off by default): the Spark commands
# it runs in fresh processes start from it, as they did when it was on by default.
os.environ.setdefault(SWITCH_ENV, "1")

ORDERS_SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        pa.field("v", pa.string()),
    ]
)


# the table option that turns deletion vectors on
DV = {"deletion-vectors.enabled": "true"}


def orders_spec(bucket: int = 2, **options: str) -> TableSpec:
    """A partitioned deduplicate table keyed by (dt, id)."""
    return TableSpec("db", "orders", ORDERS_SCHEMA, ("dt", "id"), bucket, ("dt",), options)


def write_with_pypaimon(table, data: pa.Table, overwrite: dict[str, str] | None = None) -> None:
    """One commit through pypaimon's batch writer: the format oracle's own write path (with
    `overwrite`, an OVERWRITE of that partition; {} the whole table)."""
    builder = table.new_batch_write_builder()
    if overwrite is not None:
        builder = builder.overwrite(overwrite)
    writer = builder.new_write()
    committer = builder.new_commit()
    try:
        writer.write_arrow(data)
        committer.commit(writer.prepare_commit())
    finally:
        writer.close()
        committer.close()


def orders_batch(commit: int, rows: int = 40) -> pa.Table:
    """Rows spread over two days and overlapping the previous commit's ids."""
    ids = list(range(commit * 10, commit * 10 + rows))
    return pa.table(
        {"dt": ["2024-01-01", "2024-01-02"] * (rows // 2), "id": ids, "v": [f"c{commit}"] * rows},
        schema=ORDERS_SCHEMA,
    )


@pytest.fixture
def warehouse(tmp_path) -> str:
    """An empty local warehouse directory."""
    path = tmp_path / "warehouse"
    path.mkdir()
    return str(path)


@pytest.fixture
def orders_table(warehouse):
    """shop orders after four pypaimon commits: 2 partitions x 2 buckets, 4 L0 files each."""
    table = create_table(warehouse, orders_spec())
    for commit in range(4):
        write_with_pypaimon(table, orders_batch(commit))
    return table


@pytest.fixture(scope="session")
def spark_event_log(tmp_path_factory) -> Path:
    """The directory of the shared session's event log: one uncompressed file of JSON lines."""
    return tmp_path_factory.mktemp("spark-events")


@pytest.fixture(scope="session")
def spark(spark_event_log):
    """A local[2] session with the paimon source registered, shared by the whole run; its
    event log (what a history server shows) is kept for tests that inspect it."""
    from dagster_paimon.spark.session import spark_session

    session = spark_session(
        "local[2]",
        app_name="dagster-paimon-tests",
        conf={
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.eventLog.enabled": "true",
            "spark.eventLog.dir": str(spark_event_log),
            "spark.eventLog.compress": "false",
            "spark.eventLog.rolling.enabled": "false",
        },
    )
    session.sparkContext.setLogLevel("OFF")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def paimon_java():
    """Paimon 0.9's Java reader, assembled once per run (see tests/java/paimon_java.py)."""
    from tests.java.paimon_java import PaimonJava

    return PaimonJava()


@pytest.fixture(scope="session")
def paimon_java_1_0():
    """Paimon 1.0-SNAPSHOT's Java implementation, assembled once per run."""
    from tests.java.paimon_java import PAIMON_1_0, PaimonJava

    return PaimonJava(PAIMON_1_0)


@pytest.fixture(scope="session")
def s3_server() -> S3Server:
    """One authenticating moto S3 server on loopback for the whole run."""
    with moto_server() as server:
        yield server


@pytest.fixture
def s3_warehouse(s3_server) -> tuple[str, dict[str, str]]:
    """A warehouse in a fresh bucket: its URI and the catalog options that reach it."""
    return f"s3://{s3_server.create_bucket()}/warehouse", s3_server.catalog_options()


def data_files_on_disk(table) -> set[str]:
    """Names of every data file under the table directory, committed or not."""
    return {
        name
        for _, _, names in os.walk(table.table_path)
        for name in names
        if name.startswith("data-")
    }


def committed_files(table) -> set[str]:
    """Names of the data files live in the latest snapshot."""
    snapshot = table.snapshot_manager().get_latest_snapshot()
    return {e.file.file_name for e in live_entries(table, snapshot)}


def latest_id(table) -> int | None:
    """The latest snapshot id, None for an empty table."""
    snapshot = table.snapshot_manager().get_latest_snapshot()
    return snapshot.id if snapshot else None
