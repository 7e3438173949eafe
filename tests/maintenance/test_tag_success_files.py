"""tag.create-success-file on real tables: where and what Java's SuccessFileTagCallback writes,
for every way a tag is created and deleted, and a retry after a failed success file."""

from __future__ import annotations

import json
import os
import re
import time
from datetime import datetime, timedelta

import pytest

from dagster_paimon.errors import TagExistsError
from dagster_paimon.maintenance.tags import delete_tag, list_tags
from tests.hooks import (
    create_automatic_tags,
    create_tag,
    expire_snapshots,
    expire_tags,
    remove_orphans,
)
from tests.maintenance.histories import EXPIRE_ALL_BUT_LAST, history, later_ms
from tests.maintenance.oracle import rows_at, tag_rows
from tests.maintenance.test_tags import DAILY_TIMES, auto_table, cli, tree

ON = {"tag.create-success-file": "true"}
# SuccessFile.toJson: Jackson's default pretty printer
JAVA_JSON = re.compile(r'\{\n  "creationTime" : (\d+),\n  "modificationTime" : (\d+)\n\}')


def success_dir(table) -> str:
    return os.path.join(table.table_path, "tag", "tag-success-file")


def success_file(table, name: str) -> str:
    """SuccessFileTagCallback.tagSuccessFilePath: tag/tag-success-file/<name>_SUCCESS."""
    return os.path.join(success_dir(table), f"{name}_SUCCESS")


def read_success(table, name: str) -> tuple[int, int]:
    """(creationTime, modificationTime) of a success file, checked to be Java's exact text."""
    with open(success_file(table, name)) as f:
        match = JAVA_JSON.fullmatch(f.read())
    assert match, "not SuccessFile.toJson's text"
    return int(match.group(1)), int(match.group(2))


def successes(table) -> list[str]:
    return sorted(os.listdir(success_dir(table))) if os.path.isdir(success_dir(table)) else []


def now_ms() -> int:
    return int(time.time() * 1000)


def test_off_by_default_writes_no_success_file(warehouse):
    table = history(warehouse, 2)
    create_tag(table, "t", snapshot_id=1)
    assert not os.path.exists(success_dir(table))
    delete_tag(table, "t")
    assert not os.path.exists(success_dir(table))


def test_create_writes_javas_success_file_and_delete_removes_it(warehouse):
    table = history(warehouse, 3, **ON)
    before = now_ms()
    create_tag(table, "release", snapshot_id=2)
    created, modified = read_success(table, "release")
    assert before <= created == modified <= now_ms()
    assert [t.name for t in list_tags(table)] == ["release"]  # the directory is not a tag
    assert tag_rows(table, "release") == rows_at(table, 2)

    unchanged = tree(table)
    assert delete_tag(table, "release", dry_run=True).deleted == ("release",)
    assert tree(table) == unchanged
    delete_tag(table, "release")
    assert successes(table) == [] and list_tags(table) == []


def test_an_existing_success_file_keeps_its_creation_time(warehouse):
    """A tag removed without its callback (a rollback) and created again: Java keeps
    creationTime and sets modificationTime."""
    table = history(warehouse, 2, **ON)
    os.makedirs(success_dir(table))
    with open(success_file(table, "t"), "w") as f:
        f.write('{"creationTime": 1, "modificationTime": 2}')
    before = now_ms()
    create_tag(table, "t")
    created, modified = read_success(table, "t")
    assert created == 1 and before <= modified <= now_ms()


def test_expiry_by_time_retained_deletes_success_files(warehouse):
    table = history(warehouse, 3, **ON)
    at = datetime(2024, 1, 1, 12, 0)
    create_tag(table, "short", snapshot_id=1, time_retained=timedelta(hours=1), now=at)
    create_tag(table, "kept", snapshot_id=2)
    unchanged = tree(table)
    expire_tags(table, dry_run=True, now=at + timedelta(hours=2))
    assert tree(table) == unchanged
    assert expire_tags(table, now=at + timedelta(hours=2)).deleted == ("short",)
    assert successes(table) == ["kept_SUCCESS"]


def test_snapshot_expiry_and_orphan_removal_keep_tags_and_success_files(warehouse):
    table = history(warehouse, 4, compact_after=(1,), **ON)
    create_tag(table, "t", snapshot_id=2)
    expected = tag_rows(table, "t")
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    assert remove_orphans(table, older_than_ms=1, now_ms=later_ms(60)).orphans == ()
    assert tag_rows(table, "t") == expected
    assert successes(table) == ["t_SUCCESS"]


def test_automatic_tags_write_and_retention_deletes(warehouse):
    table = auto_table(warehouse, DAILY_TIMES, **ON, **{"tag.num-retained-max": "2"})
    unchanged = tree(table)
    create_automatic_tags(table, dry_run=True)
    assert tree(table) == unchanged
    result = create_automatic_tags(table)
    assert result.created == ("2023-12-31", "2024-01-01", "2024-01-02")
    assert result.deleted == ("2023-12-31",)
    assert successes(table) == ["2024-01-01_SUCCESS", "2024-01-02_SUCCESS"]
    for name in ("2024-01-01", "2024-01-02"):
        read_success(table, name)


def test_a_run_killed_before_the_newest_success_file_is_finished_by_the_next(warehouse):
    table = auto_table(warehouse, DAILY_TIMES, **ON)
    create_automatic_tags(table)
    os.unlink(success_file(table, "2024-01-02"))  # as a kill after the tag file leaves it
    assert create_automatic_tags(table).created == ()
    read_success(table, "2024-01-02")


def test_batch_tags_replace_and_retention_as_java(warehouse):
    """TagBatchCreation replaces its tag through deleteTag + createTag (a new success file);
    it deletes a whole snapshot's tags at once (deleteAllTagsOfOneSnapshot, no callback) while
    more than tag.num-retained-max would remain, then one by one (deleteTag, callbacks)."""
    options = {"tag.automatic-creation": "batch", "tag.num-retained-max": "1", **ON}
    table = auto_table(warehouse, DAILY_TIMES[:3], **options)
    create_tag(table, "a", snapshot_id=1)
    create_tag(table, "b", snapshot_id=2)
    assert create_automatic_tags(table).deleted == ("a", "b")
    assert successes(table) == ["a_SUCCESS", "batch-write-2024-01-02_SUCCESS"]
    first, _ = read_success(table, "batch-write-2024-01-02")
    time.sleep(0.01)
    create_automatic_tags(table)
    again, modified = read_success(table, "batch-write-2024-01-02")
    assert again == modified > first


def test_batch_retention_within_one_snapshot_runs_callbacks(warehouse):
    options = {"tag.automatic-creation": "batch", "tag.num-retained-max": "1", **ON}
    table = auto_table(warehouse, DAILY_TIMES[:2], **options)
    create_tag(table, "also-latest")  # on snapshot 2, as the batch tag will be
    result = create_automatic_tags(table)
    assert result.deleted == ("also-latest",)
    assert successes(table) == ["batch-write-2024-01-01_SUCCESS"]


def test_a_failed_success_file_is_finished_by_a_retry(warehouse, monkeypatch):
    import dagster_paimon.maintenance.tag_files as tag_files

    table = history(warehouse, 3, **ON)
    monkeypatch.setattr(
        tag_files, "notify_creation", lambda meta, name, now_ms: (_ for _ in ()).throw(OSError)
    )
    with pytest.raises(OSError):
        create_tag(table, "t", snapshot_id=2)
    monkeypatch.undo()
    assert [t.name for t in list_tags(table)] == ["t"] and successes(table) == []
    assert create_tag(table, "t", snapshot_id=2).created == ("t",)
    read_success(table, "t")
    with pytest.raises(TagExistsError):  # done: a second retry is refused as Java refuses it
        create_tag(table, "t", snapshot_id=2)


def test_an_existing_tag_of_another_snapshot_still_conflicts(warehouse):
    table = history(warehouse, 3)
    create_tag(table, "t", snapshot_id=1)  # before the option was set
    table = table.copy_without_time_travel(ON)
    with pytest.raises(TagExistsError):
        create_tag(table, "t")  # the latest is snapshot 3
    read_success(table, "t")  # the tag exists: its success file is written all the same


def test_cli_create_and_delete(capsys, warehouse):
    table = history(warehouse, 2, **ON)
    args = ["--warehouse", warehouse, "--table", "db.cdc"]
    code, out, err = cli(capsys, "create-tag", *args, "--name", "r1", "--json")
    assert code == 0, err
    assert json.loads(out)["created"] == ["r1"]
    read_success(table, "r1")
    code, out, err = cli(capsys, "delete-tag", *args, "--name", "r1")
    assert code == 0, err
    assert successes(table) == []
