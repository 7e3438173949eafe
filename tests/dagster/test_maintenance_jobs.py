"""Maintenance jobs run in process against a real table and leave its rows untouched."""

import pyarrow as pa
import pytest
from dagster import DagsterInstance, DefaultScheduleStatus, Definitions
from dagster_pyspark import LazyPySparkResource

from dagster_paimon.dagster.maintenance import build_maintenance_definitions
from dagster_paimon.dagster.resources import PaimonWarehouse
from dagster_paimon.dagster.specs import PaimonTableSpec
from dagster_paimon.errors import InvalidArgumentError, InvalidOptionError
from dagster_paimon.kinds import health_of
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.snapshot.entries import live_entries
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


def with_warehouse(defs: Definitions, resource: PaimonWarehouse) -> Definitions:
    """The definitions with the warehouse and a Spark resource started only if a run asks."""
    spark = LazyPySparkResource(spark_config={})
    return Definitions.merge(defs, Definitions(resources={"warehouse": resource, "pyspark": spark}))


def history(resource: PaimonWarehouse, commits: int = 6):
    """SPEC's table after `commits` pypaimon commits of overlapping keys."""
    table = resource.create_table(SPEC)
    for c in range(commits):
        rows = [{"id": i, "v": f"{c}"} for i in range(c * 5, c * 5 + 20)]
        write_with_pypaimon(table, pa.Table.from_pylist(rows, schema=SCHEMA))
    return table


def run(defs: Definitions, kind: str, config: dict | None = None):
    """One job of ops.items in process, its op configured with `config`; failures returned."""
    run_config = {"ops": {f"ops_items_{kind}_op": {"config": config}}} if config else None
    return defs.resolve_job_def(f"ops_items_{kind}").execute_in_process(
        run_config=run_config, instance=DagsterInstance.ephemeral(), raise_on_error=False
    )


def output_metadata(result) -> dict:
    """The metadata the job's one op recorded on its output."""
    outputs = [e for e in result.all_node_events if e.event_type_value == "STEP_OUTPUT"]
    return {k: v.value for k, v in outputs[0].event_specific_data.metadata.items()}


def failure(result) -> str:
    """The error a failed run's op raised: its qualified class and message."""
    (step,) = [e for e in result.all_node_events if e.event_type_value == "STEP_FAILURE"]
    error = step.event_specific_data.error
    while error.cause is not None and error.cls_name.startswith("Dagster"):
        error = error.cause
    return error.message


def state(table) -> tuple:
    """What a refused operation must leave as it was: snapshots, tags, rows."""
    fresh = table.copy({})
    ids = [s.id for s in fresh.snapshot_manager().list_snapshots()]
    return ids, sorted(fresh.tag_manager().list_tags()), sorted_rows(read_rows(fresh), ("id",))


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
    with_resources = with_warehouse(defs, resource)
    jobs = {j.name for j in with_resources.resolve_all_job_defs()}
    assert {"ops_items_rollback", "ops_items_rescale"} <= jobs, "launched, not scheduled"
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
    assert health_of(read_levels(table)).aggregate()["max_sorted_runs"] == 1
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


def test_maintain_options_override_the_tables_for_every_run(warehouse):
    resource = PaimonWarehouse(uri=warehouse)
    table = history(resource, 3)
    options = {"consumer.expiration-time": "1 d", "snapshot.num-retained.max": "2"}
    defs = with_warehouse(build_maintenance_definitions(SPEC, maintain_options=options), resource)
    result = run(defs, "maintain")
    assert result.success
    metrics = output_metadata(result)
    assert metrics["paimon/steps_run"] == 3  # consumer expiry too
    assert metrics["paimon/snapshot_expiry_expired"] == 1  # max 2 beat the table's 3
    assert metrics["paimon/result"]["consumer_expiry"]["expiration_ms"] == 86_400_000
    assert [s.id for s in table.snapshot_manager().list_snapshots()] == [2, 3]
    assert resource.open_table(SPEC.identifier).table_schema.options == SPEC.options | {
        "bucket": "2"
    }


@pytest.mark.parametrize(
    ("options", "error", "named"),
    [
        ({"snapshot.num-retained.mx": "1"}, InvalidOptionError, "'snapshot.num-retained.mx'"),
        ({"consumer.expiration-time": "a day"}, InvalidOptionError, "consumer.expiration-time"),
        # the spec's own snapshot.num-retained.max is 3
        ({"snapshot.num-retained.min": "4"}, InvalidArgumentError, "retain-max (3)"),
    ],
)
def test_a_bad_maintain_option_fails_the_definitions(options, error, named):
    with pytest.raises(error, match=r"maintain options of ops\.items") as caught:
        build_maintenance_definitions(SPEC, maintain_options=options)
    assert named in str(caught.value)


def test_rollback_job(warehouse):
    resource = PaimonWarehouse(uri=warehouse)
    table = history(resource)
    at_three = sorted_rows(read_rows(table.copy({"scan.snapshot-id": "3"})), ("id",))
    defs = with_warehouse(build_maintenance_definitions(SPEC), resource)
    before = state(table)
    for bad, message in [
        ({"snapshot_id": 3, "tag": "t"}, "InvalidArgumentError: "),
        ({"timestamp": "yesterday"}, "InvalidArgumentError: timestamp 'yesterday'"),
        ({"dry_run": True}, "InvalidArgumentError: "),
        ({"snapshot_id": 42}, "SnapshotNotFoundError: "),
    ]:
        result = run(defs, "rollback", bad)
        assert not result.success and failure(result).startswith(
            f"dagster_paimon.errors.{message}"
        ), failure(result)
        assert state(table) == before
    dry = run(defs, "rollback", {"snapshot_id": 3, "dry_run": True})
    assert dry.success and state(table) == before
    result = run(defs, "rollback", {"snapshot_id": 3})
    assert result.success
    metadata = output_metadata(result)
    assert sorted(metadata["paimon/result"]["removed_snapshots"]) == [4, 5, 6]
    ids, _, rows = state(table)
    assert ids == [1, 2, 3] and rows == at_three


def test_rescale_job(warehouse):
    resource = PaimonWarehouse(uri=warehouse)
    table = history(resource)
    defs = with_warehouse(build_maintenance_definitions(SPEC), resource)
    before = state(table)
    for bad, message in [
        ({"bucket_num": 0}, "InvalidArgumentError: bucket_num must be an integer >= 1, got 0"),
        ({"bucket_num": 4, "partitions": [{"dt": "x"}]}, "InvalidArgumentError: ['dt'] are not"),
        ({"bucket_num": 4, "partitions": []}, "InvalidArgumentError: partitions is empty"),
    ]:
        result = run(defs, "rescale", bad)
        assert not result.success and failure(result).startswith(
            f"dagster_paimon.errors.{message}"
        ), failure(result)
        assert state(table) == before
    result = run(defs, "rescale", {"bucket_num": 4})
    assert result.success
    assert output_metadata(result)["paimon/result"]["bucket_num"] == 4
    fresh = table.copy({})
    latest = fresh.snapshot_manager().get_latest_snapshot()
    assert {e.total_buckets for e in live_entries(fresh, latest)} == {4}
    assert state(table)[2] == before[2], "the rows are unchanged"


@pytest.mark.spark
def test_rescale_job_on_spark(spark, warehouse):
    """executor: spark rewrites on the job's PySpark resource (the suite's session)."""
    resource = PaimonWarehouse(uri=warehouse)
    table = history(resource)
    before = state(table)
    defs = with_warehouse(build_maintenance_definitions(SPEC), resource)
    result = run(defs, "rescale", {"bucket_num": 3, "executor": "spark"})
    assert result.success
    fresh = table.copy({})
    latest = fresh.snapshot_manager().get_latest_snapshot()
    assert {e.total_buckets for e in live_entries(fresh, latest)} == {3}
    assert state(table)[2] == before[2]
