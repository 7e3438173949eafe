"""Run compaction work: a thread pool in this process by default; Spark plugs in alike."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from dagster_paimon.commit.changes import discard_all
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.lsm.compaction.plan import TaskPlan
from dagster_paimon.lsm.compaction.task import CompactResult, run_task
from dagster_paimon.table import TableRef

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Work(Generic[T, R]):
    """One kind of independent task: how a task runs, and how finished ones are undone.

    Both functions live at module level, so Spark pickles them by reference.
    """

    noun: str
    run: Callable[[FileStoreTable, T], R]
    discard: Callable[[FileStoreTable, Sequence[R]], None]


def discard_results(table: FileStoreTable, results: Sequence[CompactResult]) -> None:
    """Delete the new files of tasks that succeeded when a sibling task failed."""
    discard_all(table, [r.change for r in results])


COMPACTION: Work[TaskPlan, CompactResult] = Work("buckets", run_task, discard_results)


class TaskExecutor(Protocol):
    """Runs every task or none: on failure no task's files are left behind."""

    def run(
        self,
        table: FileStoreTable,
        ref: TableRef,
        tasks: Sequence[Any],
        work: Work[Any, Any] = COMPACTION,
    ) -> list[Any]:
        """Results in task order."""
        ...


class LocalExecutor:
    """Threads in this process; Arrow and parquet release the GIL for the heavy work."""

    def __init__(self, max_workers: int | None = None):
        self.max_workers = max_workers or os.cpu_count() or 1

    def run(
        self,
        table: FileStoreTable,
        ref: TableRef,
        tasks: Sequence[T],
        # mypy cannot check a default against a generic parameter (T, R are TaskPlan and
        # CompactResult exactly when the default is used)
        work: Work[T, R] = COMPACTION,  # type: ignore[assignment]
    ) -> list[R]:
        """Run tasks on the pool, logging progress as they finish."""
        if not tasks:
            return []
        results: dict[int, R] = {}
        errors: list[BaseException] = []
        with ThreadPoolExecutor(max_workers=min(self.max_workers, len(tasks))) as pool:
            futures = {pool.submit(work.run, table, task): i for i, task in enumerate(tasks)}
            for done, future in enumerate(as_completed(futures), start=1):
                try:
                    results[futures[future]] = future.result()
                except BaseException as e:
                    errors.append(e)
                    for other in futures:
                        other.cancel()
                    continue
                log.info("compaction progress: %d/%d %s done", done, len(tasks), work.noun)
        if errors:
            work.discard(table, list(results.values()))
            raise errors[0]
        return [results[i] for i in range(len(tasks))]
