"""Manifest compaction on real tables after many small pypaimon commits."""

from __future__ import annotations

import os
import shutil

import pytest
from pypaimon.manifest.manifest_file_manager import ManifestFileManager
from pypaimon.manifest.manifest_list_manager import ManifestListManager

from dagster_paimon.commit.manifest_merge import FULL, MINOR
from dagster_paimon.storage.snapshots import create_snapshot_if_absent
from dagster_paimon.table import open_table
from tests.hooks import compact_manifests, expire_snapshots
from tests.lsm.tables import cdc_table, compact
from tests.maintenance.histories import EXPIRE_ALL_BUT_LAST, append, later_ms
from tests.maintenance.oracle import all_refs, rows_at, snapshot_ids

# our compactions merge manifests at commit: held off while the history is built
UNMERGED = {"manifest.merge-min-count": "1000"}


def many_commits(warehouse: str, commits: int = 62, **options: str):
    """Small upsert/delete commits with a full compaction every 20, so DELETE entries exist."""
    table = cdc_table(warehouse, **{**UNMERGED, **options})
    for commit in range(commits):
        append(table, commit, rows=6)
        if commit % 20 == 19:
            compact(table, warehouse, full=True)
    return table


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Build each history once per module; tests get their own copy."""
    cache = {}

    def get(commits: int = 62, **options: str):
        key = (commits, *sorted(options.items()))
        if key not in cache:
            cache[key] = tmp_path_factory.mktemp("manifests")
            many_commits(str(cache[key]), commits, **options)
        return cache[key]

    return get


@pytest.fixture
def history_copy(built, tmp_path):
    """A private copy of a prebuilt history, opened like any table."""

    def make(commits: int = 62, **options: str):
        warehouse = tmp_path / "copy"
        shutil.copytree(built(commits, **options), warehouse)
        return open_table(str(warehouse), "db.cdc").copy({"manifest.merge-min-count": "30"})

    return make


def latest(table):
    return table.snapshot_manager().get_latest_snapshot()


def manifests_of(table, snapshot=None):
    return ManifestListManager(table).read_all(snapshot or latest(table))


def delete_entries(table, metas) -> int:
    entries = [e for m in metas for e in ManifestFileManager(table).read(m.file_name)]
    return sum(e.kind == 1 for e in entries)


def metadata_names(table) -> set[str]:
    """Manifest lists and manifests any snapshot on disk references."""
    names = set()
    for i in snapshot_ids(table):
        snapshot = table.snapshot_manager().get_snapshot_by_id(i)
        names |= {snapshot.base_manifest_list, snapshot.delta_manifest_list}
        names |= {m.file_name for m in manifests_of(table, snapshot)}
    return names


def manifest_dir(table) -> set[str]:
    return set(os.listdir(os.path.join(table.table_path, "manifest")))


def test_minor_merges_sixty_small_manifests_into_one(history_copy):
    table = history_copy()
    before = latest(table)
    inputs = manifests_of(table)
    assert len(inputs) == 65 and delete_entries(table, inputs) > 0
    rows, old_rows = rows_at(table, before.id), rows_at(table, 10)

    result = compact_manifests(table)

    assert (result.mode, result.manifests_before, result.manifests_after) == (MINOR, 65, 1)
    assert result.snapshot_id == before.id + 1 and result.base_snapshot_id == before.id
    snapshot = latest(table)
    assert snapshot.commit_kind == "COMPACT"
    assert ManifestListManager(table).read_delta(snapshot) == []
    assert snapshot.total_record_count == before.total_record_count
    assert len(manifests_of(table)) == 1
    assert rows_at(table, snapshot.id) == rows
    assert rows_at(table, 10) == old_rows
    assert result.metrics()["manifests_after"] == 1


def size_walk(metas, target: int, min_count: int) -> tuple[set[str], int]:
    """Section 8's minor walk on sizes: (inputs kept as they are, number of merged batches)."""
    kept, merged, batch, size = set(), 0, [], 0
    for m in metas:
        batch.append(m.file_name)
        size += m.file_size
        if size >= target:
            if len(batch) == 1:
                kept.add(batch[0])
            else:
                merged += 1
            batch, size = [], 0
    if len(batch) >= min_count:
        merged += 1
    else:
        kept |= set(batch)
    return kept, merged


def test_minor_merges_by_size_then_full_removes_every_delete_entry(history_copy):
    table = history_copy().copy({"manifest.target-file-size": "12 kb"})
    inputs = manifests_of(table)
    kept, merged = size_walk(inputs, 12 * 1024, 30)
    assert merged > 1
    rows = rows_at(table, latest(table).id)

    minor = compact_manifests(table)

    outputs = manifests_of(table)
    untouched = {m.file_name for m in outputs} & {m.file_name for m in inputs}
    assert untouched == kept
    assert len(outputs) - len(untouched) <= merged
    assert minor.manifests_after == len(outputs) < len(inputs)
    assert delete_entries(table, outputs) > 0, "pairs spanning batches keep their DELETE"
    assert rows_at(table, latest(table).id) == rows

    full = compact_manifests(table, full=True)

    outputs = manifests_of(table)
    assert full.mode == FULL and full.manifests_after == len(outputs) <= minor.manifests_after
    assert sum(m.num_deleted_files for m in outputs) == 0
    assert delete_entries(table, outputs) == 0
    assert rows_at(table, latest(table).id) == rows


def test_dry_run_estimates_and_writes_nothing(history_copy):
    table = history_copy()
    files, ids = manifest_dir(table), snapshot_ids(table)
    dry = compact_manifests(table, dry_run=True)
    assert manifest_dir(table) == files and snapshot_ids(table) == ids
    assert dry.snapshot_id is None and dry.dry_run
    real = compact_manifests(table)
    assert (dry.mode, dry.manifests_before, dry.manifests_after) == (
        real.mode,
        real.manifests_before,
        real.manifests_after,
    )


def test_nothing_to_merge_commits_nothing_and_leaves_no_files(warehouse):
    table = many_commits(warehouse, commits=5)
    files, ids = manifest_dir(table), snapshot_ids(table)
    result = compact_manifests(table)
    assert result.snapshot_id is None and result.manifests_after == result.manifests_before == 5
    assert manifest_dir(table) == files and snapshot_ids(table) == ids


def test_a_lost_race_merges_the_new_latest_and_removes_the_losing_manifests(history_copy):
    table = history_copy()
    calls = []

    def racing_writer(file_io, path, content):
        if not calls:
            append(table, 500, rows=6)
        calls.append(path)
        return create_snapshot_if_absent(file_io, path, content)

    result = compact_manifests(table, snapshot_writer=racing_writer)

    assert len(calls) == 2
    assert result.base_snapshot_id == 66 and result.snapshot_id == 67
    assert result.manifests_before == 66
    # the plan read the 65 manifests of snapshot 65; the retry read only the one 66 added
    assert result.manifests_read == 66
    assert rows_at(table, 67) == rows_at(table, 66)
    assert manifest_dir(table) <= metadata_names(table)


def test_expiry_after_compaction_reclaims_the_replaced_manifests(history_copy):
    table = history_copy()
    compact_manifests(table, full=True)
    rows = rows_at(table, latest(table).id)
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    (only,) = all_refs(table).values()
    assert manifest_dir(table) == set(only.metadata)
    assert rows_at(table, latest(table).id) == rows
