"""Full compaction of TPC-H lineitem upserts: ours vs a no-merge floor vs pypaimon merge-on-read.

Run: uv run python bench/compaction.py [--scale 1] [--rows 2000000] [--batches 4] [--keep DIR]
     [--compare-options file.format=orc data-file.thin-mode=true [--runs 3]]

Builds (once, cached with --keep) a deduplicate table keyed by (l_orderkey, l_linenumber) from
`tpchgen-cli` parquet, ingested with pypaimon as several overlapping upsert batches, then prints:
  (a) our full compaction: seconds, MB/s of input, peak RSS of the compacting process
  (b) the floor: pyarrow reading the same input files and writing them out, no merge
  (c) pypaimon merge-on-read of the same table, and that plus writing the result
  (d) Paimon Java 0.9's full compaction of a copy of the same table, when the PaimonCompact
      harness is given (--java-oracle DIR or PAIMON_JAVA_ORACLE=DIR, e.g. ../shared/oracle/java);
      it cannot read pypaimon's FIXED_LEN_BYTE_ARRAY decimals, so build with --ingest arrow
With --compare-options, instead: the same data built under the plain options and under each
option set (KEY=VALUE[,KEY=VALUE]), and each one's full compaction (median of --runs, run in
turn) beside the plain one's, with its ratio to it. --baseline-checkout DIR (a worktree of
another commit) compacts each table with that code too, in the same turns, and prints the ratio
of this checkout's time to it (median of the pairs).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from bisect import bisect_left, bisect_right
from itertools import accumulate
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dagster_paimon.io.formats import open_reader
from dagster_paimon.io.paths import data_file_path
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.table import TableSpec, create_table, open_table

ROOT = Path(__file__).resolve().parent.parent
IDENT = "bench.lineitem"
MB = 1024 * 1024


def lineitem(scale: float, cache: Path) -> Path:
    """TPC-H lineitem as parquet, generated once per scale factor."""
    out = cache / f"tpch-sf{scale}"
    path = out / "lineitem.parquet"
    if not path.exists():
        subprocess.run(
            [
                "tpchgen-cli",
                "parquet",
                "-s",
                str(scale),
                "--tables=lineitem",
                f"--output-dir={out}",
            ],
            check=True,
        )
    return path


def build(
    warehouse: str,
    source: Path,
    rows: int,
    batches: int,
    bucket: int,
    options: dict[str, str] | None = None,
) -> None:
    """Overlapping upsert batches: each re-writes half the previous batch's keys with new values."""
    raw = pq.ParquetFile(source).read().slice(0, rows)
    plain = pa.schema([pa.field(f.name, f.type, nullable=f.nullable) for f in raw.schema])
    data = raw.cast(plain)
    spec = TableSpec(
        "bench", "lineitem", data.schema, ("l_orderkey", "l_linenumber"), bucket, (), options or {}
    )
    table = create_table(warehouse, spec)
    step = rows // batches
    for i in range(batches):
        start = max(0, i * step - step // 2)
        batch = data.slice(start, step + (i * step - start))
        field = batch.schema.field("l_quantity")
        quantity = pc.add(batch.column("l_quantity"), pa.scalar(i, field.type)).cast(field.type)
        batch = batch.set_column(batch.schema.get_field_index("l_quantity"), field, quantity)
        t0 = time.perf_counter()
        builder = table.new_batch_write_builder()
        writer, committer = builder.new_write(), builder.new_commit()
        writer.write_arrow(batch)
        committer.commit(writer.prepare_commit())
        writer.close()
        committer.close()
        print(
            f"  ingested batch {i + 1}/{batches}: {batch.num_rows} rows in "
            f"{time.perf_counter() - t0:.1f} s"
        )


def build_with_spark(warehouse: str, source: Path, batches: int, bucket: int) -> None:
    """The same overlapping upserts over every row of the source, ingested by our Spark source.

    For inputs too large for pypaimon's writer to build in reasonable time (the >= 1 GB bucket).
    """
    from pyspark.sql import functions as F

    from dagster_paimon.spark.ingest import ingest_dataframe
    from dagster_paimon.spark.session import spark_session

    raw = pq.ParquetFile(source).schema_arrow
    plain = pa.schema([pa.field(f.name, f.type, nullable=f.nullable) for f in raw])
    spec = TableSpec("bench", "lineitem", plain, ("l_orderkey", "l_linenumber"), bucket, (), {})
    create_table(warehouse, spec)
    spark = spark_session("local[2]")
    df = spark.read.parquet(str(source))
    top = df.agg(F.max("l_orderkey")).first()[0] + 1
    step = top // batches + 1
    for i in range(batches):
        low, high = max(0, i * step - step // 2), (i + 1) * step
        part = df.where((F.col("l_orderkey") >= low) & (F.col("l_orderkey") < high))
        part = part.withColumn("l_quantity", (F.col("l_quantity") + i).cast("decimal(15,2)"))
        t0 = time.perf_counter()
        report = ingest_dataframe(part, warehouse, IDENT)
        print(
            f"  ingested batch {i + 1}/{batches} with Spark: {report.rows} rows in "
            f"{time.perf_counter() - t0:.1f} s"
        )
    spark.stop()


def build_with_arrow(warehouse: str, source: Path, rows: int, batches: int, bucket: int) -> None:
    """The same overlapping upserts, ingested by our in-process Arrow ingest (INT64 decimals).

    Each batch reads only the row groups it covers, so SF 8 fits in memory with more batches.
    """
    from dagster_paimon.ingest.arrow import ingest_arrow

    parquet = pq.ParquetFile(source)
    rows = min(rows, parquet.metadata.num_rows)
    plain = pa.schema([pa.field(f.name, f.type, nullable=f.nullable) for f in parquet.schema_arrow])
    spec = TableSpec("bench", "lineitem", plain, ("l_orderkey", "l_linenumber"), bucket, (), {})
    table = create_table(warehouse, spec)
    meta = parquet.metadata
    offsets = [0, *accumulate(meta.row_group(g).num_rows for g in range(meta.num_row_groups))]
    step = rows // batches
    for i in range(batches):
        start, stop = max(0, i * step - step // 2), (i + 1) * step
        first, last = bisect_right(offsets, start) - 1, bisect_left(offsets, stop)
        groups = parquet.read_row_groups(range(first, last))
        batch = groups.slice(start - offsets[first], stop - start).cast(plain)
        field = batch.schema.field("l_quantity")
        quantity = pc.add(batch.column("l_quantity"), pa.scalar(i, field.type)).cast(field.type)
        batch = batch.set_column(batch.schema.get_field_index("l_quantity"), field, quantity)
        t0 = time.perf_counter()
        ingest_arrow(table, batch)
        print(
            f"  ingested batch {i + 1}/{batches} in process: {batch.num_rows} rows in "
            f"{time.perf_counter() - t0:.1f} s"
        )


def input_files(warehouse: str) -> list[tuple[str, int]]:
    """Paths and sizes of every live data file: the compaction's input."""
    table = open_table(warehouse, IDENT)
    out = []
    for b in read_levels(table).buckets:
        for f in b.levels.all_files():
            out.append((data_file_path(table, b.partition, b.bucket, f), f.file_size))
    return out


def floor(files: list[tuple[str, int]], target: str) -> float:
    """Read every input file and write the same rows to parquet, no merge: the I/O floor."""
    t0 = time.perf_counter()
    writer = None
    for path, _ in files:
        with open(path, "rb") as stream:
            reader = open_reader(stream, path)
            for batch in reader.batches(64 * 1024, reader.names):
                if writer is None:
                    writer = pq.ParquetWriter(
                        target,
                        batch.schema,
                        compression="zstd",
                        compression_level=1,
                        store_decimal_as_integer=True,
                    )
                writer.write_batch(batch)
    if writer is not None:
        writer.close()
    return time.perf_counter() - t0


def pypaimon_read(warehouse: str, target: str) -> tuple[float, float, int]:
    """pypaimon's merge-on-read of the table, then writing its result; seconds of each, rows."""
    table = open_table(warehouse, IDENT)
    t0 = time.perf_counter()
    builder = table.new_read_builder()
    data = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    read_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    pq.write_table(
        data, target, compression="zstd", compression_level=1, store_decimal_as_integer=True
    )
    return read_s, time.perf_counter() - t1, data.num_rows


def compact_in_child(warehouse: str, full: bool = True, checkout: Path = ROOT) -> dict:
    """Run our compaction (full by default) in a fresh process so its peak RSS is its own,
    with the code of `checkout` (default: this one)."""
    code = (
        "import json,sys,time;"
        "from dagster_paimon.kinds import compact_open_table;"
        "from dagster_paimon.table import TableRef;"
        "from dagster_paimon.table import open_table;"
        f"t=open_table({warehouse!r},{IDENT!r});t0=time.perf_counter();"
        f"r=compact_open_table(t,TableRef({warehouse!r},{IDENT!r}),full={full!r});"
        "print(json.dumps({'seconds':time.perf_counter()-t0,'read':r.bytes_read,"
        "'written':r.bytes_written,'snapshot':r.snapshot_id,"
        "'rss_mb':int([l.split()[1] for l in open('/proc/self/status')"
        " if l.startswith('VmHWM')][0])/1024}))"
    )
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        cwd=checkout,
    )
    wall = time.perf_counter() - t0
    return {**json.loads(out.stdout.strip().splitlines()[-1]), "wall": wall}


JAVA_ORACLE = "PAIMON_JAVA_ORACLE"


def java_classpath(oracle: str | None) -> tuple[str | None, str]:
    """The PaimonCompact harness's classpath from the oracle's setup.sh, or None and why not."""
    if not oracle:
        return None, f"no --java-oracle and {JAVA_ORACLE} is unset"
    setup = Path(oracle) / "setup.sh"
    if not setup.is_file():
        return None, f"{setup} does not exist"
    if shutil.which("java") is None:
        return None, "no java on PATH"
    out = subprocess.run([str(setup)], capture_output=True, text=True, cwd=ROOT)
    if out.returncode != 0 or not out.stdout.strip():
        return None, f"{setup} failed: {out.stderr.strip()[-300:]}"
    return out.stdout.strip().splitlines()[-1], ""


def java_compact(classpath: str, warehouse: str) -> dict:
    """Paimon Java's full compaction of every bucket: JVM wall seconds with start, its own ms.

    The harness compacts bucket after bucket on Paimon's single compaction thread.
    """
    db, name = IDENT.split(".")
    t0 = time.perf_counter()
    child = subprocess.run(
        ["java", "-cp", classpath, "PaimonCompact", warehouse, db, name],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    wall = time.perf_counter() - t0
    output = child.stdout
    lines = [line for line in output.splitlines() if line.startswith('{"buckets"')]
    if child.returncode != 0 or not lines:
        error = next((x for x in output.splitlines() if "Exception" in x), output[-300:])
        return {"error": error.strip()}
    report = json.loads(lines[-1])
    return {"wall": wall, "seconds": report["ms"] / 1000, "buckets": report["buckets"]}


def compare_java(oracle: str | None, pristine: Path, scratch: Path, ours: dict) -> None:
    """(d): Paimon Java 0.9 full-compacts a copy of the same input table, beside our figure."""
    classpath, why = java_classpath(oracle)
    if classpath is None:
        print(f"(d) Paimon Java 0.9 full compaction: skipped ({why})")
        return
    copy = scratch / "java-warehouse"
    shutil.copytree(pristine, copy)
    java = java_compact(classpath, str(copy))
    if "error" in java:
        print(
            "(d) Paimon Java 0.9 full compaction: failed on this table (decimals pypaimon wrote? "
            f"build with --ingest arrow): {java['error']}"
        )
        return
    print(
        f"(d) Paimon Java 0.9 full compaction ({java['buckets']} buckets, one compaction thread; "
        f"ours {os.cpu_count()} threads): {java['seconds']:.2f} s compacting, "
        f"{java['wall']:.2f} s JVM wall with start; ours {ours['wall']:.2f} s wall with Python "
        f"start -> (d)/(a) = {java['seconds'] / ours['seconds']:.1f}x compacting, "
        f"{java['wall'] / ours['wall']:.1f}x wall (target >= 3)"
    )


def compare(args: argparse.Namespace, root: Path) -> None:
    """Full compaction of the same data under each option set, beside the plain options'."""
    base = dict(o.split("=", 1) for o in args.option)
    sets = {"plain": base}
    for spec in args.compare_options:
        sets[spec] = {**base, **dict(o.split("=", 1) for o in spec.split(","))}
    source = lineitem(args.scale, root)
    pristines = {}
    for label, options in sets.items():
        pristines[label] = root / label.replace("=", "-").replace(",", "_") / "pristine"
        if not pristines[label].exists():
            warehouse = str(pristines[label].parent / "warehouse")
            print(f"building {label} table ({args.rows} rows, {args.batches} batches)")
            build(warehouse, source, args.rows, args.batches, args.bucket, options)
            shutil.copytree(warehouse, pristines[label])
    checkouts = {"": ROOT}
    if args.baseline_checkout:
        checkouts[" (baseline)"] = Path(args.baseline_checkout).resolve()
    seconds: dict[str, list[float]] = {label + c: [] for label in sets for c in checkouts}
    for _ in range(args.runs):
        for label, pristine in pristines.items():
            for tag, checkout in checkouts.items():
                warehouse = pristine.parent / "warehouse"
                shutil.rmtree(warehouse, ignore_errors=True)
                shutil.copytree(pristine, warehouse)
                run = compact_in_child(str(warehouse), checkout=checkout)
                seconds[label + tag].append(run["seconds"])
    plain = statistics.median(seconds["plain"])
    for label, runs in seconds.items():
        median = statistics.median(runs)
        print(
            f"{label}: full compaction {median:.2f} s (median of {args.runs}: "
            f"{', '.join(f'{s:.2f}' for s in runs)}) -> {median / plain:.2f}x plain"
        )
    for label in sets if args.baseline_checkout else ():
        pairs = zip(seconds[label], seconds[label + " (baseline)"], strict=True)
        ratio = statistics.median(ours / base for ours, base in pairs)
        print(f"{label}: this checkout / baseline = {ratio:.2f}x (median of the pairs)")


def main() -> None:
    """Build once, then measure (a), (b) and (c) on the same table state."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=1)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--bucket", type=int, default=1)
    parser.add_argument("--keep", help="reuse/keep the warehouse (and TPC-H data) here")
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        help="table option KEY=VALUE, e.g. file.format=orc or data-file.thin-mode=true",
    )
    parser.add_argument(
        "--ingest",
        choices=("pypaimon", "spark", "arrow"),
        default="pypaimon",
        help="who writes the overlapping batches (spark: every source row, for big buckets; "
        "arrow: our in-process ingest, row groups read per batch, readable by Paimon Java)",
    )
    parser.add_argument(
        "--ours-only",
        action="store_true",
        help="skip (b) and (c), e.g. for a bucket whose pypaimon read would not fit in memory",
    )
    parser.add_argument(
        "--java-oracle",
        default=os.environ.get(JAVA_ORACLE),
        help=f"directory of the PaimonCompact harness's setup.sh (env {JAVA_ORACLE})",
    )
    parser.add_argument(
        "--compare-options",
        nargs="+",
        default=[],
        metavar="KEY=VALUE[,KEY=VALUE]",
        help="compare the full compaction under each option set with the plain one's",
    )
    parser.add_argument(
        "--runs", type=int, default=3, help="runs per figure with --compare-options"
    )
    parser.add_argument(
        "--baseline-checkout",
        metavar="DIR",
        help="with --compare-options: also compact with the code of this checkout, in turn",
    )
    args = parser.parse_args()
    root = Path(args.keep or tempfile.mkdtemp(prefix="bench-compaction-"))
    if args.compare_options:
        try:
            compare(args, root)
        finally:
            if not args.keep:
                shutil.rmtree(root, ignore_errors=True)
        return
    warehouse = str(root / "warehouse")
    pristine = root / "pristine"
    try:
        if not pristine.exists():
            source = lineitem(args.scale, root)
            print(f"building table from {source} ({args.rows} rows, {args.batches} batches)")
            if args.ingest == "spark":
                build_with_spark(warehouse, source, args.batches, args.bucket)
            elif args.ingest == "arrow":
                build_with_arrow(warehouse, source, args.rows, args.batches, args.bucket)
            else:
                options = dict(o.split("=", 1) for o in args.option)
                build(warehouse, source, args.rows, args.batches, args.bucket, options)
            shutil.copytree(warehouse, pristine)
        else:
            shutil.rmtree(warehouse, ignore_errors=True)
            shutil.copytree(pristine, warehouse)
        files = input_files(warehouse)
        total = sum(size for _, size in files)
        print(f"input: {len(files)} files, {total / MB:.1f} MB")
        scratch = root / "scratch"
        scratch.mkdir(exist_ok=True)
        if not args.ours_only:
            floor_s = floor(files, str(scratch / "floor.parquet"))
            read_s, write_s, rows = pypaimon_read(warehouse, str(scratch / "pypaimon.parquet"))
        ours = compact_in_child(warehouse)
        print(
            f"(a) ours, full compaction: {ours['seconds']:.2f} s, "
            f"{total / MB / ours['seconds']:.1f} MB/s input, peak RSS {ours['rss_mb']:.0f} MB, "
            f"{ours['written'] / MB:.1f} MB written"
        )
        if not args.ours_only:
            print(
                f"(b) floor, read+write without merge: {floor_s:.2f} s "
                f"-> (a)/(b) = {ours['seconds'] / floor_s:.2f} (target <= 1.5)"
            )
            print(
                f"(c) pypaimon merge-on-read: {read_s:.2f} s ({rows} rows), + writing "
                f"{write_s:.2f} s -> ((c)+write)/(a) = "
                f"{(read_s + write_s) / ours['seconds']:.1f}x (target >= 5)"
            )
        compare_java(args.java_oracle, pristine, scratch, ours)
        driver_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"driver peak RSS (setup and baselines) {driver_mb:.0f} MB")
        shutil.rmtree(scratch, ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
