"""Compaction tasks on Spark executors: the driver plans and commits, executors rewrite buckets.

Tasks travel as a DataFrame of pickled descriptors, one row and one Spark partition each, run by
`mapInArrow`: the same path on classic sessions and on Spark Connect, which has no RDDs.
"""

from __future__ import annotations

import logging
import pickle
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pypaimon.table.file_store_table import FileStoreTable
from pyspark.sql import SparkSession

from dagster_paimon.lsm.compaction import COMPACTION, Work
from dagster_paimon.table import TableRef

log = logging.getLogger(__name__)

Outcome = tuple[Any, BaseException | None]
DESCRIPTORS = "ordinal int, payload binary"


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


def run_descriptors(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Executor side of `mapInArrow`: each (ordinal, pickled task) row gives (ordinal, outcome)."""
    for batch in batches:
        outcomes = [
            pickle.dumps(run_remote(pickle.loads(payload)))
            for payload in batch.column("payload").to_pylist()
        ]
        yield pa.RecordBatch.from_arrays(
            [batch.column("ordinal"), pa.array(outcomes, pa.binary())], names=["ordinal", "payload"]
        )


class SparkExecutor:
    """A TaskExecutor that runs one Spark task per task; every task or none takes effect.

    Works on classic and Spark Connect sessions. Executors must reach the warehouse (a shared
    path or an object store). Files of task attempts Spark abandons (lost executors,
    speculation) are never committed; orphan removal reclaims them.
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
        descriptors = [(i, pickle.dumps((ref, work, t))) for i, t in enumerate(tasks)]
        # A range over distinct ordinals samples every row: exactly one task per partition.
        frame = self.spark.createDataFrame(descriptors, DESCRIPTORS).repartitionByRange(
            len(tasks), "ordinal"
        )
        tag = f"compact {ref.identifier}: {len(tasks)} {work.noun}".replace(",", " ")
        self.spark.addTag(tag)  # names the jobs in the UI, on classic and Connect alike
        try:
            rows = frame.mapInArrow(run_descriptors, DESCRIPTORS).collect()
        finally:
            self.spark.removeTag(tag)
        outcomes: list[Outcome] = [
            pickle.loads(r.payload) for r in sorted(rows, key=lambda r: r.ordinal)
        ]
        results = [r for r, _ in outcomes if r is not None]
        failures = [e for _, e in outcomes if e is not None]
        if failures:
            work.discard(table, results)
            raise failures[0]
        log.info("ran %d %s on Spark executors", len(results), work.noun)
        return results
