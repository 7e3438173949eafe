"""Compaction tasks on Spark executors: the driver plans and commits, executors rewrite buckets."""

from __future__ import annotations

import logging
import pickle
from collections.abc import Sequence

from pypaimon.table.file_store_table import FileStoreTable
from pyspark.sql import SparkSession

from dagster_paimon.lsm.compaction import CompactResult, TaskPlan, discard_results, run_task
from dagster_paimon.table import TableRef

log = logging.getLogger(__name__)

Outcome = tuple[CompactResult | None, BaseException | None]


def _portable(error: BaseException) -> BaseException:
    """The error itself if it survives pickling back to the driver, else its text."""
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:
        return RuntimeError(f"{type(error).__name__}: {error}")
    return error


def run_remote(item: tuple[TableRef, TaskPlan]) -> Outcome:
    """Executor side: reopen the table and run one task; an error is returned, not raised.

    Returning errors lets the driver see every task's outcome, so it can delete the files of
    the tasks that did succeed; run_task already removed the failed task's own files.
    """
    ref, task = item
    try:
        return run_task(ref.open(), task), None
    except Exception as e:
        log.exception("compaction of bucket %d failed", task.bucket)
        return None, _portable(e)


class SparkExecutor:
    """A TaskExecutor that runs one Spark task per bucket; every task or none takes effect.

    Executors must reach the warehouse (a shared path or an object store). Files of task
    attempts Spark abandons (lost executors, speculation) are never committed; orphan removal
    reclaims them.
    """

    def __init__(self, spark: SparkSession):
        self.spark = spark

    def run(
        self, table: FileStoreTable, ref: TableRef, tasks: Sequence[TaskPlan]
    ) -> list[CompactResult]:
        """Results in task order; on any task error the others' new files are deleted."""
        if not tasks:
            return []
        context = self.spark.sparkContext
        context.setJobDescription(f"compact {ref.identifier}: {len(tasks)} buckets")
        try:
            outcomes: list[Outcome] = (
                context.parallelize([(ref, t) for t in tasks], len(tasks)).map(run_remote).collect()
            )
        finally:
            context.setJobDescription(None)
        results = [r for r, _ in outcomes if r is not None]
        failures = [e for _, e in outcomes if e is not None]
        if failures:
            discard_results(table, results)
            raise failures[0]
        log.info("compacted %d buckets on Spark executors", len(results))
        return results
