"""Paimon's Java implementation against our tags: Java 0.9 and 1.0 read the tags we write (with
and without a retention) after the snapshots and a tag were deleted, and Java's TagAutoManager
names and places automatic tags as ours does for the same commit times."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime, timedelta

import pytest

from dagster_paimon.maintenance.tags import delete_tag, list_tags
from tests.hooks import create_automatic_tags, create_tag, expire_snapshots, expire_tags
from tests.java.paimon_java import auto_tags
from tests.maintenance.histories import EXPIRE_ALL_BUT_LAST, history, later_ms
from tests.maintenance.oracle import tag_rows

pytestmark = pytest.mark.slow

VERSIONS = ("paimon_java", "paimon_java_1_0")


def rows_of(rows: list[dict]) -> set[tuple]:
    """Rows as comparable tuples (key and name)."""
    return {(r["dt"], r["id"], r["name"]) for r in rows}


@pytest.mark.parametrize("version", VERSIONS)
def test_java_reads_our_tags(request, warehouse, version):
    java = request.getfixturevalue(version)
    table = history(warehouse, 8, compact_after=(2, 5))
    create_tag(table, "plain", snapshot_id=2)
    create_tag(table, "kept", snapshot_id=4, time_retained=timedelta(days=3))
    create_tag(table, "gone", snapshot_id=6)
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    assert delete_tag(table, "gone").deleted_data_files > 0
    names = [t.name for t in list_tags(table)]
    assert names == ["plain", "kept"]
    reads = [{"warehouse": warehouse, "database": "db", "table": "cdc", "tag": n} for n in names]
    results = java.start_reads(reads)()
    for name, result in zip(names, results, strict=True):
        assert "error" not in result, result.get("error", "")[:2000]
        rows = [dict(zip(result["fields"], r, strict=True)) for r in result["rows"]]
        assert rows_of(rows) == rows_of(tag_rows(table, name)), name


def utc_ms(text: str) -> int:
    return int(datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=UTC).timestamp() * 1000)


def set_fields(table, snapshot_id: int, **fields) -> None:
    """Rewrite fields of a snapshot file (commit time, watermark)."""
    path = os.path.join(table.table_path, "snapshot", f"snapshot-{snapshot_id}")
    with open(path) as f:
        content = json.load(f)
    content.update(fields)
    with open(path, "w") as f:
        json.dump(content, f)


TIMES = [
    "2024-01-01 10:00",
    "2024-01-01 23:00",
    "2024-01-02 00:30",
    "2024-01-02 05:00",
    "2024-01-03 01:00",
    "2024-01-03 01:40",
    "2024-01-05 12:00",
]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"tag.creation-delay": "1 h"},
        {"tag.creation-period": "hourly"},
        {"tag.creation-period": "two-hours", "tag.creation-delay": "30 min"},
        {"tag.num-retained-max": "2"},
        {"sink.process-time-zone": "Asia/Shanghai"},
        {"sink.process-time-zone": "America/New_York", "tag.creation-period": "two-hours"},
    ],
    ids=["daily", "daily-delay", "hourly", "two-hours-delay", "retained-max", "utc+8", "ny"],
)
def test_java_auto_tags_match_ours(request, warehouse, monkeypatch, version, options):
    java = request.getfixturevalue(version)
    spec = {"tag.automatic-creation": "process-time", "sink.process-time-zone": "UTC", **options}
    # the JVM's default zone: Java 0.9/1.0 read process time in it
    monkeypatch.setenv("TZ", spec["sink.process-time-zone"])
    table = history(warehouse, len(TIMES), **spec)
    for i, text in enumerate(TIMES, start=1):
        set_fields(table, i, timeMillis=utc_ms(text))
    theirs_wh = f"{warehouse}-java"
    shutil.copytree(warehouse, theirs_wh)
    create_automatic_tags(table)
    ours = {t.name: t.snapshot_id for t in list_tags(table)}
    theirs = auto_tags(java, theirs_wh, "db", "cdc")
    assert ours == theirs
    assert len(ours) >= 2


@pytest.mark.parametrize("version", VERSIONS)
def test_watermark_auto_tags_match_java(request, warehouse, version):
    java = request.getfixturevalue(version)
    spec = {"tag.automatic-creation": "watermark", "tag.creation-period": "hourly"}
    table = history(warehouse, len(TIMES), **spec)
    for i, text in enumerate(TIMES, start=1):
        if i != 3:  # snapshot 3 has no watermark
            set_fields(table, i, watermark=utc_ms(text))
    theirs_wh = f"{warehouse}-java"
    shutil.copytree(warehouse, theirs_wh)
    create_automatic_tags(table)
    ours = {t.name: t.snapshot_id for t in list_tags(table)}
    assert ours == auto_tags(java, theirs_wh, "db", "cdc")
    assert len(ours) >= 2


def relative_files(root: str) -> set[str]:
    """Every file under root, relative to it."""
    return {
        os.path.relpath(os.path.join(d, n), root) for d, _, names in os.walk(root) for n in names
    }


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("victim", ["t2", "t4", "t6"])
def test_delete_tag_removes_the_files_java_removes(request, warehouse, version, victim):
    java = request.getfixturevalue(version)
    table = history(warehouse, 8, compact_after=(2, 5))
    for i in (2, 4, 6):
        create_tag(table, f"t{i}", snapshot_id=i)
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    theirs_wh = f"{warehouse}-java"
    shutil.copytree(warehouse, theirs_wh)
    delete_tag(table, victim)
    theirs = auto_tags(java, theirs_wh, "db", "cdc", delete=victim)
    assert {t.name: t.snapshot_id for t in list_tags(table)} == theirs
    table_dir = os.path.join("db.db", "cdc")
    assert relative_files(os.path.join(warehouse, table_dir)) == relative_files(
        os.path.join(theirs_wh, table_dir)
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_tag_time_expiry_matches_java(request, warehouse, version):
    java = request.getfixturevalue(version)
    table = history(warehouse, 8, compact_after=(2, 5))
    long_ago = datetime(2020, 1, 1, 12, 0)
    create_tag(table, "old", snapshot_id=2, time_retained=timedelta(days=1), now=long_ago)
    create_tag(table, "older", snapshot_id=4, time_retained=timedelta(hours=1), now=long_ago)
    create_tag(table, "young", snapshot_id=6, time_retained=timedelta(days=100_000), now=long_ago)
    create_tag(table, "forever", snapshot_id=3)
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    theirs_wh = f"{warehouse}-java"
    shutil.copytree(warehouse, theirs_wh)
    result = expire_tags(table)
    assert sorted(result.deleted) == ["old", "older"]
    theirs = auto_tags(java, theirs_wh, "db", "cdc")
    assert {t.name: t.snapshot_id for t in list_tags(table)} == theirs
    table_dir = os.path.join("db.db", "cdc")
    assert relative_files(os.path.join(warehouse, table_dir)) == relative_files(
        os.path.join(theirs_wh, table_dir)
    )
