"""The maintenance commands' CLI contract: JSON keys, human lines, exit codes 0/2/1."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from dagster_paimon.cli import main
from dagster_paimon.table import open_table
from tests.maintenance.histories import history
from tests.maintenance.oracle import age_tree, changelog_ids, set_consumer, snapshot_ids

EXPIRE_KEYS = {"expired", "deleted_files", "earliest"}


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def table_args(warehouse):
    return ["--warehouse", warehouse, "--table", "db.cdc"]


def test_expire_snapshots_json(capsys, warehouse):
    history(warehouse, 6, compact_after=(3,))
    args = [*table_args(warehouse), "--retain-min", "2", "--older-than", "0 ms", "--json"]
    code, out, err = run(capsys, "expire-snapshots", *args, "--dry-run")
    assert code == 0, err
    dry = json.loads(out)
    assert set(dry) >= EXPIRE_KEYS and dry["dry_run"] is True
    assert snapshot_ids_of(warehouse) == list(range(1, 8))

    code, out, err = run(capsys, "expire-snapshots", *args)
    assert code == 0, err
    payload = json.loads(out)
    assert payload["expired"] == [1, 2, 3, 4, 5] == dry["expired"]
    assert payload["earliest"] == 6
    assert payload["deleted_files"] == dry["deleted_files"] > 5
    assert snapshot_ids_of(warehouse) == [6, 7]


def snapshot_ids_of(warehouse):
    return snapshot_ids(open_table(warehouse, "db.cdc"))


def test_expire_snapshots_max_deletes_and_human_output(capsys, warehouse):
    history(warehouse, 6)
    code, out, _ = run(
        capsys,
        "expire-snapshots",
        *table_args(warehouse),
        "--retain-min",
        "1",
        "--older-than",
        "0",
        "--max-deletes",
        "2",
    )
    assert code == 0
    assert "expired 2 snapshots (1..2)" in out


def test_expire_changelogs_json(capsys, warehouse):
    table = history(warehouse, 6, compact_after=(3,), **{"changelog.num-retained.min": "5"})
    common = [*table_args(warehouse), "--older-than", "0", "--json"]
    code, _, err = run(capsys, "expire-snapshots", *common, "--retain-min", "2")
    assert code == 0, err
    assert changelog_ids(table) == [1, 2, 3, 4, 5]
    code, out, err = run(capsys, "expire-changelogs", *common, "--retain-min", "1")
    assert code == 0, err
    payload = json.loads(out)
    assert set(payload) >= EXPIRE_KEYS
    assert payload["expired"] == [1, 2, 3, 4] and payload["earliest"] == 5
    assert changelog_ids(table) == [5]


def test_compact_manifests_json(capsys, warehouse):
    history(warehouse, 6, compact_after=(3,))
    args = [*table_args(warehouse), "--json"]
    code, out, err = run(capsys, "compact-manifests", *args)
    assert code == 0, err
    minor = json.loads(out)
    assert minor["snapshot_id"] is None and minor["manifests_before"] == 7
    code, out, err = run(capsys, "compact-manifests", *args, "--full", "--dry-run")
    dry = json.loads(out)
    assert code == 0 and dry["snapshot_id"] is None and dry["dry_run"] is True
    code, out, err = run(capsys, "compact-manifests", *args, "--full")
    assert code == 0, err
    full = json.loads(out)
    assert {"snapshot_id", "manifests_before", "manifests_after"} <= set(full)
    assert (full["snapshot_id"], full["manifests_before"], full["manifests_after"]) == (8, 7, 1)
    assert full["manifests_after"] == dry["manifests_after"]


def test_remove_orphans_json(capsys, warehouse):
    table = history(warehouse, 3)
    stray = os.path.join(table.table_path, "dt=2024-01-01", "bucket-0", "data-stray.parquet")
    with open(stray, "w") as f:
        f.write("orphan")
    args = [*table_args(warehouse), "--json"]
    code, out, _ = run(capsys, "remove-orphans", *args)
    assert code == 0 and json.loads(out)["orphans"] == []
    age_tree(table.table_path, days=0.5)
    code, out, _ = run(capsys, "remove-orphans", *args, "--older-than", "1h", "--dry-run")
    assert code == 0 and json.loads(out)["orphans"] == [stray] and os.path.exists(stray)
    code, out, _ = run(capsys, "remove-orphans", *args, "--older-than", "1h")
    payload = json.loads(out)
    assert code == 0
    assert (payload["orphans"], payload["deleted"], payload["bytes"]) == ([stray], 1, 6)
    assert not os.path.exists(stray)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["expire-snapshots", "--retain-min", "0"], "'--retain-min': 0 is not in the range"),
        (
            ["expire-snapshots", "--retain-min", "3", "--retain-max", "2"],
            "'--retain-max': 2 is less than --retain-min 3",
        ),
        (["expire-changelogs", "--older-than", "soon"], "'--older-than': 'soon' is not a duration"),
        (["expire-snapshots", "--max-deletes", "0"], "'--max-deletes': 0 is not in the range"),
        (["remove-orphans", "--older-than", "0"], "'--older-than': must be positive"),
    ],
)
def test_bad_flags_exit_2_with_one_line(capsys, warehouse, argv, message):
    history(warehouse, 2)
    code, out, err = run(capsys, argv[0], *table_args(warehouse), *argv[1:])
    assert code == 2 and out == ""
    assert message in err and err.count("\n") == 1


def test_unknown_table_exits_2(capsys, warehouse):
    history(warehouse, 1)
    code, _, err = run(capsys, "compact-manifests", "--warehouse", warehouse, "--table", "db.nope")
    assert code == 2 and "does not exist" in err


def test_aborted_maintenance_exits_1(capsys, warehouse):
    table = history(warehouse, 3)
    set_consumer(table, "stream", 2)
    with open(os.path.join(table.table_path, "consumer", "consumer-stream"), "w") as f:
        f.write("garbage")
    code, _, err = run(capsys, "expire-snapshots", *table_args(warehouse), "--older-than", "0")
    assert code == 1 and "consumer" in err


def test_console_script_runs_the_maintenance_commands(warehouse):
    history(warehouse, 2)
    result = subprocess.run(
        [sys.executable, "-m", "dagster_paimon.cli", "remove-orphans", *table_args(warehouse)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "0 orphan files" in result.stdout


def test_non_integer_counts_are_usage_errors(capsys, warehouse):
    code, out, err = run(capsys, "expire-snapshots", *table_args(warehouse), "--retain-min", "x")
    assert code == 2 and out == ""
    assert "'--retain-min': 'x' is not a valid integer" in err


def test_consumer_commands(capsys, warehouse):
    table = history(warehouse, 4)
    set_consumer(table, "flink-a", 2)
    set_consumer(table, "spark-b", 3)
    args = table_args(warehouse)
    code, out, err = run(capsys, "list-consumers", *args, "--json")
    assert code == 0, err
    assert [c["consumer_id"] for c in json.loads(out)["consumers"]] == ["flink-a", "spark-b"]
    code, out, err = run(
        capsys, "reset-consumer", *args, "--consumer", "flink-a", "--next-snapshot", "4"
    )
    assert code == 0 and "now reads snapshot 4" in out, err
    code, _, err = run(capsys, "reset-consumer", *args, "--consumer", "x", "--next-snapshot", "4")
    assert code == 2 and "does not exist" in err
    code, out, err = run(capsys, "expire-consumers", *args, "--older-than", "1d", "--json")
    assert code == 0 and json.loads(out)["removed"] == [], err
    code, out, err = run(capsys, "clear-consumers", *args, "--including", "flink-.*", "--json")
    assert code == 0 and json.loads(out)["removed"] == ["flink-a"], err
    code, out, _ = run(capsys, "list-consumers", *args)
    assert "spark-b: next snapshot 3" in out and "flink-a" not in out


def test_rollback_command(capsys, warehouse):
    table = history(warehouse, 5)
    table.create_tag("t2", 2)
    args = table_args(warehouse)
    code, _, err = run(capsys, "rollback", *args)
    assert code == 2 and "exactly one" in err
    code, _, err = run(capsys, "rollback", *args, "--tag", "nope")
    assert code == 2 and "does not exist" in err
    code, _, err = run(capsys, "rollback", *args, "--timestamp", "yesterday")
    assert code == 2
    code, out, err = run(capsys, "rollback", *args, "--snapshot", "3", "--dry-run", "--json")
    assert code == 0 and json.loads(out)["removed_snapshots"] == [5, 4], err
    assert snapshot_ids_of(warehouse) == [1, 2, 3, 4, 5]
    code, out, err = run(capsys, "rollback", *args, "--tag", "t2")
    assert code == 0 and "to 2 (tag t2)" in out, err
    assert snapshot_ids_of(warehouse) == [1, 2]
    code, out, err = run(capsys, "rollback", *args, "--timestamp", "2999-01-01T00:00:00")
    assert code == 0 and "already at snapshot 2" in out, err
