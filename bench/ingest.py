"""Ingest of TPC-H lineitem: `dagster-paimon ingest` vs Spark's own floor and pypaimon's writer.

Run: uv run python bench/ingest.py [--rows 1000000] [--bucket 4] [--master local[2]]
                                   [--source lineitem.parquet] [--scale 1] [--keep DIR]
                                   [--repeat 3]

All start from the same parquet file (the first --rows rows of lineitem, field metadata
stripped); the tables are deduplicate, keyed by (l_orderkey, l_linenumber), one commit:
  (a) pypaimon: read the file with pyarrow, `write_arrow`, commit
  (b) the Spark-native floor, cold in a fresh process: session start, read the file,
      repartition by the key into --bucket partitions, sort within them, write zstd parquet
  (c) ours, cold in a fresh process: the `dagster-paimon ingest` CLI (session start, bucket
      hashing, shuffle, level-0 files on executors, one APPEND snapshot). Target: <= 1.3x (b).
(b) and (c) are both timed from outside their process; with --repeat they alternate and the
medians are compared. The CLI runs with its driver JVM's class-data archive on
(PAIMON_SPARK_CLASS_ARCHIVE=1; off by default, `bench/spark_start.py` measures it) in a cache
of this run's own: a first CLI run, timed apart, writes it, as a user's first run does. Then
checks (a) and (c) hold the same rows per bucket, all at level 0.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.spark.class_archive import CACHE_ENV, SWITCH_ENV
from dagster_paimon.table import TableSpec, create_table

KEY = ("l_orderkey", "l_linenumber")
DEFAULT_SOURCE = Path("/tmp/tpch/sf1/lineitem.parquet")
ROW_GROUP_ROWS = 128 * 1024  # like tpchgen's files: Spark splits scans by row group


def lineitem(source: Path | None, scale: float, cache: Path) -> Path:
    """The lineitem parquet to read: --source, the usual generated copy, or a fresh one."""
    if source is not None:
        return source
    if DEFAULT_SOURCE.exists() and scale == 1:
        return DEFAULT_SOURCE
    out = cache / f"tpch-sf{scale}"
    path = out / "lineitem.parquet"
    if not path.exists():
        command = ["tpchgen-cli", "parquet", "-s", str(scale), "--tables=lineitem"]
        subprocess.run([*command, f"--output-dir={out}"], check=True)
    return path


def input_file(source: Path, rows: int, directory: Path) -> tuple[Path, pa.Schema]:
    """The first `rows` rows without parquet field ids, as the file both writers ingest."""
    reader = pq.ParquetFile(source)
    groups, count = [], 0
    while count < rows and len(groups) < reader.num_row_groups:
        groups.append(len(groups))
        count += reader.metadata.row_group(groups[-1]).num_rows
    raw = reader.read_row_groups(groups).slice(0, rows)
    schema = pa.schema([pa.field(f.name, f.type, nullable=f.nullable) for f in raw.schema])
    path = directory / "lineitem-input.parquet"
    pq.write_table(raw.cast(schema), path, row_group_size=ROW_GROUP_ROWS)
    return path, schema


def table_spec(name: str, schema: pa.Schema, bucket: int) -> TableSpec:
    return TableSpec("bench", name, schema, KEY, bucket)


def bench_pypaimon(warehouse: str, path: Path, schema: pa.Schema, bucket: int) -> float:
    """Seconds for pypaimon to read the file and write it as one commit."""
    table = create_table(warehouse, table_spec("pypaimon", schema, bucket))
    start = time.perf_counter()
    data = pq.read_table(path)
    builder = table.new_batch_write_builder()
    writer, committer = builder.new_write(), builder.new_commit()
    writer.write_arrow(data)
    committer.commit(writer.prepare_commit())
    writer.close()
    committer.close()
    return time.perf_counter() - start


def spark_floor(path: Path, out: Path, bucket: int, master: str) -> dict[str, float]:
    """Spark alone, cold in a fresh process: read the file, repartition by the key into the
    bucket count, sort within partitions, write zstd parquet. Seconds of the whole process
    (timed from outside, as the CLI is), and of its session start and job inside it."""
    code = f"""
import json, time
start = time.perf_counter()
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master({master!r}).config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "4").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
session = time.perf_counter() - start
start = time.perf_counter()
(spark.read.parquet({str(path)!r}).repartition({bucket}, *{list(KEY)!r})
 .sortWithinPartitions(*{list(KEY)!r}).write.mode("overwrite").option("compression", "zstd")
 .parquet({str(out)!r}))
print(json.dumps({{"session": session, "job": time.perf_counter() - start}}))
"""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    wall = time.perf_counter() - start
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "wall": wall}


def cli_ingest(warehouse: str, name: str, path: Path, master: str, cache: Path) -> float:
    """Seconds of `dagster-paimon ingest` in a fresh process (session start included)."""
    command = [
        str(Path(sys.executable).parent / "dagster-paimon"),
        "ingest",
        "--warehouse",
        warehouse,
        "--table",
        f"bench.{name}",
        "--source",
        str(path),
        "--spark-master",
        master,
        "--json",
    ]
    env = {**os.environ, CACHE_ENV: str(cache), SWITCH_ENV: "1"}
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, text=True, env=env)
    return time.perf_counter() - start


def rows_per_bucket(warehouse: str, name: str) -> tuple[Counter, set[int]]:
    """Live rows per bucket, and the levels files sit at."""
    from dagster_paimon.table import open_table

    levels = read_levels(open_table(warehouse, f"bench.{name}"))
    counts = Counter(
        {b.bucket: sum(f.row_count for f in b.levels.all_files()) for b in levels.buckets}
    )
    return counts, {f.level for b in levels.buckets for f in b.levels.all_files()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--bucket", type=int, default=4)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--source", type=Path)
    parser.add_argument("--scale", type=float, default=1)
    parser.add_argument("--keep", type=Path, help="keep the warehouse and input here")
    parser.add_argument(
        "--repeat", type=int, default=1, help="run floor and ingest N times, alternating; medians"
    )
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    work.mkdir(parents=True, exist_ok=True)
    warehouse = work / "warehouse"
    shutil.rmtree(warehouse, ignore_errors=True)
    warehouse.mkdir()
    try:
        path, schema = input_file(lineitem(args.source, args.scale, work), args.rows, work)
        rows = pq.ParquetFile(path).metadata.num_rows
        print(
            f"lineitem: {rows} rows, {path.stat().st_size / 1e6:.1f} MB parquet, "
            f"{args.bucket} buckets",
            flush=True,
        )
        theirs = bench_pypaimon(str(warehouse), path, schema, args.bucket)
        print(f"  pypaimon: {theirs:.2f} s", flush=True)
        cache = work / "cache"
        shutil.rmtree(cache, ignore_errors=True)

        def ours_cold() -> float:
            shutil.rmtree(warehouse / "bench.db" / "ours", ignore_errors=True)
            create_table(str(warehouse), table_spec("ours", schema, args.bucket))
            return cli_ingest(str(warehouse), "ours", path, args.master, cache)

        first = ours_cold()
        print(
            f"  first CLI run, writing the driver JVM's class-data archive: {first:.2f} s",
            flush=True,
        )
        floors, ours_runs = [], []
        for run in range(args.repeat):
            floors.append(spark_floor(path, work / "floor", args.bucket, args.master))
            ours_runs.append(ours_cold())
            print(
                f"  run {run + 1}: floor {floors[-1]['wall']:.2f} s "
                f"({floors[-1]['session']:.2f} s session start, {floors[-1]['job']:.2f} s job), "
                f"dagster-paimon ingest {ours_runs[-1]:.2f} s",
                flush=True,
            )
        floor_s = statistics.median(f["wall"] for f in floors)
        floor_session = statistics.median(f["session"] for f in floors)
        ours = statistics.median(ours_runs)
        print(f"  Spark-native floor: {floor_s:.2f} s ({floor_session:.2f} s session start)")
        print(f"  dagster-paimon ingest: {ours:.2f} s -> {ours / floor_s:.2f}x the floor")
        expected, _ = rows_per_bucket(str(warehouse), "pypaimon")
        counts, levels = rows_per_bucket(str(warehouse), "ours")
        assert counts == expected, f"rows per bucket {counts} != pypaimon's {expected}"
        assert levels == {0}, f"files at levels {levels}"
        figures = {
            "rows": rows,
            "runs": args.repeat,
            "buckets": args.bucket,
            "master": args.master,
            "pypaimon_seconds": round(theirs, 2),
            "spark_floor_seconds": round(floor_s, 2),
            "spark_floor_session_seconds": round(floor_session, 2),
            "ours_cli_seconds": round(ours, 2),
            "ours_first_cli_seconds": round(first, 2),
            "ours_over_floor": round(ours / floor_s, 2),
            "target_over_floor": 1.3,
            "speedup_over_pypaimon": round(theirs / ours, 2),
            "same_rows_per_bucket": True,
        }
        print(json.dumps(figures, indent=2))
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
