"""Concurrent commits on S3 (moto): pypaimon's rename commit loses snapshots, ours never does.

Run: uv run python bench/s3_race.py [--processes 8] [--trials 5] [--lead 2.0]

Per trial and committer: a fresh table (id int64 PK, v string, 2 buckets) in a fresh bucket of
one moto server on loopback. N spawned processes each open the table, write 10 distinct rows
with pypaimon's writer, wait for a common wall-clock start time, then commit:
  pypaimon:        `BatchTableCommit.commit` (snapshot-N via exists? + temp write + rename,
                   which on S3 is copy + delete: no atomic create-if-absent)
  dagster-paimon:  `dagster_paimon.commit.producers.AppendProducer` (snapshot-N via a conditional
                   PUT `If-None-Match: *`, so S3 lets exactly one committer create it)
Then reads the table fresh and counts commits that reported success, snapshots, rows read, and
successful commits whose rows are missing (silently lost).
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dagster_paimon.table import TableSpec, create_table, open_table
from tests.s3server import S3Server, moto_server

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
BUCKETS = 2
ROWS_PER_COMMIT = 10
IDENTIFIER = "bench.race"
COMMITTERS = ("pypaimon", "dagster-paimon")


@dataclass(frozen=True)
class WorkerResult:
    """What one committing process saw: success or the error, and whether it missed the start."""

    worker: int
    ok: bool
    error: str
    late_s: float


@dataclass(frozen=True)
class TrialResult:
    """One trial's outcome for one committer, as read back from the table afterwards."""

    committer: str
    succeeded: int
    failed: int
    snapshots: int
    rows_read: int
    lost_commits: int
    late: int
    max_late_s: float
    errors: tuple[str, ...]

    @property
    def rows_lost(self) -> int:
        """Rows that commits reported as committed but the table does not hold."""
        return ROWS_PER_COMMIT * self.succeeded - self.rows_read


def worker_rows(worker: int) -> pa.Table:
    """Ten rows no other worker writes, so every commit's rows can be found afterwards."""
    start = worker * ROWS_PER_COMMIT
    ids = list(range(start, start + ROWS_PER_COMMIT))
    return pa.table({"id": ids, "v": [f"w{worker}"] * ROWS_PER_COMMIT}, schema=SCHEMA)


def _warm_up() -> None:
    """Import the heavy modules in each pool process before the first timed trial."""
    logging.getLogger("pypaimon").setLevel(logging.ERROR)
    logging.getLogger("dagster_paimon").setLevel(logging.ERROR)
    import pypaimon.manifest.schema.manifest_entry  # noqa: F401

    import dagster_paimon.commit.producer  # noqa: F401


def _ready(_: int) -> None:
    """Hold a pool process briefly, so that every process has run its initializer."""
    time.sleep(0.5)


def _sleep_until(start_at: float) -> float:
    """Wait for the common start time; return how late we already were (0 if on time)."""
    delay = start_at - time.time()
    if delay > 0:
        time.sleep(delay)
        return 0.0
    return -delay


def _commit_pypaimon(table, worker: int, start_at: float) -> float:
    """pypaimon's own batch write + commit, the commit delayed until the common start."""
    builder = table.new_batch_write_builder()
    writer, committer = builder.new_write(), builder.new_commit()
    try:
        writer.write_arrow(worker_rows(worker))
        messages = writer.prepare_commit()
        late = _sleep_until(start_at)
        committer.commit(messages)
        return late
    finally:
        writer.close()
        committer.close()


def _commit_ours(table, worker: int, start_at: float) -> float:
    """pypaimon's writer for the data files, our create-if-absent snapshot commit for the rest."""
    from dagster_paimon.commit.changes import BucketChange
    from dagster_paimon.commit.producers import AppendProducer
    from dagster_paimon.partition import Partition

    writer = table.new_batch_write_builder().new_write()
    try:
        writer.write_arrow(worker_rows(worker))
        messages = writer.prepare_commit()
    finally:
        writer.close()
    fields = tuple(table.partition_keys_fields)
    changes = [
        BucketChange(
            Partition(tuple(m.partition), fields), m.bucket, BUCKETS, added=tuple(m.new_files)
        )
        for m in messages
    ]
    producer = AppendProducer(table, changes, commit_user=f"race-{worker}", identifier=worker)
    late = _sleep_until(start_at)
    producer.commit()
    return late


def commit_worker(
    uri: str, options: dict[str, str], committer: str, worker: int, start_at: float
) -> WorkerResult:
    """One process: open the table, write, wait for the start, commit; never raise."""
    try:
        table = open_table(uri, IDENTIFIER, options)
        commit = _commit_pypaimon if committer == "pypaimon" else _commit_ours
        late = commit(table, worker, start_at)
    except Exception as e:
        return WorkerResult(worker, False, f"{type(e).__name__}: {e}"[:200], 0.0)
    return WorkerResult(worker, True, "", late)


def read_back(uri: str, options: dict[str, str]) -> tuple[int, set[int]]:
    """The latest snapshot id and the distinct ids a fresh reader sees."""
    table = open_table(uri, IDENTIFIER, options)
    latest = table.snapshot_manager().get_latest_snapshot()
    if latest is None:
        return 0, set()
    builder = table.new_read_builder()
    data = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return latest.id, set(data.column("id").to_pylist())


def run_trial(server: S3Server, pool, committer: str, processes: int, lead_s: float) -> TrialResult:
    """A fresh table in a fresh bucket, N concurrent commits, then count what survived."""
    uri = f"s3://{server.create_bucket('race')}/warehouse"
    options = server.catalog_options()
    create_table(uri, TableSpec("bench", "race", SCHEMA, ("id",), BUCKETS), options)
    start_at = time.time() + lead_s
    results: list[WorkerResult] = pool.starmap(
        commit_worker, [(uri, options, committer, w, start_at) for w in range(processes)]
    )
    snapshots, ids = read_back(uri, options)
    ok = [r for r in results if r.ok]
    lost = [r for r in ok if not set(worker_rows(r.worker).column("id").to_pylist()) <= ids]
    return TrialResult(
        committer=committer,
        succeeded=len(ok),
        failed=len(results) - len(ok),
        snapshots=snapshots,
        rows_read=len(ids),
        lost_commits=len(lost),
        late=sum(r.late_s > 0 for r in ok),
        max_late_s=max((r.late_s for r in ok), default=0.0),
        errors=tuple(sorted({r.error for r in results if not r.ok})),
    )


def print_trial(trial: int, r: TrialResult) -> None:
    """One result line per trial and committer."""
    late = f", {r.late} late to the start (up to {r.max_late_s:.2f} s)" if r.late else ""
    print(
        f"trial {trial} {r.committer:>14}: {r.succeeded} ok / {r.failed} failed commits, "
        f"{r.snapshots} snapshots, {r.rows_read} rows read, "
        f"{r.lost_commits} lost commits, {r.rows_lost} rows lost{late}"
    )
    for error in r.errors:
        print(f"    error: {error}")


def print_summary(results: list[TrialResult], processes: int) -> None:
    """Totals per committer over all trials."""
    print("\nsummary")
    for committer in COMMITTERS:
        mine = [r for r in results if r.committer == committer]
        print(
            f"  {committer:>14}: {sum(r.succeeded for r in mine)}/{processes * len(mine)} commits "
            f"reported success, {sum(r.lost_commits for r in mine)} of them lost, "
            f"{sum(r.rows_lost for r in mine)} rows lost, "
            f"{sum(r.failed for r in mine)} commits raised"
        )
    print(
        "\nwhy: pypaimon creates snapshot-N with 'exists? then write temp + rename'; on S3 rename "
        "is copy + delete, so two committers can both see snapshot-N absent, both copy onto it and "
        "both return success - the last copy wins and the other commit's rows vanish. A PUT with "
        "If-None-Match: * lets S3 itself refuse the second creator, which then retries as N+1."
    )


def main() -> None:
    """Start moto once, race both committers for each trial, print per-trial lines and totals."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument(
        "--lead", type=float, default=2.0, help="seconds from dispatch to the common commit start"
    )
    args = parser.parse_args()
    logging.getLogger("pypaimon").setLevel(logging.ERROR)
    started = time.perf_counter()
    results: list[TrialResult] = []
    context = multiprocessing.get_context("spawn")
    with moto_server() as server, context.Pool(args.processes, initializer=_warm_up) as pool:
        pool.map(_ready, range(args.processes), chunksize=1)
        print(f"moto S3 at {server.endpoint}, {args.processes} processes, {args.trials} trials")
        for trial in range(1, args.trials + 1):
            for committer in COMMITTERS:
                result = run_trial(server, pool, committer, args.processes, args.lead)
                results.append(result)
                print_trial(trial, result)
    print_summary(results, args.processes)
    print(f"\ntotal {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
