"""Compaction tasks on Spark executors: the driver plans and commits, executors rewrite buckets."""

from __future__ import annotations

import logging
import pickle
from collections.abc import Sequence
from typing import Any

from pypaimon.table.file_store_table import FileStoreTable
from pyspark.sql import SparkSession

from dagster_paimon.lsm.compaction import COMPACTION, Work
from dagster_paimon.table import TableRef

log = logging.getLogger(__name__)

Outcome = tuple[Any, BaseException | None]


def _portable(error: BaseException) -> BaseException:
    """The error itself if it survives pickling back to the driver, else its text."""
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:
        return RuntimeError(f"{type(error).__name__}: {error}")
    return error


def run_remote(item: tuple[TableRef, Work[Any, Any], Any]) -> Outcome:
    """Executor side: reopen the table and run one task; an error is returned, not raised.

    Returning errors lets the driver see every task's outcome, so it can delete the files of
    the tasks that did succeed; a failed task already removed its own files.
    """
    ref, work, task = item
    try:
        return work.run(ref.open(), task), None
    except Exception as e:
        log.exception("compaction task of %s failed", work.noun)
        return None, _portable(e)


class SparkExecutor:
    """A TaskExecutor that runs one Spark task per task; every task or none takes effect.

    Executors must reach the warehouse (a shared path or an object store). Files of task
    attempts Spark abandons (lost executors, speculation) are never committed; orphan removal
    reclaims them.
    """

    def __init__(self, spark: SparkSession):
        self.spark = spark

    def run(
        self,
        table: FileStoreTable,
        ref: TableRef,
        tasks: Sequence[Any],
        work: Work[Any, Any] = COMPACTION,
    ) -> list[Any]:
        """Results in task order; on any task error the others' new files are deleted."""
        if not tasks:
            return []
        context = self.spark.sparkContext
        context.setJobDescription(f"compact {ref.identifier}: {len(tasks)} {work.noun}")
        try:
            items = [(ref, work, t) for t in tasks]
            outcomes: list[Outcome] = (
                context.parallelize(items, len(tasks)).map(run_remote).collect()
            )
        finally:
            context.setJobDescription(None)
        results = [r for r, _ in outcomes if r is not None]
        failures = [e for _, e in outcomes if e is not None]
        if failures:
            work.discard(table, results)
            raise failures[0]
        log.info("ran %d %s on Spark executors", len(results), work.noun)
        return results
