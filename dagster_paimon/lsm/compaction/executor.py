"""Run compaction tasks: a thread pool in this process by default; Spark plugs in alike."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Protocol

from pypaimon.table.file_store_table import FileStoreTable

from dagster_paimon.commit.changes import discard_all
from dagster_paimon.lsm.compaction.plan import TaskPlan
from dagster_paimon.lsm.compaction.task import CompactResult, run_task
from dagster_paimon.table import TableRef

log = logging.getLogger(__name__)


class TaskExecutor(Protocol):
    """Runs every task or none: on failure no task's files are left behind."""

    def run(
        self, table: FileStoreTable, ref: TableRef, tasks: Sequence[TaskPlan]
    ) -> list[CompactResult]:
        """Results in task order."""
        ...


def discard_results(table: FileStoreTable, results: Sequence[CompactResult]) -> None:
    """Delete the new files of tasks that succeeded when a sibling task failed."""
    discard_all(table, [r.change for r in results])


class LocalExecutor:
    """Threads in this process; Arrow and parquet release the GIL for the heavy work."""

    def __init__(self, max_workers: int | None = None):
        self.max_workers = max_workers or os.cpu_count() or 1

    def run(
        self, table: FileStoreTable, ref: TableRef, tasks: Sequence[TaskPlan]
    ) -> list[CompactResult]:
        """Run tasks on the pool, logging progress per bucket as they finish."""
        if not tasks:
            return []
        results: dict[int, CompactResult] = {}
        errors: list[BaseException] = []
        with ThreadPoolExecutor(max_workers=min(self.max_workers, len(tasks))) as pool:
            futures = {pool.submit(run_task, table, task): i for i, task in enumerate(tasks)}
            for done, future in enumerate(as_completed(futures), start=1):
                try:
                    results[futures[future]] = future.result()
                except BaseException as e:
                    errors.append(e)
                    for other in futures:
                        other.cancel()
                    continue
                log.info("compaction progress: %d/%d buckets done", done, len(tasks))
        if errors:
            discard_results(table, list(results.values()))
            raise errors[0]
        return [results[i] for i in range(len(tasks))]
