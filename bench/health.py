"""How long `health` takes on a table with 5,000+ data files written by many small commits.

Run: uv run python bench/health.py [--files 5000] [--keep DIR]
Prints the build time, then the library call and the CLI (a fresh process) timings.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.table import TableSpec, create_table

PARTITIONS = 10
BUCKETS = 5
SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        pa.field("payload", pa.string()),
    ]
)


def build(warehouse: str, files: int) -> None:
    """Many small pypaimon commits, each adding one level-0 file to every bucket."""
    spec = TableSpec("bench", "health", SCHEMA, ("dt", "id"), BUCKETS, ("dt",))
    table = create_table(warehouse, spec)
    commits = -(-files // (PARTITIONS * BUCKETS))
    rows = PARTITIONS * BUCKETS * 8
    for commit in range(commits):
        ids = pa.array(range(commit * rows, (commit + 1) * rows), pa.int64())
        dts = pa.array([f"2024-01-{(i % PARTITIONS) + 1:02d}" for i in range(rows)])
        data = pa.table({"dt": dts, "id": ids, "payload": pa.array(["x" * 20] * rows)}, SCHEMA)
        builder = table.new_batch_write_builder()
        writer, committer = builder.new_write(), builder.new_commit()
        writer.write_arrow(data)
        committer.commit(writer.prepare_commit())
        writer.close()
        committer.close()


def main() -> None:
    """Build once, then time health through the library and through the CLI."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--keep", help="reuse/keep the warehouse in this directory")
    args = parser.parse_args()
    warehouse = args.keep or tempfile.mkdtemp(prefix="bench-health-")
    try:
        if not (Path(warehouse) / "bench.db").exists():
            start = time.perf_counter()
            build(warehouse, args.files)
            print(f"built table in {time.perf_counter() - start:.1f} s")
        from dagster_paimon.table import open_table

        table = open_table(warehouse, "bench.health")
        timings = []
        for _ in range(3):
            start = time.perf_counter()
            summary = read_levels(table).health().aggregate()
            timings.append(time.perf_counter() - start)
        print(
            f"files={summary['files']} buckets={summary['buckets']} "
            f"max_sorted_runs={summary['max_sorted_runs']}"
        )
        print(f"health (library, best of 3): {min(timings):.3f} s")
        start = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "dagster_paimon.cli",
                "health",
                "--warehouse",
                warehouse,
                "--table",
                "bench.health",
                "--json",
            ],
            check=True,
            capture_output=True,
        )
        print(f"health (CLI, fresh process incl. imports): {time.perf_counter() - start:.3f} s")
    finally:
        if not args.keep:
            shutil.rmtree(warehouse, ignore_errors=True)


if __name__ == "__main__":
    main()
