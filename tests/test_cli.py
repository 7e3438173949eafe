"""The ops CLI contract: JSON keys, human output and exit codes 0/2/1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dagster_paimon.cli import build_parser, main
from dagster_paimon.table import open_table

BUCKET_KEYS = {
    "partition",
    "bucket",
    "files",
    "total_bytes",
    "level0_files",
    "sorted_runs",
    "levels",
    "size_amplification_percent",
}
TOTALS_KEYS = {
    "buckets",
    "files",
    "total_bytes",
    "max_sorted_runs",
    "max_size_amplification_percent",
}


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_health_json_has_the_contract_keys(capsys, warehouse, orders_table):
    code, out, err = run_cli(
        capsys, "health", "--warehouse", warehouse, "--table", "db.orders", "--json"
    )
    assert code == 0, err
    payload = json.loads(out)
    assert payload["table"] == "db.orders"
    assert payload["snapshot_id"] == 4
    assert len(payload["buckets"]) == 4
    for bucket in payload["buckets"]:
        assert set(bucket) >= BUCKET_KEYS
        assert set(bucket["partition"]) == {"dt"}
        assert all(isinstance(v, str) for v in bucket["partition"].values())
        assert bucket["levels"] == {"0": 4}
        assert bucket["sorted_runs"] == 4
    assert set(payload["totals"]) >= TOTALS_KEYS
    assert payload["totals"]["files"] == 16


def test_health_human_output_is_a_table_per_bucket(capsys, warehouse, orders_table):
    code, out, _ = run_cli(capsys, "health", "--warehouse", warehouse, "--table", "db.orders")
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0] == "table db.orders at snapshot 4"
    assert lines[1].split()[:3] == ["partition", "bucket", "files"]
    assert sum(1 for line in lines if line.startswith("dt=2024-01-0")) == 4
    assert lines[-1].startswith("4 buckets, 16 files")


def test_partition_filter_selects_and_may_match_nothing(capsys, warehouse, orders_table):
    base = ["health", "--warehouse", warehouse, "--table", "db.orders", "--json"]
    code, out, _ = run_cli(capsys, *base, "--partition", "dt=2024-01-01")
    assert code == 0
    assert {b["partition"]["dt"] for b in json.loads(out)["buckets"]} == {"2024-01-01"}
    code, out, _ = run_cli(capsys, *base, "--partition", "dt=2030-01-01")
    assert code == 0
    assert json.loads(out)["buckets"] == []


@pytest.mark.parametrize("partition", ["dt", "=x", "dt=a,dt=b", "dt=a,,"])
def test_malformed_partition_exits_2_with_one_clear_line(
    capsys, warehouse, orders_table, partition
):
    code, out, err = run_cli(
        capsys, "health", "--warehouse", warehouse, "--table", "db.orders", "--partition", partition
    )
    assert code == 2
    assert out == ""
    assert err.strip().count("\n") == 0
    assert "--partition must look like K=V" in err


@pytest.mark.parametrize(
    ("table", "warehouse_suffix", "message"),
    [
        ("db.nope", "", "table 'db.nope' does not exist"),
        ("nodb.orders", "", "database 'nodb' does not exist"),
        ("db.orders", "/missing", "does not exist"),
        ("orders", "", "DB.TABLE"),
    ],
)
def test_bad_input_exits_2(capsys, warehouse, orders_table, table, warehouse_suffix, message):
    code, _, err = run_cli(
        capsys, "health", "--warehouse", warehouse + warehouse_suffix, "--table", table
    )
    assert code == 2
    assert message in err


def test_other_failures_exit_1(capsys, warehouse, orders_table):
    manifest_dir = orders_table.table_path + "/manifest"
    for name in os.listdir(manifest_dir):
        with open(f"{manifest_dir}/{name}", "wb") as f:
            f.write(b"not avro")
    code, out, err = run_cli(capsys, "health", "--warehouse", warehouse, "--table", "db.orders")
    assert code == 1
    assert out == ""
    assert "failed" in err


def test_console_script_and_usage_errors(warehouse, orders_table):
    exe = [sys.executable, "-m", "dagster_paimon.cli"]
    ok = subprocess.run(
        [*exe, "health", "--warehouse", warehouse, "--table", "db.orders", "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ok.returncode == 0
    assert json.loads(ok.stdout)["snapshot_id"] == 4
    usage = subprocess.run(
        [*exe, "health", "--table", "db.orders"], capture_output=True, text=True, check=False
    )
    assert usage.returncode == 2
    assert "--warehouse" in usage.stderr


def test_spark_master_and_spark_remote_exclude_each_other(capsys):
    where = ["--spark-master", "local[1]", "--spark-remote", "sc://127.0.0.1:15002"]
    with pytest.raises(SystemExit) as usage:
        build_parser().parse_args(["compact", "--warehouse", "w", "--table", "db.t", *where])
    assert usage.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_compact_dry_run_json_matches_a_hand_computed_plan(capsys, warehouse, orders_table):
    before = sorted(p.name for p in Path(warehouse).rglob("*"))
    code, out, err = run_cli(
        capsys,
        "compact",
        "--warehouse",
        warehouse,
        "--table",
        "db.orders",
        "--dry-run",
        "--full",
        "--json",
        "--partition",
        "dt=2024-01-02",
    )
    assert code == 0, err
    payload = json.loads(out)
    assert payload["snapshot_id"] is None
    assert payload["dry_run"] is True
    assert payload["bytes_read"] == 0 and payload["bytes_written"] == 0
    units = payload["units"]
    assert [(u["partition"], u["bucket"]) for u in units] == [
        ({"dt": "2024-01-02"}, 0),
        ({"dt": "2024-01-02"}, 1),
    ]
    for unit in units:
        assert {
            k: unit[k]
            for k in (
                "output_level",
                "input_files",
                "rewritten_files",
                "upgraded_files",
                "drop_delete",
            )
        } == {
            "output_level": 5,
            "input_files": 4,
            "rewritten_files": 4,
            "upgraded_files": 0,
            "drop_delete": True,
        }
        assert "output_files" in unit
    after = sorted(p.name for p in Path(warehouse).rglob("*"))
    assert after == before


def test_compact_dry_run_below_trigger_prints_nothing_to_do(capsys, warehouse, orders_table):
    code, out, _ = run_cli(
        capsys, "compact", "--warehouse", warehouse, "--table", "db.orders", "--dry-run"
    )
    assert code == 0
    assert "nothing to compact at snapshot 4" in out


def test_compact_runs_and_commits_one_snapshot(capsys, warehouse, orders_table):
    rows_before = sorted(
        orders_table.new_read_builder()
        .new_read()
        .to_arrow(orders_table.new_read_builder().new_scan().plan().splits())
        .to_pylist(),
        key=lambda r: (r["dt"], r["id"]),
    )
    code, out, err = run_cli(
        capsys, "compact", "--warehouse", warehouse, "--table", "db.orders", "--full", "--json"
    )
    assert code == 0, err
    payload = json.loads(out)
    assert payload["snapshot_id"] == 5
    assert payload["dry_run"] is False
    assert len(payload["units"]) == 4
    assert all(u["output_files"] >= 1 for u in payload["units"])
    assert payload["bytes_read"] > 0 and payload["bytes_written"] > 0
    table = open_table(warehouse, "db.orders")
    assert table.snapshot_manager().get_latest_snapshot().commit_kind == "COMPACT"
    builder = table.new_read_builder()
    rows_after = builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist()
    assert sorted(rows_after, key=lambda r: (r["dt"], r["id"])) == rows_before
    code, out, _ = run_cli(capsys, "compact", "--warehouse", warehouse, "--table", "db.orders")
    assert code == 0
    assert "nothing to compact at snapshot 5" in out
