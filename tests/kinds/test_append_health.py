"""Append tables' health on real pypaimon tables: per bucket files, small files, bytes, rows
and rows deletion vectors delete, against the manifests read by pypaimon's own managers."""

from __future__ import annotations

from collections import defaultdict

import pytest
from pypaimon.manifest.manifest_file_manager import ManifestFileManager
from pypaimon.manifest.manifest_list_manager import ManifestListManager

from dagster_paimon import PaimonTable
from dagster_paimon.errors import InvalidOptionError
from dagster_paimon.kinds import PRIMARY_KEY_KIND, TableHealth, health_of, kind_of
from dagster_paimon.lsm.model.append_options import AppendOptions
from dagster_paimon.lsm.model.levels import read_levels
from tests.conftest import write_with_pypaimon
from tests.maintenance.appends import (
    append_commits,
    append_table,
    delete_positions,
    events,
    latest,
    rows,
)

SMALL = {"target-file-size": "64 kb", "compaction.small-file-ratio": "0.03125"}  # < 2048 B


def small_file_bytes(options: dict[str, str]) -> int:
    """The small-file size health and compaction share."""
    return AppendOptions.from_table_options(options).compaction_file_size


def test_small_file_size_reads_the_options_as_java_does():
    # CoreOptions.compactionFileSize(false): 256 mb (append) x compaction.small-file-ratio 0.7
    assert small_file_bytes({}) == int(256 * 1024 * 1024 * 0.7)
    assert small_file_bytes({"target-file-size": "1 mb"}) == int(1024 * 1024 * 0.7)
    assert small_file_bytes(SMALL) == 2048
    with pytest.raises(InvalidOptionError, match=r"compaction\.small-file-ratio"):
        small_file_bytes({"compaction.small-file-ratio": "2"})


def _expected(table, small: int, deleted: dict[str, int]) -> dict[tuple, dict]:
    """Per (partition, bucket): the figures summed from pypaimon's merge of the manifests."""
    snapshot = latest(table)
    manifests = ManifestListManager(table).read_all(snapshot)
    found: dict[tuple, dict] = defaultdict(lambda: defaultdict(int))
    for e in ManifestFileManager(table).read_entries_parallel(manifests):
        b = found[(tuple(e.partition.values), e.bucket)]
        b["files"] += 1
        b["small_files"] += e.file.file_size < small
        b["total_bytes"] += e.file.file_size
        b["rows"] += e.file.row_count
        b["deleted_rows"] += deleted.get(e.file.file_name, 0)
    return {k: dict(v) for k, v in found.items()}


@pytest.mark.parametrize("layout", ["bucketed", "unaware"])
@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "flat"])
def test_append_health_counts_files_small_files_and_deleted_rows(warehouse, layout, partitioned):
    table = append_table(
        warehouse, layout, partitioned=partitioned, **SMALL, **{"deletion-vectors.enabled": "true"}
    )
    write_with_pypaimon(table, events(50, rows=6000))  # files above 2048 bytes
    append_commits(table, 2)
    entries = ManifestFileManager(table).read_entries_parallel(
        ManifestListManager(table).read_all(latest(table))
    )
    names = [e.file.file_name for e in sorted(entries, key=lambda e: -e.file.row_count)]
    delete_positions(table, {names[0]: [0, 1], names[1]: [0]})  # files of 500+ rows
    deleted = {names[0]: 2, names[1]: 1}
    health = PaimonTable.open(warehouse, "db.events").health()
    assert isinstance(health, TableHealth) and health.kind == "append"
    assert health.kind == "append" and health.small_file_bytes == 2048
    got = {
        (tuple(b.partition.values()), b.bucket): {
            k: v for k, v in b.to_dict().items() if k not in ("partition", "bucket")
        }
        for b in health.buckets
    }
    expected = _expected(table, 2048, deleted)
    assert got == expected
    totals = health.totals
    assert totals.files == sum(b["files"] for b in expected.values())
    assert 0 < totals.small_files < totals.files
    assert totals.max_small_files == max(b["small_files"] for b in expected.values())
    assert totals.deleted_rows == 3
    assert totals.rows - totals.deleted_rows == len(rows(table))
    assert totals.buckets == len(expected)
    as_dict = health.to_dict()
    assert (as_dict["kind"], as_dict["snapshot_id"]) == ("append", latest(table).id)
    assert as_dict["totals"] == health.aggregate()
    assert set(health.metrics()) == {
        "snapshot_id",
        "files",
        "small_files",
        "max_small_files",
        "total_bytes",
        "deleted_rows",
    }
    assert "3 of" in health.summary() and "below 2048 bytes" in health.summary()


def test_a_partition_filter_and_an_empty_append_table(warehouse):
    table = append_table(warehouse, "unaware")
    empty = health_of(read_levels(table))
    assert isinstance(empty, TableHealth) and empty.kind == "append"
    assert (empty.snapshot_id, empty.buckets, empty.totals.max_small_files) == (None, [], 0)
    append_commits(table, 3)
    day = PaimonTable.open(warehouse, "db.events").health(partition={"dt": "2024-01-02"})
    assert [(b.partition, b.files, b.rows) for b in day.buckets] == [({"dt": "2024-01-02"}, 3, 12)]


def test_primary_key_tables_keep_their_lsm_health_with_its_kind(orders_table):
    levels = read_levels(orders_table)
    assert kind_of(levels.schema) is PRIMARY_KEY_KIND
    health = health_of(levels)
    assert isinstance(health, TableHealth)
    assert health.kind == "primary-key" and health.to_dict()["kind"] == "primary-key"
    assert "kind" not in health.metrics()
