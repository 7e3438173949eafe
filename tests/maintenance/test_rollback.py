"""Rollback on real pypaimon tables: to a snapshot id, a tag or a time; what goes, what stays,
bad input, and a new commit afterwards."""

from __future__ import annotations

import os
import random
import time
from datetime import UTC, datetime

import pyarrow as pa
import pytest

from dagster_paimon.errors import (
    InvalidArgumentError,
    SnapshotNotFoundError,
    StaleMaintenancePlanError,
    TagNotFoundError,
)
from dagster_paimon.maintenance.rollback import execute_rollback, plan_rollback, rollback_to
from dagster_paimon.table import open_catalog
from tests.conftest import write_with_pypaimon
from tests.hooks import expire_snapshots, remove_orphans
from tests.lsm.kvmodel import apply_dedup, read_rows, sorted_rows
from tests.lsm.tables import KEY, SCHEMA, cdc_batch, cdc_table, compact
from tests.maintenance.histories import EXPIRE_ALL_BUT_LAST, later_ms
from tests.maintenance.oracle import (
    all_files,
    all_refs,
    changelog_ids,
    exists,
    rows_at,
    set_consumer,
    snapshot_ids,
    tag_refs,
    tag_rows,
)


class History:
    """A cdc table and the model of its rows after every snapshot."""

    def __init__(self, warehouse: str, **options: str):
        self.warehouse = warehouse
        self.table = cdc_table(warehouse, **options)
        self.model: dict = {}
        self.at: dict[int, list[dict]] = {}
        self.reads: dict[int, list[dict]] = {}
        self.models: dict[int, dict] = {}
        self.commits = 0

    def append(self) -> int:
        batch = cdc_batch(random.Random(self.commits), self.commits, rows=30, keys=40)
        self.commits += 1
        write_with_pypaimon(self.table, pa.Table.from_pylist(batch, schema=SCHEMA))
        apply_dedup(self.model, [{**r, "_kind": r["op"]} for r in batch], KEY)
        return self._record()

    def compact(self) -> int:
        compact(self.table, self.warehouse, full=True)
        return self._record()

    def _record(self) -> int:
        newest = snapshot_ids(self.table)[-1]
        self.at[newest] = sorted_rows(self.model.values(), KEY)
        self.reads[newest] = latest_rows(self.table)
        self.models[newest] = dict(self.model)
        return newest

    def rolled_back(self, target: int) -> None:
        """The model is the target's again."""
        self.model = dict(self.models[target])


def latest_rows(table) -> list[dict]:
    """What pypaimon reads now."""
    return sorted_rows(read_rows(table), KEY)


def hint(table, name: str) -> int:
    with open(os.path.join(table.table_path, "snapshot", name)) as f:
        return int(f.read())


def assert_whole(table, before: dict[int, list[dict]]) -> None:
    """Every remaining snapshot reads as pypaimon read it when it was the latest, every file a
    snapshot or tag needs exists, and orphan removal finds nothing to remove (nothing the
    rollback removed was left behind)."""
    for i in snapshot_ids(table):
        assert rows_at(table, i) == before[i]
    for refs in [*all_refs(table).values(), *tag_refs(table).values()]:
        assert all(exists(p) for p in refs.data)
    orphans = remove_orphans(table, older_than_ms=1, dry_run=True, now_ms=later_ms(5))
    assert orphans.orphans == ()


@pytest.fixture
def hist(warehouse):
    h = History(warehouse)
    for _ in range(3):
        h.append()
    h.compact()  # 4
    for _ in range(3):
        h.append()  # 5..7
    h.compact()  # 8
    h.append()  # 9
    return h


def test_rollback_to_a_snapshot(hist):
    table = hist.table
    table.create_tag("t3", 3)
    table.create_tag("t6", 6)
    table.create_tag("t9", 9)
    before_files = all_files(table.table_path)
    dry = rollback_to(table, snapshot_id=5, dry_run=True)
    assert all_files(table.table_path) == before_files
    assert dry.removed_snapshots == (9, 8, 7, 6) and dry.removed_tags == ("t6", "t9")

    result = rollback_to(table, snapshot_id=5)

    assert snapshot_ids(table) == [1, 2, 3, 4, 5]
    assert sorted(table.tag_manager().list_tags()) == ["t3"]
    assert hint(table, "LATEST") == 5
    assert latest_rows(table) == hist.at[5]
    assert tag_rows(table, "t3") == hist.at[3]
    assert result.deleted_data_files > 0 and result.deleted_data_files == dry.deleted_data_files
    assert result.to_dict()["removed_snapshots"] == [9, 8, 7, 6]
    assert result.metrics()["removed_tags"] == 2
    assert "from snapshot 9 to 5" in result.summary()
    assert_whole(table, hist.reads)
    # a new commit lands on top of the target
    hist.rolled_back(5)
    assert hist.append() == 6
    assert latest_rows(table) == hist.at[6]


def test_rollback_to_a_tag_whose_snapshot_expired(hist):
    table = hist.table
    table.create_tag("t2", 2)
    table.create_tag("t7", 7)
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    assert snapshot_ids(table) == [9]

    result = rollback_to(table, tag="t2")

    assert result.restored_from_tag == "t2" and result.removed_tags == ("t7",)
    assert snapshot_ids(table) == [2]
    assert hint(table, "LATEST") == 2 and hint(table, "EARLIEST") == 2
    assert latest_rows(table) == hist.at[2]
    assert table.tag_manager().list_tags() == ["t2"]
    assert_whole(table, hist.reads)
    hist.rolled_back(2)
    assert hist.append() == 3
    assert latest_rows(table) == hist.at[3]


def test_rollback_to_an_expired_snapshot_id_goes_through_its_tag(hist):
    table = hist.table
    table.create_tag("keep", 3)
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    result = rollback_to(table, snapshot_id=3)
    assert result.restored_from_tag == "keep"
    assert snapshot_ids(table) == [3]
    assert latest_rows(table) == hist.at[3]


def test_rollback_to_a_timestamp(warehouse):
    h = History(warehouse)
    h.append()
    h.append()
    time.sleep(0.05)
    cut = datetime.now(UTC)
    time.sleep(0.05)
    h.append()
    h.append()
    result = rollback_to(h.table, timestamp=cut)
    assert result.target_snapshot == 2 and result.removed_snapshots == (4, 3)
    assert latest_rows(h.table) == h.at[2]
    assert_whole(h.table, h.reads)
    with pytest.raises(SnapshotNotFoundError, match="at or before"):
        rollback_to(h.table, timestamp=datetime(2000, 1, 1, tzinfo=UTC))


def test_rollback_removes_newer_changelogs(warehouse):
    options = {
        "changelog-producer": "input",
        "changelog.num-retained.min": "20",
        "changelog.num-retained.max": "30",
    }
    h = History(warehouse, **options)
    for _ in range(6):
        h.append()
    expire_snapshots(
        h.table,
        overrides=EXPIRE_ALL_BUT_LAST.__class__(retain_min=4, retain_max=4, time_retained_ms=0),
        now_ms=later_ms(),
    )
    assert snapshot_ids(h.table) == [3, 4, 5, 6]
    assert changelog_ids(h.table) == [1, 2]
    rollback_to(h.table, snapshot_id=3)
    assert snapshot_ids(h.table) == [3]
    assert changelog_ids(h.table) == [1, 2]
    assert latest_rows(h.table) == h.at[3]
    assert_whole(h.table, h.reads)


def test_rollback_to_the_latest_changes_nothing(hist):
    before = all_files(hist.table.table_path)
    result = rollback_to(hist.table, snapshot_id=9)
    assert result.removed_snapshots == () and "already at snapshot 9" in result.summary()
    assert all_files(hist.table.table_path) == before


def test_consumers_are_kept(hist):
    set_consumer(hist.table, "stream", 8)
    rollback_to(hist.table, snapshot_id=4)
    assert os.path.exists(os.path.join(hist.table.table_path, "consumer", "consumer-stream"))


def test_bad_input_changes_nothing(hist):
    table = hist.table
    table.create_tag("t1", 1)
    expire_snapshots(
        table,
        overrides=EXPIRE_ALL_BUT_LAST.__class__(retain_min=5, time_retained_ms=0),
        now_ms=later_ms(),
    )
    before = all_files(table.table_path)
    with pytest.raises(SnapshotNotFoundError):
        rollback_to(table, snapshot_id=2)  # expired, no tag holds it
    with pytest.raises(SnapshotNotFoundError):
        rollback_to(table, snapshot_id=42)
    with pytest.raises(TagNotFoundError):
        rollback_to(table, tag="nope")
    with pytest.raises(InvalidArgumentError):
        rollback_to(table)
    with pytest.raises(InvalidArgumentError):
        rollback_to(table, snapshot_id=5, tag="t1")
    with pytest.raises(InvalidArgumentError):
        rollback_to(table, snapshot_id=0)
    assert all_files(table.table_path) == before


def test_a_commit_after_planning_stops_execution(hist):
    plan = plan_rollback(hist.table, snapshot_id=5)
    hist.append()
    before = all_files(hist.table.table_path)
    with pytest.raises(StaleMaintenancePlanError):
        execute_rollback(hist.table, plan)
    assert all_files(hist.table.table_path) == before


def test_branch_files_are_kept(hist):
    table = hist.table
    table.create_tag("fork", 8)
    table.branch_manager().create_branch("b", "fork")
    table.delete_tag("fork")
    branch = open_catalog(hist.warehouse).get_table("db.cdc$branch_b")
    expected = latest_rows(branch)
    rollback_to(table, snapshot_id=5)
    assert latest_rows(table) == hist.at[5]
    assert latest_rows(branch) == expected


def test_rollback_to_an_old_tag_removes_newer_changelogs(warehouse):
    options = {
        "changelog-producer": "input",
        "changelog.num-retained.min": "20",
        "changelog.num-retained.max": "30",
    }
    h = History(warehouse, **options)
    for _ in range(6):
        h.append()
    h.table.create_tag("t2", 2)
    overrides = EXPIRE_ALL_BUT_LAST.__class__(retain_min=2, retain_max=2, time_retained_ms=0)
    expire_snapshots(h.table, overrides=overrides, now_ms=later_ms())
    assert snapshot_ids(h.table) == [5, 6]
    assert changelog_ids(h.table) == [1, 2, 3, 4]

    result = rollback_to(h.table, tag="t2")

    assert result.removed_changelogs == (4, 3) and result.restored_from_tag == "t2"
    assert snapshot_ids(h.table) == [2]
    assert changelog_ids(h.table) == [1, 2]
    with open(os.path.join(h.table.table_path, "changelog", "LATEST")) as f:
        assert f.read() == "2"
    assert latest_rows(h.table) == h.at[2]
    assert_whole(h.table, h.reads)
    h.rolled_back(2)
    assert h.append() == 3
    assert latest_rows(h.table) == h.at[3]
