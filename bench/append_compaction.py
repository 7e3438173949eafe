"""Compaction of an unaware-bucket append table of many small files: ours vs the no-merge pyarrow
floor vs Paimon Java 0.9's append compaction of a copy, same run.

Run: uv run python bench/append_compaction.py [--files 10000] [--rows-per-file 1000] [--full]
     [--keep DIR] [--no-java]

Builds (once, cached with --keep) an append table (bucket -1, no primary key) of TPC-H lineitem
from `tpchgen-cli` (decimals as doubles, which Paimon Java reads from pypaimon's files), written
by pypaimon as --files parquet files of --rows-per-file rows (one pypaimon writer per file, a
commit per 500,000 rows), then prints, each
measured in a child process of its own (seconds inside it, wall with start, peak RSS):
  (a) the floor: pyarrow reading every input file and writing the same rows into parquet files
      of the table's target-file-size, with the table's writer settings (zstd level 1); no Paimon
  (b) ours: `PaimonTable.compact` (Paimon's pick unless --full) on a copy
  (c) Paimon Java 0.9's dedicated append compaction (UnawareAppendTableCompactionCoordinator and
      its tasks, committed; tests/java/AppendTables.java) on another copy
and the ratios the targets are stated in: (b)/(a) <= 1.2 and (c)/(b) >= 3, with each result's
file count. `--files 20 --rows-per-file 100 --scale 0.01` is the quick mode the tests run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.compaction import lineitem  # noqa: E402

DATABASE, TABLE = "bench", "lineitem"
MB = 1024 * 1024


def plain_schema(schema: pa.Schema) -> pa.Schema:
    """lineitem's columns with decimals as doubles."""
    return pa.schema(
        pa.field(f.name, pa.float64() if pa.types.is_decimal(f.type) else f.type) for f in schema
    )


def build(warehouse: Path, source: Path, files: int, rows_per_file: int) -> None:
    """The append table, written by pypaimon as `files` files of `rows_per_file` rows."""
    from pypaimon import CatalogFactory, Schema

    parquet = pq.ParquetFile(source)
    needed = files * rows_per_file
    if parquet.metadata.num_rows < needed:
        raise SystemExit(f"{source} has {parquet.metadata.num_rows} rows, {needed} needed")
    schema = plain_schema(parquet.schema_arrow)
    catalog = CatalogFactory.create({"warehouse": str(warehouse)})
    catalog.create_database(DATABASE, True)
    catalog.create_table(
        f"{DATABASE}.{TABLE}", Schema.from_pyarrow_schema(schema, options={"bucket": "-1"}), False
    )
    table = catalog.get_table(f"{DATABASE}.{TABLE}")
    per_commit = max(1, 500_000 // rows_per_file) * rows_per_file
    written = 0
    t0 = time.perf_counter()
    for batch in parquet.iter_batches(batch_size=per_commit):
        data = pa.Table.from_batches([batch.slice(0, needed - written)]).cast(schema)
        if data.num_rows == 0:
            break
        builder = table.new_batch_write_builder()
        messages = []
        for start in range(0, data.num_rows, rows_per_file):
            writer = builder.new_write()  # one writer, one file
            try:
                writer.write_arrow(data.slice(start, rows_per_file))
                messages.extend(writer.prepare_commit())
            finally:
                writer.close()
        committer = builder.new_commit()
        try:
            committer.commit(messages)
        finally:
            committer.close()
        written += data.num_rows
    print(f"  wrote {written} rows with pypaimon in {time.perf_counter() - t0:.1f} s")


def data_files(warehouse: Path) -> list[Path]:
    """The live data files of the latest snapshot (manifests of any writer, Java 0.9's too)."""
    from dagster_paimon.snapshot.entries import live_entries
    from dagster_paimon.table import open_table

    table = open_table(str(warehouse), f"{DATABASE}.{TABLE}")
    latest = table.snapshot_manager().get_latest_snapshot()
    root = warehouse / f"{DATABASE}.db" / TABLE / "bucket-0"
    return [root / e.file.file_name for e in live_entries(table, latest)]


def child(argv: list[str]) -> dict:
    """Run one measured process: its JSON last line (with its own peak RSS, VmHWM: a child's
    rusage would count the parent's memory it was forked from), wall seconds with start."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        done = subprocess.run(argv, stdout=out, stderr=err, cwd=ROOT)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        if done.returncode != 0:
            raise SystemExit(f"{argv[0]} failed:\n{err.read().decode()[-3000:]}")
        report = json.loads(out.read().decode().strip().splitlines()[-1])
    return {**report, "wall": wall, "rss_mb": report["peakRssKb"] / 1024}


PEAK = """
def peak_rss_kb():
    return int(next(l.split()[1] for l in open("/proc/self/status") if l.startswith("VmHWM")))
"""

FLOOR = (
    PEAK
    + """
import json, sys, time
import pyarrow.parquet as pq
paths, out, target = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3])
t0 = time.perf_counter()
writer, sink, count = None, None, 0
for path in paths:
    for batch in pq.ParquetFile(path).iter_batches(batch_size=64 * 1024):
        if writer is None:
            sink = open(f"{out}/floor-{count}.parquet", "wb")
            writer = pq.ParquetWriter(sink, batch.schema, compression="zstd", compression_level=1)
            count += 1
        writer.write_batch(batch)
        if sink.tell() >= target:
            writer.close()
            sink.close()
            writer = None
if writer is not None:
    writer.close()
    sink.close()
print(json.dumps({"seconds": time.perf_counter() - t0, "files": count, "peakRssKb": peak_rss_kb()}))
"""
)

OURS = (
    PEAK
    + """
import json, sys, time
from dagster_paimon import PaimonTable
t0 = time.perf_counter()
PaimonTable.open(sys.argv[1], sys.argv[2]).compact(full=sys.argv[3] == "full")
print(json.dumps({"seconds": time.perf_counter() - t0, "peakRssKb": peak_rss_kb()}))
"""
)


def floor(files: list[Path], out: Path, target: int) -> dict:
    """(a): pyarrow reads every file and writes target-size parquet files, no Paimon."""
    out.mkdir(parents=True, exist_ok=True)
    listing = out / "inputs.json"
    listing.write_text(json.dumps([str(p) for p in files]))
    return child([sys.executable, "-c", FLOOR, str(listing), str(out), str(target)])


def ours(warehouse: Path, full: bool) -> dict:
    """(b): our compaction of the table, in a fresh process."""
    ident = f"{DATABASE}.{TABLE}"
    mode = "full" if full else "pick"
    report = child([sys.executable, "-c", OURS, str(warehouse), ident, mode])
    return {**report, "files": len(data_files(warehouse))}


def java(warehouse: Path) -> dict:
    """(c): Paimon Java 0.9's append compaction of the table, in one JVM."""
    from tests.java.paimon_java import classpath

    argv = ["java", "-cp", classpath(), "AppendTables", "compact", str(warehouse)]
    report = child([*argv, DATABASE, TABLE, "auto"])
    return {**report, "seconds": report["ms"] / 1000, "files": len(data_files(warehouse))}


def main() -> None:
    """Build once, then measure (a), (b) and (c) on copies of the same table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rows-per-file", type=int, default=1_000)
    parser.add_argument("--scale", type=float, default=2, help="TPC-H scale factor of the source")
    parser.add_argument("--full", action="store_true", help="our full compaction, not the pick")
    parser.add_argument("--no-java", action="store_true", help="skip (c)")
    parser.add_argument("--keep", help="reuse/keep the warehouse (and TPC-H data) here")
    args = parser.parse_args()
    # tpchgen-cli is installed beside this interpreter, on PATH or not (`uv run` puts it there)
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    root = Path(args.keep or tempfile.mkdtemp(prefix="bench-append-"))
    pristine = root / f"pristine-{args.files}x{args.rows_per_file}"
    try:
        if not pristine.exists():
            source = lineitem(args.scale, root)
            print(f"building {args.files} files of {args.rows_per_file} rows from {source}")
            build(root / "building", source, args.files, args.rows_per_file)
            (root / "building").rename(pristine)
        inputs = data_files(pristine)
        total = sum(p.stat().st_size for p in inputs)
        print(f"input: {len(inputs)} files, {total / MB:.1f} MB")
        scratch = root / "scratch"
        shutil.rmtree(scratch, ignore_errors=True)
        target = 256 * MB  # an append table's target-file-size
        a = floor(inputs, scratch / "floor", target)
        print(
            f"(a) floor, pyarrow read + write, no Paimon: {a['seconds']:.2f} s "
            f"({a['wall']:.2f} s wall), peak RSS {a['rss_mb']:.0f} MB, {a['files']} files"
        )
        shutil.copytree(pristine, scratch / "ours")
        b = ours(scratch / "ours", args.full)
        print(
            f"(b) ours, {'full' if args.full else 'pick'}: {b['seconds']:.2f} s "
            f"({b['wall']:.2f} s wall), peak RSS {b['rss_mb']:.0f} MB, {b['files']} files "
            f"-> (b)/(a) = {b['seconds'] / a['seconds']:.2f}x (target <= 1.2)"
        )
        if args.no_java:
            print("(c) Paimon Java 0.9: skipped (--no-java)")
            return
        shutil.copytree(pristine, scratch / "java")
        c = java(scratch / "java")
        print(
            f"(c) Paimon Java 0.9, coordinator + tasks: {c['seconds']:.2f} s in the JVM "
            f"({c['wall']:.2f} s wall with start), peak RSS {c['rss_mb']:.0f} MB, {c['files']} "
            f"files -> (c)/(b) = {c['seconds'] / b['seconds']:.1f}x in process, "
            f"{c['wall'] / b['wall']:.1f}x wall (target >= 3)"
        )
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
