"""The whole operator flow through the CLI on an S3 warehouse (moto), read back by pypaimon."""

from __future__ import annotations

import json
import time

import pyarrow.parquet as pq
import pytest

from dagster_paimon.cli import EXIT_OK, main
from dagster_paimon.table import create_table, open_table
from tests.conftest import orders_batch, orders_spec
from tests.lsm.kvmodel import read_rows, sorted_rows

pytestmark = [pytest.mark.spark, pytest.mark.s3, pytest.mark.slow]

KEY = ("dt", "id")
COMMITS = 4


def run(capsys, command: str, uri: str, *flags: str) -> dict:
    """One CLI command against the S3 table; it must succeed and print JSON."""
    code = main([command, "--warehouse", uri, "--table", "db.orders", "--json", *flags])
    out, err = capsys.readouterr()
    assert code == EXIT_OK, err
    return json.loads(out)


def test_ingest_compact_expire_manifests_orphans_on_s3(
    spark, s3_server, monkeypatch, tmp_path, capsys
):
    bucket = s3_server.create_bucket()
    uri = f"s3://{bucket}/warehouse"
    for name, value in s3_server.paimon_env().items():
        monkeypatch.setenv(name, value)
    options = s3_server.catalog_options()
    create_table(uri, orders_spec(), options)

    model: dict[tuple, dict] = {}
    for commit in range(COMMITS):
        batch = orders_batch(commit)
        source = tmp_path / f"batch-{commit}.parquet"
        pq.write_table(batch, source)
        ingested = run(capsys, "ingest", uri, "--source", str(source), "--spark-master", "local[2]")
        assert ingested["snapshot_id"] == commit + 1 and ingested["rows"] == batch.num_rows
        model.update({(r["dt"], r["id"]): r for r in batch.to_pylist()})
    table = open_table(uri, "db.orders", options)
    expected = sorted_rows(model.values(), KEY)
    assert sorted_rows(read_rows(table), KEY) == expected

    health = run(capsys, "health", uri)
    assert health["totals"]["max_sorted_runs"] == COMMITS

    compacted = run(capsys, "compact", uri, "--full", "--executor", "spark")
    assert compacted["snapshot_id"] == COMMITS + 1
    assert run(capsys, "health", uri)["totals"]["max_sorted_runs"] == 1
    assert sorted_rows(read_rows(table), KEY) == expected

    expired = run(capsys, "expire-snapshots", uri, "--retain-max", "1", "--retain-min", "1")
    assert expired["expired"] == list(range(1, COMMITS + 1)) and expired["deleted_files"] > 0
    snapshots = [k for k in s3_server.keys(bucket) if "/snapshot/snapshot-" in k]
    assert snapshots == [f"warehouse/db.db/orders/snapshot/snapshot-{COMMITS + 1}"]
    assert sorted_rows(read_rows(table), KEY) == expected

    manifests = run(capsys, "compact-manifests", uri, "--full")
    assert manifests["snapshot_id"] == COMMITS + 2
    assert manifests["manifests_after"] < manifests["manifests_before"]
    assert sorted_rows(read_rows(table), KEY) == expected

    stray = f"{table.table_path}/dt=2024-01-01/bucket-0/data-stray.parquet"
    table.file_io.write_file(stray, "written by a crashed job", overwrite=False)
    time.sleep(1.5)
    orphans = run(capsys, "remove-orphans", uri, "--older-than", "1s")
    assert orphans["orphans"] == [stray] and orphans["deleted"] == 1
    assert not table.file_io.exists(stray)
    assert sorted_rows(read_rows(open_table(uri, "db.orders", options)), KEY) == expected
