"""The doctor on real tables: what it names missing, what it rolls back, and what it refuses."""

from __future__ import annotations

import json
import os
import random

import pytest

from dagster_paimon.cli import main
from dagster_paimon.errors import RepairRefusedError, StaleMaintenancePlanError
from dagster_paimon.maintenance.doctor import (
    DATA_FILE,
    INDEX_FILE,
    MANIFEST,
    MANIFEST_LIST,
    NO_CURE,
    Missing,
    diagnose,
    doctor,
    execute_repair,
)
from tests.hooks import compact_manifests, expire_snapshots
from tests.lsm.kvmodel import apply_dedup, read_rows, sorted_rows
from tests.lsm.tables import KEY, cdc_batch, compact
from tests.maintenance.histories import EXPIRE_ALL_BUT_LAST, append, history, later_ms
from tests.maintenance.oracle import (
    all_files,
    all_refs,
    hint,
    rows_at,
    snapshot_ids,
    tag_refs,
)

CONTRACT = (
    "table",
    "snapshots_checked",
    "unreadable_snapshots",
    "missing_files",
    "tags_affected",
    "rolled_back",
    "latest",
    "healthy",
)


def latest_rows(table) -> list[dict]:
    """The rows pypaimon's reader returns for the table's latest snapshot, in key order."""
    return sorted_rows(read_rows(table), KEY)


def manifest_path(table, name: str) -> str:
    """Where a manifest or manifest list lives on the local disk."""
    return os.path.join(table.table_path, "manifest", name)


def snapshot(table, snapshot_id: int):
    """One snapshot through pypaimon's manager."""
    return table.snapshot_manager().get_snapshot_by_id(snapshot_id)


def contents(root: str) -> dict[str, bytes]:
    """Every file under root with its bytes: 'nothing changed' includes the hints."""
    found = {}
    for path in all_files(root):
        with open(path, "rb") as f:
            found[path] = f.read()
    return found


def break_newest(table) -> tuple[int, str]:
    """Delete the newest snapshot's delta manifest list; its id and the list's path."""
    newest = snapshot_ids(table)[-1]
    path = manifest_path(table, snapshot(table, newest).delta_manifest_list)
    os.remove(path)
    return newest, path


def test_a_healthy_table_is_healthy_and_repair_changes_nothing(warehouse):
    options = {"deletion-vectors.enabled": "true", "changelog-producer": "input"}
    table = history(warehouse, 3, compact_after=(1,), **options)
    compact(table, warehouse)
    table.create_tag("t2", 2)
    ids = snapshot_ids(table)
    assert snapshot(table, ids[-1]).index_manifest  # deletion vectors: index files checked too
    before = contents(table.table_path)

    report = doctor(table)
    repaired = doctor(table, repair=True)

    assert report.healthy and report.dry_run
    payload = report.to_dict()
    assert {k: payload[k] for k in CONTRACT} == {
        "table": "db.cdc",
        "snapshots_checked": len(ids),
        "unreadable_snapshots": [],
        "missing_files": 0,
        "tags_affected": [],
        "rolled_back": [],
        "latest": ids[-1],
        "healthy": True,
    }
    assert report.metrics()["healthy"] == 1
    assert (
        report.summary()
        == f"db.cdc: healthy, {len(ids)} snapshots and 1 tag checked, latest {ids[-1]}"
    )
    assert repaired.healthy and repaired.rolled_back == ()
    assert repaired.repair() == "nothing to repair"
    assert contents(table.table_path) == before


def test_a_missing_index_file_is_named(warehouse):
    table = history(warehouse, 2, compact_after=(1,), **{"deletion-vectors.enabled": "true"})
    append(table, 5)
    compact(table, warehouse)
    newest = snapshot_ids(table)[-1]
    index_dir = os.path.join(table.table_path, "index")
    victim = os.path.join(index_dir, sorted(os.listdir(index_dir))[0])
    os.remove(victim)

    report = diagnose(table)

    assert [(d.snapshot_id, d.missing, d.opens) for d in report.unreadable] == [
        (newest, (Missing(INDEX_FILE, victim),), True)
    ]


def test_a_lost_manifest_list_of_the_newest_snapshot_is_rolled_back(warehouse, caplog):
    table = history(warehouse, 4, compact_after=(1,))
    newest = snapshot_ids(table)[-1]
    previous = rows_at(table, newest - 1)
    assert latest_rows(table) != previous
    _, lost = break_newest(table)
    broken = contents(table.table_path)

    report = diagnose(table)

    assert [(d.snapshot_id, d.missing, d.opens) for d in report.unreadable] == [
        (newest, (Missing(MANIFEST_LIST, lost),), False)
    ]
    assert report.refusal is None and [c.snapshot_id for c in report.rollback] == [newest]
    assert contents(table.table_path) == broken
    text = report.preview().summary()
    assert f"missing manifest-list {lost} (needed by snapshot {newest})" in text
    assert f"would remove snapshot {newest}" in text

    with caplog.at_level("WARNING", logger="dagster_paimon"):
        result = execute_repair(table, report)

    assert result.rolled_back == (newest,) and result.latest == newest - 1 and result.healthy
    commit = result.commits[0]
    assert (commit.commit_kind, commit.unreadable) == ("APPEND", (lost,))
    assert f"rolling back unreadable snapshot {newest}: APPEND" in caplog.text
    snapshot_file = os.path.join(table.table_path, "snapshot", f"snapshot-{newest}")
    latest_hint = os.path.join(table.table_path, "snapshot", "LATEST")
    assert set(contents(table.table_path)) == set(broken) - {snapshot_file}
    assert hint(table, "snapshot", "LATEST") == str(newest - 1)
    assert {p: b for p, b in contents(table.table_path).items() if p != latest_hint} == {
        p: b for p, b in broken.items() if p not in (snapshot_file, latest_hint)
    }
    assert latest_rows(table) == previous

    append(table, 9)
    assert snapshot_ids(table)[-1] == newest
    assert doctor(table).healthy
    model = {tuple(r[c] for c in KEY): r for r in previous}
    batch = cdc_batch(random.Random(9), 9, rows=30, keys=40)  # what append(table, 9) wrote
    apply_dedup(model, [{**r, "_kind": r["op"]} for r in batch], KEY)
    assert latest_rows(table) == sorted_rows(model.values(), KEY)


def test_a_missing_data_file_of_older_snapshots_is_named_and_not_rolled_back(warehouse):
    table = history(warehouse, 3)
    compact(table, warehouse, full=True)
    append(table, 3)
    refs = all_refs(table)
    victim = sorted(refs[2].data - refs[1].data)[0]
    assert victim not in refs[5].data
    os.remove(victim)
    before = contents(table.table_path)

    report = diagnose(table)

    assert [(d.snapshot_id, d.missing, d.opens) for d in report.unreadable] == [
        (2, (Missing(DATA_FILE, victim),), True),
        (3, (Missing(DATA_FILE, victim),), True),
    ]
    assert f"missing data-file {victim} (needed by snapshots 2-3)" in report.preview().summary()
    with pytest.raises(RepairRefusedError, match="expire snapshots up to 3"):
        doctor(table, repair=True)
    assert contents(table.table_path) == before


def test_a_missing_manifest_of_a_middle_snapshot_refuses_and_expiry_cures_it(warehouse):
    table = history(warehouse, 3)
    compact_manifests(table, full=True)
    append(table, 3)
    refs = all_refs(table)
    lost = next(
        manifest_path(table, name)
        for name in sorted(refs[2].metadata - refs[1].metadata - refs[4].metadata)
        if not name.startswith("manifest-list-")
    )
    os.remove(lost)
    before = contents(table.table_path)

    report = diagnose(table)

    assert [(d.snapshot_id, d.missing) for d in report.unreadable] == [
        (2, (Missing(MANIFEST, lost),)),
        (3, (Missing(MANIFEST, lost),)),
    ]
    advice = "expire-snapshots --retain-min 2 --retain-max 2"
    assert "snapshots 2-3 cannot be read but the newer snapshot 4 can" in report.refusal
    assert advice in report.refusal
    with pytest.raises(RepairRefusedError, match="expire snapshots up to 3"):
        doctor(table, repair=True)
    assert contents(table.table_path) == before

    table_args = ["--warehouse", warehouse, "--table", "db.cdc"]
    assert main([*advice.split(), *table_args]) == 0
    assert doctor(table).healthy and snapshot_ids(table) == [4, 5]


def test_a_tag_on_a_snapshot_the_rollback_would_remove_refuses(warehouse):
    table = history(warehouse, 3)
    table.create_tag("release", 3)
    newest, lost = break_newest(table)
    before = contents(table.table_path)

    report = diagnose(table)

    assert [(d.tag, d.snapshot_id, d.missing) for d in report.tags] == [
        ("release", newest, (Missing(MANIFEST_LIST, lost),))
    ]
    with pytest.raises(RepairRefusedError, match="tag release points at snapshot 3"):
        execute_repair(table, report)
    assert contents(table.table_path) == before


def test_a_broken_tag_alone_is_reported_and_no_rollback_touches_it(warehouse):
    table = history(warehouse, 2)
    compact(table, warehouse, full=True)
    table.create_tag("old", 1)
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    victim = sorted(tag_refs(table)["old"].data - all_refs(table)[3].data)[0]
    os.remove(victim)
    before = contents(table.table_path)

    result = doctor(table, repair=True)

    assert result.unreadable == () and result.rolled_back == () and not result.healthy
    assert [(d.tag, d.snapshot_id, d.missing) for d in result.tags] == [
        ("old", 1, (Missing(DATA_FILE, victim),))
    ]
    assert result.repair() == NO_CURE
    assert contents(table.table_path) == before


def test_a_commit_after_the_diagnosis_aborts_the_rollback(warehouse):
    table = history(warehouse, 3)
    refs = all_refs(table)
    os.remove(sorted(refs[3].data - refs[2].data)[0])
    report = diagnose(table)
    assert [c.snapshot_id for c in report.rollback] == [3]
    append(table, 7)
    before = contents(table.table_path)

    with pytest.raises(StaleMaintenancePlanError, match="latest snapshot is now 4"):
        execute_repair(table, report)
    assert contents(table.table_path) == before


def test_hints_naming_missing_snapshots_are_reported_and_rewritten(warehouse):
    table = history(warehouse, 3)
    snapshot_dir = os.path.join(table.table_path, "snapshot")
    with open(os.path.join(snapshot_dir, "LATEST"), "w") as f:
        f.write("2")
    assert doctor(table).healthy  # a lagging LATEST: readers list past it
    for name, value in (("LATEST", "9"), ("EARLIEST", "0")):
        with open(os.path.join(snapshot_dir, name), "w") as f:
            f.write(value)

    report = doctor(table)
    repaired = doctor(table, repair=True)

    assert [(h.name, h.value) for h in report.hints] == [("EARLIEST", 0), ("LATEST", 9)]
    assert not report.healthy and repaired.healthy
    assert repaired.rewritten_hints == ("EARLIEST", "LATEST")
    assert (hint(table, "snapshot", "EARLIEST"), hint(table, "snapshot", "LATEST")) == ("1", "3")


def test_cli_json_reports_then_rolls_back(capsys, warehouse):
    table = history(warehouse, 3)
    previous = rows_at(table, 2)
    newest, lost = break_newest(table)
    args = ["doctor", "--warehouse", warehouse, "--table", "db.cdc", "--json"]

    code = main(args)
    out, err = capsys.readouterr()
    assert code == 1 and "db.cdc: UNHEALTHY, 1 unreadable snapshot and 0 unreadable tags" in err
    payload = json.loads(out)
    assert payload["healthy"] is False and payload["rolled_back"] == []
    assert payload["unreadable_snapshots"] == [
        {
            "snapshot_id": newest,
            "opens": False,
            "missing": [{"kind": MANIFEST_LIST, "path": lost}],
        }
    ]
    assert (payload["missing_files"], payload["latest"]) == (1, newest)

    code = main([*args, "--rollback-unreadable"])
    out, err = capsys.readouterr()
    assert code == 0, err
    payload = json.loads(out)
    assert payload["rolled_back"] == [newest] and payload["latest"] == newest - 1
    assert payload["healthy"] is True and payload["unreadable_snapshots"] == []
    assert latest_rows(table) == previous

    assert main(args[:-1]) == 0
    assert capsys.readouterr().out.startswith("db.cdc: healthy, 2 snapshots and 0 tags checked")
