"""write_all: merging overlaps writing through a bounded queue, and any failure aborts."""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest

from dagster_paimon.io.write import PIPELINE_DEPTH, write_all


class Recorder:
    """A BatchWriter keeping what it got; optionally failing on the n-th write."""

    def __init__(self, fail_at: int | None = None):
        self.rows: list[int] = []
        self.fail_at = fail_at
        self.aborted = False
        self.finished = False
        self.threads: set[str] = set()

    def write(self, batch: pa.RecordBatch) -> None:
        self.threads.add(threading.current_thread().name)
        if self.fail_at is not None and len(self.rows) == self.fail_at:
            raise OSError("disk full")
        self.rows.extend(batch.column(0).to_pylist())

    def finish(self) -> list[int]:
        self.finished = True
        return self.rows

    def abort(self) -> None:
        self.aborted = True


def batches(count: int):
    """Numbered one-row batches."""
    for i in range(count):
        yield pa.record_batch([pa.array([i])], names=["x"])


def test_every_batch_is_written_in_order_by_the_writer_thread():
    writer = Recorder()
    assert write_all(writer, batches(50)) == list(range(50))
    assert writer.finished and not writer.aborted
    assert writer.threads == {"data-file-writer"}


def test_a_failing_write_aborts_and_stops_the_producer():
    produced = []

    def tracked():
        for batch in batches(1000):
            produced.append(batch)
            yield batch

    writer = Recorder(fail_at=3)
    with pytest.raises(OSError, match="disk full"):
        write_all(writer, tracked())
    assert writer.aborted and not writer.finished
    assert writer.rows == [0, 1, 2]
    assert len(produced) < 1000  # the producer stops soon after, the queue being bounded
    assert len(produced) <= 3 + 1 + PIPELINE_DEPTH + 2


def test_a_failing_producer_aborts():
    def broken():
        yield from batches(5)
        raise ValueError("merge failed")

    writer = Recorder()
    with pytest.raises(ValueError, match="merge failed"):
        write_all(writer, broken())
    assert writer.aborted and not writer.finished
