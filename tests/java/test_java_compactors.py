"""A Paimon Java writer that compacts its own table (not write-only) beside our compaction: its
commit fails on the files ours replaced, and our health report (library, CLI JSON and text, the
Dagster check) names its commit user and the fix; a write-only table reports nothing."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from dagster import AssetCheckSeverity
from pypaimon.schema.schema_change import SchemaChange

from dagster_paimon.commit.users import is_ours
from dagster_paimon.dagster.checks import evaluate_health
from dagster_paimon.kinds import health_of
from dagster_paimon.lsm.model.compactors import RECENT_SNAPSHOTS, conflicting_compactors
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.paimon_table import PaimonTable
from dagster_paimon.snapshot.resolve import COMPACT
from dagster_paimon.table import open_catalog
from tests.java.test_java_tables import Model, spec
from tests.maintenance.appends import append_commits, append_table
from tests.test_cli import run_cli

pytestmark = pytest.mark.slow

VERSIONS = ("paimon_java", "paimon_java_1_0")
# Java's writer compacts a bucket once it holds two sorted runs
SELF_COMPACTING = {"num-sorted-run.compaction-trigger": "2"}


def java_compact_snapshots(warehouse: str) -> list:
    """Every COMPACT snapshot a commit user not ours wrote, newest first."""
    manager = PaimonTable.open(warehouse, "db.t").paimon.snapshot_manager()
    latest = manager.get_latest_snapshot().id
    snapshots = [manager.get_snapshot_by_id(i) for i in range(latest, 0, -1)]
    return [s for s in snapshots if s.commit_kind == COMPACT and not is_ours(s.commit_user)]


def wait_for(path: Path, seconds: float = 120) -> None:
    """Until `path` exists (Java's writer reached its pause)."""
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


@pytest.mark.parametrize("version", VERSIONS)
def test_a_java_writer_compacting_beside_us_fails_and_is_reported_with_the_fix(
    request, capsys, warehouse, tmp_path, version
):
    java = request.getfixturevalue(version)
    model = Model()
    steps = [model.commit(c, range(c * 5, c * 5 + 20)) for c in range(3)]
    steps += ["compact", model.commit(3, range(0, 10)), model.commit(4, range(5, 15))]
    pause = tmp_path / "pause"
    pause.mkdir()
    job = {
        "warehouse": warehouse,
        "database": "db",
        "table": "t",
        "mode": "stream",
        "spec": spec(**SELF_COMPACTING),
        "steps": [*steps, {"await": str(pause)}, model.commit(5, range(0, 5)), "compact"],
    }
    waiting = java.start_writes([job])
    wait_for(pause / "ready")
    try:
        ours = PaimonTable.open(warehouse, "db.t").compact(full=True)
    finally:
        (pause / "go").touch()
    (lines,) = waiting()
    assert ours.snapshot_id is not None
    # the writer's own compaction deletes files ours already replaced: Paimon gives up
    assert "File deletion conflicts detected" in lines[-1]["error"]
    java_user = lines[0]["commitUser"]
    # a restarted job (a new commit user) writes and compacts again
    restarted = java.write(warehouse, "db", "t", [model.commit(6, range(0, 30)), "compact"])
    restarted_user = restarted[0]["commitUser"]

    report = PaimonTable.open(warehouse, "db.t").health()
    found = report.conflicting_compactors
    theirs = java_compact_snapshots(warehouse)
    assert found is not None
    assert found.commit_users[0] == restarted_user
    assert set(found.commit_users) == {java_user, restarted_user}
    assert found.latest_snapshot_id == theirs[0].id
    assert found.compact_snapshots == len(theirs)
    assert found.scanned_snapshots == min(report.snapshot_id, RECENT_SNAPSHOTS)
    assert "File deletion conflicts detected" in found.cost
    assert "'write-only'='true'" in found.fix

    args = ("health", "--warehouse", warehouse, "--table", "db.t")
    code, out, err = run_cli(capsys, *args, "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert payload["conflicting_compactors"] == found.to_dict()
    assert {"table", "kind", "snapshot_id", "buckets", "totals", "unsupported"} < set(payload)
    code, out, _ = run_cli(capsys, *args)
    assert code == 0 and restarted_user in out and "'write-only'='true'" in out

    table = PaimonTable.open(warehouse, "db.t").paimon
    levels = read_levels(table)
    health = health_of(levels, conflicting_compactors(table, levels.snapshot_id))
    check = evaluate_health(health, trigger=100, stop=200, max_amp=1_000_000)
    assert not check.passed and check.severity == AssetCheckSeverity.WARN
    assert restarted_user in (check.description or "")
    assert check.metadata["paimon/conflicting_compactors"].value == found.to_dict()


@pytest.mark.parametrize("version", VERSIONS)
def test_a_write_only_table_reports_no_compactor_though_a_java_job_compacts_it(
    request, capsys, warehouse, version
):
    java = request.getfixturevalue(version)
    model = Model()
    steps = [model.commit(c, range(c * 5, c * 5 + 20)) for c in range(3)]
    write_only = spec(**SELF_COMPACTING, **{"write-only": "true"})
    java.write(warehouse, "db", "t", [*steps, "compact"], spec=write_only)
    PaimonTable.open(warehouse, "db.t").compact(full=True)

    assert java_compact_snapshots(warehouse)  # Paimon's dedicated compaction job, say
    assert PaimonTable.open(warehouse, "db.t").health().conflicting_compactors is None
    code, out, _ = run_cli(capsys, "health", "--warehouse", warehouse, "--table", "db.t", "--json")
    assert code == 0 and json.loads(out)["conflicting_compactors"] is None


@pytest.mark.parametrize("version", VERSIONS)
def test_an_append_table_java_compacts_reports_its_compactor_unless_write_only(
    request, warehouse, version
):
    java = request.getfixturevalue(version)
    table = append_table(warehouse, "unaware")
    append_commits(table, 50)  # one task of Java 0.9's and 1.0's coordinator per day
    done = java.append_compact(warehouse, "db", "events", full=True)
    compacted = table.snapshot_manager().get_snapshot_by_id(done["snapshot"])
    assert compacted.commit_kind == COMPACT

    report = PaimonTable.open(warehouse, "db.events").health()
    assert report.kind == "append"
    found = report.conflicting_compactors
    assert found is not None and found.commit_users == (compacted.commit_user,)
    assert found.latest_snapshot_id == compacted.id and found.compact_snapshots == 1

    open_catalog(warehouse).alter_table(
        "db.events", [SchemaChange.set_option("write-only", "true")], False
    )
    assert PaimonTable.open(warehouse, "db.events").health().conflicting_compactors is None
