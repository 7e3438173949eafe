"""Maintenance jobs run in process against a real table and leave its rows untouched."""

import pyarrow as pa
import pytest
from dagster import DagsterInstance, DefaultScheduleStatus, Definitions

from dagster_paimon.dagster.maintenance import build_maintenance_definitions
from dagster_paimon.dagster.resources import PaimonWarehouse
from dagster_paimon.dagster.specs import PaimonTableSpec
from dagster_paimon.errors import InvalidArgumentError
from dagster_paimon.lsm.model.levels import read_levels
from tests.conftest import write_with_pypaimon
from tests.lsm.kvmodel import read_rows, sorted_rows

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
SPEC = PaimonTableSpec(
    "ops",
    "items",
    SCHEMA,
    ("id",),
    2,
    options={"snapshot.num-retained.min": "2", "snapshot.num-retained.max": "3"},
)


def test_every_maintenance_job_runs_and_records_metrics(warehouse):
    resource = PaimonWarehouse(uri=warehouse)
    table = resource.create_table(SPEC)
    for c in range(6):
        rows = [{"id": i, "v": f"{c}"} for i in range(c * 5, c * 5 + 20)]
        write_with_pypaimon(table, pa.Table.from_pylist(rows, schema=SCHEMA))
    before = sorted_rows(read_rows(table), ("id",))
    defs = build_maintenance_definitions(SPEC)
    assert {s.name for s in defs.schedules} == {
        f"ops_items_{kind}_schedule"
        for kind in (
            "full_compaction",
            "expire_snapshots",
            "expire_changelogs",
            "compact_manifests",
            "remove_orphans",
            "maintain",
        )
    }
    with_resources = Definitions.merge(defs, Definitions(resources={"warehouse": resource}))
    instance = DagsterInstance.ephemeral()
    metrics = {}
    for kind in (
        "full_compaction",
        "compact_manifests",
        "expire_snapshots",
        "expire_changelogs",
        "remove_orphans",
        "maintain",
    ):
        result = with_resources.resolve_job_def(f"ops_items_{kind}").execute_in_process(
            instance=instance
        )
        assert result.success, kind
        outputs = [e for e in result.all_node_events if e.event_type_value == "STEP_OUTPUT"]
        metrics[kind] = {k: v.value for k, v in outputs[0].event_specific_data.metadata.items()}
    assert metrics["full_compaction"]["paimon/rewritten_files"] > 0
    assert metrics["expire_snapshots"]["paimon/expired"] >= 1
    assert metrics["remove_orphans"]["paimon/orphans"] == 0
    # unpartitioned, no tag or consumer options: tag expiry and snapshot expiry run
    assert metrics["maintain"]["paimon/steps_run"] == 2
    assert metrics["maintain"]["paimon/steps_skipped"] == 3
    assert metrics["maintain"]["paimon/snapshot_expiry_expired"] == 0
    assert read_levels(table).health().aggregate()["max_sorted_runs"] == 1
    latest = table.snapshot_manager().get_latest_snapshot().id
    earliest = min(s.id for s in table.snapshot_manager().list_snapshots())
    assert latest - earliest + 1 <= 3
    assert sorted_rows(read_rows(table), ("id",)) == before


def test_schedules_default_status_is_one_status_or_one_per_job():
    running, stopped = DefaultScheduleStatus.RUNNING, DefaultScheduleStatus.STOPPED

    def statuses(**kwargs) -> dict[str, DefaultScheduleStatus]:
        defs = build_maintenance_definitions(SPEC, **kwargs)
        return {s.name.removeprefix("ops_items_"): s.default_status for s in defs.schedules}

    assert set(statuses().values()) == {stopped}
    assert set(statuses(default_status=running).values()) == {running}
    per_job = statuses(default_status={"expire_snapshots": running})
    assert per_job.pop("expire_snapshots_schedule") == running
    assert set(per_job.values()) == {stopped}
    with pytest.raises(InvalidArgumentError, match="expire_snapshot"):
        build_maintenance_definitions(SPEC, default_status={"expire_snapshot": running})
