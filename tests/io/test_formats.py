"""Avro data files: every type round-trips as through Parquet, laid out as Paimon's Java writes.

The same rows ingested into a Parquet and an Avro table read back (read.py, in the table's KV
types) equal, type for type; blocks are consistent groups; our encoding equals an independent
one (fastavro's, with decimals as Java's BigInteger.toByteArray); files written by others
(Paimon 0.9's nullable top-level record, fastavro's blocks and decimals, every codec) read back;
and types, names and codecs Paimon's Avro writer would refuse or write otherwise are refused.
"""

from __future__ import annotations

import io
from datetime import UTC, date, datetime, time
from decimal import Decimal

import fastavro
import pyarrow as pa
import pytest
from pypaimon.schema.data_types import AtomicType, DataField, DataTypeParser
from pypaimon.schema.table_schema import TableSchema

from dagster_paimon.errors import CorruptMetadataError, InvalidOptionError, SchemaMismatchError
from dagster_paimon.ingest.arrow import ingest_arrow
from dagster_paimon.io.avro.schema import AVRO_NAMESPACE, avro_schema
from dagster_paimon.io.formats import check_writable_format, format_of, open_reader, open_writer
from dagster_paimon.io.kv import kv_schema
from dagster_paimon.io.read import read_file
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.table import TableSpec, create_table, open_table

TYPES = {
    "tiny": pa.int8(),
    "small": pa.int16(),
    "i": pa.int32(),
    "big": pa.int64(),
    "f32": pa.float32(),
    "f64": pa.float64(),
    "flag": pa.bool_(),
    "s": pa.string(),
    "raw": pa.binary(),
    "dec": pa.decimal128(12, 2),
    "wide": pa.decimal128(38, 10),
    "day": pa.date32(),
    "clock": pa.time32("ms"),
    "ts0": pa.timestamp("s"),
    "ts3": pa.timestamp("ms"),
    "ts6": pa.timestamp("us"),
    "ltz0": pa.timestamp("s", tz="UTC"),
    "ltz3": pa.timestamp("ms", tz="UTC"),
    "ltz6": pa.timestamp("us", tz="UTC"),
    "ints": pa.list_(pa.int32()),
    "strict": pa.list_(pa.field("item", pa.string(), nullable=False)),
    "vec": pa.list_(pa.float32(), 3),
    "point": pa.struct([("x", pa.int64()), pa.field("y", pa.decimal128(5, 1), nullable=False)]),
    "scores": pa.map_(pa.string(), pa.float64()),
    "by_day": pa.map_(pa.int32(), pa.timestamp("ms")),
    "events": pa.list_(pa.struct([("at", pa.timestamp("us")), ("tag", pa.string())])),
}


def value(name: str, k: int) -> object:
    """A value of column `name` for row k, varied in sign, size and shape."""
    values = {
        "tiny": (k % 256) - 128,
        "small": k * 37 % 65536 - 32768,
        "i": (-1) ** k * k * 100_003,
        "big": (-1) ** k * k * 10**15,
        "f32": k / 8,
        "f64": -k / 3,
        "flag": k % 2 == 0,
        "s": "ünïcode-" * (k % 4) + str(k),
        "raw": bytes(range(k % 7)),
        "dec": Decimal(f"{(-1) ** k * k * 1001}.{k % 100:02d}"),
        "wide": Decimal((-1) ** k * (10**27 - k)).scaleb(-10),
        "day": date(1960 + k % 100, 1 + k % 12, 1 + k % 28),
        "clock": time(k % 24, k % 60, k % 60, k % 1000 * 1000),
        "ts0": datetime(1969 + k % 60, 12, 31, 23, 59, k % 60),
        "ts3": datetime(2024, 1, 1, 0, 0, k % 60, k % 1000 * 1000),
        "ts6": datetime(1950 + k % 100, 6, 1, 12, 30, k % 60, k * 7 % 1_000_000),
        "ltz0": datetime(2024, 3, 1, 2, 3, k % 60, tzinfo=UTC),
        "ltz3": datetime(1970, 1, 1, 0, 0, k % 60, k % 1000 * 1000, tzinfo=UTC),
        "ltz6": datetime(2030, 7, 4, 1, 2, k % 60, k * 13 % 1_000_000, tzinfo=UTC),
        "ints": [None if i == 1 else i * k for i in range(k % 4)],
        "strict": [f"e{i}" for i in range(k % 3)],
        "vec": [k / 2, None if k % 3 == 0 else -1.5, 0.0],
        "point": {"x": None if k % 3 == 0 else -k, "y": Decimal(f"{k % 1000}.5")},
        "scores": {f"k{i}": (None if i == 2 else i / 4) for i in range(k % 4)},
        "by_day": [
            (i - k, datetime(2024, 1, 1 + i, 0, 0, 0, 1000 * k % 1_000_000)) for i in range(k % 3)
        ],
        "events": [
            {"at": datetime(2024, 5, 5, 5, 5, 5, k), "tag": None if i else "t"}
            for i in range(k % 3)
        ],
    }
    return values[name]


FLAT = tuple(name for name, t in TYPES.items() if not pa.types.is_nested(t))
# a file of primitive columns only is decoded by polars, any other by fastavro
DECODERS = pytest.mark.parametrize("names", [FLAT, tuple(TYPES)], ids=["polars", "fastavro"])


def all_types_schema(names: tuple[str, ...]) -> pa.Schema:
    """The types named, each as a nullable column and as a NOT NULL one (`<name>_nn`)."""
    fields = [pa.field("id", pa.int64(), nullable=False)]
    for name in names:
        fields += [pa.field(name, TYPES[name]), pa.field(f"{name}_nn", TYPES[name], False)]
    return pa.schema(fields)


# pyarrow's Parquet writer cannot write a null VECTOR (a fixed-size list), so the Parquet path
# has none to compare with
NEVER_NULL = {"vec"}


def all_types_rows(count: int, names: tuple[str, ...] = tuple(TYPES)) -> pa.Table:
    """Rows of the types named; a nullable column is null in every fifth row (shifted per
    column)."""
    rows = []
    for k in range(count):
        r: dict[str, object] = {"id": k}
        for i, name in enumerate(names):
            null = (k + i) % 5 == 0 and name not in NEVER_NULL
            r[name] = None if null else value(name, k)
            r[f"{name}_nn"] = value(name, k + 1)
        rows.append(r)
    return pa.Table.from_pylist(rows, all_types_schema(names))


def read_back(warehouse: str, name: str) -> pa.Table:
    """Every live file of a table, read through read.py in the table's KV types."""
    table = open_table(warehouse, f"db.{name}")
    files = [(b, f) for b in read_levels(table).buckets for f in b.levels.all_files()]
    assert files
    batches = [batch for b, f in files for batch in read_file(table, b.partition, b.bucket, f, 100)]
    return pa.Table.from_batches(batches, schema=kv_schema(table.table_schema))


@DECODERS
def test_every_type_reads_back_through_avro_as_through_parquet(warehouse, names):
    # a VECTOR column makes ingest refuse the table (dagster_paimon/unsupported.py); the format
    # layer's own round trip of it is checked below, file by file
    data = all_types_rows(400, names)
    data = data.drop_columns([n for n in data.schema.names if n.startswith("vec")])
    for fmt in ("parquet", "avro"):
        spec = TableSpec("db", fmt, data.schema, ("id",), 1, (), {"file.format": fmt})
        ingest_arrow(create_table(warehouse, spec), data)
    parquet, avro = read_back(warehouse, "parquet"), read_back(warehouse, "avro")
    assert avro.schema.equals(parquet.schema)
    assert avro.equals(parquet)
    assert avro.select(data.schema.names).to_pylist() == data.to_pylist()
    table = open_table(warehouse, "db.avro")
    names = {f.file_name for b in read_levels(table).buckets for f in b.levels.all_files()}
    assert {format_of(n) for n in names} == {"avro"}


def write_avro(schema: pa.Schema, batches: list[pa.RecordBatch], compression="zstd") -> bytes:
    """A file of our Avro writer."""
    out = io.BytesIO()
    writer = open_writer(out, schema, "avro", compression, {"compression_level": 3})
    for batch in batches:
        writer.write_batch(batch)
    writer.close()
    assert not out.closed, "close finishes the file, the stream stays open"
    return out.getvalue()


@DECODERS
def test_blocks_are_groups_consistent_with_batches(names):
    data = all_types_rows(1000, names)
    content = write_avro(data.schema, data.to_batches(max_chunksize=150))
    reader = open_reader(io.BytesIO(content), "data-0.avro")
    assert reader.names == data.schema.names
    groups = reader.group_rows()
    assert len(groups) >= 7 and sum(groups) == 1000
    columns = ["id", "s", "dec_nn", "ltz3", names[-1]]
    whole = pa.Table.from_batches(list(reader.batches(64, columns)))
    batches = list(reader.batches(333, columns))
    assert [b.num_rows for b in batches] == [333, 333, 333, 1]
    assert pa.Table.from_batches(batches).equals(whole)
    read = [reader.read_group(i, columns) for i in reversed(range(len(groups)))][::-1]
    assert [g.num_rows for g in read] == groups
    assert pa.concat_tables(read).equals(whole)
    assert whole.cast(data.select(columns).schema).equals(data.select(columns))


@DECODERS
def test_arrow_types_are_what_the_avro_schema_names(names):
    data = all_types_rows(20, names)
    reader = open_reader(io.BytesIO(write_avro(data.schema, data.to_batches())), "x.avro")
    read = pa.Table.from_batches(list(reader.batches(1000, reader.names)))
    narrowed = {"tiny": pa.int32(), "small": pa.int32(), "ts0": pa.timestamp("ms")}
    narrowed |= {"ltz0": pa.timestamp("ms", tz="UTC"), "vec": pa.list_(pa.float32())}
    for f in data.schema:
        name = f.name.removesuffix("_nn")
        assert read.schema.field(f.name).type == narrowed.get(name, f.type), f.name
        assert read.schema.field(f.name).nullable == f.nullable


def java_decimal(unscaled: int) -> bytes:
    """Java's BigInteger.toByteArray: the shortest big-endian two's complement."""
    width = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
    return unscaled.to_bytes(width, "big", signed=True)


def raw_value(t: pa.DataType, v: object) -> object:
    """A Python value as Avro encodes it, for fastavro to write as is."""
    if v is None:
        return None
    if pa.types.is_decimal(t):
        assert isinstance(v, Decimal)
        return java_decimal(int(v.scaleb(t.scale)))
    if pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_time(t):
        number = pa.scalar(v, t).cast(pa.int64() if pa.types.is_timestamp(t) else pa.int32())
        return number.as_py() * (1000 if getattr(t, "unit", "") == "s" else 1)
    if pa.types.is_map(t):
        key = pa.types.is_string(t.key_type)
        entries = [(k, raw_value(t.item_type, x)) for k, x in v]
        return dict(entries) if key else [{"key": k, "value": x} for k, x in entries]
    if pa.types.is_list(t) or pa.types.is_fixed_size_list(t):
        return [raw_value(t.value_type, x) for x in v]
    if pa.types.is_struct(t):
        return {f.name: raw_value(f.type, v[f.name]) for f in t}
    return v


@DECODERS
def test_encoding_equals_an_independent_encoder_with_javas_decimals(names):
    data = all_types_rows(300, names)
    extremes = [10**37 - 1, -(10**37) + 1, -128, -129, 128, 127, -32768, 255, -1, 0]
    wide = pa.array([Decimal(x).scaleb(-10) for x in extremes], pa.decimal128(38, 10))
    data = pa.concat_tables(
        [
            data,
            data.slice(0, len(extremes)).set_column(
                data.schema.get_field_index("wide"), data.schema.field("wide"), wide
            ),
        ]
    )
    ours = fastavro.block_reader(io.BytesIO(write_avro(data.schema, data.to_batches(), "none")))
    our_bytes = b"".join(block.bytes_.getvalue() for block in ours)
    records = [
        {f.name: raw_value(f.type, r[f.name]) for f in data.schema} for r in data.to_pylist()
    ]
    theirs = io.BytesIO()
    fastavro.writer(theirs, avro_schema(data.schema), records, codec="null")
    theirs.seek(0)
    their_bytes = b"".join(block.bytes_.getvalue() for block in fastavro.block_reader(theirs))
    assert our_bytes == their_bytes


def required(name: str, avro: object) -> dict:
    """A NOT NULL field as Java's SchemaBuilder writes it."""
    return {"name": name, "type": avro}


def optional(name: str, avro: object) -> dict:
    """A nullable field: ['null', T] with a null default."""
    return {"name": name, "type": ["null", avro], "default": None}


DATE = {"type": "int", "logicalType": "date"}


def record(name: str, fields: list[dict]) -> dict:
    """A nested record, named after its parent and field as Java names it."""
    return {"type": "record", "name": name, "fields": fields}


def test_the_schema_is_paimons():
    schema = pa.schema(
        [
            pa.field("_KEY_id", pa.int64(), nullable=False),
            pa.field("_VALUE_KIND", pa.int8(), nullable=False),
            pa.field("amount", pa.decimal128(12, 2)),
            pa.field("ltz", pa.timestamp("ms", tz="UTC")),
            pa.field("point", pa.struct([pa.field("x", pa.int16(), nullable=False)])),
            pa.field("tags", pa.list_(pa.struct([("y", pa.date32())]))),
            pa.field("m", pa.map_(pa.int32(), pa.struct([("z", pa.string())]))),
            pa.field("sm", pa.map_(pa.string(), pa.field("value", pa.time32("ms"), False))),
        ]
    )
    decimal = {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}
    tag = {"type": "record", "name": "record_tags", "fields": [optional("y", DATE)]}
    entry = {
        "type": "record",
        "name": "record_m",
        "fields": [
            required("key", "int"),
            optional("value", record("record_m_value", [optional("z", "string")])),
        ],
    }
    assert avro_schema(schema) == {
        "type": "record",
        "name": "record",
        "namespace": AVRO_NAMESPACE,
        "fields": [
            required("_KEY_id", "long"),
            required("_VALUE_KIND", "int"),
            optional("amount", decimal),
            optional("ltz", {"type": "long", "logicalType": "local-timestamp-millis"}),
            optional("point", record("record_point", [required("x", "int")])),
            optional("tags", {"type": "array", "items": ["null", tag]}),
            optional("m", {"type": "array", "items": entry, "logicalType": "map"}),
            optional(
                "sm", {"type": "map", "values": {"type": "int", "logicalType": "time-millis"}}
            ),
        ],
    }


@pytest.mark.parametrize(
    ("compression", "codec"),
    [
        ("zstd", "zstandard"),
        ("none", "null"),
        ("snappy", "snappy"),
        ("deflate", "deflate"),
        ("bzip2", "bzip2"),
        ("xz", "xz"),
        ("zstandard", "zstandard"),
    ],
)
@DECODERS
def test_every_codec_java_reads_round_trips(compression, codec, names):
    data = all_types_rows(50, names)
    content = write_avro(data.schema, data.to_batches(max_chunksize=20), compression)
    avro = fastavro.reader(io.BytesIO(content))
    assert avro.codec == codec
    assert [r["id"] for r in avro] == list(range(50))
    reader = open_reader(io.BytesIO(content), "x.AVRO")
    read = pa.Table.from_batches(list(reader.batches(1000, reader.names)))
    assert read.cast(data.schema).equals(data)


@pytest.mark.parametrize("wrapped", [True, False], ids=["paimon-0.9", "record"])
def test_files_paimon_09_and_fastavro_wrote_read_back(wrapped):
    """Paimon 0.9 wrapped the row in a ['null', record] union (read by fastavro; a plain
    record of primitives by polars); fastavro writes a decimal whose value is minus a power of
    256 with one byte more than Java; blocks of a few rows each."""
    record = {
        "type": "record",
        "name": "record",
        "namespace": AVRO_NAMESPACE,
        "fields": [
            required("_SEQUENCE_NUMBER", "long"),
            optional(
                "amount", {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}
            ),
            optional("at", {"type": "long", "logicalType": "timestamp-millis"}),
        ],
    }
    amounts = [Decimal("-1.28"), Decimal("-327.68"), None, Decimal("12.34"), Decimal("0.00")]
    rows = [
        {
            "_SEQUENCE_NUMBER": i,
            "amount": a,
            "at": None if a is None else datetime(2024, 1, i + 1, tzinfo=UTC),
        }
        for i, a in enumerate(amounts)
    ]
    out = io.BytesIO()
    schema = ["null", record] if wrapped else record
    fastavro.writer(out, schema, rows, codec="deflate", sync_interval=20)
    reader = open_reader(io.BytesIO(out.getvalue()), "data-1.avro")
    assert reader.names == ["_SEQUENCE_NUMBER", "amount", "at"]
    assert len(reader.group_rows()) > 1 and sum(reader.group_rows()) == 5
    read = pa.Table.from_batches(list(reader.batches(2, reader.names)))
    assert read.column("amount").to_pylist() == amounts
    assert read.column("at").type == pa.timestamp("ms")
    assert read.column("at").to_pylist()[:2] == [datetime(2024, 1, 1), datetime(2024, 1, 2)]


def table_schema(column_type: object, name: str = "v", **options: str) -> TableSchema:
    """A primary-key table schema of one value column, written as Avro."""
    fields = [
        DataField(0, "id", AtomicType("BIGINT", nullable=False)),
        DataField(1, name, DataTypeParser.parse_data_type(column_type)),
    ]
    return TableSchema(
        fields=fields, primary_keys=["id"], options={"file.format": "avro", **options}
    )


@pytest.mark.parametrize(
    ("column_type", "reason"),
    [
        ("TIME(6)", "TIME with precision above 3"),
        ("TIMESTAMP(9)", "precision above 6"),
        ("TIMESTAMP_LTZ(7)", "precision above 6"),
        ("TIMESTAMP(9) WITH LOCAL TIME ZONE", "precision above 6"),
        ("VARIANT", "Paimon's Avro writer refuses VARIANT"),
        ("BLOB", "BLOB"),
        ({"type": "ARRAY", "element": "TIMESTAMP(9)"}, "precision above 6"),
        ({"type": "MAP", "key": "INT", "value": "STRING"}, "nullable map key INT"),
        ({"type": "MULTISET", "element": "INT"}, "MULTISET<INT>"),
        ({"type": "ROW", "fields": [{"id": 2, "name": "a-b", "type": "INT"}]}, "'a-b'"),
    ],
)
def test_types_paimon_writes_otherwise_are_refused(column_type, reason):
    with pytest.raises(InvalidOptionError, match=r"'file\.format' is 'avro' and column 'v'") as e:
        check_writable_format(table_schema(column_type))
    assert reason in str(e.value)


@pytest.mark.parametrize(
    "column_type",
    [
        "TIME(3)",
        "TIME",
        "TIMESTAMP(6)",
        "TIMESTAMP",
        "TIMESTAMP_LTZ(3)",
        "TIMESTAMP(6) WITH LOCAL TIME ZONE",
        "CHAR(3)",
        "VARBINARY(9)",
        "DECIMAL(38, 38)",
        {"type": "MAP", "key": "INT NOT NULL", "value": "STRING"},
        {"type": "MAP", "key": "VARCHAR(3)", "value": {"type": "ARRAY", "element": "DATE"}},
    ],
)
def test_types_paimon_writes_to_avro_are_accepted(column_type):
    check_writable_format(table_schema(column_type))


def test_names_and_codecs_java_cannot_write_are_refused():
    with pytest.raises(InvalidOptionError, match=r"column 'my col' \(INT\) has the name"):
        check_writable_format(table_schema("INT", "my col"))
    for compression in ("lz4", "gzip", "brotli"):
        match = rf"'file\.compression' is '{compression}' and 'file\.format' is 'avro'"
        with pytest.raises(InvalidOptionError, match=match):
            check_writable_format(table_schema("INT", **{"file.compression": compression}))
    with pytest.raises(InvalidOptionError, match=r"'avro\.codec' is 'xz'"):
        check_writable_format(table_schema("INT", **{"avro.codec": "xz"}))


def test_nulls_in_a_not_null_column_are_refused_as_java_does():
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    batch = pa.record_batch([pa.array([1, None])], schema=pa.schema([pa.field("id", pa.int64())]))
    with pytest.raises(SchemaMismatchError, match="'id' is NOT NULL"):
        open_writer(io.BytesIO(), schema, "avro", "zstd", {}).write_batch(batch)


def test_a_header_past_the_first_read_and_a_file_cut_short():
    schema = pa.schema(
        [pa.field(f"column_with_a_long_name_{i:05d}", pa.int64()) for i in range(2000)]
    )
    batch = pa.record_batch([pa.array([i, None]) for i in range(2000)], schema=schema)
    content = write_avro(schema, [batch])
    assert len(content) > 1 << 16, "the schema alone is longer than the first header read"
    read = next(open_reader(io.BytesIO(content), "x.avro").batches(10, schema.names[-2:]))
    last, before = schema.names[-1], schema.names[-2]
    assert read.to_pylist() == [{before: 1998, last: 1999}, {before: None, last: None}]
    with pytest.raises(CorruptMetadataError, match="inside its header"):
        open_reader(io.BytesIO(content[:1000]), "x.avro")
    cut = open_reader(io.BytesIO(content[:-5]), "x.avro")
    with pytest.raises(CorruptMetadataError, match="sync marker"):
        list(cut.batches(10, schema.names[:1]))
