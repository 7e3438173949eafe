"""Conflicting compactors: commit users not ours with COMPACT snapshots among the newest ones of a
table that is not write-only. Our own compactions never count, and the scan reads at most
RECENT_SNAPSHOTS snapshot files (none for a write-only table). Java's writers compacting beside
us: tests/java/test_java_compactors.py."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from dagster_paimon import PaimonTable
from dagster_paimon.lsm.model.compactors import (
    RECENT_SNAPSHOTS,
    ConflictingCompactors,
    conflicting_compactors,
)
from dagster_paimon.snapshot import resolve
from dagster_paimon.snapshot.resolve import APPEND, COMPACT, recent_snapshots
from dagster_paimon.table import create_table
from tests.conftest import orders_batch, orders_spec, write_with_pypaimon
from tests.maintenance.appends import append_commits, append_table
from tests.test_cli import run_cli

OURS = "dagster-paimon-compact-0b7c"


def snap(snapshot_id: int, kind: str, user: str) -> SimpleNamespace:
    """The fields of a snapshot the scan looks at."""
    return SimpleNamespace(
        id=snapshot_id, commit_kind=kind, commit_user=user, time_millis=snapshot_id * 1000
    )


def test_foreign_compact_users_are_named_newest_first_with_the_latest_and_a_count():
    snapshots = [
        snap(9, APPEND, "flink-a"),
        snap(8, COMPACT, "flink-b"),
        snap(7, COMPACT, OURS),
        snap(6, COMPACT, "flink-c"),
        snap(5, COMPACT, "flink-b"),
        snap(4, APPEND, "dagster-paimon-ingest-1"),
    ]
    found = ConflictingCompactors.among(snapshots)
    assert found is not None
    assert found.to_dict() == {
        "commit_users": ["flink-b", "flink-c"],
        "latest_snapshot_id": 8,
        "latest_time_millis": 8000,
        "latest_time": "1970-01-01T00:00:08+00:00",
        "compact_snapshots": 3,
        "scanned_snapshots": 6,
        "cost": found.cost,
        "fix": found.fix,
    }
    assert "File deletion conflicts detected! Give up committing" in found.cost
    assert "'write-only'='true'" in found.fix
    assert found.warning().startswith("another compactor: flink-b, flink-c wrote 3 COMPACT")


def test_appends_of_other_writers_and_our_compactions_are_no_conflict():
    snapshots = [snap(3, APPEND, "flink-a"), snap(2, COMPACT, OURS), snap(1, APPEND, "x")]
    assert ConflictingCompactors.among(snapshots) is None
    assert ConflictingCompactors.among([]) is None


def test_our_own_compactions_of_a_primary_key_table_are_never_reported(
    capsys, warehouse, orders_table
):
    table = PaimonTable.open(warehouse, "db.orders")
    for commit in range(4, 8):
        table.ingest_arrow(orders_batch(commit))
        table.compact()
    table.compact(full=True)
    table.compact_manifests(full=True)
    ours = recent_snapshots(table.paimon, table.health().snapshot_id, RECENT_SNAPSHOTS)
    assert sum(s.commit_kind == COMPACT for s in ours) >= 3

    assert table.health().conflicting_compactors is None
    args = ("health", "--warehouse", warehouse, "--table", "db.orders")
    code, out, err = run_cli(capsys, *args, "--json")
    assert code == 0, err
    assert json.loads(out)["conflicting_compactors"] is None
    code, out, _ = run_cli(capsys, *args)
    assert code == 0 and "another compactor" not in out


def test_our_own_compactions_of_an_append_table_are_never_reported(warehouse):
    append_commits(append_table(warehouse, "unaware"), 8)
    table = PaimonTable.open(warehouse, "db.events")
    assert table.compact(full=True).snapshot_id is not None
    report = table.health()
    assert report.kind == "append" and report.conflicting_compactors is None
    assert report.to_dict()["conflicting_compactors"] is None


@pytest.fixture
def counted_reads(monkeypatch) -> list[int]:
    """The ids of the snapshot files read through resolve.read_snapshot, in order."""
    reads: list[int] = []
    read = resolve.read_snapshot

    def counting(table, snapshot_id):
        reads.append(snapshot_id)
        return read(table, snapshot_id)

    monkeypatch.setattr(resolve, "read_snapshot", counting)
    return reads


def test_the_scan_reads_the_newest_window_and_stops_where_snapshots_expired(
    warehouse, orders_table, counted_reads
):
    table = PaimonTable.open(warehouse, "db.orders")
    for commit in range(4, 30):
        write_with_pypaimon(table.paimon, orders_batch(commit, rows=2))
    latest = table.paimon.snapshot_manager().get_latest_snapshot().id
    assert latest == 30 > RECENT_SNAPSHOTS

    window = recent_snapshots(table.paimon, latest, RECENT_SNAPSHOTS)
    assert [s.id for s in window] == list(range(30, 30 - RECENT_SNAPSHOTS, -1))
    assert len(counted_reads) == RECENT_SNAPSHOTS
    counted_reads.clear()
    table.health()
    assert len(counted_reads) <= RECENT_SNAPSHOTS + 1  # the window, and the latest for levels

    table.expire_snapshots(retain_min=1, retain_max=5)
    assert [s.id for s in recent_snapshots(table.paimon, latest, RECENT_SNAPSHOTS)] == [
        30,
        29,
        28,
        27,
        26,
    ]
    assert recent_snapshots(table.paimon, None, RECENT_SNAPSHOTS) == []


@pytest.mark.parametrize("key", ["write-only", "write.compaction-skip"])
def test_a_write_only_table_is_not_scanned(warehouse, counted_reads, key):
    table = create_table(warehouse, orders_spec(**{key: "true"}))
    write_with_pypaimon(table, orders_batch(0))
    assert conflicting_compactors(table, 1) is None
    assert counted_reads == []
