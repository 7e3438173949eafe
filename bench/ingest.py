"""Ingest of TPC-H lineitem: our Spark data source (local[2]) vs pypaimon's single-process writer.

Run: uv run python bench/ingest.py [--rows 1000000] [--bucket 4] [--master local[2]]
                                   [--source lineitem.parquet] [--scale 1] [--keep DIR]

Both writers start from the same parquet file (the first --rows rows of lineitem, field metadata
stripped) and write a deduplicate table keyed by (l_orderkey, l_linenumber) in one commit:
  (a) pypaimon: read the file with pyarrow, `write_arrow`, commit
  (b) ours: `dagster_paimon.spark.ingest.ingest_files` - Spark reads the file, hashes buckets,
      shuffles by bucket, writes level-0 files on executors, commits one APPEND snapshot.
      Reported for the first ingest of a fresh session (Python workers start cold) and for a
      second ingest into another empty table (warm workers); Spark session start is separate.
Then checks both tables hold the same rows per bucket, all at level 0.
"""

from __future__ import annotations

import argparse
import json
import shutil
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


def bench_spark(
    warehouse: str, path: Path, schema: pa.Schema, bucket: int, master: str
) -> tuple[float, list[float]]:
    """Session start, then the seconds of a cold and of a warm ingest of the file."""
    start = time.perf_counter()
    from dagster_paimon.spark.ingest import ingest_files
    from dagster_paimon.spark.session import spark_session

    spark = spark_session(master, app_name="dagster-paimon-bench")
    spark.sparkContext.setLogLevel("ERROR")
    session = time.perf_counter() - start
    runs = []
    for name in ("ours", "ours_warm"):
        create_table(warehouse, table_spec(name, schema, bucket))
        start = time.perf_counter()
        report = ingest_files(spark, warehouse, f"bench.{name}", str(path))
        runs.append(time.perf_counter() - start)
        print(f"  {name}: {report.to_dict()}", flush=True)
    spark.stop()
    return session, runs


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
        session, (cold, warm) = bench_spark(str(warehouse), path, schema, args.bucket, args.master)
        expected, _ = rows_per_bucket(str(warehouse), "pypaimon")
        for name in ("ours", "ours_warm"):
            counts, levels = rows_per_bucket(str(warehouse), name)
            assert counts == expected, f"{name}: rows per bucket {counts} != pypaimon's {expected}"
            assert levels == {0}, f"{name}: files at levels {levels}"
        figures = {
            "rows": rows,
            "buckets": args.bucket,
            "master": args.master,
            "pypaimon_seconds": round(theirs, 2),
            "pypaimon_rows_per_s": round(rows / theirs),
            "spark_session_start_seconds": round(session, 2),
            "spark_cold_seconds": round(cold, 2),
            "spark_cold_rows_per_s": round(rows / cold),
            "spark_warm_seconds": round(warm, 2),
            "spark_warm_rows_per_s": round(rows / warm),
            "speedup_cold": round(theirs / cold, 2),
            "speedup_warm": round(theirs / warm, 2),
            "same_rows_per_bucket": True,
        }
        print(json.dumps(figures, indent=2))
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
