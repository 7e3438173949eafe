"""Every commit merges the latest manifests as Paimon's commit does: a table only we write reads
about as many manifests as one Java writes, however long its history."""

from __future__ import annotations

import os

import pytest
from pypaimon.manifest.manifest_list_manager import ManifestListManager

from dagster_paimon.format.manifest import TableManifests
from dagster_paimon.ingest.arrow import ingest_arrow
from dagster_paimon.ingest.commit import ingest_producer
from dagster_paimon.io.filekind import ADD
from dagster_paimon.kinds import compact_open_table
from dagster_paimon.snapshot.entries import live_entries
from dagster_paimon.storage.snapshots import create_snapshot_if_absent
from dagster_paimon.table import TableRef, create_table
from tests.commit.test_producers import level0_writes
from tests.conftest import orders_batch, orders_spec, write_with_pypaimon
from tests.lsm.kvmodel import read_rows, sorted_rows

KEY = ("dt", "id")


def latest(table):
    return table.snapshot_manager().get_latest_snapshot()


def manifest_counts(table) -> tuple[int, int]:
    """(manifests in the latest base list, in base + delta: what the next commit merges)."""
    manifests = TableManifests(table)
    snapshot = latest(table)
    return len(manifests.base(snapshot)), len(manifests.all(snapshot))


def java_counts(commits: int, min_count: int = 30) -> list[tuple[int, int]]:
    """ManifestFileMerger's minor merge on one small manifest per commit: the inputs stay
    until min_count of them accumulate, then merge into one."""
    counts, inputs = [], 0
    for _ in range(commits):
        base = 1 if inputs >= min_count else inputs
        inputs = base + 1
        counts.append((base, inputs))
    return counts


def expected_rows(commits: range) -> list[dict]:
    model: dict = {}
    for c in commits:
        for r in orders_batch(c).to_pylist():
            model[(r["dt"], r["id"])] = r
    return sorted_rows(model.values(), KEY)


def referenced(table) -> set[str]:
    """Manifest lists and manifests any snapshot on disk names."""
    manager, manifests = table.snapshot_manager(), TableManifests(table)
    names: set[str] = set()
    for snapshot_id in range(1, latest(table).id + 1):
        snapshot = manager.get_snapshot_by_id(snapshot_id)
        names |= {snapshot.base_manifest_list, snapshot.delta_manifest_list}
        names |= {m.file_name for m in manifests.all(snapshot)}
    return names


def manifest_dir(table) -> set[str]:
    return set(os.listdir(os.path.join(table.table_path, "manifest")))


def test_a_long_history_reads_as_many_manifests_as_javas_commit_leaves(warehouse):
    table = create_table(warehouse, orders_spec())
    counts = []
    for c in range(70):
        ingest_arrow(table, orders_batch(c))
        counts.append(manifest_counts(table))
    assert counts == java_counts(70)
    assert max(inputs for _, inputs in counts) == 30
    assert sorted_rows(read_rows(table), KEY) == expected_rows(range(70))


def test_the_merge_cancels_every_delete_against_its_add(warehouse):
    table = create_table(warehouse, orders_spec())
    ref = TableRef.of(warehouse, "db.orders")
    for c in range(32):
        ingest_arrow(table, orders_batch(c))
        if c % 10 == 9:  # a full compaction deletes every level-0 file so far
            compact_open_table(table, ref, full=True)
        base, _ = manifest_counts(table)
        if base == 1 and c > 10:
            break
    snapshot = latest(table)
    manifests = TableManifests(table)
    (merged,) = manifests.base(snapshot)
    entries = manifests.entries_of(merged)
    assert all(e.kind == ADD for e in entries)
    previous = table.snapshot_manager().get_snapshot_by_id(snapshot.id - 1)
    assert {e.file.file_name for e in entries} == {
        e.file.file_name for e in live_entries(table, previous)
    }
    assert sorted_rows(read_rows(table), KEY) == expected_rows(range(c + 1))


def test_past_the_full_compaction_threshold_every_commit_drops_delete_entries(warehouse):
    table = create_table(
        warehouse, orders_spec(**{"manifest.full-compaction-threshold-size": "1 b"})
    )
    ref = TableRef.of(warehouse, "db.orders")
    for c in range(12):
        ingest_arrow(table, orders_batch(c))
        if c % 4 == 3:
            compact_open_table(table, ref, full=True)
    manifests = TableManifests(table)
    base = manifests.base(latest(table))
    assert len(base) == 1 and base[0].num_deleted_files == 0
    assert sorted_rows(read_rows(table), KEY) == expected_rows(range(12))


def test_a_lost_race_re_merges_the_new_latest_and_removes_the_losing_merge(warehouse):
    table = create_table(warehouse, orders_spec(**{"manifest.merge-min-count": "2"}))
    for c in range(2):
        ingest_arrow(table, orders_batch(c))
    writes = level0_writes(table, orders_batch(5))
    attempts = []

    def lose_once(file_io, path, content):
        attempts.append(manifest_dir(table))
        if len(attempts) == 1:
            write_with_pypaimon(table, orders_batch(3))
            return False
        return create_snapshot_if_absent(file_io, path, content)

    producer = ingest_producer(table, writes, overwrite=None, commit_user="u", identifier=7)
    producer.snapshot_writer = lose_once
    outcome = producer.commit()

    assert outcome.attempts == 2
    assert attempts[0] - referenced(table), "the losing attempt merged manifests of its own"
    assert manifest_dir(table) <= referenced(table)
    base = TableManifests(table).base(outcome.snapshot)
    assert len(base) == 1, "the pypaimon commit's manifest merged in too"
    assert sorted_rows(read_rows(table), KEY) == expected_rows((0, 1, 3, 5))


def test_a_commit_failing_after_its_merge_removes_the_merged_manifests(warehouse, monkeypatch):
    table = create_table(warehouse, orders_spec(**{"manifest.merge-min-count": "2"}))
    for c in range(2):
        ingest_arrow(table, orders_batch(c))
    before = manifest_dir(table)
    original = ManifestListManager.write

    def disk_full(self, name, metas):
        if len(metas) == 1 and metas[0].file_name not in before:  # the merged base list
            raise OSError("disk full")
        return original(self, name, metas)

    monkeypatch.setattr(ManifestListManager, "write", disk_full)
    with pytest.raises(OSError, match="disk full"):
        ingest_arrow(table, orders_batch(2))

    assert latest(table).id == 2
    assert manifest_dir(table) == before
    assert sorted_rows(read_rows(table), KEY) == expected_rows(range(2))
