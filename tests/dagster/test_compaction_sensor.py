"""Compaction asset, health check and sensor against real tables and a real Dagster instance."""

from __future__ import annotations

import pyarrow as pa
import pytest
from dagster import (
    AssetCheckSeverity,
    DagsterInstance,
    DailyPartitionsDefinition,
    build_op_context,
    build_sensor_context,
    define_asset_job,
    materialize,
)
from dagster_pyspark import LazyPySparkResource

from dagster_paimon.dagster.checks import build_lsm_health_check
from dagster_paimon.dagster.compaction import build_compaction_asset
from dagster_paimon.dagster.resources import PaimonWarehouse
from dagster_paimon.dagster.sensors import SensorCursor, build_compaction_sensor
from dagster_paimon.dagster.specs import PaimonTableSpec
from dagster_paimon.kinds import health_of
from dagster_paimon.lsm.model.levels import read_levels
from tests.conftest import write_with_pypaimon
from tests.lsm.kvmodel import read_rows, sorted_rows

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        pa.field("v", pa.string()),
    ]
)
DAYS = DailyPartitionsDefinition(start_date="2024-01-01", end_date="2024-01-05")
SPEC = PaimonTableSpec(
    "shop",
    "events",
    SCHEMA,
    ("dt", "id"),
    1,
    ("dt",),
    {"num-sorted-run.compaction-trigger": "3"},
    partitions_def=DAYS,
)
JOB = define_asset_job("compact_shop_events", selection=[SPEC.compaction_asset_key])


def write_day(table, day: str, commits: int) -> None:
    for c in range(commits):
        rows = [{"dt": day, "id": i, "v": f"{day}-{c}"} for i in range(c, c + 20)]
        write_with_pypaimon(table, pa.Table.from_pylist(rows, schema=SCHEMA))


@pytest.fixture
def warehouse_resource(warehouse) -> PaimonWarehouse:
    return PaimonWarehouse(uri=warehouse)


def resources_for(warehouse: PaimonWarehouse) -> dict:
    """The compaction asset's resources; Spark is lazy and never started by local compaction."""
    return {"warehouse": warehouse, "pyspark": LazyPySparkResource(spark_config={})}


def sensor_tick(sensor, resource, instance, cursor=None):
    context = build_sensor_context(
        instance=instance, cursor=cursor, resources={"warehouse": resource}
    )
    return sensor(context)


def test_sensor_requests_exactly_the_unhealthy_partitions_then_nothing(warehouse_resource):
    table = warehouse_resource.create_table(SPEC)
    write_day(table, "2024-01-01", 5)
    write_day(table, "2024-01-02", 2)
    write_day(table, "2024-01-03", 4)
    sensor = build_compaction_sensor(SPEC, JOB)
    instance = DagsterInstance.ephemeral()

    result = sensor_tick(sensor, warehouse_resource, instance)
    assert sorted(r.partition_key for r in result.run_requests) == ["2024-01-01", "2024-01-03"]

    again = sensor_tick(sensor, warehouse_resource, instance, cursor=result.cursor)
    assert again.run_requests == []

    compaction = build_compaction_asset(SPEC)
    for day in ("2024-01-01", "2024-01-03"):
        outcome = materialize(
            [compaction],
            partition_key=day,
            resources=resources_for(warehouse_resource),
            instance=instance,
            selection=[SPEC.compaction_asset_key],
        )
        assert outcome.success
    health = health_of(read_levels(table))
    assert health.aggregate()["max_sorted_runs"] <= 3
    after = sensor_tick(sensor, warehouse_resource, instance, cursor=again.cursor)
    assert after.run_requests == []


def test_compaction_asset_records_metrics_and_keeps_rows(warehouse_resource):
    table = warehouse_resource.create_table(SPEC)
    write_day(table, "2024-01-02", 4)
    before = sorted_rows(read_rows(table), ("dt", "id"))
    result = materialize(
        [build_compaction_asset(SPEC)],
        partition_key="2024-01-02",
        resources=resources_for(warehouse_resource),
        run_config={"ops": {"shop__events__compaction": {"config": {"full": True}}}},
    )
    assert result.success
    mat = result.asset_materializations_for_node("shop__events__compaction")[0]
    assert mat.metadata["paimon/rewritten_files"].value == 4
    assert mat.metadata["paimon/max_sorted_runs"].value == 1
    assert mat.metadata["paimon/bytes_written"].value > 0
    assert sorted_rows(read_rows(table), ("dt", "id")) == before


def test_health_check_warns_then_fails_with_more_sorted_runs(warehouse_resource):
    from dagster_paimon.dagster.checks import evaluate_health

    table = warehouse_resource.create_table(SPEC)
    write_day(table, "2024-01-01", 2)
    health = health_of(read_levels(table))
    assert evaluate_health(health, trigger=3, stop=6, max_amp=10_000).passed
    write_day(table, "2024-01-01", 2)
    warn = evaluate_health(health_of(read_levels(table)), trigger=3, stop=6, max_amp=10_000)
    assert not warn.passed and warn.severity == AssetCheckSeverity.WARN
    write_day(table, "2024-01-01", 3)
    fail = evaluate_health(health_of(read_levels(table)), trigger=3, stop=6, max_amp=10_000)
    assert not fail.passed and fail.severity == AssetCheckSeverity.ERROR
    amp = evaluate_health(health_of(read_levels(table)), trigger=30, stop=60, max_amp=50)
    assert not amp.passed and "size amplification" in amp.description


def test_health_check_definition_runs_against_the_table(warehouse_resource):
    table = warehouse_resource.create_table(SPEC)
    write_day(table, "2024-01-01", 5)
    check = build_lsm_health_check(SPEC)
    evaluation = check(build_op_context(resources={"warehouse": warehouse_resource}))
    assert not evaluation.passed
    assert evaluation.severity == AssetCheckSeverity.ERROR
    assert "size amplification 400% exceeds 200%" in evaluation.description


def test_corrupt_cursor_starts_fresh():
    assert SensorCursor.parse("not json").requested == {}
    assert SensorCursor.parse('{"requested": {"a": 3}}').requested == {"a": 3}


def test_spec_thresholds_override_the_table_options(warehouse_resource):
    from dataclasses import replace

    table = warehouse_resource.create_table(SPEC)
    write_day(table, "2024-01-01", 3)
    instance = DagsterInstance.ephemeral()
    lenient = build_compaction_sensor(
        replace(SPEC, sensor_sorted_run_trigger=3, sensor_max_size_amplification_percent=10_000),
        JOB,
    )
    assert sensor_tick(lenient, warehouse_resource, instance).run_requests == []
    strict = build_compaction_sensor(replace(SPEC, sensor_sorted_run_trigger=2), JOB)
    requested = sensor_tick(strict, warehouse_resource, instance).run_requests
    assert [r.partition_key for r in requested] == ["2024-01-01"]


def test_sensor_skips_until_the_warehouse_and_table_exist(tmp_path):
    missing = PaimonWarehouse(uri=str(tmp_path / "not-yet"))
    instance = DagsterInstance.ephemeral()
    result = sensor_tick(build_compaction_sensor(SPEC, JOB), missing, instance)
    assert "not there yet" in str(result)


def test_deletion_vector_tables_are_compacted_as_soon_as_level0_has_a_file(warehouse_resource):
    """Readers skip level 0 of a deletion-vector table: one new file already needs compacting."""
    spec = PaimonTableSpec(
        "shop",
        "dv_events",
        SCHEMA,
        ("dt", "id"),
        1,
        ("dt",),
        {"deletion-vectors.enabled": "true"},
        partitions_def=DAYS,
    )
    table = warehouse_resource.create_table(spec)
    write_day(table, "2024-01-02", 1)
    assert read_rows(table) == []
    job = define_asset_job("compact_dv_events", selection=[spec.compaction_asset_key])
    instance = DagsterInstance.ephemeral()
    result = sensor_tick(build_compaction_sensor(spec, job), warehouse_resource, instance)
    assert [r.partition_key for r in result.run_requests] == ["2024-01-02"]

    outcome = materialize(
        [build_compaction_asset(spec)],
        partition_key="2024-01-02",
        resources=resources_for(warehouse_resource),
        instance=instance,
    )
    assert outcome.success
    assert len(read_rows(table)) == 20


def test_sensor_requests_no_compaction_dagster_paimon_refuses(warehouse_resource):
    refused = PaimonTableSpec(
        "shop",
        "iceberg_events",
        SCHEMA,
        ("dt", "id"),
        1,
        ("dt",),
        {"num-sorted-run.compaction-trigger": "3", "metadata.iceberg.storage": "table-location"},
        partitions_def=DAYS,
    )
    table = warehouse_resource.create_table(refused)
    write_day(table, "2024-01-01", 5)
    job = define_asset_job("compact_iceberg_events", selection=[refused.compaction_asset_key])
    result = sensor_tick(
        build_compaction_sensor(refused, job), warehouse_resource, DagsterInstance.ephemeral()
    )
    assert not getattr(result, "run_requests", None)
    reason = str(getattr(result, "skip_message", None) or result)
    assert "'metadata.iceberg.storage'='table-location'" in reason


def test_health_check_reports_refused_modes_and_unknown_options(warehouse_resource):
    spec = PaimonTableSpec(
        "shop",
        "callbacks",
        SCHEMA,
        ("dt", "id"),
        1,
        ("dt",),
        {"commit.callbacks": "com.example.Audit", "x.newer-paimon-option": "1"},
    )
    table = warehouse_resource.create_table(spec)
    write_day(table, "2024-01-01", 1)
    check = build_lsm_health_check(spec)
    result = check(build_op_context(resources={"warehouse": warehouse_resource}))
    assert not result.passed
    assert result.severity == AssetCheckSeverity.WARN
    assert "'commit.callbacks'='com.example.Audit'" in result.description
    assert "x.newer-paimon-option" in result.description
    assert result.metadata["paimon/unknown_options"].value == ["x.newer-paimon-option"]
