"""One tick of the warehouse component's sensor over many tables, local and on S3 (moto).

Run: uv run python bench/warehouse_sensor.py [--tables 200] [--s3]

Builds N partitioned primary-key tables (two partitions, a few level-0 files each, written by
pypaimon; for S3 built locally and uploaded as is: Paimon metadata names files relative to the
table), discovers them as the component's refresh does, builds the component's one sensor
from that state with the same builders, then times sensor ticks: each reads every table's
metadata, records one observation per table and requests compaction where due. The first tick
opens every table and reads every manifest; later ticks re-read only tables that committed
since, so a commit to a few tables is made before the last tick to show that cost too.
Targets: one tick < 10 s for 200 local tables, < 30 s on S3.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import dagster as dg
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dagster_paimon.dagster.component import adopted_spec
from dagster_paimon.dagster.resources import PaimonWarehouse
from dagster_paimon.dagster.sensors import build_warehouse_sensor
from dagster_paimon.discovery import discover_tables
from dagster_paimon.table import TableSpec, create_table
from tests.conftest import write_with_pypaimon
from tests.s3server import S3Server, moto_server

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        pa.field("v", pa.string()),
    ]
)


def write(warehouse: str, options: dict[str, str], name: str, commit: int) -> None:
    """One pypaimon commit of 20 rows over both partitions."""
    spec = TableSpec("bench", name, SCHEMA, ("dt", "id"), 2, ("dt",))
    ids = list(range(commit * 10, commit * 10 + 20))
    data = pa.table({"dt": ["a", "b"] * 10, "id": ids, "v": [f"c{commit}"] * 20}, schema=SCHEMA)
    write_with_pypaimon(create_table(warehouse, spec, options), data)


def build(warehouse: str, tables: int) -> None:
    """N tables of three pypaimon commits each over two partitions."""
    start = time.perf_counter()
    for i in range(tables):
        for commit in range(3):
            write(warehouse, {}, f"t{i:03d}", commit)
    print(f"built {tables} tables in {time.perf_counter() - start:.1f} s")


def upload(local: str, server: S3Server) -> str:
    """Copy a local warehouse into a new bucket; the warehouse's URI there."""
    bucket = server.create_bucket()
    client = server.client()
    files = [p for p in Path(local).rglob("*") if p.is_file()]
    with ThreadPoolExecutor(16) as pool:
        keys = [f"warehouse/{p.relative_to(local)}" for p in files]
        list(pool.map(lambda f, k: client.upload_file(str(f), bucket, k), files, keys))
    return f"s3://{bucket}/warehouse"


def tick(resource: PaimonWarehouse, tables: int) -> None:
    """Discover, build the sensor, and time ticks: the first (cold: every table opened, the
    first also adds dynamic partitions), an unchanged one, and one after 10 tables committed."""
    start = time.perf_counter()
    found = discover_tables(resource.uri, resource.paimon_options())
    print(f"discovery of {len(found.tables)} tables: {time.perf_counter() - start:.2f} s")
    watched = []
    for table in found.tables:
        spec = adopted_spec(table)
        job = dg.define_asset_job(
            f"compact_{spec.database}_{spec.name}", selection=[spec.compaction_asset_key]
        )
        watched.append((spec, job))
    sensor = build_warehouse_sensor("bench_sensor", watched)
    with dg.instance_for_test() as instance:
        cursor = None
        for label in ("cold", "unchanged", "10 tables committed"):
            if label == "10 tables committed":
                for i in range(10):
                    write(resource.uri, resource.paimon_options(), f"t{i:03d}", 3)
            context = dg.build_sensor_context(
                instance=instance, cursor=cursor, resources={"warehouse": resource}
            )
            start = time.perf_counter()
            result = sensor(context)
            seconds = time.perf_counter() - start
            for request in result.dynamic_partitions_requests:
                instance.add_dynamic_partitions(
                    request.partitions_def_name, list(request.partition_keys)
                )
            cursor = result.cursor
            print(
                f"tick ({label}): {seconds:.2f} s for {tables} tables, "
                f"{len(result.asset_events)} observations, {len(result.run_requests)} run requests"
            )


def main() -> None:
    """Local warehouse, then (with --s3) the same tables uploaded to a moto server."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--tables", type=int, default=200)
    parser.add_argument("--s3", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        local = str(Path(root) / "warehouse")
        build(local, args.tables)
        if args.s3:
            with moto_server() as server:
                start = time.perf_counter()
                uri = upload(local, server)
                print(f"uploaded to moto in {time.perf_counter() - start:.1f} s")
                print("S3 (moto) warehouse (target: one tick < 30 s)")
                options = server.catalog_options()
                tick(PaimonWarehouse(uri=uri, catalog_options=options), args.tables)
        print("local warehouse (target: one tick < 10 s)")
        tick(PaimonWarehouse(uri=local), args.tables)


if __name__ == "__main__":
    main()
