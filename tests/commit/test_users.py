"""Commit users: every snapshot our operations commit names dagster-paimon and the operation."""

from __future__ import annotations

import re
from datetime import timedelta

from dagster_paimon.commit.users import COMMIT_USER_PREFIX, is_ours, new_commit_user
from dagster_paimon.paimon_table import PaimonTable
from tests.conftest import orders_batch

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def test_a_new_commit_user_is_ours_names_its_operation_and_is_fresh():
    user = new_commit_user("compact")
    assert re.fullmatch(f"dagster-paimon-compact-{UUID}", user)
    assert is_ours(user)
    assert new_commit_user("compact") != user


def test_other_writers_users_are_not_ours():
    for user in ("3f1c9e4a-8a7b-4c1d-9e2f-0a1b2c3d4e5f", "flink-job", "", None, "dagster-paimon"):
        assert not is_ours(user)
    assert is_ours(f"{COMMIT_USER_PREFIX}ingest-x")


def test_every_operation_commits_under_its_own_prefixed_user(warehouse, orders_table):
    table = PaimonTable.open(warehouse, "db.orders")
    pypaimon_snapshots = table.paimon.snapshot_manager().get_latest_snapshot().id
    table.ingest_arrow(orders_batch(5))
    table.compact(full=True)
    table.compact_manifests(full=True)
    table.rescale(bucket_num=3)
    table.expire_partitions(older_than=timedelta(days=1))
    manager = table.paimon.snapshot_manager()
    ours = [
        manager.get_snapshot_by_id(i)
        for i in range(pypaimon_snapshots + 1, manager.get_latest_snapshot().id + 1)
    ]
    operations = [re.fullmatch(f"dagster-paimon-(.+)-{UUID}", s.commit_user) for s in ours]
    assert [m.group(1) if m else s.commit_user for m, s in zip(operations, ours, strict=True)] == [
        "ingest",
        "compact",
        "compact-manifests",
        "rescale",
        "expire-partitions",
    ]
    assert not any(is_ours(manager.get_snapshot_by_id(i).commit_user) for i in (1, 2, 3, 4))
