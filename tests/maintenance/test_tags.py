"""Tags on real tables: create, list, delete (exactly the files only a tag kept), expire, auto."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta

import pytest
from pypaimon.tag.tag import Tag

from dagster_paimon.errors import (
    InputError,
    InvalidArgumentError,
    SnapshotNotFoundError,
    TagExistsError,
    TagNotFoundError,
)
from dagster_paimon.maintenance.tag_options import PeriodHandler
from dagster_paimon.maintenance.tags import delete_tag, list_tags
from tests.hooks import create_automatic_tags, create_tag, expire_snapshots, expire_tags
from tests.maintenance.histories import EXPIRE_ALL_BUT_LAST, append, history, later_ms
from tests.maintenance.oracle import (
    Refs,
    all_refs,
    exists,
    manifest_exists,
    rows_at,
    snapshot_ids,
    tag_refs,
    tag_rows,
)


def tree(table) -> list:
    """Every directory and file of the table, for 'nothing changed' checks."""
    return sorted(os.walk(table.table_path))


def tag_names(table) -> list[str]:
    """Tag names as pypaimon lists them."""
    return sorted(table.tag_manager().list_tags())


def set_snapshot(table, snapshot_id: int, **fields) -> None:
    """Rewrite fields of a snapshot file (commit time, watermark), as another writer would have."""
    path = os.path.join(table.table_path, "snapshot", f"snapshot-{snapshot_id}")
    with open(path) as f:
        content = json.load(f)
    content.update(fields)
    with open(path, "w") as f:
        json.dump(content, f)


def utc_ms(text: str) -> int:
    """Epoch milliseconds of 'YYYY-MM-DD HH:MM' in UTC."""
    return int(datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=UTC).timestamp() * 1000)


# -- create and list ---------------------------------------------------------------------------


def test_create_on_latest_and_on_an_id_reads_like_the_snapshot(warehouse):
    table = history(warehouse, 4)
    create_tag(table, "latest")
    create_tag(table, "second", snapshot_id=2)
    assert tag_names(table) == ["latest", "second"]
    assert [(t.name, t.snapshot_id) for t in list_tags(table)] == [("second", 2), ("latest", 4)]
    assert tag_rows(table, "second") == rows_at(table, 2)
    assert tag_rows(table, "latest") == rows_at(table, 4)


def test_a_dry_run_reports_the_tag_and_writes_nothing(warehouse):
    table = history(warehouse, 3)
    result = create_tag(table, "planned", snapshot_id=2, dry_run=True)
    assert result.dry_run and result.created == ("planned",)
    assert "would" in result.summary() and tag_names(table) == []
    with pytest.raises(SnapshotNotFoundError):
        create_tag(table, "nowhere", snapshot_id=9, dry_run=True)
    create_tag(table, "planned", snapshot_id=2)
    with pytest.raises(TagExistsError):
        create_tag(table, "planned", dry_run=True)
    assert [(t.name, t.snapshot_id) for t in list_tags(table)] == [("planned", 2)]


def test_a_tag_without_retention_is_the_snapshot_file(warehouse):
    table = history(warehouse, 2)
    create_tag(table, "plain", snapshot_id=1)
    with open(os.path.join(table.table_path, "tag", "tag-plain")) as f:
        tag = json.load(f)
    with open(os.path.join(table.table_path, "snapshot", "snapshot-1")) as f:
        assert tag == json.load(f)
    assert "tagCreateTime" not in tag and "tagTimeRetained" not in tag


def test_retention_is_written_as_java_does(warehouse):
    table = history(warehouse, 2)
    created = datetime(2024, 5, 6, 7, 8, 9)
    create_tag(table, "kept", time_retained=timedelta(hours=2), now=created)
    with open(os.path.join(table.table_path, "tag", "tag-kept")) as f:
        content = json.load(f)
    assert content["tagCreateTime"] == [2024, 5, 6, 7, 8, 9]
    assert content["tagTimeRetained"] == 7200.0
    tag = table.tag_manager().get("kept")
    assert isinstance(tag, Tag) and tag.tag_time_retained == timedelta(hours=2)
    (info,) = list_tags(table)
    assert info.to_dict()["time_retained_ms"] == 7_200_000
    assert info.create_time == "2024-05-06T07:08:09"


def test_default_time_retained_applies(warehouse):
    table = history(warehouse, 1, **{"tag.default-time-retained": "1 d"})
    create_tag(table, "t")
    assert list_tags(table)[0].time_retained == timedelta(days=1)


def test_bad_input_changes_nothing(warehouse):
    table = history(warehouse, 2)
    create_tag(table, "t", snapshot_id=1)
    before = tree(table)
    with pytest.raises(TagExistsError):
        create_tag(table, "t", snapshot_id=2)
    with pytest.raises(SnapshotNotFoundError):
        create_tag(table, "u", snapshot_id=9)
    with pytest.raises(InvalidArgumentError):
        create_tag(table, " ")
    with pytest.raises(InvalidArgumentError):
        create_tag(table, "u", time_retained=timedelta(seconds=-1))
    with pytest.raises(TagNotFoundError):
        delete_tag(table, "nope")
    assert tree(table) == before
    assert issubclass(TagNotFoundError, InputError) and issubclass(TagExistsError, InputError)


def test_no_snapshot_to_tag(warehouse):
    table = history(warehouse, 0)
    with pytest.raises(SnapshotNotFoundError):
        create_tag(table, "t")


# -- delete ------------------------------------------------------------------------------------


def test_deleting_a_tag_of_a_live_snapshot_deletes_only_the_tag_file(warehouse):
    table = history(warehouse, 3)
    create_tag(table, "t", snapshot_id=2)
    before = [p for p in tree(table)]
    result = delete_tag(table, "t")
    assert result.deleted == ("t",)
    assert result.deleted_data_files == result.deleted_metadata_files == 0
    assert tag_names(table) == []
    after = tree(table)
    assert len(before) == len(after)


def _kept(refs: list[Refs]) -> tuple[set[str], set[str]]:
    """Data paths and metadata names some remaining snapshot or tag references."""
    data = set().union(*(r.data for r in refs))
    metadata = set().union(*(r.metadata for r in refs))
    return data, metadata


@pytest.mark.parametrize("victim", ["t2", "t4", "t6"])
def test_delete_removes_exactly_what_only_the_tag_kept(warehouse, victim):
    table = history(warehouse, 8, compact_after=(2, 5))
    for i in (2, 4, 6):
        create_tag(table, f"t{i}", snapshot_id=i)
    expected = {n: tag_rows(table, n) for n in ("t2", "t4", "t6")}
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    latest = snapshot_ids(table)
    latest_rows = rows_at(table, latest[-1])
    own = tag_refs(table)[victim]

    before = tree(table)
    dry = delete_tag(table, victim, dry_run=True)
    assert tree(table) == before
    result = delete_tag(table, victim)
    assert (dry.deleted_data_files, dry.deleted_metadata_files) == (
        result.deleted_data_files,
        result.deleted_metadata_files,
    )

    remaining = [r for n, r in tag_refs(table).items()] + list(all_refs(table).values())
    data, metadata = _kept(remaining)
    assert all(exists(p) for p in data)
    assert all(manifest_exists(table, m) for m in metadata)
    gone_data = own.data - data
    gone_metadata = own.metadata - metadata
    assert not any(exists(p) for p in gone_data)
    assert not any(manifest_exists(table, m) for m in gone_metadata)
    assert result.deleted_data_files == len(gone_data)
    assert result.deleted_metadata_files == len(gone_metadata)
    # t4 is a full compaction whose files t6 still reads; t2 and t6 hold files nothing else does
    assert (result.deleted_data_files > 0) == (victim != "t4")
    assert result.deleted_metadata_files > 0
    assert tag_names(table) == sorted({"t2", "t4", "t6"} - {victim})
    for name in tag_names(table):
        assert tag_rows(table, name) == expected[name]
    assert rows_at(table, latest[-1]) == latest_rows


def test_two_tags_on_one_snapshot_keep_its_files(warehouse):
    table = history(warehouse, 5, compact_after=(3,))
    create_tag(table, "a", snapshot_id=2)
    create_tag(table, "b", snapshot_id=2)
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    expected = tag_rows(table, "b")
    result = delete_tag(table, "a")
    assert result.deleted_data_files == result.deleted_metadata_files == 0
    assert tag_rows(table, "b") == expected


# -- expire by time retained -------------------------------------------------------------------


def test_expire_tags_by_time_retained(warehouse):
    table = history(warehouse, 5, compact_after=(3,))
    created = datetime(2024, 1, 1, 12, 0)
    create_tag(table, "short", snapshot_id=1, time_retained=timedelta(hours=1), now=created)
    create_tag(table, "long", snapshot_id=2, time_retained=timedelta(days=7), now=created)
    create_tag(table, "forever", snapshot_id=3)
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    expected = {n: tag_rows(table, n) for n in ("long", "forever")}
    before = tree(table)
    at = created + timedelta(hours=2)
    dry = expire_tags(table, dry_run=True, now=at)
    assert tree(table) == before
    assert dry.deleted == ("short",) and dry.dry_run
    result = expire_tags(table, now=at)
    assert result.deleted == ("short",)
    assert result.deleted_data_files == dry.deleted_data_files
    assert tag_names(table) == ["forever", "long"]
    assert {n: tag_rows(table, n) for n in ("long", "forever")} == expected
    assert expire_tags(table, now=created + timedelta(hours=23)).deleted == ()
    assert expire_tags(table, now=created + timedelta(days=8)).deleted == ("long",)


# -- automatic creation ------------------------------------------------------------------------

DAILY_TIMES = [
    "2024-01-01 10:00",
    "2024-01-01 23:00",
    "2024-01-02 00:30",
    "2024-01-02 05:00",
    "2024-01-03 01:00",
]


def auto_table(warehouse, times: list[str], **options: str):
    """A table whose snapshots were committed at the given UTC times."""
    options = {"tag.automatic-creation": "process-time", "sink.process-time-zone": "UTC", **options}
    table = history(warehouse, len(times), **options)
    for i, text in enumerate(times, start=1):
        set_snapshot(table, i, timeMillis=utc_ms(text))
    return table


def auto_tags(table) -> dict[str, int]:
    return {t.name: t.snapshot_id for t in list_tags(table)}


def test_daily_tags_without_delay(warehouse):
    table = auto_table(warehouse, DAILY_TIMES)
    result = create_automatic_tags(table)
    assert result.created == ("2023-12-31", "2024-01-01", "2024-01-02")
    assert auto_tags(table) == {"2023-12-31": 1, "2024-01-01": 3, "2024-01-02": 5}
    assert tag_rows(table, "2024-01-01") == rows_at(table, 3)
    assert create_automatic_tags(table).created == ()


def test_daily_tags_with_delay(warehouse):
    table = auto_table(warehouse, DAILY_TIMES, **{"tag.creation-delay": "1 h"})
    create_automatic_tags(table)
    assert auto_tags(table) == {"2023-12-31": 1, "2024-01-01": 4, "2024-01-02": 5}


def test_runs_resume_from_the_newest_auto_tag(warehouse):
    table = auto_table(warehouse, DAILY_TIMES[:3])
    assert create_automatic_tags(table).created == ("2023-12-31", "2024-01-01")
    append(table, 10)
    append(table, 11)
    set_snapshot(table, 4, timeMillis=utc_ms("2024-01-02 05:00"))
    set_snapshot(table, 5, timeMillis=utc_ms("2024-01-03 01:00"))
    assert create_automatic_tags(table).created == ("2024-01-02",)
    assert auto_tags(table)["2024-01-02"] == 5


def test_hourly_tags_and_formatters(warehouse):
    times = ["2024-01-01 10:05", "2024-01-01 10:50", "2024-01-01 11:10", "2024-01-01 13:00"]
    table = auto_table(
        warehouse,
        times,
        **{"tag.creation-period": "hourly", "tag.period-formatter": "without_dashes"},
    )
    create_automatic_tags(table)
    assert auto_tags(table) == {"20240101 09": 1, "20240101 10": 3, "20240101 12": 4}


def test_num_retained_max_keeps_the_newest_auto_tags(warehouse):
    table = auto_table(warehouse, DAILY_TIMES, **{"tag.num-retained-max": "2"})
    create_tag(table, "manual", snapshot_id=1)
    before = tree(table)
    dry = create_automatic_tags(table, dry_run=True)
    assert tree(table) == before
    result = create_automatic_tags(table)
    assert result.created == dry.created == ("2023-12-31", "2024-01-01", "2024-01-02")
    assert result.deleted == dry.deleted == ("2023-12-31",)
    assert auto_tags(table) == {"manual": 1, "2024-01-01": 3, "2024-01-02": 5}


def test_watermark_mode_skips_snapshots_without_one(warehouse):
    table = history(
        warehouse, 4, **{"tag.automatic-creation": "watermark", "tag.creation-period": "hourly"}
    )
    set_snapshot(table, 2, watermark=utc_ms("2024-03-01 08:30"))
    set_snapshot(table, 3, watermark=-(2**63))
    set_snapshot(table, 4, watermark=utc_ms("2024-03-01 10:00"))
    create_automatic_tags(table)
    assert auto_tags(table) == {"2024-03-01 07": 2, "2024-03-01 09": 4}


def test_batch_mode_tags_the_latest_snapshot(warehouse):
    table = auto_table(warehouse, DAILY_TIMES[:2], **{"tag.automatic-creation": "batch"})
    assert create_automatic_tags(table).created == ("batch-write-2024-01-01",)
    assert auto_tags(table) == {"batch-write-2024-01-01": 2}


def test_a_replaced_batch_tag_counts_toward_num_retained_max(warehouse):
    """Java's TagBatchCreation counts every tag, the one it just replaced included."""
    options = {"tag.automatic-creation": "batch", "tag.num-retained-max": "1"}
    table = auto_table(warehouse, DAILY_TIMES[:2], **options)
    create_tag(table, "old", snapshot_id=1)
    assert create_automatic_tags(table).deleted == ("old",)
    create_tag(table, "old", snapshot_id=1)  # the batch tag now exists: it is replaced
    dry = create_automatic_tags(table, dry_run=True)
    assert create_automatic_tags(table).deleted == dry.deleted == ("batch-write-2024-01-01", "old")
    assert auto_tags(table) == {"batch-write-2024-01-01": 2}


def test_no_mode_creates_nothing(warehouse):
    table = history(warehouse, 2)
    assert create_automatic_tags(table).created == ()
    assert list_tags(table) == []


def test_period_names_parse_strictly():
    from dagster_paimon.maintenance.tag_options import PeriodHandler as P

    daily = P.from_options({})
    assert daily.to_name(datetime(2024, 2, 3)) == "2024-02-03"
    assert daily.is_auto("2024-02-03") and daily.is_auto("2024-02-03 10")
    assert not daily.is_auto("2024-2-3") and not daily.is_auto("2024-02-30")
    assert not daily.is_auto("release")
    two = P.from_options({"tag.creation-period": "two-hours"})
    assert two.previous_tag(datetime(2024, 1, 1, 5, 30)) == datetime(2024, 1, 1, 2)
    minutes = P.from_options({"tag.creation-period-duration": "30 min"})
    assert minutes.to_name(minutes.previous_tag(datetime(2024, 1, 1, 5, 50))) == "202401010500"
    assert PeriodHandler is P


# -- the CLI and PaimonTable -------------------------------------------------------------------


def cli(capsys, *argv):
    from dagster_paimon.cli import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_create_list_delete(capsys, warehouse):
    table = history(warehouse, 3)
    args = ["--warehouse", warehouse, "--table", "db.cdc"]
    code, out, err = cli(capsys, "create-tag", *args, "--name", "r1", "--snapshot", "2", "--json")
    assert code == 0, err
    assert json.loads(out)["created"] == ["r1"]
    code, out, err = cli(capsys, "create-tag", *args, "--name", "r2", "--time-retained", "7d")
    assert code == 0 and "r2" in out
    code, out, err = cli(capsys, "tags", *args, "--json")
    listed = json.loads(out)
    assert [(t["name"], t["snapshot_id"]) for t in listed] == [("r1", 2), ("r2", 3)]
    assert listed[1]["time_retained_ms"] == 7 * 86_400_000
    code, out, err = cli(capsys, "create-tag", *args, "--name", "r1")
    assert code == 2 and "already exists" in err
    code, out, err = cli(capsys, "delete-tag", *args, "--name", "nope")
    assert code == 2 and "does not exist" in err
    code, out, err = cli(capsys, "delete-tag", *args, "--name", "r1", "--dry-run", "--json")
    assert code == 0 and json.loads(out)["dry_run"] is True
    assert tag_names(table) == ["r1", "r2"]
    code, out, err = cli(capsys, "delete-tag", *args, "--name", "r1")
    assert code == 0 and tag_names(table) == ["r2"]
    code, out, err = cli(capsys, "expire-tags", *args, "--json")
    assert code == 0 and json.loads(out)["deleted"] == []
    code, out, err = cli(capsys, "create-tag", *args, "--name", "r3", "--snapshot", "9")
    assert code == 2 and "does not exist" in err


def test_cli_auto_tag(capsys, warehouse):
    auto_table(warehouse, DAILY_TIMES)
    args = ["--warehouse", warehouse, "--table", "db.cdc", "--json"]
    code, out, err = cli(capsys, "auto-tag", *args, "--dry-run")
    assert code == 0, err
    assert json.loads(out)["created"] == ["2023-12-31", "2024-01-01", "2024-01-02"]
    code, out, err = cli(capsys, "tags", *args)
    assert json.loads(out) == []
    code, out, err = cli(capsys, "auto-tag", *args)
    assert code == 0 and len(json.loads(out)["created"]) == 3


def test_paimon_table_methods(warehouse):
    from dagster_paimon import PaimonTable

    history(warehouse, 3)
    table = PaimonTable.open(warehouse, "db.cdc")
    assert table.create_tag("a", snapshot_id=1).created == ("a",)
    assert [t.name for t in table.list_tags()] == ["a"]
    assert table.expire_tags().deleted == ()
    assert table.create_automatic_tags().created == ()
    assert table.delete_tag("a").deleted == ("a",)
    assert table.list_tags() == []


def test_a_branch_keeps_the_files_it_shares_with_a_deleted_tag(warehouse):
    from dagster_paimon.table import open_catalog
    from tests.lsm.kvmodel import read_rows

    table = history(warehouse, 4, compact_after=(1,))
    create_tag(table, "fork", snapshot_id=2)
    table.branch_manager().create_branch("dev", "fork")
    branch = open_catalog(warehouse).get_table("db.cdc$branch_dev")
    expected = read_rows(branch)
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    result = delete_tag(table, "fork")
    assert result.deleted == ("fork",)
    assert read_rows(branch) == expected


def test_a_crash_after_the_tag_file_leaves_only_orphans(warehouse, monkeypatch):
    from dagster_paimon.storage.local import LocalFiles

    table = history(warehouse, 6, compact_after=(2,))
    create_tag(table, "a", snapshot_id=1)
    create_tag(table, "b", snapshot_id=3)
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    expected = tag_rows(table, "b")
    original = LocalFiles.delete_files
    calls = []

    def crash_after_first(self, paths):
        calls.append(paths)
        if len(calls) > 1:
            raise OSError("crash")
        return original(self, paths)

    monkeypatch.setattr(LocalFiles, "delete_files", crash_after_first)
    with pytest.raises(OSError):
        delete_tag(table, "a")
    monkeypatch.undo()
    assert tag_names(table) == ["b"]
    assert tag_rows(table, "b") == expected


@pytest.mark.parametrize(
    "options",
    [
        {"tag.automatic-creation": "sometimes"},
        {"tag.automatic-creation": "process-time", "tag.creation-period": "weekly"},
        {"tag.automatic-creation": "process-time", "tag.creation-delay": "1 d"},
        {"tag.automatic-creation": "process-time", "sink.process-time-zone": "Mars/Base"},
        {"tag.num-retained-max": "-1"},
    ],
)
def test_malformed_tag_options_are_option_errors(warehouse, options):
    from dagster_paimon.errors import InvalidOptionError

    table = history(warehouse, 1, **options)
    before = tree(table)
    with pytest.raises(InvalidOptionError):
        create_automatic_tags(table)
    assert tree(table) == before
