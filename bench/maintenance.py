"""Maintenance throughput: expire 1,000 snapshots, full-compact 2,000 manifests, scan 20,000 files.

Run: uv run python bench/maintenance.py [--commits 2000] [--files 20000] [--keep DIR]
Builds one table of tiny pypaimon commits (slow: cache it with --keep), then times each
operation on a fresh copy of it. Prints wall time and files per second for each.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dagster_paimon.kinds import compact_open_table
from dagster_paimon.maintenance.expire import expire_snapshots
from dagster_paimon.maintenance.manifests import compact_manifests
from dagster_paimon.maintenance.orphans import remove_orphans
from dagster_paimon.table import TableRef, TableSpec, create_table, open_table

SCHEMA = pa.schema(
    [
        pa.field("p", pa.int64(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        pa.field("v", pa.string()),
    ]
)
COMMITS_PER_PARTITION = 100
COMPACT_EVERY = 10
DAY_S = 86_400


def build(warehouse: str, commits: int) -> None:
    """One-row pypaimon commits (a data file, a manifest, two lists and a snapshot each).

    A compaction every COMPACT_EVERY commits replaces level-0 files, so expiry deletes data.
    """
    spec = TableSpec("bench", "maint", SCHEMA, ("p", "id"), 1, ("p",))
    table = create_table(warehouse, spec)
    start = time.perf_counter()
    for commit in range(commits):
        if commit % COMPACT_EVERY == COMPACT_EVERY - 1:
            compact_open_table(table, TableRef(warehouse, "bench.maint"))
        row = {"p": [commit // COMMITS_PER_PARTITION], "id": [commit], "v": ["x"]}
        builder = table.new_batch_write_builder()
        writer, committer = builder.new_write(), builder.new_commit()
        writer.write_arrow(pa.table(row, SCHEMA))
        committer.commit(writer.prepare_commit())
        writer.close()
        committer.close()
        if (commit + 1) % 250 == 0:
            print(f"  built {commit + 1}/{commits} commits ({time.perf_counter() - start:.0f} s)")


def fresh_copy(source: str) -> tuple[str, object]:
    """A throwaway copy of the built warehouse and its table, so every run starts equal."""
    target = tempfile.mkdtemp(prefix="bench-maint-run-")
    shutil.copytree(source, target, dirs_exist_ok=True)
    return target, open_table(target, "bench.maint")


def count_files(root: str) -> int:
    """Files under a directory."""
    return sum(len(names) for _, _, names in os.walk(root))


def report(label: str, seconds: float, files: int, unit: str = "files") -> None:
    """One result line."""
    print(f"{label}: {seconds:.2f} s, {files} {unit}, {files / seconds:,.0f} {unit}/s")


def bench_expire(source: str, expire: int) -> None:
    """Expire the oldest `expire` snapshots in one run."""
    target, table = fresh_copy(source)
    try:
        latest = table.snapshot_manager().get_latest_snapshot().id
        start = time.perf_counter()
        result = expire_snapshots(
            table, older_than=timedelta(0), retain_min=latest - expire, max_deletes=expire
        )
        seconds = time.perf_counter() - start
        assert len(result.expired_ids) == expire, result.expired_ids[-1:]
        report(f"expire {expire} snapshots", seconds, result.deleted_files, "files deleted")
        print(f"  = {expire / seconds:,.0f} snapshots/s ({result.deleted_data_files} data files)")
    finally:
        shutil.rmtree(target, ignore_errors=True)


def bench_manifests(source: str) -> None:
    """Full manifest compaction of the latest snapshot."""
    target, table = fresh_copy(source)
    try:
        start = time.perf_counter()
        result = compact_manifests(table, full=True)
        seconds = time.perf_counter() - start
        report(
            f"full manifest compaction ({result.manifests_before} -> {result.manifests_after})",
            seconds,
            result.manifests_before,
            "manifests",
        )
    finally:
        shutil.rmtree(target, ignore_errors=True)


def bench_orphans(source: str, files: int) -> None:
    """Scan a table padded with stray files to `files` files; half the strays are old."""
    target, table = fresh_copy(source)
    try:
        root = table.table_path
        old = time.time() - 3 * DAY_S
        for directory, _, names in os.walk(root):
            for n in names:
                os.utime(os.path.join(directory, n), (old, old))
        strays = max(0, files - count_files(root))
        bucket = os.path.join(root, "p=0", "bucket-0")
        for i in range(strays):
            path = os.path.join(bucket if i % 4 else os.path.join(root, "manifest"), f"stray-{i}")
            with open(path, "wb") as f:
                f.write(b"x")
            if i % 2:
                os.utime(path, (old, old))
        start = time.perf_counter()
        result = remove_orphans(table)
        seconds = time.perf_counter() - start
        assert result.deleted == strays // 2, (result.deleted, strays)
        print(f"  ({count_files(root) + result.deleted} files under the table before deleting)")
        report(f"orphan scan + delete ({result.deleted} orphans)", seconds, result.scanned_files)
    finally:
        shutil.rmtree(target, ignore_errors=True)


def main() -> None:
    """Build (or reuse) the table, then time the three maintenance operations."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--commits", type=int, default=2000)
    parser.add_argument("--expire", type=int, default=1000)
    parser.add_argument("--files", type=int, default=20000)
    parser.add_argument("--keep", help="reuse/keep the built warehouse in this directory")
    args = parser.parse_args()
    warehouse = args.keep or tempfile.mkdtemp(prefix="bench-maint-")
    try:
        if not (Path(warehouse) / "bench.db").exists():
            start = time.perf_counter()
            build(warehouse, args.commits)
            print(f"built {args.commits} commits in {time.perf_counter() - start:.1f} s")
        print(f"table: {count_files(warehouse)} files")
        bench_expire(warehouse, args.expire)
        bench_manifests(warehouse)
        bench_orphans(warehouse, args.files)
    finally:
        if not args.keep:
            shutil.rmtree(warehouse, ignore_errors=True)


if __name__ == "__main__":
    main()
