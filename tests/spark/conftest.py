"""One local Spark session for every Spark test, and helpers to look at what landed on disk."""

from __future__ import annotations

import os

import pytest

from dagster_paimon.lsm.levels import live_entries


@pytest.fixture(scope="session")
def spark():
    """A local[2] session with the paimon source registered, shared by the whole run."""
    from dagster_paimon.spark.session import spark_session

    session = spark_session(
        "local[2]",
        app_name="dagster-paimon-tests",
        conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"},
    )
    session.sparkContext.setLogLevel("OFF")
    yield session
    session.stop()


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
