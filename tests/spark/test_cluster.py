"""Ingest and compaction driven from other processes: on a standalone cluster (executors in
separate JVMs on two workers) and through Spark Connect; pypaimon reads the model back."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pypaimon.table.file_store_table import FileStoreTable

from dagster_paimon.kinds import health_of
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.options import DYNAMIC_BUCKET
from dagster_paimon.table import create_table
from tests.conftest import orders_batch, orders_spec, write_with_pypaimon
from tests.lsm.kvmodel import read_rows, sorted_rows
from tests.spark.cluster import run_cli
from tests.spark.test_ingest import ORDER_KEY, changes, last_wins, with_kinds

pytestmark = [pytest.mark.spark, pytest.mark.slow]

BASE_COMMITS = 2


@dataclass(frozen=True)
class Scenario:
    """A table after two pypaimon commits, the CLI commands to run on it and the model after."""

    table: FileStoreTable
    commands: tuple[list[str], list[str]]
    expected: list[dict]

    def check(self, ingested: dict, compacted: dict) -> None:
        """One APPEND then one COMPACT snapshot; each reads as the model; one run per bucket."""
        ids = (ingested["snapshot_id"], compacted["snapshot_id"])
        assert ids == (BASE_COMMITS + 1, BASE_COMMITS + 2)
        assert len(compacted["units"]) > 1
        for snapshot_id in ids:
            assert sorted_rows(read_rows(self.table, snapshot_id), ORDER_KEY) == self.expected
        assert health_of(read_levels(self.table)).to_dict()["totals"]["max_sorted_runs"] == 1


def scenario(
    uri: str, catalog_options: dict[str, str], spark: tuple[str, ...], tmp: Path, *, bucket: int
) -> Scenario:
    """db.orders with two pypaimon commits; a CLI ingest of upserts and deletes, then a full
    compaction on Spark executors."""
    table = create_table(uri, orders_spec(bucket=bucket), catalog_options)
    model: dict = {}
    for commit in range(BASE_COMMITS):
        batch = orders_batch(commit)
        write_with_pypaimon(table, batch)
        model.update({(r["dt"], r["id"]): r for r in batch.to_pylist()})
    rows = changes(seed=5)
    tmp.mkdir(parents=True, exist_ok=True)
    source = tmp / "changes.parquet"
    pq.write_table(with_kinds(rows), source)
    target = ["--warehouse", uri, "--table", "db.orders", *spark]
    commands = (
        ["ingest", *target, "--source", str(source)],
        ["compact", *target, "--full", "--executor", "spark"],
    )
    return Scenario(table, commands, sorted_rows(last_wins(rows, model).values(), ORDER_KEY))


@pytest.mark.s3
def test_ingest_and_compaction_on_a_standalone_cluster(
    spark_cluster, warehouse, s3_warehouse, s3_server, tmp_path
):
    """A local and an S3 warehouse, from one driver process with executors on both workers."""
    before = spark_cluster.app_dirs()
    spark = ("--spark-master", spark_cluster.master)
    local = scenario(warehouse, {}, spark, tmp_path / "local", bucket=3)
    s3 = scenario(*s3_warehouse, spark, tmp_path / "s3", bucket=3)

    results = run_cli(*local.commands, *s3.commands, env=s3_server.paimon_env())

    local.check(*results[:2])
    s3.check(*results[2:])
    # The driver ran an executor JVM on each worker.
    assert [len(a - b) for a, b in zip(spark_cluster.app_dirs(), before, strict=True)] == [1, 1]


@pytest.mark.s3
def test_ingest_and_compaction_through_spark_connect(
    spark_connect, spark_connect_event_log, s3_server, tmp_path
):
    """A dynamic-bucket table on S3: its assigners need Spark's parallelism, read without RDDs.

    The CLI's secret key reaches the server's workers, and never its event log: Connect logs
    each plan it runs with the options it was given, unredacted.
    """
    user = s3_server.new_user("connect")
    uri = f"s3://{user.create_bucket()}/warehouse"
    dynamic = scenario(
        uri,
        user.catalog_options(),
        ("--spark-remote", spark_connect),
        tmp_path,
        bucket=DYNAMIC_BUCKET,
    )
    dynamic.check(*run_cli(*dynamic.commands, env=user.paimon_env()))
    logged = "".join(p.read_text(errors="replace") for p in spark_connect_event_log.iterdir())
    assert "db.orders" in logged, "the server logged the ingest"
    assert user.secret_access_key not in logged
