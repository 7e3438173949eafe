"""Data file formats: Parquet, ORC and Avro, read in bounded batches and written column-wise.

A file's format is its extension (a table may hold files of a format it no longer writes);
the table's `file.format` decides what is written. Parquet and ORC are read and written by
pyarrow; ORC columns pyarrow cannot write (TIME) are refused before anything is written.

Avro files are laid out as Paimon's Java format writes them (`AvroSchemaConverter`,
`FieldWriterFactory`, `AvroFileFormat` of Paimon 2.0): one record
`org.apache.paimon.avro.generated.record`, a nullable field as the union ["null", T] with a
null default, TINYINT and SMALLINT as int, DECIMAL as big-endian two's-complement bytes
(logicalType decimal), DATE as int date, TIME(p<=3) as int time-millis, TIMESTAMP(p) as long
timestamp-millis (p<=3) or timestamp-micros (p<=6), TIMESTAMP_LTZ as local-timestamp-*, ROW as a
nested record `<parent>_<field>`, ARRAY and VECTOR as arrays, MAP with a string key as an Avro
map and any other MAP as an array of key/value records (logicalType map). `file.compression`
picks the codec as Java does: zstd is Avro's zstandard at `file.compression.zstd-level`; the
names Java's Avro knows (null, deflate, snappy, bzip2, xz, zstandard) are used as they are;
none is written uncompressed. Types, column names and codecs Paimon's Avro writer refuses or
encodes differently from what we can write (TIME(p>3), TIMESTAMP(p>6), BLOB, VARIANT, a MAP with
a nullable non-string key, a name that is not an Avro name, lz4 or gzip compression, the
`avro.codec` override) are refused before anything is written.

Avro is encoded with numpy, a batch at a time (no per-row Python): every column becomes its
rows' bytes, and the rows' bytes are interleaved into blocks of about BLOCK_BYTES. It is
decoded a block at a time into Arrow columns of the types the Avro schema names: by polars'
Rust reader when every column is of a primitive type (the block is handed over as a container
of its own, uncompressed, without logical types, which are applied column-wise), else by
fastavro (the block read as one Avro array). read.py casts the columns to the table's KV types
(an Avro int is also a TINYINT or SMALLINT, a timestamp-millis also a TIMESTAMP(0)), so rows
read back equal the Parquet path's, type for type. A block is a group for lookups.
"""

from __future__ import annotations

import bz2
import json
import lzma
import os
import re
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from io import BytesIO
from typing import Any, NamedTuple, Protocol

import cramjam
import fastavro
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
from backports import zstd
from pypaimon.schema.data_types import (
    ArrayType,
    AtomicType,
    DataType,
    MapType,
    RowType,
    VectorType,
)
from pypaimon.schema.table_schema import TableSchema

from dagster_paimon.errors import CorruptMetadataError, InvalidOptionError, SchemaMismatchError
from dagster_paimon.options import FILE_FORMAT, file_format

PARQUET, ORC, AVRO = "parquet", "orc", "avro"
WRITABLE = (PARQUET, ORC, AVRO)
READ_BUFFER_BYTES = 1 << 20

FILE_COMPRESSION = "file.compression"
AVRO_CODEC = "avro.codec"
AVRO_NAMESPACE = "org.apache.paimon.avro.generated"
AVRO_RECORD = "record"
AVRO_MAGIC = b"Obj\x01"
SYNC_BYTES = 16
HEADER_BYTES = 1 << 16
BLOCK_HEAD_BYTES = 20  # a block's row count and size: two longs of at most 10 bytes
BLOCK_BYTES = 1 << 20
FIRST_BLOCK_ROWS = 4096
ZSTANDARD_DEFAULT_LEVEL = 3  # Avro's CodecFactory.DEFAULT_ZSTANDARD_LEVEL, for 'zstandard'


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
    """The table's `file.format` is one we write, for every column type it has."""
    fmt = file_format(schema.options)
    if fmt not in WRITABLE:
        raise InvalidOptionError(
            f"table option '{FILE_FORMAT}' is {fmt!r}: dagster-paimon writes parquet, orc and "
            "avro data files only"
        )
    if fmt == ORC:
        times = [f.name for f in schema.fields if str(f.type).upper().startswith("TIME(")]
        if times:
            raise InvalidOptionError(
                f"table option '{FILE_FORMAT}' is 'orc' and columns {times} are TIME: pyarrow "
                "cannot write them as Paimon's ORC writer does (int milliseconds)"
            )
    if fmt == AVRO:
        _check_avro(schema)


# --- what Avro can hold ---------------------------------------------------------------------

AVRO_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
PLAIN_ATOMIC = re.compile(
    r"BOOLEAN|TINYINT|SMALLINT|INT|INTEGER|BIGINT|FLOAT|DOUBLE|DATE|STRING|BYTES"
    r"|(VAR)?CHAR\(\d+\)|(VAR)?BINARY\(\d+\)|DECIMAL(\(\d+(,\s*\d+)?\))?"
)
STRING_KEY = re.compile(r"STRING|(VAR)?CHAR\(\d+\)")
TIME = re.compile(r"TIME(\((\d+)\))?")
TIMESTAMP = re.compile(r"TIMESTAMP(_LTZ)?(\((\d+)\))?( WITH(OUT)? (LOCAL )?TIME ZONE)?")
MAX_TIME_PRECISION, MAX_TIMESTAMP_PRECISION = 3, 6


def _check_avro(schema: TableSchema) -> None:
    """Refuse what Paimon's Avro writer would refuse or write differently from us."""
    if AVRO_CODEC in schema.options:
        raise InvalidOptionError(
            f"table option '{AVRO_CODEC}' is {schema.options[AVRO_CODEC]!r}: dagster-paimon "
            f"compresses Avro data files as '{FILE_COMPRESSION}' says; unset '{AVRO_CODEC}'"
        )
    avro_codec(schema.options.get(FILE_COMPRESSION, "zstd"))
    for f in schema.fields:
        problem = _avro_problem(f.name, f.type)
        if problem:
            raise InvalidOptionError(
                f"table option '{FILE_FORMAT}' is 'avro' and column {f.name!r} ({f.type}) {problem}"
            )


def _avro_problem(name: str, data_type: DataType) -> str | None:
    """Why a field cannot be written as Paimon's Avro writer writes it, or None."""
    if not AVRO_NAME.fullmatch(name):
        return f"has the name {name!r}, which is not an Avro name (Paimon's Avro writer fails)"
    return _type_problem(data_type)


def _type_problem(data_type: DataType) -> str | None:
    """Why a type has no exact Avro encoding we write, or None."""
    if isinstance(data_type, ArrayType | VectorType):
        return _type_problem(data_type.element)
    if isinstance(data_type, MapType):
        key = data_type.key
        string_key = isinstance(key, AtomicType) and STRING_KEY.fullmatch(key.type.upper())
        if not string_key and key.nullable:
            return (
                f"has the nullable map key {key}: Paimon writes it as a ['null', T] union, "
                "which an Arrow map key cannot carry"
            )
        return _type_problem(key) or _type_problem(data_type.value)
    if isinstance(data_type, RowType):
        problems = (_avro_problem(f.name, f.type) for f in data_type.fields)
        return next((p for p in problems if p), None)
    if isinstance(data_type, AtomicType):
        return _atomic_problem(data_type.type.upper())
    return f"holds {data_type}, which dagster-paimon does not write to Avro as Paimon does"


def _atomic_problem(text: str) -> str | None:
    """Why an atomic type has no exact Avro encoding, or None."""
    if PLAIN_ATOMIC.fullmatch(text):
        return None
    time = TIME.fullmatch(text)
    if time:
        if int(time.group(2) or 0) <= MAX_TIME_PRECISION:
            return None
        return "is TIME with precision above 3: Paimon's Avro writer refuses it"
    stamp = TIMESTAMP.fullmatch(text)
    if stamp:
        if int(stamp.group(3) or 6) <= MAX_TIMESTAMP_PRECISION:
            return None
        return "is a TIMESTAMP with precision above 6: Paimon's Avro writer refuses it"
    if text == "VARIANT":
        return "is VARIANT: Paimon's Avro writer refuses VARIANT"
    return f"holds {text}, which dagster-paimon does not write to Avro as Paimon does"


CODEC_NAMES = ("null", "deflate", "snappy", "bzip2", "xz", "zstandard")


def avro_codec(compression: str) -> str:
    """The Avro codec Paimon's Java writer uses for a `file.compression` value."""
    name = str(compression).lower()
    if name == "zstd":
        return "zstandard"
    if name == "none":
        return "null"
    if name in CODEC_NAMES:
        return name
    raise InvalidOptionError(
        f"table option '{FILE_COMPRESSION}' is {compression!r} and '{FILE_FORMAT}' is 'avro': "
        f"Avro data files are compressed with zstd, none or one of {list(CODEC_NAMES)}"
    )


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
        """Row groups streamed in batches."""
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
        self.file = orc.ORCFile(stream)
        self.names = self.file.schema.names

    def batches(self, batch_rows: int, columns: Sequence[str]) -> Iterator[pa.RecordBatch]:
        """Stripes, sliced into batches."""
        for i in range(self.file.nstripes):
            stripe = self.file.read_stripe(i, columns=list(columns))
            for offset in range(0, stripe.num_rows, batch_rows):
                yield stripe.slice(offset, batch_rows)

    def group_rows(self) -> list[int]:
        """Rows per stripe (read with one column)."""
        first = self.names[:1]
        return [self.file.read_stripe(i, columns=first).num_rows for i in range(self.file.nstripes)]

    def read_group(self, index: int, columns: Sequence[str]) -> pa.Table:
        """One stripe."""
        return pa.Table.from_batches([self.file.read_stripe(index, columns=list(columns))])


# --- Avro container: header, blocks, codecs -------------------------------------------------


def _long(value: int) -> bytes:
    """One Avro long: zigzag, then base-128 varint."""
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _parse_long(data: bytes, pos: int) -> tuple[int, int]:
    """The Avro long at pos in data, and the position after it (IndexError past the end)."""
    shift = n = 0
    while True:
        byte = data[pos]
        pos += 1
        n |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return (n >> 1) ^ -(n & 1), pos


def _parse_bytes(data: bytes, pos: int) -> tuple[bytes, int]:
    """Avro bytes (length, then content) at pos, and the position after them."""
    size, pos = _parse_long(data, pos)
    if pos + size > len(data):
        raise IndexError("Avro bytes past the end")
    return data[pos : pos + size], pos + size


def _snappy_compress(data: bytes, level: int | None) -> bytes:
    """Avro's snappy block: raw snappy, then the CRC32 of the data, big-endian."""
    return bytes(cramjam.snappy.compress_raw(data)) + zlib.crc32(data).to_bytes(4, "big")


def _deflate_compress(data: bytes, level: int | None) -> bytes:
    """Avro's deflate block: raw deflate (no zlib header) at Java's default level."""
    packer = zlib.compressobj(-1 if level is None else level, zlib.DEFLATED, -15)
    return packer.compress(data) + packer.flush()


Compress = Callable[[bytes, int | None], bytes]
COMPRESS: dict[str, Compress] = {
    "null": lambda data, level: data,
    "deflate": _deflate_compress,
    "snappy": _snappy_compress,
    "bzip2": lambda data, level: bz2.compress(data),
    "xz": lambda data, level: lzma.compress(data, preset=6),
    "zstandard": lambda data, level: zstd.compress(data, level=level),
}
DECOMPRESS: dict[str, Callable[[bytes], bytes]] = {
    "null": lambda data: data,
    "deflate": lambda data: zlib.decompress(data, -15),
    "snappy": lambda data: bytes(cramjam.snappy.decompress_raw(data[:-4])),
    "bzip2": bz2.decompress,
    "xz": lzma.decompress,
    "zstandard": zstd.decompress,
}


def _header(schema: dict, codec: str, sync: bytes) -> bytes:
    """The container header: magic, schema and codec metadata, sync marker."""
    meta = {
        b"avro.schema": json.dumps(schema, separators=(",", ":")).encode(),
        b"avro.codec": codec.encode(),
    }
    out = bytearray(AVRO_MAGIC + _long(len(meta)))
    for key, value in meta.items():
        out += _long(len(key)) + key + _long(len(value)) + value
    return bytes(out + _long(0) + sync)


def _parse_header(data: bytes) -> tuple[dict[str, bytes], bytes, int]:
    """Metadata, sync marker and first block's offset from a container's leading bytes
    (IndexError when they end inside the header)."""
    if len(data) >= len(AVRO_MAGIC) and not data.startswith(AVRO_MAGIC):
        raise CorruptMetadataError("not an Avro data file (bad magic)")
    meta: dict[str, bytes] = {}
    count, pos = _parse_long(data, len(AVRO_MAGIC))
    while count:
        if count < 0:
            count = -count
            _, pos = _parse_long(data, pos)  # the map block's byte size
        for _ in range(count):
            key, pos = _parse_bytes(data, pos)
            meta[key.decode()], pos = _parse_bytes(data, pos)
        count, pos = _parse_long(data, pos)
    if pos + SYNC_BYTES > len(data):
        raise IndexError("Avro header ends before its sync marker")
    return meta, data[pos : pos + SYNC_BYTES], pos + SYNC_BYTES


# --- Avro schemas ---------------------------------------------------------------------------


def avro_schema(schema: pa.Schema) -> dict:
    """The Avro schema Paimon's AvroSchemaConverter gives a KV file of these Arrow fields."""
    return {
        "type": "record",
        "name": AVRO_RECORD,
        "namespace": AVRO_NAMESPACE,
        "fields": _avro_fields(schema, AVRO_RECORD),
    }


def _avro_fields(fields: Iterable[pa.Field], row: str) -> list:
    """Record fields: nullable ones as ['null', T] with a null default, as Java builds them."""
    out = []
    for f in fields:
        avro = _avro_type(f.type, f"{row}_{f.name}")
        if f.nullable:
            out.append({"name": f.name, "type": ["null", avro], "default": None})
        else:
            out.append({"name": f.name, "type": avro})
    return out


def _maybe_null(avro: Any, nullable: bool) -> Any:
    """A nullable element or value type is a union with null first."""
    return ["null", avro] if nullable else avro


def _avro_type(t: pa.DataType, row: str) -> Any:
    """The Avro type of an Arrow type as pypaimon maps Paimon's; `row` names nested records."""
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_signed_integer(t):
        return "long" if t.bit_width == 64 else "int"
    if pa.types.is_float32(t) or pa.types.is_float64(t):
        return "float" if pa.types.is_float32(t) else "double"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "bytes"
    if pa.types.is_decimal128(t):
        return {
            "type": "bytes",
            "logicalType": "decimal",
            "precision": t.precision,
            "scale": t.scale,
        }
    if pa.types.is_date32(t):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_time32(t) and t.unit == "ms":
        return {"type": "int", "logicalType": "time-millis"}
    if pa.types.is_timestamp(t) and t.unit != "ns":
        unit = "millis" if t.unit in ("s", "ms") else "micros"
        local = "local-" if t.tz is not None else ""
        return {"type": "long", "logicalType": f"{local}timestamp-{unit}"}
    if pa.types.is_map(t):
        return _avro_map(t, row)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        items = _avro_type(t.value_type, row)
        return {"type": "array", "items": _maybe_null(items, t.value_field.nullable)}
    if pa.types.is_struct(t):
        return {"type": "record", "name": row, "fields": _avro_fields(t, row)}
    raise SchemaMismatchError(f"Arrow type {t} has no Avro encoding in Paimon's format")


def _avro_map(t: pa.MapType, row: str) -> dict:
    """A string-keyed map is an Avro map; any other an array of key/value records."""
    value = _maybe_null(_avro_type(t.item_type, row), t.item_field.nullable)
    if pa.types.is_string(t.key_type) or pa.types.is_large_string(t.key_type):
        return {"type": "map", "values": value}
    value_field = {"name": "value", "type": _avro_type(t.item_type, f"{row}_value")}
    if t.item_field.nullable:
        value_field = {**value_field, "type": ["null", value_field["type"]], "default": None}
    entry = {
        "type": "record",
        "name": row,
        "fields": [{"name": "key", "type": _avro_type(t.key_type, f"{row}_key")}, value_field],
    }
    return {"type": "array", "items": entry, "logicalType": "map"}


def _record_of(schema: Any) -> dict:
    """The row record of a file schema (Paimon 0.9 wrapped it in a ['null', record] union)."""
    if isinstance(schema, list):
        branches = [s for s in schema if s != "null"]
        if len(branches) == 1:
            return _record_of(branches[0])
    if isinstance(schema, dict) and schema.get("type") == "record":
        return schema
    raise SchemaMismatchError(f"Avro data file schema is not a record: {schema}")


def _branch(avro: Any) -> tuple[Any, bool]:
    """A type without its null branch, and whether there was one."""
    if isinstance(avro, list):
        rest = [s for s in avro if s != "null"]
        if len(rest) != 1:
            raise SchemaMismatchError(f"Avro union {avro} is not ['null', T]")
        return rest[0], len(rest) != len(avro)
    return avro, False


PRIMITIVE_ARROW = {
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "bytes": pa.binary(),
}
LOGICAL_ARROW = {
    "date": pa.date32(),
    "time-millis": pa.time32("ms"),
    "timestamp-millis": pa.timestamp("ms"),
    "timestamp-micros": pa.timestamp("us"),
    "local-timestamp-millis": pa.timestamp("ms", tz="UTC"),
    "local-timestamp-micros": pa.timestamp("us", tz="UTC"),
}


def _arrow_field(name: str, avro: Any) -> pa.Field:
    """The Arrow field an Avro field reads into (nullable when a union with null)."""
    inner, nullable = _branch(avro)
    return pa.field(name, _arrow_type(inner), nullable=nullable)


def _arrow_type(avro: Any) -> pa.DataType:
    """The Arrow type of an Avro type as Paimon writes them (pypaimon's choices of Arrow type)."""
    if isinstance(avro, str):
        if avro in PRIMITIVE_ARROW:
            return PRIMITIVE_ARROW[avro]
        raise SchemaMismatchError(f"Avro type {avro!r} is not one Paimon writes")
    logical = avro.get("logicalType")
    if logical == "decimal":
        return pa.decimal128(avro["precision"], avro.get("scale", 0))
    if logical in LOGICAL_ARROW:
        return LOGICAL_ARROW[logical]
    kind = avro["type"]
    if kind == "record":
        return pa.struct([_arrow_field(f["name"], f["type"]) for f in avro["fields"]])
    if kind == "map":
        value = _arrow_field("value", avro["values"])
        return pa.map_(pa.field("key", pa.string(), nullable=False), value)
    if kind == "array" and logical == "map":
        key, value = avro["items"]["fields"]
        key_type = _arrow_type(_branch(key["type"])[0])
        return pa.map_(
            pa.field("key", key_type, nullable=False), _arrow_field("value", value["type"])
        )
    if kind == "array":
        return pa.list_(_arrow_field("item", avro["items"]))
    if kind in PRIMITIVE_ARROW:
        return PRIMITIVE_ARROW[kind]
    raise SchemaMismatchError(f"Avro type {avro} is not one Paimon writes")


def _raw_columns(record: dict) -> dict:
    """The record with top-level logical types dropped: they decode as plain ints and bytes,
    converted column-wise (nested values keep fastavro's conversions)."""
    fields = []
    for f in record["fields"]:
        inner, nullable = _branch(f["type"])
        if isinstance(inner, dict) and inner.get("type") in PRIMITIVE_ARROW:
            inner = inner["type"]
        fields.append({"name": f["name"], "type": ["null", inner] if nullable else inner})
    return {**record, "fields": fields}


# --- Avro reading ---------------------------------------------------------------------------


class _Block(NamedTuple):
    """Where a block's data starts and how many rows it holds."""

    offset: int
    rows: int


class _Avro:
    """An Avro file: blocks decoded by fastavro one at a time into Arrow columns."""

    def __init__(self, stream: Any):
        self.stream = stream
        stream.seek(0, os.SEEK_END)
        self.size = stream.tell()
        self._window, self._window_start = b"", 0
        meta, self.sync, self.first_block = self._header()
        codec = meta.get("avro.codec", b"null").decode()
        if codec not in DECOMPRESS:
            raise InvalidOptionError(
                f"Avro data file uses the codec {codec!r}, not one Paimon writes"
            )
        self.decompress = DECOMPRESS[codec]
        schema = json.loads(meta["avro.schema"])
        record = _record_of(schema)
        self.fields = {f["name"]: _arrow_field(f["name"], f["type"]) for f in record["fields"]}
        self.names = list(self.fields)
        items = _raw_columns(record)
        self.decoder = fastavro.parse_schema(
            {"type": "array", "items": ["null", items] if isinstance(schema, list) else items}
        )
        flat = isinstance(schema, dict) and all(_is_plain(f["type"]) for f in items["fields"])
        self.flat_header = _header(items, "null", self.sync) if flat else None
        self._blocks: list[_Block] | None = None

    def _read(self, offset: int, size: int) -> bytes:
        """size bytes at offset (fewer at the end of the file), from a window of at least
        READ_BUFFER_BYTES read ahead: small blocks cost one read of the stream per window."""
        end = min(offset + size, self.size)
        window_end = self._window_start + len(self._window)
        if not (self._window_start <= offset and end <= window_end):
            self.stream.seek(offset)
            ahead = min(max(end, offset + READ_BUFFER_BYTES), self.size) - offset
            self._window, self._window_start = bytes(self.stream.read(ahead)), offset
        return self._window[offset - self._window_start : end - self._window_start]

    def _header(self) -> tuple[dict[str, bytes], bytes, int]:
        """The container header, read in growing chunks until it is whole."""
        chunk = HEADER_BYTES
        while True:
            try:
                return _parse_header(self._read(0, chunk))
            except IndexError:
                if chunk >= self.size:
                    raise CorruptMetadataError("Avro data file ends inside its header") from None
                chunk *= 4

    def _block_head(self, offset: int) -> tuple[int, int, int]:
        """A block's row count, data size and data offset."""
        head = self._read(offset, BLOCK_HEAD_BYTES)
        try:
            rows, pos = _parse_long(head, 0)
            size, pos = _parse_long(head, pos)
        except IndexError:
            raise CorruptMetadataError("Avro data file ends inside a block header") from None
        return rows, size, offset + pos

    def _read_block(self, offset: int) -> tuple[int, bytes, int]:
        """The block at offset: its row count, decompressed data and the next block's offset."""
        rows, size, start = self._block_head(offset)
        data = self._read(start, size + SYNC_BYTES)
        if len(data) != size + SYNC_BYTES or data[size:] != self.sync:
            raise CorruptMetadataError("Avro data file block does not end with the sync marker")
        return rows, self.decompress(data[:size]), start + size + SYNC_BYTES

    def _decode(self, rows: int, data: bytes, columns: Sequence[str]) -> pa.RecordBatch:
        """The rows of one or more consecutive blocks (their data joined) as Arrow columns of
        the file's types."""
        fields = [self.fields[c] for c in columns]
        if self.flat_header is None:
            values: Sequence[list | pa.Array] = self._records(rows, data, columns)
        else:
            values = self._flat(self.flat_header, rows, data, columns)
        arrays = [_column(v, f.type) for v, f in zip(values, fields, strict=True)]
        return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))

    def _flat(
        self, header: bytes, rows: int, data: bytes, columns: Sequence[str]
    ) -> list[pa.Array]:
        """Columns of plain Avro types, by polars' (Rust) Avro reader: the rows are made one
        block of a container of their own after `header`, uncompressed, without logical types."""
        container = header + _long(rows) + _long(len(data)) + data + self.sync
        wanted = list(dict.fromkeys(columns))
        table = pl.read_avro(BytesIO(container), columns=wanted).to_arrow()
        return [table.column(c).combine_chunks() for c in columns]

    def _records(self, rows: int, data: bytes, columns: Sequence[str]) -> list[list]:
        """Column values by fastavro, the data read at once as the body of an Avro array of
        `rows` records."""
        array = BytesIO(_long(rows) + data + b"\0")
        records = fastavro.schemaless_reader(array, self.decoder, None)
        return [[r[c] for r in records] for c in columns]

    def _runs(self, rows_wanted: int) -> Iterator[tuple[int, bytes]]:
        """Consecutive blocks joined until they hold rows_wanted rows (the last run may hold
        fewer): their row count and data, decoded as one."""
        rows, parts = 0, []
        offset = self.first_block
        while offset < self.size:
            count, data, offset = self._read_block(offset)
            rows += count
            parts.append(data)
            if rows >= rows_wanted:
                yield rows, b"".join(parts)
                rows, parts = 0, []
        if rows:
            yield rows, b"".join(parts)

    def batches(self, batch_rows: int, columns: Sequence[str]) -> Iterator[pa.RecordBatch]:
        """Runs of blocks decoded batch_rows rows or more at a time, cut into batch_rows."""
        rest: pa.Table | None = None
        for rows, data in self._runs(batch_rows):
            table = pa.Table.from_batches([self._decode(rows, data, columns)])
            if rest is not None:
                table = pa.concat_tables([rest, table])
            full = table.num_rows - table.num_rows % batch_rows
            for start in range(0, full, batch_rows):
                yield from table.slice(start, batch_rows).combine_chunks().to_batches()
            rest = table.slice(full)
        if rest is not None and rest.num_rows:
            yield from rest.combine_chunks().to_batches()

    def _block_index(self) -> list[_Block]:
        """Every block's offset and row count, found by skipping block data."""
        if self._blocks is None:
            blocks = []
            offset = self.first_block
            while offset < self.size:
                rows, size, start = self._block_head(offset)
                blocks.append(_Block(offset, rows))
                offset = start + size + SYNC_BYTES
            self._blocks = blocks
        return self._blocks

    def group_rows(self) -> list[int]:
        """Rows per block."""
        return [b.rows for b in self._block_index()]

    def read_group(self, index: int, columns: Sequence[str]) -> pa.Table:
        """One block."""
        rows, data, _ = self._read_block(self._block_index()[index].offset)
        return pa.Table.from_batches([self._decode(rows, data, columns)])


def _is_plain(avro: Any) -> bool:
    """A primitive type or a nullable one, without logical type: polars reads those."""
    return isinstance(_branch(avro)[0], str)


def _column(values: list | pa.Array, t: pa.DataType) -> pa.Array:
    """Decoded values of one column (Python values, or an Arrow array of plain Avro types) as
    an Arrow array of type t: top-level decimals arrive as bytes, dates and times as numbers."""
    if pa.types.is_decimal128(t):
        raw = pa.array(values, pa.binary()) if isinstance(values, list) else values
        return _decimals(raw.cast(pa.binary()), t)
    return pa.array(values, t) if isinstance(values, list) else values.cast(t)


def _decimals(raw: pa.BinaryArray, t: pa.Decimal128Type) -> pa.Array:
    """Big-endian two's-complement unscaled values (a fresh array) as decimal128: each is
    sign-extended to 16 bytes, then byte-reversed."""
    n = len(raw)
    offsets = np.frombuffer(raw.buffers()[1], np.int32)[: n + 1].astype(np.int64)
    lengths = np.diff(offsets)
    if (lengths > 16).any():
        raise CorruptMetadataError(f"Avro decimal of more than 16 bytes for {t}")
    data = np.frombuffer(raw.buffers()[2] or b"", np.uint8)[offsets[0] : offsets[-1]]
    starts = offsets[:-1] - offsets[0]
    first = np.zeros(n, np.uint8)
    present = lengths > 0
    first[present] = data[starts[present]]
    big_endian = np.where(first >= 0x80, 0xFF, 0).astype(np.uint8)[:, None].repeat(16, axis=1)
    row = np.repeat(np.arange(n), lengths)
    column = np.arange(len(data)) - np.repeat(starts - 16 + lengths, lengths)
    big_endian[row, column] = data
    little_endian = np.ascontiguousarray(big_endian[:, ::-1])
    return pa.Array.from_buffers(t, n, [raw.buffers()[0], pa.py_buffer(little_endian)])


# --- Avro writing: numpy encoding -----------------------------------------------------------


class _Encoded(NamedTuple):
    """Every row's bytes: row i is data[offsets[i]:offsets[i + 1]] (offsets start at 0)."""

    data: np.ndarray
    offsets: np.ndarray


def _offsets(lengths: np.ndarray) -> np.ndarray:
    """Row offsets from row lengths."""
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def _bytes_per_row(rows: int, data: np.ndarray) -> _Encoded:
    """Rows of equal width, laid out back to back in data."""
    return _Encoded(data, np.arange(rows + 1, dtype=np.int64) * (len(data) // max(rows, 1)))


def _varints(values: np.ndarray) -> _Encoded:
    """Avro longs (zigzag varints), one per row."""
    signed = values.astype(np.int64)
    zigzag = ((signed << 1) ^ (signed >> 63)).view(np.uint64)
    widths = np.ones(len(zigzag), np.int64)
    for k in range(1, 10):
        longer = zigzag >= np.uint64(1 << (7 * k))
        if not longer.any():
            break
        widths += longer
    width = int(widths.max(initial=1))
    table = np.empty((len(zigzag), width), np.uint8)
    for k in range(width):
        more = np.where(widths > k + 1, 0x80, 0).astype(np.uint8)
        table[:, k] = ((zigzag >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8) | more
    return _Encoded(table[np.arange(width) < widths[:, None]], _offsets(widths))


def _concat(parts: Sequence[_Encoded]) -> _Encoded:
    """Rows whose bytes are each part's bytes for that row, in order."""
    if len(parts) == 1:
        return parts[0]
    lengths = [np.diff(p.offsets) for p in parts]
    offsets = _offsets(np.sum(lengths, axis=0))
    out = np.empty(int(offsets[-1]), np.uint8)
    start = offsets[:-1].copy()
    for part, length in zip(parts, lengths, strict=True):
        out[np.repeat(start - part.offsets[:-1], length) + np.arange(len(part.data))] = part.data
        start += length
    return _Encoded(out, offsets)


def _keep(part: _Encoded, valid: np.ndarray) -> _Encoded:
    """The part with the rows outside `valid` emptied."""
    lengths = np.diff(part.offsets)
    return _Encoded(part.data[np.repeat(valid, lengths)], _offsets(lengths * valid))


def _valid(arr: pa.Array) -> np.ndarray:
    """Which rows are not null."""
    if arr.null_count == 0:
        return np.ones(len(arr), bool)
    return arr.is_valid().to_numpy(zero_copy_only=False)


def _numbers(arr: pa.Array, dtype: Any) -> np.ndarray:
    """A primitive array as numpy, nulls as zero."""
    if arr.null_count:
        arr = arr.fill_null(pa.scalar(0, arr.type) if not pa.types.is_boolean(arr.type) else False)
    return arr.to_numpy(zero_copy_only=False).astype(dtype, copy=False)


def _parts(arr: pa.Array, nullable: bool) -> list[_Encoded]:
    """A column's rows as parts whose concatenation is each row's Avro encoding; a nullable
    one starts with its union index (0 null, 1 value) and a null row has nothing more."""
    parts = _value_parts(arr)
    if not nullable:
        return parts
    valid = _valid(arr)
    index = _bytes_per_row(len(arr), np.where(valid, 2, 0).astype(np.uint8))
    if arr.null_count == 0:
        return [index, *parts]
    return [index, *(_keep(p, valid) for p in parts)]


def _value_parts(arr: pa.Array) -> list[_Encoded]:
    """A column's non-null encoding, as FieldWriterFactory writes each type."""
    t = arr.type
    if pa.types.is_boolean(t):
        return [_bytes_per_row(len(arr), _numbers(arr, np.uint8))]
    if pa.types.is_signed_integer(t):
        return [_varints(_numbers(arr, np.int64))]
    if pa.types.is_float32(t) or pa.types.is_float64(t):
        dtype = np.dtype("<f4") if pa.types.is_float32(t) else np.dtype("<f8")
        return [_bytes_per_row(len(arr), _numbers(arr, dtype).view(np.uint8))]
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return [_varints(_numbers(arr.cast(pa.int32()), np.int64))]
    if pa.types.is_timestamp(t):
        scale = 1000 if t.unit == "s" else 1
        return [_varints(_numbers(arr.cast(pa.int64()), np.int64) * scale)]
    if pa.types.is_decimal128(t):
        return _with_length(_unscaled(arr))
    if pa.types.is_string(t) or pa.types.is_binary(t):
        return _with_length(_payload(arr, np.int32))
    if pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        return _with_length(_payload(arr, np.int64))
    if pa.types.is_map(t):
        keys, items = _children(arr, arr.keys), _children(arr, arr.items)
        entries = _parts(keys, False) + _parts(items, t.item_field.nullable)
        return _repeated(_concat(entries), _list_offsets(arr))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        items = _children(arr, arr.values)
        return _repeated(_concat(_parts(items, t.value_field.nullable)), _list_offsets(arr))
    if pa.types.is_fixed_size_list(t):
        size = t.list_size
        items = arr.values.slice(arr.offset * size, len(arr) * size)
        element = _concat(_parts(items, t.value_field.nullable))
        return _repeated(element, np.arange(len(arr) + 1, dtype=np.int64) * size)
    if pa.types.is_struct(t):
        return [p for i, f in enumerate(t) for p in _parts(arr.field(i), f.nullable)]
    raise SchemaMismatchError(f"Arrow type {t} has no Avro encoding in Paimon's format")


def _list_offsets(arr: pa.Array) -> np.ndarray:
    """A list or map array's element offsets, from 0."""
    offsets = arr.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    return offsets - offsets[0]


def _children(arr: pa.Array, values: pa.Array) -> pa.Array:
    """The elements a list or map array's rows use (its offsets may not start at 0)."""
    offsets = arr.offsets
    first = offsets[0].as_py()
    return values.slice(first, offsets[len(arr)].as_py() - first)


def _repeated(elements: _Encoded, offsets: np.ndarray) -> list[_Encoded]:
    """Avro arrays and maps: an item count (when not empty), the items, a 0 count."""
    counts = np.diff(offsets)
    items = _Encoded(elements.data, elements.offsets[offsets])
    end = _bytes_per_row(len(counts), np.zeros(len(counts), np.uint8))
    return [_keep(_varints(counts), counts > 0), items, end]


def _payload(arr: pa.Array, width: Any) -> _Encoded:
    """The bytes of a string or binary array, row by row."""
    offsets = np.frombuffer(arr.buffers()[1], width)[arr.offset : arr.offset + len(arr) + 1]
    offsets = offsets.astype(np.int64)
    data = np.frombuffer(arr.buffers()[2] or b"", np.uint8)[offsets[0] : offsets[-1]]
    return _Encoded(data, offsets - offsets[0])


def _unscaled(arr: pa.Array) -> _Encoded:
    """Decimals as Java's BigInteger.toByteArray: minimal big-endian two's complement."""
    n = len(arr)
    raw = np.frombuffer(arr.buffers()[1], np.uint8)[arr.offset * 16 : (arr.offset + n) * 16]
    big_endian = raw.reshape(n, 16)[:, ::-1]
    negative = big_endian[:, 0] >= 0x80
    sign = np.where(negative, 0xFF, 0).astype(np.uint8)
    differs = big_endian != sign[:, None]
    first = np.where(differs.any(axis=1), differs.argmax(axis=1), 16)
    top = big_endian[np.arange(n), np.minimum(first, 15)] >= 0x80
    start = np.where((first == 16) | (top != negative), first - 1, first)
    keep = np.arange(16) >= start[:, None]
    return _Encoded(big_endian[keep], _offsets(16 - start))


def _with_length(payload: _Encoded) -> list[_Encoded]:
    """Avro bytes and strings: the length, then the bytes."""
    return [_varints(np.diff(payload.offsets)), payload]


# --- Avro writing: the container ------------------------------------------------------------


class _AvroWriter:
    """A container of blocks of about BLOCK_BYTES, each written as soon as it is encoded."""

    def __init__(self, stream: Any, schema: pa.Schema, codec: str, level: int | None):
        self.stream = stream
        self.schema = schema
        self.compress = COMPRESS[codec]
        self.level = level
        self.sync = os.urandom(SYNC_BYTES)
        self.block_rows = FIRST_BLOCK_ROWS
        stream.write(_header(avro_schema(schema), codec, self.sync))

    def write_batch(self, batch: pa.RecordBatch) -> None:
        """Encode and write the rows in blocks, sized from the bytes per row seen so far."""
        for f, column in zip(self.schema, batch.columns, strict=True):
            if not f.nullable and column.null_count:
                raise SchemaMismatchError(
                    f"column {f.name!r} is NOT NULL but a batch written to Avro has nulls in it"
                )
        offset = 0
        while offset < batch.num_rows:
            rows = min(self.block_rows, batch.num_rows - offset)
            data = self._encode(batch.slice(offset, rows))
            self._write_block(rows, data)
            offset += rows
            self.block_rows = max(1, BLOCK_BYTES * rows // max(len(data), 1))

    def _encode(self, batch: pa.RecordBatch) -> bytes:
        """The rows' Avro encoding, back to back."""
        parts = [
            p
            for f, column in zip(self.schema, batch.columns, strict=True)
            for p in _parts(column, f.nullable)
        ]
        return _concat(parts).data.tobytes()

    def _write_block(self, rows: int, data: bytes) -> None:
        """One block: row count, compressed size, data, sync marker."""
        packed = self.compress(data, self.level)
        self.stream.write(_long(rows) + _long(len(packed)) + packed + self.sync)

    def close(self) -> None:
        """Nothing is buffered: every block is already written (the stream stays open)."""


def open_reader(stream: Any, file_name: str) -> FileReader:
    """A reader of a data file by its format."""
    fmt = format_of(file_name)
    if fmt == AVRO:
        return _Avro(stream)
    return _Orc(stream) if fmt == ORC else _Parquet(stream)


class FileWriter(Protocol):
    """One data file being written."""

    def write_batch(self, batch: pa.RecordBatch) -> None:
        """Append rows."""
        ...

    def close(self) -> None:
        """Finish the file (the stream stays open)."""
        ...


class _OrcWriter:
    """pyarrow's ORC writer behind the writer protocol."""

    def __init__(self, stream: Any, compression: str):
        self.writer = orc.ORCWriter(stream, compression=compression)

    def write_batch(self, batch: pa.RecordBatch) -> None:
        """Append rows as a table."""
        self.writer.write(pa.Table.from_batches([batch]))

    def close(self) -> None:
        """Write the footer."""
        self.writer.close()


def _avro_level(compression: str, options: Mapping[str, Any]) -> int | None:
    """The zstandard level: file.compression.zstd-level for zstd, Avro's default for
    'zstandard' (as Java's CodecFactory.fromString)."""
    if str(compression).lower() == "zstd":
        return int(options.get("compression_level", 1))
    return ZSTANDARD_DEFAULT_LEVEL if str(compression).lower() == "zstandard" else None


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
        return _AvroWriter(
            stream, schema, avro_codec(compression), _avro_level(compression, options)
        )
    if fmt == ORC:
        name = str(compression).lower()
        return _OrcWriter(stream, "uncompressed" if name == "none" else name)
    return pq.ParquetWriter(
        stream, schema, compression=compression, store_decimal_as_integer=True, **options
    )
