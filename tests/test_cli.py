"""The ops CLI contract: JSON keys, human output, JSON errors and exit codes 0/1/2/70."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from importlib.metadata import version
from pathlib import Path

import pyarrow as pa
import pytest
from pypaimon import Schema

from dagster_paimon.arguments import parse_duration
from dagster_paimon.cli import main
from dagster_paimon.errors import InputError, InternalError, InvalidArgumentError
from dagster_paimon.options import duration_ms
from dagster_paimon.table import TableSpec, create_table, open_catalog, open_table
from tests.conftest import write_with_pypaimon

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
    assert payload["kind"] == "primary-key"
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


def test_health_of_an_append_table_reports_files_and_small_files(capsys, warehouse):
    catalog = open_catalog(warehouse, create=True)
    catalog.create_database("crm", True)
    schema = Schema.from_pyarrow_schema(USERS, options={"bucket": "-1"})
    catalog.create_table("crm.log", schema, False)
    for commit in range(3):
        write_with_pypaimon(
            catalog.get_table("crm.log"), pa.table({"id": [commit], "name": ["x"]}, USERS)
        )
    base = ["health", "--warehouse", warehouse, "--table", "crm.log"]
    code, out, err = run_cli(capsys, *base, "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert (payload["kind"], payload["snapshot_id"]) == ("append", 3)
    assert payload["small_file_bytes"] == int(256 * 1024 * 1024 * 0.7)
    assert [(b["bucket"], b["files"], b["small_files"], b["rows"]) for b in payload["buckets"]] == [
        (0, 3, 3, 3)
    ]
    assert payload["totals"] == {
        "buckets": 1,
        "files": 3,
        "small_files": 3,
        "max_small_files": 3,
        "total_bytes": payload["buckets"][0]["total_bytes"],
        "rows": 3,
        "deleted_rows": 0,
    }
    code, out, _ = run_cli(capsys, *base)
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0] == "append table crm.log at snapshot 3"
    assert lines[1].split() == ["partition", "bucket", "files", "small", "bytes", "rows", "deleted"]
    assert lines[3].startswith("1 buckets, 3 files (3 below 187904819 bytes)")


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
    assert "Invalid value for '--partition': partition must look like K=V" in err


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


def test_spark_master_and_spark_remote_exclude_each_other(capsys, tmp_path):
    where = ["--spark-master", "local[1]", "--spark-remote", "sc://127.0.0.1:15002"]
    code, out, err = run_cli(
        capsys, "compact", "--warehouse", str(tmp_path / "w"), "--table", "db.t", *where
    )
    assert code == 2 and out == ""
    assert "exclude each other" in err
    assert not (tmp_path / "w").exists()


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


# -- the contract of issue 28: version, environment, shared flags, checks, JSON errors, codes --


def last_json_line(err: str) -> dict:
    """The JSON error object: the last line on stderr."""
    return json.loads(err.strip().splitlines()[-1])


def test_version_is_the_installed_distribution(capsys):
    code, out, _ = run_cli(capsys, "--version")
    assert code == 0
    assert out.strip() == f"dagster-paimon {version('dagster-paimon')}"


def test_warehouse_defaults_to_the_environment_and_the_flag_wins(
    capsys, monkeypatch, warehouse, orders_table, tmp_path
):
    monkeypatch.setenv("PAIMON_WAREHOUSE", warehouse)
    code, out, err = run_cli(capsys, "health", "--table", "db.orders", "--json")
    assert code == 0, err
    assert json.loads(out)["snapshot_id"] == 4
    monkeypatch.setenv("PAIMON_WAREHOUSE", str(tmp_path / "elsewhere"))
    code, out, err = run_cli(capsys, "health", "--table", "db.orders", "--warehouse", warehouse)
    assert code == 0, err
    code, _, err = run_cli(capsys, "health", "--table", "db.orders")
    assert code == 2 and "does not exist" in err
    monkeypatch.delenv("PAIMON_WAREHOUSE")
    code, out, err = run_cli(capsys, "health", "--table", "db.orders")
    assert code == 2 and out == ""
    assert "Missing option '--warehouse' (or set PAIMON_WAREHOUSE)" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["--warehouse", "{w}", "--table", "db.orders", "--json", "health"],
        ["health", "--warehouse", "{w}", "--table", "db.orders", "--json"],
        ["--json", "--table", "db.orders", "health", "--warehouse", "{w}"],
        ["-v", "--warehouse", "{w}", "health", "--json", "--table", "db.orders"],
        # given before and after the command: the one after wins
        [
            "--table",
            "db.nope",
            "--warehouse",
            "/nowhere",
            "health",
            "--table",
            "db.orders",
            "--warehouse",
            "{w}",
            "--json",
        ],
    ],
)
def test_shared_flags_go_before_or_after_the_command(
    capsys, monkeypatch, warehouse, orders_table, argv
):
    monkeypatch.delenv("PAIMON_WAREHOUSE", raising=False)
    code, out, err = run_cli(capsys, *(a.replace("{w}", warehouse) for a in argv))
    assert code == 0, err
    payload = json.loads(out)
    assert (payload["table"], payload["snapshot_id"], len(payload["buckets"])) == (
        "db.orders",
        4,
        4,
    )


@pytest.mark.parametrize("position", ["before", "after"])
def test_arguments_are_checked_before_the_warehouse_is_touched(capsys, tmp_path, position):
    missing = tmp_path / "no" / "warehouse"
    shared = ["--warehouse", str(missing), "--table", "db.t"]
    flags = ["--older-than", "5x"]
    argv = (
        [*shared, "expire-snapshots", *flags]
        if position == "before"
        else ["expire-snapshots", *shared, *flags]
    )
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == ""
    assert "Invalid value for '--older-than': '5x' is not a duration" in err
    assert "warehouse" not in err.lower()
    assert not (tmp_path / "no").exists()

    code, out, err = run_cli(capsys, *argv, "--json")
    assert code == 2 and out == ""
    error = last_json_line(err)["error"]
    assert error["type"] == "UsageError" and error["exit_code"] == 2
    assert "'5x' is not a duration" in error["message"]
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize(
    ("duration", "expected"),
    [
        ("30s", timedelta(seconds=30)),
        ("15m", timedelta(minutes=15)),
        ("15 min", timedelta(minutes=15)),
        ("12h", timedelta(hours=12)),
        ("7d", timedelta(days=7)),
        ("2 days", timedelta(days=2)),
        ("250", timedelta(milliseconds=250)),
        ("0 ms", timedelta(0)),
    ],
)
def test_durations_read_as_paimon_reads_them(duration, expected):
    assert parse_duration(duration) == expected
    # the same text as a table option (pypaimon's parser) gives the same milliseconds
    assert expected / timedelta(milliseconds=1) == duration_ms(duration)


@pytest.mark.parametrize("bad", ["5x", "", "h", "-1h", "1.5h", "soon"])
def test_malformed_durations_are_argument_errors(bad):
    with pytest.raises(InvalidArgumentError, match="not a duration"):
        parse_duration(bad)


def test_json_errors_are_objects_with_type_and_exit_code(capsys, warehouse, orders_table):
    code, out, err = run_cli(
        capsys, "health", "--warehouse", warehouse, "--table", "db.nope", "--json"
    )
    assert code == 2 and out == ""
    assert json.loads(err) == {
        "error": {
            "type": "TableNotFoundError",
            "message": "table 'db.nope' does not exist",
            "exit_code": 2,
        }
    }
    code, out, err = run_cli(capsys, "--json", "health", "--warehouse", warehouse, "--bogus")
    assert code == 2 and out == ""
    error = json.loads(err)["error"]
    assert error["type"] == "UsageError" and "--bogus" in error["message"]


def corrupt_manifests(table) -> None:
    """Every manifest of the table unreadable: CorruptMetadataError, an operation failure."""
    manifest_dir = table.table_path + "/manifest"
    for name in os.listdir(manifest_dir):
        with open(f"{manifest_dir}/{name}", "wb") as f:
            f.write(b"not avro")


def test_exit_codes_by_kind(capsys, caplog, monkeypatch, warehouse, orders_table):
    """0 ok, 2 input (nothing changed), 1 an operation failure, 70 a bug (with traceback)."""
    args = ["health", "--warehouse", warehouse, "--table", "db.orders", "--json"]
    assert run_cli(capsys, *args)[0] == 0

    code, _, err = run_cli(capsys, "compact", "--warehouse", warehouse, "--table", "orders")
    assert code == 2 and "DB.TABLE" in err

    # a bug: an invariant of ours failing, and any exception we never meant to raise
    from dagster_paimon.kinds import resolve

    for bug in (InternalError("level invariant broken"), KeyError("oops")):

        def broken(*_args, bug=bug, **_kwargs):
            raise bug

        monkeypatch.setattr(resolve, "read_levels", broken)
        caplog.clear()
        code, out, err = run_cli(capsys, *args)
        assert code == 70 and out == ""
        [logged] = [r for r in caplog.records if "a bug in dagster-paimon" in r.getMessage()]
        assert logged.exc_info is not None and logged.exc_info[1] is bug
        assert last_json_line(err)["error"] == {
            "type": type(bug).__name__,
            "message": str(bug),
            "exit_code": 70,
        }
    monkeypatch.undo()

    corrupt_manifests(orders_table)
    code, out, err = run_cli(capsys, *args)
    assert code == 1 and out == ""
    error = last_json_line(err)["error"]
    assert (error["type"], error["exit_code"]) == ("CorruptMetadataError", 1)


def test_internal_errors_are_not_input_errors():
    assert not issubclass(InternalError, InputError)
    assert issubclass(InvalidArgumentError, InputError)


# -- tables ------------------------------------------------------------------------------------

USERS = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])


@pytest.fixture
def three_tables(warehouse, orders_table):
    """db.orders (4 commits), crm.users (one commit, dynamic bucket), crm.log (append, one
    commit) and a stray directory."""
    users = create_table(warehouse, TableSpec("crm", "users", USERS, ("id",), -1))
    write_with_pypaimon(users, pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]}, USERS))
    catalog = open_catalog(warehouse)
    catalog.create_table("crm.log", Schema.from_pyarrow_schema(USERS), False)
    log = catalog.get_table("crm.log")
    write_with_pypaimon(log, pa.table({"id": [1, 1], "name": ["a", "b"]}, USERS))
    (Path(warehouse) / "crm.db" / "stray").mkdir()
    return warehouse


def test_tables_lists_primary_key_and_append_tables_with_their_health(capsys, three_tables):
    before = sorted(p.name for p in Path(three_tables).rglob("*"))
    code, out, err = run_cli(capsys, "tables", "--warehouse", three_tables, "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert [(r["table"], r["kind"], r["skipped"]) for r in rows] == [
        ("crm.log", "append", None),
        ("crm.stray", None, "not a Paimon table (no schema)"),
        ("crm.users", "primary-key", None),
        ("db.orders", "primary-key", None),
    ]
    log_row, _, users, orders = rows
    assert (log_row["snapshot_id"], log_row["totals"]["files"], log_row["totals"]["rows"]) == (
        1,
        1,
        2,
    )
    assert log_row["totals"]["small_files"] == 1 and log_row["totals"]["deleted_rows"] == 0
    assert (orders["snapshot_id"], orders["error"], orders["unsupported"]) == (4, None, [])
    assert set(orders["totals"]) >= TOTALS_KEYS
    assert (orders["totals"]["files"], orders["totals"]["max_sorted_runs"]) == (16, 4)
    assert orders["totals"]["buckets"] == 4
    assert (users["snapshot_id"], users["totals"]["rows"]) == (1, 3)
    assert sorted(p.name for p in Path(three_tables).rglob("*")) == before

    code, out, err = run_cli(capsys, "--warehouse", three_tables, "tables")
    assert code == 0, err
    lines = out.strip().splitlines()
    assert lines[0].split() == [
        "table", "snapshot", "buckets", "files", "bytes", "L0", "max-runs", "max-amp", "%"
    ]  # fmt: skip
    assert [line.split()[0] for line in lines[1:]] == [
        "crm.users", "db.orders", "table", "crm.log", "crm.stray:"
    ]  # fmt: skip
    assert lines[2].split()[1:4] == ["4", "4", "16"]
    assert lines[3].split() == [
        "table", "snapshot", "buckets", "files", "bytes", "small", "deleted-rows"
    ]  # fmt: skip
    assert lines[4].split()[1:4] == ["1", "1", "1"]
    assert lines[5] == "crm.stray: skipped, not a Paimon table (no schema)"


def test_tables_filters_by_database_and_pattern(capsys, three_tables):
    base = ["tables", "--warehouse", three_tables, "--json"]
    code, out, _ = run_cli(capsys, *base, "--database", "db")
    assert code == 0 and [r["table"] for r in json.loads(out)] == ["db.orders"]
    code, out, _ = run_cli(capsys, *base, "--match", "*.us*", "--match", "db.*")
    assert code == 0 and [r["table"] for r in json.loads(out)] == ["crm.users", "db.orders"]
    code, out, _ = run_cli(capsys, *base, "--database", "crm", "--exclude", "crm.users")
    assert code == 0 and [r["table"] for r in json.loads(out)] == ["crm.log", "crm.stray"]
    code, out, _ = run_cli(capsys, *base, "--match", "crm.log")
    assert code == 0 and [r["kind"] for r in json.loads(out)] == ["append"]
    code, out, _ = run_cli(capsys, *base, "--match", "crm.s*")
    assert code == 2 and out == ""
    code, out, err = run_cli(capsys, *base, "--match", "sales.*")
    assert code == 2 and out == ""
    assert last_json_line(err)["error"]["type"] == "TableNotFoundError"
    code, _, err = run_cli(capsys, *base, "--table", "db.orders")
    assert code == 2 and "tables takes no --table" in err


def test_tables_of_an_empty_warehouse_lists_nothing_and_a_missing_one_is_input(
    capsys, warehouse, tmp_path
):
    code, out, err = run_cli(capsys, "tables", "--warehouse", warehouse, "--json")
    assert code == 0, err
    assert json.loads(out) == []
    code, out, err = run_cli(capsys, "tables", "--warehouse", str(tmp_path / "missing"))
    assert code == 2 and "does not exist" in err


def test_tables_reports_an_unreadable_table_and_exits_1(capsys, three_tables, orders_table):
    corrupt_manifests(orders_table)
    code, out, err = run_cli(capsys, "tables", "--warehouse", three_tables, "--json")
    assert code == 1
    rows = {r["table"]: r for r in json.loads(out)}
    assert rows["db.orders"]["error"].startswith("CorruptMetadataError: ")
    assert rows["crm.users"]["error"] is None and rows["crm.users"]["snapshot_id"] == 1
    assert last_json_line(err)["error"]["exit_code"] == 1


def _garble(paths: list[str]) -> None:
    for path in paths:
        with open(path, "r+b") as f:
            size = os.path.getsize(path)
            f.truncate(max(1, size // 3))


def _files(root: str, directory: str, prefix: str) -> list[str]:
    found = []
    for parent, _, names in os.walk(f"{root}/{directory}"):
        found += [f"{parent}/{n}" for n in names if n.startswith(prefix)]
    return found


@pytest.mark.parametrize(
    "directory, prefix, command",
    [
        ("snapshot", "snapshot-", ["health"]),
        ("schema", "schema-", ["health"]),
        ("manifest", "manifest-list-", ["remove-orphans", "--dry-run"]),
        ("", "data-", ["compact", "--full"]),
    ],
)
def test_corrupt_files_are_operation_failures(
    capsys, warehouse, orders_table, directory, prefix, command
):
    """A truncated snapshot, schema, manifest list or data file is a CorruptFileError (exit 1),
    neither input (2) nor a bug (70)."""
    _garble(_files(orders_table.table_path, directory, prefix))
    code, out, err = run_cli(
        capsys, *command, "--warehouse", warehouse, "--table", "db.orders", "--json"
    )
    error = last_json_line(err)["error"]
    assert (code, out, error["type"], error["exit_code"]) == (1, "", "CorruptFileError", 1), err
