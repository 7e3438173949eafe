"""One tick of the warehouse component's sensor over many tables, local and on S3 (moto).

Run: uv run python bench/warehouse_sensor.py [--tables 200] [--s3]

Builds N partitioned primary-key tables (two partitions, a few level-0 files each, written by
pypaimon), discovers them as the component's refresh does, builds the component's one sensor
from that state with the same builders, then times sensor ticks: each reads every table's
metadata, records one observation per table and requests compaction where due. Targets: one
tick < 10 s for 200 local tables, < 30 s on S3.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
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
from tests.s3server import moto_server

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        pa.field("v", pa.string()),
    ]
)


def build(warehouse: str, options: dict[str, str], tables: int) -> None:
    """N tables of three pypaimon commits each over two partitions."""
    start = time.perf_counter()
    for i in range(tables):
        spec = TableSpec("bench", f"t{i:03d}", SCHEMA, ("dt", "id"), 2, ("dt",))
        table = create_table(warehouse, spec, options)
        for commit in range(3):
            ids = list(range(commit * 10, commit * 10 + 20))
            data = pa.table(
                {"dt": ["a", "b"] * 10, "id": ids, "v": [f"c{commit}"] * 20}, schema=SCHEMA
            )
            write_with_pypaimon(table, data)
    print(f"built {tables} tables in {time.perf_counter() - start:.1f} s")


def tick(resource: PaimonWarehouse, tables: int) -> None:
    """Discover, build the sensor, and time three ticks (the first adds dynamic partitions)."""
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
        for n in range(3):
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
                f"tick {n + 1}: {seconds:.2f} s for {tables} tables, "
                f"{len(result.asset_events)} observations, {len(result.run_requests)} run requests"
            )


def main() -> None:
    """Local warehouse, then (with --s3) the same on a moto server."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--tables", type=int, default=200)
    parser.add_argument("--s3", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        local = str(Path(root) / "warehouse")
        build(local, {}, args.tables)
        print("local warehouse (target: one tick < 10 s)")
        tick(PaimonWarehouse(uri=local), args.tables)
    if args.s3:
        with moto_server() as server:
            uri = f"s3://{server.create_bucket()}/warehouse"
            options = server.catalog_options()
            build(uri, options, args.tables)
            print("S3 (moto) warehouse (target: one tick < 30 s)")
            tick(PaimonWarehouse(uri=uri, catalog_options=options), args.tables)


if __name__ == "__main__":
    main()
