"""One local Spark session for every Spark test, and helpers to look at what landed on disk."""

from __future__ import annotations

import os

from dagster_paimon.commit.state import live_entries


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
