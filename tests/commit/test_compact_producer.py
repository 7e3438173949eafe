"""Compaction end to end on real tables: pypaimon's reader is the oracle before and after."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from dagster_paimon.commit.producers import CompactProducer
from dagster_paimon.errors import CommitConflictError
from dagster_paimon.kinds import health_of, plan_compaction
from dagster_paimon.lsm.compaction.executor import LocalExecutor
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.snapshot.entries import live_entries
from dagster_paimon.table import TableRef
from tests.conftest import data_files_on_disk, write_with_pypaimon
from tests.lsm.kvmodel import read_rows, sorted_rows
from tests.lsm.tables import DAYS, KEY, SCHEMA, cdc_table, compact, write_history


def expected(model: dict) -> list[dict]:
    return sorted_rows(model.values(), KEY)


def test_full_compaction_reads_the_same_rows_and_leaves_one_run_per_bucket(warehouse):
    table = cdc_table(warehouse)
    model = write_history(table, 6)
    before = sorted_rows(read_rows(table), KEY)
    assert before == expected(model)

    report = compact(table, warehouse, full=True)

    assert report.snapshot_id == 7
    assert sorted_rows(read_rows(table), KEY) == expected(model)
    snapshot = table.snapshot_manager().get_latest_snapshot()
    assert snapshot.commit_kind == "COMPACT"
    live = live_entries(table, snapshot)
    assert snapshot.total_record_count == sum(e.file.row_count for e in live)
    previous = table.snapshot_manager().get_snapshot_by_id(6)
    assert snapshot.delta_record_count == snapshot.total_record_count - previous.total_record_count
    for bucket in read_levels(table).buckets:
        assert bucket.levels.number_of_sorted_runs() == 1
        assert bucket.levels.non_empty_highest_level() == 5
        for f in bucket.levels.all_files():
            assert f.delete_row_count == 0
            assert f.file_source == 1
    assert sum(e.file.row_count for e in live) == len(model)


def test_minor_compaction_brings_sorted_runs_back_under_the_trigger(warehouse):
    table = cdc_table(warehouse, **{"num-sorted-run.compaction-trigger": "3"})
    model = write_history(table, 5)
    assert health_of(read_levels(table)).aggregate()["max_sorted_runs"] == 5

    report = compact(table, warehouse)

    assert report.snapshot_id == 6
    assert health_of(read_levels(table)).aggregate()["max_sorted_runs"] <= 3
    assert sorted_rows(read_rows(table), KEY) == expected(model)
    more = write_history(table, 3, seed=11, model=model)
    compact(table, warehouse)
    assert sorted_rows(read_rows(table), KEY) == expected(more)


def test_time_travel_to_the_snapshot_before_compaction_still_reads_its_rows(warehouse):
    table = cdc_table(warehouse)
    model = write_history(table, 4)
    compact(table, warehouse, full=True)
    assert sorted_rows(read_rows(table, snapshot_id=4), KEY) == expected(model)


def test_nothing_to_do_commits_nothing(warehouse):
    table = cdc_table(warehouse)
    write_history(table, 2)
    report = compact(table, warehouse)
    assert report.snapshot_id is None
    assert table.snapshot_manager().get_latest_snapshot().id == 2


def test_racing_compactions_of_the_same_bucket_one_commits_the_other_cleans_up(warehouse):
    table = cdc_table(warehouse)
    model = write_history(table, 4)
    ref = TableRef(warehouse, "db.cdc")
    plan_a = plan_compaction(read_levels(table, with_stats=True), full=True)
    plan_b = plan_compaction(read_levels(table, with_stats=True), full=True)
    results_a = LocalExecutor().run(table, ref, plan_a.tasks)
    results_b = LocalExecutor().run(table, ref, plan_b.tasks)
    CompactProducer(table, [r.change for r in results_a]).commit()
    files_b = {f.file_name for r in results_b for f in r.new_files}
    assert files_b <= data_files_on_disk(table)

    with pytest.raises(CommitConflictError, match="no longer live"):
        CompactProducer(table, [r.change for r in results_b]).commit()

    assert not files_b & data_files_on_disk(table)
    assert table.snapshot_manager().get_latest_snapshot().id == 5
    assert sorted_rows(read_rows(table), KEY) == expected(model)


def test_a_failure_while_writing_manifests_changes_nothing(warehouse, monkeypatch):
    table = cdc_table(warehouse)
    model = write_history(table, 4)
    files_before = data_files_on_disk(table)
    manifests_before = set(os.listdir(os.path.join(table.table_path, "manifest")))

    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    calls = {"n": 0}
    original = ManifestListManager.write

    def failing_write(self, name, metas):
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError("disk full")
        return original(self, name, metas)

    monkeypatch.setattr(ManifestListManager, "write", failing_write)
    with pytest.raises(OSError, match="disk full"):
        compact(table, warehouse, full=True)

    assert table.snapshot_manager().get_latest_snapshot().id == 4
    assert data_files_on_disk(table) == files_before
    assert set(os.listdir(os.path.join(table.table_path, "manifest"))) == manifests_before
    assert sorted_rows(read_rows(table), KEY) == expected(model)


def test_a_lost_snapshot_race_is_retried_against_the_new_latest(warehouse):
    table = cdc_table(warehouse)
    model = write_history(table, 4)
    ref = TableRef(warehouse, "db.cdc")
    plan = plan_compaction(read_levels(table, with_stats=True), full=True)
    results = LocalExecutor().run(table, ref, plan.tasks)
    attempts = {"n": 0}

    from dagster_paimon.storage.snapshots import create_snapshot_if_absent

    def lose_once(file_io, path, content):
        attempts["n"] += 1
        if attempts["n"] == 1:
            # Another writer lands an APPEND snapshot first.
            write_history(table, 1, seed=99, model=model)
            return False
        return create_snapshot_if_absent(file_io, path, content)

    outcome = CompactProducer(
        table, [r.change for r in results], snapshot_writer=lose_once
    ).commit()
    assert outcome.attempts == 2
    assert outcome.snapshot.id == 6
    assert sorted_rows(read_rows(table), KEY) == expected(model)


def test_vectors_changed_by_another_writer_since_planning_are_a_conflict(warehouse):
    """Our new index would drop the other writer's deletions: refuse, remove our files."""
    from dagster_paimon.commit.changes import BucketChange
    from dagster_paimon.io.index import BucketVectors
    from dagster_paimon.lsm.compaction.compact import execute_compaction

    table = cdc_table(warehouse, **{"deletion-vectors.enabled": "true"})
    base = [
        {"dt": dt, "id": key, "name": "base", "amount": 0.0, "op": "+I"}
        for dt in DAYS
        for key in range(1000)
    ]
    write_with_pypaimon(table, pa.Table.from_pylist(base, schema=SCHEMA))
    compact(table, warehouse, full=True)
    write_history(table, 2, seed=11)
    plan = plan_compaction(read_levels(table, with_stats=True))
    task = plan.tasks[0]
    assert task.uses_lookup  # it will mark rows of the top level in this bucket's vectors
    before_files = data_files_on_disk(table)

    vectors = BucketVectors.restore(table, task.partition, task.bucket, task.dv_index)
    vectors.modified = True  # another writer rewrote this bucket's vectors meanwhile
    index = vectors.write(table, task.partition, task.bucket)
    base = task.dv_index.names if task.dv_index else ()
    other = BucketChange(
        task.partition, task.bucket, task.total_buckets, index=index, base_index=base
    )
    CompactProducer(table, [other]).commit()
    latest = table.snapshot_manager().get_latest_snapshot().id

    with pytest.raises(CommitConflictError, match="DELETION_VECTORS index of bucket"):
        execute_compaction(table, TableRef(warehouse, "db.cdc"), plan, LocalExecutor())
    assert table.snapshot_manager().get_latest_snapshot().id == latest
    assert data_files_on_disk(table) == before_files
    assert sorted_rows(read_rows(table), KEY) == sorted_rows(read_rows(table, latest - 1), KEY)
