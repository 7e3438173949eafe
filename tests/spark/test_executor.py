"""Compaction on Spark executors, and ingest racing compaction or another ingest."""

from __future__ import annotations

import os
import random
import threading
import time

import pytest

from dagster_paimon.commit.producers import CompactProducer
from dagster_paimon.kinds import compact_open_table, health_of, plan_compaction
from dagster_paimon.lsm.compaction.executor import LocalExecutor
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.paimon_table import PaimonTable
from dagster_paimon.spark.executor import SparkExecutor
from dagster_paimon.spark.ingest import ingest_dataframe
from dagster_paimon.spark.session import activate
from dagster_paimon.table import TableRef, open_table
from tests.conftest import committed_files, data_files_on_disk, latest_id
from tests.lsm.compaction.test_postpone import Model, batch, make_table, pypaimon_rows
from tests.lsm.kvmodel import apply_dedup, read_rows, sorted_rows
from tests.lsm.tables import KEY, cdc_batch, cdc_table, write_history

pytestmark = pytest.mark.spark

SPARK_CDC = "dt string, id bigint, name string, amount double, op string"


def layout(table) -> list[tuple]:
    """Per bucket: files per level, the shape a compaction leaves behind."""
    return [
        (tuple(b.partition.items()), b.bucket, tuple(sorted((b.levels or {}).items())))
        for b in health_of(read_levels(table)).buckets
    ]


def test_spark_compaction_matches_in_process_compaction(spark, tmp_path):
    tables = []
    for name in ("spark", "local"):
        warehouse = str(tmp_path / name)
        os.makedirs(warehouse)
        table = cdc_table(warehouse)
        model = write_history(table, 5)
        tables.append((warehouse, table))
    (spark_wh, on_spark), (local_wh, in_process) = tables

    report = compact_open_table(
        on_spark, TableRef(spark_wh, "db.cdc"), full=True, executor=SparkExecutor(spark)
    )
    compact_open_table(
        in_process, TableRef(local_wh, "db.cdc"), full=True, executor=LocalExecutor()
    )

    assert report.snapshot_id == 6
    assert on_spark.snapshot_manager().get_latest_snapshot().commit_kind == "COMPACT"
    expected = sorted_rows(model.values(), KEY)
    assert sorted_rows(read_rows(on_spark), KEY) == expected
    assert sorted_rows(read_rows(in_process), KEY) == expected
    assert layout(on_spark) == layout(in_process)


def test_spark_executors_maintain_vectors_and_changelog_as_in_process(spark, tmp_path):
    """Lookups, deletion vectors and the changelog run on executors exactly as locally."""
    options = {"deletion-vectors.enabled": "true", "changelog-producer": "lookup"}
    results = {}
    for name, executor in (("spark", SparkExecutor(spark)), ("local", LocalExecutor())):
        warehouse = str(tmp_path / name)
        os.makedirs(warehouse)
        table = cdc_table(warehouse, **options)
        model = write_history(table, 3)
        compact_open_table(table, TableRef(warehouse, "db.cdc"), full=True, executor=executor)
        write_history(table, 2, seed=11, model=model)
        result = compact_open_table(table, TableRef(warehouse, "db.cdc"), executor=executor)
        snapshot = table.snapshot_manager().get_latest_snapshot()
        assert sorted_rows(read_rows(table), KEY) == sorted_rows(model.values(), KEY)
        health = health_of(read_levels(table)).aggregate()
        results[name] = (
            layout(table),
            health["deleted_rows"],
            snapshot.changelog_record_count,
            sum(len(r.change.changelog) for r in result.results),
        )
    assert results["spark"] == results["local"]
    assert results["spark"][2]  # the minor compaction produced a changelog


def test_a_failing_executor_task_leaves_no_file_behind(spark, warehouse):
    table = cdc_table(warehouse)
    write_history(table, 4)
    victim = read_levels(table).buckets[-1]
    lost = victim.levels.all_files()[0].file_name
    for root, _, names in os.walk(table.table_path):
        if lost in names:
            os.remove(os.path.join(root, lost))
    before = data_files_on_disk(table)

    with pytest.raises(OSError):
        compact_open_table(
            table, TableRef(warehouse, "db.cdc"), full=True, executor=SparkExecutor(spark)
        )

    assert latest_id(table) == 4
    assert data_files_on_disk(table) == before


def gated(gate_dir: str):
    """An Arrow map that signals its task started, then waits until the test opens the gate."""

    def wait(batches):
        open(os.path.join(gate_dir, "started"), "w").close()
        deadline = time.monotonic() + 60
        while not os.path.exists(os.path.join(gate_dir, "open")) and time.monotonic() < deadline:
            time.sleep(0.05)
        yield from batches

    return wait


def ingest_in_background(spark, warehouse, rows, gate_dir) -> tuple[threading.Thread, dict]:
    """Start a direct write whose task blocks until the gate opens; returns thread and outcome.

    The gate sits in the writing stage itself, so the write has already read each bucket's
    sequence numbers (when Spark built its writer) while the test acts.
    """
    df = spark.createDataFrame(rows, SPARK_CDC).coalesce(1)
    df = df.mapInArrow(gated(gate_dir), df.schema)
    outcome: dict = {}

    def run():
        activate(spark)
        try:
            df.write.format("paimon").option("warehouse", warehouse).mode("append").save("db.cdc")
            outcome["snapshot"] = latest_id(table_of(warehouse))
        except Exception as e:
            outcome["error"] = e

    thread = threading.Thread(target=run)
    thread.start()
    started = os.path.join(gate_dir, "started")
    deadline = time.monotonic() + 120
    while not os.path.exists(started) and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert os.path.exists(started), f"the ingest never started its tasks: {outcome}"
    return thread, outcome


def table_of(warehouse):
    return open_table(warehouse, "db.cdc")


def release(gate_dir: str, thread: threading.Thread) -> None:
    open(os.path.join(gate_dir, "open"), "w").close()
    thread.join(timeout=120)


def test_ingest_and_compaction_racing_both_commit_and_lose_no_row(spark, warehouse, tmp_path):
    table = cdc_table(warehouse)
    model = write_history(table, 5)
    rows = cdc_batch(random.Random(21), 50)
    gate = tmp_path / "gate"
    gate.mkdir()

    thread, outcome = ingest_in_background(spark, warehouse, rows, str(gate))
    compaction = compact_open_table(table, TableRef(warehouse, "db.cdc"), full=True)
    release(str(gate), thread)

    assert "error" not in outcome, outcome.get("error")
    assert (compaction.snapshot_id, outcome["snapshot"]) == (6, 7)
    apply_dedup(model, [{**r, "_kind": r["op"]} for r in rows], KEY)
    assert sorted_rows(read_rows(table), KEY) == sorted_rows(model.values(), KEY)

    # The other order: a compaction planned before an ingest commits after it.
    plan = plan_compaction(read_levels(table, with_stats=True), full=True)
    results = LocalExecutor().run(table, TableRef(warehouse, "db.cdc"), plan.tasks)
    more = cdc_batch(random.Random(22), 51)
    ingest_dataframe(spark.createDataFrame(more, SPARK_CDC), warehouse, "db.cdc")
    CompactProducer(table, [r.change for r in results]).commit()
    apply_dedup(model, [{**r, "_kind": r["op"]} for r in more], KEY)
    assert sorted_rows(read_rows(table), KEY) == sorted_rows(model.values(), KEY)
    assert [table.snapshot_manager().get_snapshot_by_id(i).commit_kind for i in (8, 9)] == [
        "APPEND",
        "COMPACT",
    ]


def test_two_ingests_racing_for_a_bucket_both_land_the_last_one_winning(spark, warehouse, tmp_path):
    table = cdc_table(warehouse)
    model = write_history(table, 2)
    gate = tmp_path / "gate"
    gate.mkdir()
    slow_rows = [
        {"dt": "2024-01-01", "id": i, "name": "slow", "amount": 1.0, "op": "+I"} for i in range(30)
    ]
    fast_rows = [{**r, "name": "fast"} for r in slow_rows]

    thread, outcome = ingest_in_background(spark, warehouse, slow_rows, str(gate))
    ingest_dataframe(spark.createDataFrame(fast_rows, SPARK_CDC), warehouse, "db.cdc")
    committed = committed_files(table)
    release(str(gate), thread)

    assert "error" not in outcome, outcome.get("error")
    assert outcome["snapshot"] == latest_id(table) == 4
    apply_dedup(model, [{**r, "_kind": r["op"]} for r in fast_rows + slow_rows], KEY)
    assert sorted_rows(read_rows(table), KEY) == sorted_rows(model.values(), KEY)
    assert committed < committed_files(table), "the fast ingest's files stay"
    assert data_files_on_disk(table) == committed_files(table)


def test_postpone_moves_run_on_spark_executors(spark, warehouse):
    """A postpone table compacts on Spark as locally: moves, then bucket tasks, one commit."""
    make_table(warehouse, **{"postpone.default-bucket-num": "2"})
    model = Model()
    for commit in range(3):
        model.write(warehouse, batch(range(commit * 6, commit * 6 + 14), f"c{commit}"))
    result = PaimonTable.open(warehouse, "db.t").compact(executor=SparkExecutor(spark))
    assert result.metrics()["postponed_files_moved"] == 6
    assert pypaimon_rows(warehouse) == model.rows
    levels = read_levels(open_table(warehouse, "db.t"))
    assert {(b.bucket, b.total_buckets) for b in levels.buckets} == {(0, 2), (1, 2)}
