"""Tables Paimon's Java writers made with options we do not honour: every table-changing
command refuses them, naming the option, and leaves every file of the table as Java left it
(Java 0.9 writes the Iceberg metadata of `metadata.iceberg-compatible` beside the table)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from dagster_paimon.cli import main

pytestmark = pytest.mark.slow

TABLE = "db.t"
OPTIONS = {
    "metadata.iceberg-compatible": "true",
    "metastore.partitioned-table": "true",
    "commit.callbacks": "AuditCallback",
}
COMMANDS = [
    ["compact", "--full"],
    ["rescale", "--bucket-num", "3"],
    ["expire-snapshots", "--retain-min", "1", "--retain-max", "1"],
    ["expire-partitions", "--older-than", "1d"],
    ["compact-manifests", "--full"],
    ["remove-orphans", "--older-than", "1s"],
    ["create-tag", "--name", "ours"],
    ["rollback", "--snapshot", "1"],
    ["maintain"],
]


def _contents(root: Path) -> dict[str, str]:
    """Every file under the table directory with a digest of its bytes."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file()
    }


@pytest.mark.parametrize("key", list(OPTIONS))
def test_java_tables_with_refused_options_are_left_as_java_wrote_them(
    paimon_java, tmp_path, capsys, key
):
    spec = {
        "columns": [["dt", "STRING"], ["id", "BIGINT"], ["v", "STRING"]],
        "primaryKeys": ["dt", "id"],
        "partitionKeys": ["dt"],
        "options": {"bucket": "2", key: OPTIONS[key]},
    }
    steps = [
        [["+I", f"2024-01-0{d}", i, f"c{step}"] for d in (1, 2) for i in range(step, step + 5)]
        for step in range(3)
    ]
    paimon_java.write(str(tmp_path), "db", "t", steps, spec=spec, stream=False)
    root = tmp_path / "db.db" / "t"
    if key == "metadata.iceberg-compatible":
        assert list((root / "metadata").glob("v*.metadata.json")), "Java wrote no Iceberg view"
    before = _contents(root)
    rows = paimon_java.read(str(tmp_path), "db", "t")
    for command in COMMANDS:
        code = main([*command, "--warehouse", str(tmp_path), "--table", TABLE])
        err = capsys.readouterr().err
        assert code == 2, (command, err)
        assert f"'{key}'" in err, (command, err)
    assert main(["health", "--warehouse", str(tmp_path), "--table", TABLE, "--json"]) == 0
    health = json.loads(capsys.readouterr().out)
    assert any(f"'{key}'" in found for found in health["unsupported"])
    assert health["unknown_options"] == []
    assert _contents(root) == before
    assert paimon_java.read(str(tmp_path), "db", "t") == rows
