"""Rollback against Paimon's Java `FileStoreTable.rollbackTo` (0.9 and 1.0, which delete the
files only the removed snapshots and tags used, as we do; 2.0 leaves them to orphan removal):
on copies of one table both leave the same snapshots and tags, the same files up to the
orphans Java leaves, and Java and pypaimon read both as the target."""

from __future__ import annotations

import os
import shutil

import pytest

from dagster_paimon.maintenance.rollback import rollback_to
from dagster_paimon.table import open_table
from tests.hooks import expire_snapshots, remove_orphans
from tests.lsm.kvmodel import read_rows, sorted_rows
from tests.lsm.tables import KEY, compact
from tests.maintenance.histories import EXPIRE_ALL_BUT_LAST, append, history, later_ms
from tests.maintenance.oracle import rows_at, snapshot_ids

HINTS = {"LATEST", "EARLIEST"}


def files(root: str) -> set[str]:
    """Every file under the table but the hints, relative."""
    return {
        os.path.relpath(os.path.join(d, n), root)
        for d, _, names in os.walk(root)
        for n in names
        if n not in HINTS and not n.startswith(".")
    }


@pytest.mark.parametrize("java", ["paimon_java", "paimon_java_1_0"])
@pytest.mark.parametrize(
    ("kind", "target", "expire"),
    [("snapshot", "4", False), ("tag", "t2", False), ("tag", "t2", True)],
    ids=["snapshot", "tag", "expired-tag"],
)
def test_rollback_matches_java(java, kind, target, expire, request, tmp_path):
    java_impl = request.getfixturevalue(java)
    base = str(tmp_path / "base")
    table = history(base, 4, compact_after=(2,))
    append(table, 7)
    compact(table, base, full=True)
    append(table, 8)
    table.create_tag("t2", 2)
    table.create_tag("t6", 6)
    expected = rows_at(table, int(target) if kind == "snapshot" else 2)
    if expire:  # the tag's snapshot is gone: both restore it from the tag
        expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
        assert 2 not in snapshot_ids(table)

    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    shutil.copytree(base, ours)
    shutil.copytree(base, theirs)
    mine = open_table(ours, "db.cdc")
    if kind == "snapshot":
        rollback_to(mine, snapshot_id=int(target))
    else:
        rollback_to(mine, tag=target)
    java_impl.rollback(theirs, "db", "cdc", kind, target)
    java_table = open_table(theirs, "db.cdc")

    assert snapshot_ids(mine) == snapshot_ids(java_table)
    assert sorted(mine.tag_manager().list_tags()) == sorted(java_table.tag_manager().list_tags())
    ours_files, theirs_files = files(mine.table_path), files(java_table.table_path)
    assert ours_files <= theirs_files, f"only ours: {sorted(ours_files - theirs_files)}"
    # Java deletes only what the removed snapshots' deltas added: when the target's snapshot had
    # expired, the files only the removed snapshots' base named stay behind in Java's copy as
    # orphans; we delete those too. Everything else is identical.
    extra = theirs_files - ours_files
    assert not extra or expire
    orphans = remove_orphans(java_table, older_than_ms=1, dry_run=True, now_ms=later_ms(5))
    assert {os.path.relpath(p, java_table.table_path) for p in orphans.orphans} == extra
    for t in (mine, java_table):
        assert sorted_rows(read_rows(t), KEY) == expected
    java_rows = java_impl.read(ours, "db", "cdc")
    assert len(java_rows) == len(expected)
