"""pyarrow's ORC writer run one stripe per thread, the stripes stitched in order into one file.

Each stripe (about STRIPE_BYTES of Arrow data) is a one-stripe ORC file a thread encodes in
memory while the next stripe is fed; at most ENCODERS stripes are in flight, so memory stays
bounded at that many encoded stripes. A finished stripe is copied into the output in order;
closing writes the tail. pyarrow releases the GIL while it encodes.

Top-level DECIMAL(p<=18) columns are encoded by `decimals` (numpy) instead: ORC C++ spends
more on each of them than on any other column. pyarrow writes an all-null placeholder in their
place and `splice` swaps our streams in, in the same thread, before the stripe is stitched.
The splice reproduces ORC C++'s bytes as the pyarrow releases in SPLICE_PROVEN_PYARROW write
them (tests/io/orc proves each: same types, encodings, DATA bytes, row index and statistics);
under any other pyarrow, pyarrow encodes decimal columns itself, as it does those above 18
digits: the same file, written more slowly.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
from collections import deque
from dataclasses import dataclass
from functools import cache
from typing import Any

import pyarrow as pa
import pyarrow.orc as orc

from dagster_paimon.io.orc.decimals import (
    MAX_PRECISION,
    Summary,
    decimal_type,
    encoded_decimal,
)
from dagster_paimon.io.orc.proto import decode, first_bytes, first_int, packed
from dagster_paimon.io.orc.splice import Swap, spliced
from dagster_paimon.io.orc.stats import FileStatistics
from dagster_paimon.io.orc.tail import (
    FOOTER_ROW_INDEX_STRIDE,
    FOOTER_ROWS,
    FOOTER_STATISTICS,
    FOOTER_STRIPES,
    FOOTER_TYPES,
    MAGIC,
    Tail,
    moved_stripe,
    read_tail,
    write_tail,
)

log = logging.getLogger(__name__)

# pyarrow releases whose ORC output the decimal splice is proven to reproduce (tests/io/orc run
# under each, the splice forced on): the locked one and every other release pyproject.toml
# allows. A release not listed (a newer pyarrow) writes its decimal columns itself.
SPLICE_PROVEN_PYARROW = frozenset({"17.0.0", "18.0.0", "18.1.0", "19.0.1"})

# Arrow bytes per stripe: small enough that two stripes encode at once even in small files
# (16 MB encodes fastest on 2 cores; 64 MB, ORC's default stripe size, counts encoded bytes)
STRIPE_BYTES = 16 * 1024 * 1024
ENCODERS = 2  # stripes encoded at once
QUEUE_BATCHES = 2  # batches waiting for a stripe's encoder
BATCH_ROWS = 8 * 1024  # rows ORC converts at once: fewer page faults than 64k, fewer calls than 1k
PLACEHOLDER = pa.int8()  # what pyarrow writes, all null, where a decimal column goes
TYPE_SUBTYPES = 2  # Type.subtypes: a struct's field column ids


@dataclass(frozen=True)
class _Decimal:
    """A top-level DECIMAL(p<=18) field, encoded by us into a placeholder pyarrow writes."""

    field: int
    precision: int
    scale: int


class _Stripe:
    """Batches one thread encodes into a one-stripe ORC file in memory."""

    def __init__(self, compression: str, decimals: list[_Decimal]):
        self.compression = compression
        self.decimals = decimals
        self.kept: dict[int, list[pa.Array]] = {d.field: [] for d in decimals}
        self.batches: queue.Queue[pa.Table | None] = queue.Queue(maxsize=QUEUE_BATCHES)
        self.arrow_bytes = 0
        self.encoded: pa.Buffer | bytes | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._encode, name="orc-stripe-encoder", daemon=True)
        self.thread.start()

    def _encode(self) -> None:
        """Encode until the end marker; after a failure, keep taking batches so no feeder blocks."""
        sink = pa.BufferOutputStream()
        sealed = False
        try:
            writer = orc.ORCWriter(
                sink,
                compression=self.compression,
                batch_size=BATCH_ROWS,
                compression_strategy="speed",
            )
            while (table := self.batches.get()) is not None:
                writer.write(table)
            sealed = True
            writer.close()
            self.encoded = self._with_decimals(sink.getvalue())
        except BaseException as e:  # re-raised by the feeding thread
            self.error = e
            while not sealed and self.batches.get() is not None:
                pass

    def _with_decimals(self, encoded: pa.Buffer) -> pa.Buffer | bytes:
        """The stripe with our encoding of each decimal column in place of its placeholder."""
        if not self.decimals:
            return encoded
        view = memoryview(encoded).cast("B")
        tail = read_tail(view)
        fields = packed(first_bytes(decode(tail.repeated(FOOTER_TYPES)[0]), TYPE_SUBTYPES))
        stride = first_int(tail.footer, FOOTER_ROW_INDEX_STRIDE)
        swaps = {}
        for d in self.decimals:
            column = None
            if tail.repeated(FOOTER_STRIPES):
                array = pa.concat_arrays(self.kept[d.field])
                column = encoded_decimal(array, d.scale, tail.codec, stride)
            statistics = column.statistics if column else Summary(0, False).statistics(d.scale)
            swaps[fields[d.field]] = Swap(decimal_type(d.precision, d.scale), column, statistics)
        return spliced(view, tail, swaps)

    def put(self, table: pa.Table) -> None:
        """Queue rows for this stripe: decimal columns kept, placeholders in their place."""
        self.arrow_bytes += table.nbytes
        for d in self.decimals:
            self.kept[d.field].append(table.column(d.field).combine_chunks())
            table = table.set_column(
                d.field, table.field(d.field).name, pa.nulls(table.num_rows, PLACEHOLDER)
            )
        self.batches.put(table)

    def seal(self) -> None:
        """No more rows: the thread finishes the stripe."""
        self.batches.put(None)

    def result(self) -> pa.Buffer | bytes:
        """The encoded one-stripe file, once its thread is done; its error if it failed."""
        self.thread.join()
        if self.error is not None:
            raise self.error
        assert self.encoded is not None
        return self.encoded


def splice_proven(version: str | None = None) -> bool:
    """Whether the decimal splice was proven on this pyarrow release (default: the installed
    one): whether StripedOrcWriter encodes DECIMAL(p<=18) columns itself."""
    return (pa.__version__ if version is None else version) in SPLICE_PROVEN_PYARROW


@cache
def _unproven_once(version: str) -> None:
    """Say once per process that decimal columns go to pyarrow, and why."""
    log.info(
        "pyarrow %s is not among the releases the ORC decimal splice is proven on (%s): "
        "pyarrow encodes ORC decimal columns itself (the same file, slower to write)",
        version,
        ", ".join(sorted(SPLICE_PROVEN_PYARROW)),
    )


def spliced_decimals(schema: pa.Schema) -> list[_Decimal]:
    """The fields StripedOrcWriter encodes itself: top-level DECIMAL(p<=18), on a pyarrow the
    splice is proven on; none otherwise."""
    found = [
        _Decimal(i, f.type.precision, f.type.scale)
        for i, f in enumerate(schema)
        if pa.types.is_decimal128(f.type) and f.type.precision <= MAX_PRECISION
    ]
    if found and not splice_proven():
        _unproven_once(pa.__version__)
        return []
    return found


class StripedOrcWriter:
    """An ORC file whose stripes are encoded in parallel and stitched in order."""

    def __init__(
        self,
        stream: Any,
        schema: pa.Schema,
        compression: str,
        stripe_bytes: int | None = None,
    ):
        self.stream, self.schema, self.compression = stream, schema, compression
        self.stripe_bytes = STRIPE_BYTES if stripe_bytes is None else stripe_bytes
        self.decimals = spliced_decimals(schema)
        self._open: _Stripe | None = None
        self._sealed: deque[_Stripe] = deque()
        self._first: Tail | None = None
        self._stripes: list[bytes] = []
        self._stripe_stats: list[bytes] = []
        self._stats: FileStatistics | None = None
        self._rows = 0
        self._length = len(MAGIC)
        stream.write(MAGIC)

    def write_batch(self, batch: pa.RecordBatch) -> None:
        """Append rows to the open stripe, sealing each stripe once it holds a stripe's worth."""
        row_bytes = max(batch.nbytes / max(batch.num_rows, 1), 1.0)
        offset = 0
        while offset < batch.num_rows:
            if self._open is None:
                self._open = _Stripe(self.compression, self.decimals)
            self._raise_failed()
            room = math.ceil((self.stripe_bytes - self._open.arrow_bytes) / row_bytes)
            part = batch.slice(offset, max(1, room))
            self._open.put(pa.Table.from_batches([_unsliced_structs(part)]))
            offset += part.num_rows
            if self._open.arrow_bytes >= self.stripe_bytes:
                self._seal()

    def close(self) -> None:
        """Finish every stripe, copy them in order and write the tail."""
        if self._open is None and not self._sealed and self._first is None:
            self._open = _Stripe(self.compression, self.decimals)
            self._open.put(self.schema.empty_table())  # an empty file still has its schema
        if self._open is not None:
            self._seal()
        while self._sealed:
            self._append(self._sealed.popleft())
        assert self._first is not None and self._stats is not None
        self.stream.write(
            write_tail(
                self._first,
                self._length - len(MAGIC),
                self._stripes,
                self._rows,
                self._stripe_stats,
                self._stats.encoded(),
            )
        )

    def _raise_failed(self) -> None:
        """Surface an encoder's failure to the feeding thread."""
        for stripe in (*self._sealed, self._open):
            if stripe is not None and stripe.error is not None:
                raise stripe.error

    def _seal(self) -> None:
        """Close the open stripe; copy out the oldest ones while ENCODERS are in flight."""
        stripe, self._open = self._open, None
        assert stripe is not None
        stripe.seal()
        self._sealed.append(stripe)
        while len(self._sealed) >= ENCODERS:
            self._append(self._sealed.popleft())

    def _append(self, stripe: _Stripe) -> None:
        """Copy a finished stripe's stripes into the file and fold in its tail."""
        try:
            data = stripe.result()
        except BaseException:
            for other in self._sealed:  # let the other encoders finish before failing
                other.thread.join()
            raise
        view = memoryview(data).cast("B")
        tail = read_tail(view)
        if self._first is None:
            self._first = tail
            self._stats = FileStatistics(tail.repeated(FOOTER_TYPES))
        assert self._stats is not None
        shift = self._length - len(MAGIC)
        self.stream.write(view[len(MAGIC) : len(MAGIC) + tail.stripes_length])
        self._length += tail.stripes_length
        self._stripes += [moved_stripe(s, shift) for s in tail.repeated(FOOTER_STRIPES)]
        self._stripe_stats += tail.stripe_statistics
        self._stats.add(tail.repeated(FOOTER_STATISTICS))
        self._rows += first_int(tail.footer, FOOTER_ROWS)


def _unsliced_structs(batch: pa.RecordBatch) -> pa.RecordBatch:
    """A slice's struct columns at offset 0: pyarrow 19's ORC writer misplaces their nulls."""
    columns = [
        pa.concat_arrays([c]) if c.offset and _has_struct(c.type) else c for c in batch.columns
    ]
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


def _has_struct(arrow_type: pa.DataType) -> bool:
    """Whether a type is or holds a struct."""
    if pa.types.is_struct(arrow_type):
        return True
    return any(_has_struct(arrow_type.field(i).type) for i in range(arrow_type.num_fields))
