"""Paimon's Java writer (0.9 and 1.0) goes on after our maintenance: on a table where we
rescaled, rolled back (to a snapshot, to a tag), expired a partition or deleted a tag, Java's
writer restores from what we left, upserts and deletes rows, runs its own full compaction, and
Java and pypaimon read exactly the model. One JVM writes all the tables, one reads them."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import pytest
from pypaimon import CatalogFactory
from pypaimon.schema.schema_change import SchemaChange

from dagster_paimon.kinds import compact_open_table
from dagster_paimon.maintenance.rollback import rollback_to
from dagster_paimon.maintenance.tags import create_tag, delete_tag
from dagster_paimon.paimon_table import PaimonTable
from dagster_paimon.table import TableRef, open_table
from tests.conftest import latest_id
from tests.hooks import expire_partitions, expire_snapshots
from tests.java.test_java_tables import pypaimon_reads_java_manifests
from tests.lsm.compaction.test_rescale import THREE_DAYS, Model, make, three_days
from tests.lsm.kvmodel import read_rows
from tests.maintenance.histories import EXPIRE_ALL_BUT_LAST, later_ms

pytestmark = pytest.mark.slow

EXPIRY = {"partition.expiration-time": "1 d"}


def history(warehouse: str, **options: str) -> tuple[Model, dict[int, dict]]:
    """Two commits, a full compaction, a third commit over three partitions; the model's rows
    after each snapshot."""
    make(warehouse, bucket=2, partitioned=True, **options)
    model, states = Model(warehouse), {}
    for step in ((range(0, 30), "a"), (range(20, 50), "b"), "compact", (range(40, 60), "c")):
        if step == "compact":
            compact_open_table(
                open_table(warehouse, "db.t"), TableRef.of(warehouse, "db.t"), full=True
            )
        else:
            model.write(three_days(*step))
        states[latest_id(open_table(warehouse, "db.t"))] = dict(model.rows)
    return model, states


def rescaled(warehouse: str) -> Model:
    """The whole table rescaled 2 -> 3, the option altered as Java's rescale flow asks."""
    model, _ = history(warehouse)
    PaimonTable.open(warehouse, "db.t").rescale(bucket_num=3)
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.alter_table("db.t", [SchemaChange.set_option("bucket", "3")], False)
    return model


def rolled_back_to_snapshot(warehouse: str) -> Model:
    model, states = history(warehouse)
    rollback_to(open_table(warehouse, "db.t"), snapshot_id=2)
    model.rows = states[2]
    return model


def rolled_back_to_tag(warehouse: str) -> Model:
    """The tag's snapshot expired first: the rollback restores it from the tag."""
    model, states = history(warehouse)
    table = open_table(warehouse, "db.t")
    create_tag(table, "t2", snapshot_id=2)
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    rollback_to(open_table(warehouse, "db.t"), tag="t2")
    model.rows = states[2]
    return model


def partition_expired(warehouse: str) -> Model:
    model, _ = history(warehouse, **EXPIRY)
    result = expire_partitions(open_table(warehouse, "db.t"), now=datetime(2024, 1, 2, 12))
    assert result.expired_partitions == (f"dt={THREE_DAYS[0]}",)
    model.rows = {k: r for k, r in model.rows.items() if k[0] != THREE_DAYS[0]}
    return model


def tag_deleted(warehouse: str) -> Model:
    """The only holder of the first snapshot's files goes: its files are deleted."""
    model, _ = history(warehouse)
    table = open_table(warehouse, "db.t")
    create_tag(table, "t1", snapshot_id=1)
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    assert delete_tag(open_table(warehouse, "db.t"), "t1").deleted_data_files > 0
    return model


OPERATIONS: dict[str, Callable[[str], Model]] = {
    "rescale": rescaled,
    "rollback-snapshot": rolled_back_to_snapshot,
    "rollback-tag": rolled_back_to_tag,
    "expire-partitions": partition_expired,
    "delete-tag": tag_deleted,
}


def java_steps(model: Model) -> list:
    """Upserts of new and existing keys and deletes of existing ones in one commit, then
    Java's full compaction; applied to the model."""
    step = []
    for key in sorted(model.rows)[:4]:
        step.append(["-D", *key, None])
        del model.rows[key]
    for i in range(55, 70):
        dt = THREE_DAYS[i % 3]
        step.append(["+I", dt, i, f"j{i}"])
        model.rows[(dt, i)] = {"dt": dt, "id": i, "v": f"j{i}"}
    return [step, "compact"]


@pytest.mark.parametrize("version", ["paimon_java", "paimon_java_1_0"])
def test_java_writes_and_compacts_after_our_maintenance(request, tmp_path, version):
    java = request.getfixturevalue(version)
    warehouses, models, jobs = {}, {}, []
    for name, operation in OPERATIONS.items():
        warehouse = str(tmp_path / name)
        (tmp_path / name).mkdir()
        warehouses[name], models[name] = warehouse, operation(warehouse)
        jobs.append(
            {
                "warehouse": warehouse,
                "database": "db",
                "table": "t",
                "mode": "batch",
                "steps": java_steps(models[name]),
            }
        )
    for name, lines in zip(OPERATIONS, java.start_writes(jobs)(), strict=True):
        assert lines and "error" not in lines[-1], f"{name}: {lines[-1].get('error', '')[:3000]}"
        assert (
            open_table(warehouses[name], "db.t")
            .snapshot_manager()
            .get_latest_snapshot()
            .commit_kind
            == "COMPACT"
        ), name

    reads = [{"warehouse": warehouses[n], "database": "db", "table": "t"} for n in OPERATIONS]
    for name, got in zip(OPERATIONS, java.start_reads(reads)(), strict=True):
        assert "error" not in got, f"{name}: {got.get('error', '')[:2000]}"
        expected = sorted([r["dt"], r["id"], r["v"]] for r in models[name].rows.values())
        assert sorted(got["rows"]) == expected, name
        with pypaimon_reads_java_manifests():
            rows = read_rows(open_table(warehouses[name], "db.t"))
        assert sorted([r["dt"], r["id"], r["v"]] for r in rows) == expected, name
