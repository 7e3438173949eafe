"""Compaction tasks on Spark executors: the driver plans and commits, executors rewrite buckets.

Tasks travel as a DataFrame of pickled descriptors, one row and one Spark partition each, run by
`mapInArrow`: the same path on classic sessions and on Spark Connect, which has no RDDs.
"""

from __future__ import annotations

import logging
import pickle
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa

from dagster_paimon.errors import InvalidArgumentError
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.lsm.compaction import COMPACTION, Work
from dagster_paimon.table import TableRef

if TYPE_CHECKING:
    from pyspark.sql import SparkSession  # the adapter imports pyspark only to run on it

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


def outcome_of(call: Callable[[], Any], what: str) -> Outcome:
    """Executor side: the call's result, or its error returned rather than raised.

    Returning errors lets the driver see every task's outcome, so it can delete the files of
    the tasks that did succeed; a failed task already removed its own files.
    """
    try:
        return call(), None
    except Exception as e:
        log.exception("%s failed", what)
        return None, _portable(e)


def split_outcomes(outcomes: Iterable[Outcome]) -> tuple[list[Any], list[BaseException]]:
    """The results of the tasks that succeeded and the errors of those that failed."""
    done = list(outcomes)
    return [r for r, _ in done if r is not None], [e for _, e in done if e is not None]


def run_remote(item: tuple[TableRef, Work[Any, Any], Any]) -> Outcome:
    """Executor side: reopen the table and run one compaction task."""
    ref, work, task = item
    return outcome_of(lambda: work.run(ref.open(), task), f"compaction task of {work.noun}")


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
        frame = self.spark.createDataFrame(descriptors, DESCRIPTORS).repartitionById(
            len(tasks), "ordinal"
        )
        tag = f"compact {ref.identifier}: {len(tasks)} {work.noun}".replace(",", " ")
        self.spark.addTag(tag)  # names the jobs in the UI, on classic and Connect alike
        try:
            rows = frame.mapInArrow(run_descriptors, DESCRIPTORS).collect()
        finally:
            self.spark.removeTag(tag)
        results, failures = split_outcomes(
            pickle.loads(r.payload) for r in sorted(rows, key=lambda r: r.ordinal)
        )
        if failures:
            work.discard(table, results)
            raise failures[0]
        log.info("ran %d %s on Spark executors", len(results), work.noun)
        return results


def executor_named(
    name: str, session: Callable[[], SparkSession]
) -> SparkExecutor | Literal["local"]:
    """The door's `executor` for its declared value (operations.py): "local", or rewrite
    tasks on the Spark session `session()` returns, started only then. The one place an
    adapter turns `executor: spark` into Spark work."""
    if name == "spark":
        return SparkExecutor(session())
    if name != "local":
        raise InvalidArgumentError(f"executor must be 'local' or 'spark', got {name!r}")
    return "local"
