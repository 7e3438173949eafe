"""Every table-changing command refuses a table whose options it does not honour, naming the
option, and leaves every byte of the table as it was; the read-only commands report it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pypaimon.common.json_util import JSON
from pypaimon.schema.schema_manager import SchemaManager

from dagster_paimon.cli import main
from dagster_paimon.maintenance.tags import create_tag
from dagster_paimon.table import create_table, open_table
from tests.conftest import orders_batch, orders_spec, write_with_pypaimon
from tests.tablefiles import table_root

IDENTIFIER = "db.orders"

# the options issue "option census" names, as Java's writers (or a user's ALTER TABLE) set them
REFUSED = {
    "metadata.iceberg.storage": "table-location",
    "metadata.iceberg-compatible": "true",
    "metastore.partitioned-table": "true",
    "metastore.tag-to-partition": "dt",
    "commit.callbacks": "com.example.AuditCallback",
    "tag.callbacks": "com.example.TagAudit",
    "type": "format-table",
}

CHANGING = {
    "compact": ["compact"],
    "compact-full": ["compact", "--full"],
    "rescale": ["rescale", "--bucket-num", "4"],
    "ingest-append": ["ingest", "--mode", "append"],
    "ingest-overwrite": ["ingest", "--mode", "overwrite"],
    "expire-snapshots": ["expire-snapshots", "--retain-min", "1", "--retain-max", "1"],
    "expire-changelogs": ["expire-changelogs", "--retain-min", "1", "--retain-max", "1"],
    "expire-partitions": ["expire-partitions", "--older-than", "1d"],
    "compact-manifests": ["compact-manifests", "--full"],
    "remove-orphans": ["remove-orphans", "--older-than", "1s"],
    "create-tag": ["create-tag", "--name", "t2"],
    "delete-tag": ["delete-tag", "--name", "t1"],
    "expire-tags": ["expire-tags"],
    "auto-tag": ["auto-tag"],
    "rollback": ["rollback", "--snapshot", "2"],
    "maintain": ["maintain"],
    "expire-consumers": ["expire-consumers", "--older-than", "1s"],
    "clear-consumers": ["clear-consumers"],
    "reset-consumer": ["reset-consumer", "--consumer", "c1", "--next-snapshot", "3"],
}


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """Four pypaimon commits over two partitions, a tag, a consumer and an old orphan file:
    something for every command to do."""
    warehouse = tmp_path_factory.mktemp("template")
    table = create_table(str(warehouse), orders_spec())
    for commit in range(4):
        write_with_pypaimon(table, orders_batch(commit))
    create_tag(table, "t1", snapshot_id=1)
    root = table_root(table)
    (root / "consumer").mkdir()
    (root / "consumer" / "consumer-c1").write_text('{\n  "nextSnapshot" : 2\n}')
    orphan = root / "dt=2024-01-01" / "bucket-0" / "data-orphan-0.parquet"
    orphan.write_bytes(b"orphan")
    os.utime(orphan, (0, 0))
    pq.write_table(orders_batch(7), warehouse / "source.parquet")
    return warehouse


def _with_option(template: Path, tmp_path: Path, key: str, value: str) -> str:
    """A copy of the template whose newest schema carries `key`, as an ALTER TABLE writes it."""
    warehouse = tmp_path / "warehouse"
    shutil.copytree(template, warehouse)
    table = open_table(str(warehouse), IDENTIFIER)
    manager = SchemaManager(table.file_io, str(table.table_path))
    latest = manager.latest()
    evolved = replace(latest, id=latest.id + 1, options={**latest.options, key: value})
    path = manager._to_schema_path(evolved.id)
    assert manager.file_io.try_to_write_atomic(path, JSON.to_json(evolved, indent=2))
    return str(warehouse)


def _contents(warehouse: str) -> dict[str, str]:
    """Every file of the table directory with a digest of its bytes."""
    root = Path(warehouse) / "db.db" / "orders"
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file()
    }


@pytest.mark.parametrize("command", list(CHANGING))
@pytest.mark.parametrize("key", list(REFUSED))
def test_every_changing_command_refuses_and_changes_nothing(
    template, tmp_path, capsys, key, command
):
    warehouse = _with_option(template, tmp_path, key, REFUSED[key])
    before = _contents(warehouse)
    args = CHANGING[command]
    if args[0] == "ingest":
        args = [*args, "--source", str(Path(warehouse) / "source.parquet")]
    code = main([*args, "--warehouse", warehouse, "--table", IDENTIFIER])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"'{key}'" in err
    assert _contents(warehouse) == before


@pytest.mark.parametrize("key", list(REFUSED))
def test_read_only_commands_run_and_report_the_refusal(template, tmp_path, capsys, key):
    warehouse = _with_option(template, tmp_path, key, REFUSED[key])
    before = _contents(warehouse)
    for command in (["health"], ["doctor"], ["doctor", "--rollback-unreadable"]):
        code = main([*command, "--warehouse", warehouse, "--table", IDENTIFIER, "--json"])
        out = json.loads(capsys.readouterr().out)
        assert code == 0
        assert any(f"'{key}'" in found for found in out["unsupported"])
    assert main(["tables", "--warehouse", warehouse, "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    if key == "type":
        assert row["skipped"].startswith("table option 'type'='format-table'")
    else:
        assert any(f"'{key}'" in found for found in row["unsupported"])
    assert _contents(warehouse) == before


def test_the_refusal_says_what_goes_wrong_and_what_to_do(template, tmp_path, capsys):
    warehouse = _with_option(template, tmp_path, "metadata.iceberg.storage", "hadoop-catalog")
    assert main(["expire-snapshots", "--warehouse", warehouse, "--table", IDENTIFIER]) == 2
    err = capsys.readouterr().err
    assert "Iceberg" in err and "delete data files" in err and "Java" in err


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("type", "TABLE"),
        ("metadata.iceberg.storage", "disabled"),
        ("metadata.iceberg-compatible", "false"),
        ("metastore.partitioned-table", "false"),
        ("commit.callbacks", ""),
    ],
)
def test_default_values_are_not_refused(template, tmp_path, capsys, key, value):
    warehouse = _with_option(template, tmp_path, key, value)
    assert (
        main(["compact", "--full", "--warehouse", warehouse, "--table", IDENTIFIER, "--json"]) == 0
    )
    assert json.loads(capsys.readouterr().out)["snapshot_id"] == 5


@pytest.mark.parametrize("metastore", ["hive", "jdbc", "rest", "HIVE"])
def test_a_catalog_other_than_a_folder_is_refused_before_it_is_opened(
    template, tmp_path, capsys, metastore
):
    warehouse = tmp_path / "warehouse"
    shutil.copytree(template, warehouse)
    before = _contents(str(warehouse))
    for command in (["health"], ["compact"], ["tables"]):
        table = [] if command == ["tables"] else ["--table", IDENTIFIER]
        flags = ["--catalog-option", f"metastore={metastore}"]
        code = main([*command, "--warehouse", str(warehouse), *table, *flags])
        err = capsys.readouterr().err
        assert code == 2
        assert f"'metastore'='{metastore.lower()}'" in err
    assert _contents(str(warehouse)) == before


def test_filesystem_is_the_catalog_we_open(template, tmp_path, capsys):
    warehouse = tmp_path / "warehouse"
    shutil.copytree(template, warehouse)
    flags = ["--catalog-option", "metastore=filesystem"]
    code = main(["health", "--warehouse", str(warehouse), "--table", IDENTIFIER, *flags])
    assert code == 0


@pytest.mark.parametrize(
    "options",
    [["lock.enabled=true"], ["lock.type=jdbc"], ["lock.type=hive", "lock.enabled=TRUE"]],
)
def test_a_catalog_lock_is_refused(template, tmp_path, capsys, options):
    warehouse = tmp_path / "warehouse"
    shutil.copytree(template, warehouse)
    flags = [f for option in options for f in ("--catalog-option", option)]
    code = main(["compact", "--warehouse", str(warehouse), "--table", IDENTIFIER, *flags])
    assert code == 2
    assert "catalog lock" in capsys.readouterr().err


def test_a_lock_switched_off_is_no_lock(template, tmp_path):
    warehouse = tmp_path / "warehouse"
    shutil.copytree(template, warehouse)
    flags = ["--catalog-option", "lock.type=jdbc", "--catalog-option", "lock.enabled=false"]
    assert main(["health", "--warehouse", str(warehouse), "--table", IDENTIFIER, *flags]) == 0
