"""Temp files of atomic metadata writes killed before their rename: orphan removal takes them
once old (as Java's OrphanFilesClean takes its own), keeps them while young, and never takes a
record or hint beside them."""

from __future__ import annotations

import os
import random
import signal
import time
import uuid
from typing import NamedTuple

import pytest

from dagster_paimon import failpoints as fp
from dagster_paimon.maintenance.orphans import plan_orphan_removal
from dagster_paimon.storage.files import is_temp_name
from dagster_paimon.table import open_table
from tests.crash_child import Zygote
from tests.hooks import context, remove_orphans
from tests.lsm.kvmodel import apply_dedup, read_rows, sorted_rows
from tests.lsm.tables import KEY, cdc_batch
from tests.maintenance.histories import history
from tests.maintenance.oracle import age_tree, all_files, rows_at, set_consumer, snapshot_ids

IDENTIFIER = "db.cdc"
COMMITS = 4
DAY_MS = 86_400_000
DECOUPLED = {"changelog-producer": "input", "changelog.num-retained.min": "5"}
KEEP_LAST = {"retain_min": 1, "time_retained_ms": 0, "max_deletes": 1000}


@pytest.fixture(scope="module")
def zygote():
    """One pre-imported process forking the children this module kills."""
    z = Zygote()
    yield z
    z.close()


def model_rows(commits: int) -> list[dict]:
    """The rows `history` leaves after `commits` commits, by an independent last-write-wins
    model of its batches."""
    model: dict = {}
    for commit in range(commits):
        batch = cdc_batch(random.Random(commit), commit, rows=30, keys=40)
        apply_dedup(model, [{**r, "_kind": r["op"]} for r in batch], KEY)
    return sorted_rows(model.values(), KEY)


def assert_reads_as_before(warehouse: str, reads: dict[int, list[dict]]) -> None:
    """The latest snapshot reads as the model of the commits; every earlier one that is still
    listed reads as it did before the kill."""
    table = open_table(warehouse, IDENTIFIER)
    ids = snapshot_ids(table)
    assert sorted_rows(read_rows(table), KEY) == model_rows(COMMITS)
    for i in ids:
        if i in reads:
            assert rows_at(table, i) == reads[i], f"snapshot {i}"


def temp_file(table, directory: str, target: str, days: float = 0) -> str:
    """A temp file as a killed atomic write of `directory/target` leaves it, `days` old."""
    return planted(table, directory, f".{target}.{uuid.uuid4()}.tmp", days)


def planted(table, directory: str, name: str, days: float, content: str = '{"id": 1}') -> str:
    """A small file `days` old."""
    path = os.path.join(table.table_path, directory, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(content)
    old = time.time() - days * 86_400
    os.utime(path, (old, old))
    return path


class Kill(NamedTuple):
    """An operation killed at the n-th temp file it wrote, and what that temp file stands for."""

    op: str
    args: dict
    hit: int
    directory: str
    target: str
    landed: bool  # the op's snapshot was created before the kill


KILLS = {
    "snapshot": Kill("compact", {"full": True}, 1, "snapshot", f"snapshot-{COMMITS + 1}", False),
    "latest-hint": Kill("compact", {"full": True}, 2, "snapshot", "LATEST", True),
    "tag": Kill("create-tag", {"name": "t1", "snapshot_id": 2}, 1, "tag", "tag-t1", False),
    "consumer": Kill(
        "reset-consumer",
        {"consumer_id": "c1", "next_snapshot": 3},
        1,
        "consumer",
        "consumer-c1",
        False,
    ),
    "changelog": Kill("expire", {"retention": KEEP_LAST}, 1, "changelog", "changelog-1", False),
}


@pytest.mark.parametrize("case", list(KILLS))
def test_a_write_killed_before_its_rename_leaves_a_temp_file_removal_takes_once_old(
    case, zygote, warehouse
):
    kill = KILLS[case]
    table = history(warehouse, COMMITS, **(DECOUPLED if case == "changelog" else {}))
    if case == "consumer":
        set_consumer(table, "c1", 1)
    before = all_files(table.table_path)
    reads = {i: rows_at(table, i) for i in snapshot_ids(table)}

    args = {**kill.args, "identifier": IDENTIFIER}
    armed = f"{fp.TEMP_FILE_WRITTEN}@{kill.hit}"
    killed = zygote.run(kill.op, warehouse, args, failpoint=armed)
    assert killed.returncode == -signal.SIGKILL, killed.describe()

    new = all_files(table.table_path) - before
    (temp,) = [p for p in new if is_temp_name(os.path.basename(p))]
    assert os.path.dirname(temp) == os.path.join(table.table_path, kill.directory)
    assert os.path.basename(temp).startswith(f".{kill.target}.")
    # the latest reads as committed (a half-run expiry leaves older snapshots naming files it
    # deleted, until it is rerun, as Java's does)
    latest = open_table(warehouse, IDENTIFIER)
    assert sorted_rows(read_rows(latest), KEY) == model_rows(COMMITS)
    # the operation, rerun unarmed, completes (a half-run expiry must, before orphan removal
    # can trust its references) and leaves the dead write's temp file where it was
    rerun = zygote.run(kill.op, warehouse, args)
    assert rerun.returncode == 0, rerun.describe()
    assert os.path.exists(temp)

    # young: a writer may still rename it; no threshold reaches it
    assert remove_orphans(table).orphans == ()
    assert os.path.exists(temp)

    age_tree(table.table_path)
    aged = all_files(table.table_path)
    orphans = {temp} if kill.landed else new
    dry = remove_orphans(table, dry_run=True)
    assert set(dry.orphans) == orphans and dry.deleted == 0 and dry.dry_run
    assert all_files(table.table_path) == aged

    result = remove_orphans(table)
    assert set(result.orphans) == orphans and result.deleted == len(orphans)
    assert result.bytes == dry.bytes > 0
    assert all_files(table.table_path) == aged - orphans
    assert not [p for p in aged - orphans if is_temp_name(os.path.basename(p))]
    assert_reads_as_before(warehouse, reads)


def test_temp_files_in_every_metadata_directory_and_branch_go_records_and_hints_stay(warehouse):
    table = history(warehouse, 3)
    table.create_tag("t2", 2)
    table.branch_manager().create_branch("dev", "t2")
    set_consumer(table, "c1", 2)
    rows = {i: rows_at(table, i) for i in snapshot_ids(table)}
    age_tree(table.table_path)
    kept = all_files(table.table_path)
    branch = "branch/branch-dev"
    # pypaimon's, Java's and ours alike: `.<name>.<uuid>.tmp` beside the target
    old = [
        temp_file(table, "snapshot", "snapshot-4", days=2),
        temp_file(table, "snapshot", "EARLIEST", days=2),
        temp_file(table, "changelog", "changelog-1", days=2),
        temp_file(table, "changelog", "LATEST", days=2),
        temp_file(table, "tag", "tag-t3", days=2),
        temp_file(table, "consumer", "consumer-c1", days=2),
        temp_file(table, "schema", "schema-1", days=2),
        temp_file(table, f"{branch}/snapshot", "snapshot-2", days=2),
        temp_file(table, f"{branch}/tag", "tag-t9", days=2),
        temp_file(table, f"{branch}/schema", "schema-1", days=2),
    ]
    young = [
        temp_file(table, "tag", "tag-t4", days=0.5),
        temp_file(table, "consumer", "consumer-c2"),
    ]
    # not the temp name: a tag named like one, and names no writer's temp file has
    with open(os.path.join(table.table_path, "tag", "tag-t2")) as f:
        tag_t2 = f.read()
    lookalikes = [
        planted(table, "tag", f"tag-x.{uuid.uuid4()}.tmp", days=2, content=tag_t2),
        planted(table, "tag", ".tag-y.tmp", days=2),
        planted(table, "consumer", ".consumer-c3.not-a-uuid.tmp", days=2),
        planted(table, "schema", f"schema-2.{uuid.uuid4()}.tmp", days=2),
    ]

    dry = remove_orphans(table, dry_run=True)
    assert sorted(dry.orphans) == sorted(old) and dry.deleted == 0
    assert dry.bytes == sum(os.path.getsize(p) for p in old)

    result = remove_orphans(table)
    assert sorted(result.orphans) == sorted(old) and result.deleted == len(old)
    assert result.metrics()["deleted"] == len(old)
    assert all_files(table.table_path) == kept | set(young) | set(lookalikes)
    for i, expected in rows.items():
        assert rows_at(table, i) == expected
    branch_table = open_table(warehouse, f"{IDENTIFIER}$branch_dev")
    assert sorted_rows(read_rows(branch_table), KEY) == rows[2]


@pytest.mark.s3
def test_s3_temp_objects_of_pypaimon_or_java_renames_go_once_old(s3_warehouse):
    """Our writes to S3 are single PUTs and leave no temp object; pypaimon and Java commit a
    snapshot there by writing a temp object and renaming it (a copy), so a kill can leave one."""
    uri, options = s3_warehouse
    table = history(uri, 2, catalog_options=options)
    temp = f"{table.table_path}/snapshot/.snapshot-3.{uuid.uuid4()}.tmp"
    table.file_io.write_file(temp, '{"id": 3}', overwrite=False)
    now = int(time.time() * 1000)
    assert (
        plan_orphan_removal(table, older_than_ms=DAY_MS, context=context(now_ms=now)).orphans == ()
    )
    later = now + DAY_MS + 60_000
    result = remove_orphans(table, older_than_ms=DAY_MS, now_ms=later)
    assert result.orphans == (temp,) and result.deleted == 1
    assert not table.file_io.exists(temp)
    assert sorted_rows(read_rows(table), KEY) == model_rows(2)
