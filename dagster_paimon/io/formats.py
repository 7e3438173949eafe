"""Data file formats: Parquet, ORC and Avro, read in bounded batches and written column-wise.

A file's format is its extension (a table may hold files of a format it no longer writes);
the table's `file.format` (per level: `file.format.per.level`; for changelogs
`changelog-file.format`) decides what is written. Parquet and ORC are read and written by
pyarrow (ORC by its own writer, as pypaimon writes it); ORC columns pyarrow cannot write (TIME)
are refused before anything is written. Avro is read and written by the `avro` package, laid
out as Paimon's Java format writes it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.orc as orc
import pyarrow.parquet as pq

from dagster_paimon.errors import InvalidOptionError
from dagster_paimon.format.schema import TableSchema
from dagster_paimon.io.avro.checks import check_avro
from dagster_paimon.io.avro.codecs import avro_codec, avro_level
from dagster_paimon.io.avro.reader import AvroReader
from dagster_paimon.io.avro.writer import AvroWriter
from dagster_paimon.options import (
    CHANGELOG_FILE_FORMAT,
    FILE_FORMAT,
    FILE_FORMAT_PER_LEVEL,
    written_formats,
)

PARQUET, ORC, AVRO = "parquet", "orc", "avro"
WRITABLE = (PARQUET, ORC, AVRO)
READ_BUFFER_BYTES = 1 << 20


def format_of(file_name: str) -> str:
    """A data file's format, from its extension; unknown ones are refused."""
    extension = file_name.rsplit(".", 1)[-1].lower()
    if extension in WRITABLE:
        return extension
    raise InvalidOptionError(
        f"data file {file_name} is {extension!r}: dagster-paimon reads parquet, orc and avro "
        "data files only"
    )


def check_writable_format(schema: TableSchema) -> None:
    """Every format the table's writers write (default, per level, changelog) is one we write,
    for every column type it has."""
    for fmt in sorted(written_formats(schema.options)):
        if fmt not in WRITABLE:
            raise InvalidOptionError(
                f"table options '{FILE_FORMAT}', '{FILE_FORMAT_PER_LEVEL}' or "
                f"'{CHANGELOG_FILE_FORMAT}' name {fmt!r}: dagster-paimon writes parquet, orc and "
                "avro data files only"
            )
        if fmt == ORC:
            times = [f.name for f in schema.fields if str(f.type).upper().startswith("TIME(")]
            if times:
                raise InvalidOptionError(
                    f"the table writes 'orc' files and columns {times} are TIME: pyarrow "
                    "cannot write them as Paimon's ORC writer does (int milliseconds)"
                )
        if fmt == AVRO:
            check_avro(schema)


class FileReader(Protocol):
    """One data file open for reading."""

    names: list[str]

    def batches(self, batch_rows: int, columns: Sequence[str]) -> Iterator[pa.RecordBatch]:
        """Every row in order, in batches of at most batch_rows."""
        ...

    def group_rows(self) -> list[int]:
        """Rows of each independently readable group (row group, stripe, block)."""
        ...

    def read_group(self, index: int, columns: Sequence[str]) -> pa.Table:
        """One group's rows."""
        ...


class _Parquet:
    """A Parquet file: row groups."""

    def __init__(self, stream: Any):
        self.file = pq.ParquetFile(stream, buffer_size=READ_BUFFER_BYTES, pre_buffer=False)
        self.names = self.file.schema_arrow.names

    def batches(self, batch_rows: int, columns: Sequence[str]) -> Iterator[pa.RecordBatch]:
        """Row groups streamed in batches; a file of at most one batch is read whole (a third
        faster for the small files compaction gathers, and no more memory), on this thread:
        its column chunks are too small to pay for handing each to Arrow's pool."""
        if self.file.metadata.num_rows <= batch_rows:
            table = self.file.read(columns=list(columns), use_threads=False)
            yield from table.combine_chunks().to_batches()
        else:
            yield from self.file.iter_batches(batch_size=batch_rows, columns=list(columns))

    def group_rows(self) -> list[int]:
        """Rows per row group."""
        meta = self.file.metadata
        return [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]

    def read_group(self, index: int, columns: Sequence[str]) -> pa.Table:
        """One row group."""
        return self.file.read_row_groups([index], columns=list(columns))


class _Orc:
    """An ORC file: stripes."""

    def __init__(self, stream: Any):
        self.stream = stream
        self.file = orc.ORCFile(stream)
        self.names = self.file.schema.names

    def batches(self, batch_rows: int, columns: Sequence[str]) -> Iterator[pa.RecordBatch]:
        """Decoded batch by batch (a whole stripe at once would hold all its rows in memory)."""
        fragment = ds.OrcFileFormat().make_fragment(self.stream)
        yield from fragment.to_batches(
            batch_size=batch_rows, columns=list(columns), use_threads=False, batch_readahead=0
        )

    def group_rows(self) -> list[int]:
        """Rows per stripe (read with one column)."""
        first = self.names[:1]
        return [self.file.read_stripe(i, columns=first).num_rows for i in range(self.file.nstripes)]

    def read_group(self, index: int, columns: Sequence[str]) -> pa.Table:
        """One stripe."""
        return pa.Table.from_batches([self.file.read_stripe(index, columns=list(columns))])


def open_reader(stream: Any, file_name: str) -> FileReader:
    """A reader of a data file by its format."""
    fmt = format_of(file_name)
    if fmt == AVRO:
        return AvroReader(stream, READ_BUFFER_BYTES)
    return _Orc(stream) if fmt == ORC else _Parquet(stream)


class _OrcWriter:
    """An ORC file written by pyarrow's own writer."""

    def __init__(self, stream: Any, schema: pa.Schema, compression: str):
        self.schema = schema
        self.empty = True
        self.writer = orc.ORCWriter(stream, compression=compression)

    def write_batch(self, batch: pa.RecordBatch) -> None:
        """Append rows."""
        self.writer.write(pa.Table.from_batches([_unsliced_structs(batch)]))
        self.empty = False

    def close(self) -> None:
        """Finish the file; one without rows still gets its schema (pyarrow writes nothing)."""
        if self.empty:
            self.writer.write(self.schema.empty_table())
        self.writer.close()


def _unsliced_structs(batch: pa.RecordBatch) -> pa.RecordBatch:
    """A slice's struct columns at offset 0: pyarrow's ORC writer (19 included) writes a sliced
    struct column's rows from its start, ignoring the offset."""
    columns = [
        pa.concat_arrays([c]) if c.offset and _has_struct(c.type) else c for c in batch.columns
    ]
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


def _has_struct(arrow_type: pa.DataType) -> bool:
    """Whether a type is or holds a struct."""
    if pa.types.is_struct(arrow_type):
        return True
    return any(_has_struct(arrow_type.field(i).type) for i in range(arrow_type.num_fields))


class FileWriter(Protocol):
    """One data file being written."""

    def write_batch(self, batch: pa.RecordBatch) -> None:
        """Append rows."""
        ...

    def close(self) -> None:
        """Finish the file (the stream stays open)."""
        ...


def open_writer(
    stream: Any,
    schema: pa.Schema,
    fmt: str,
    compression: str,
    options: Mapping[str, Any],
) -> FileWriter:
    """A writer of the table's format; `options` are pyarrow's Parquet writer options, whose
    compression_level is also the zstd level of Avro."""
    if fmt == AVRO:
        return AvroWriter(stream, schema, avro_codec(compression), avro_level(compression, options))
    if fmt == ORC:
        name = str(compression).lower()
        return _OrcWriter(stream, schema, "uncompressed" if name == "none" else name)
    return pq.ParquetWriter(
        stream, schema, compression=compression, store_decimal_as_integer=True, **options
    )
