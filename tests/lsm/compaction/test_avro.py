"""Avro tables (file.format=avro): compaction and ingest read and write Avro.

pypaimon 2.1 writes Avro level-0 files; our compaction (full and minor, with deletion-vector
lookups too) and ingest write Avro laid out as Paimon's Java writer does; after every step
pypaimon's reader, pypaimon-rust's and Paimon's Java reader (0.9) return exactly an independent
model of the table, and the live files are Avro. Nested types (which pypaimon cannot write to
Avro when a map is among them) go through our ingest and compaction and are read back by
pypaimon and pypaimon-rust (Java's harness prints nested values as object names). What Paimon's
Avro writer refuses is refused before anything is written.
"""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pyarrow as pa
import pytest
from pypaimon_rust.datafusion import SQLContext

from dagster_paimon.errors import InvalidOptionError
from dagster_paimon.ingest.arrow import ingest_arrow
from dagster_paimon.table import TableSpec, create_table, open_table
from tests.conftest import write_with_pypaimon
from tests.lsm.kvmodel import read_rows
from tests.lsm.tables import compact_db_t as compact
from tests.lsm.tables import live_extensions as extensions

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("s", pa.string()),
        pa.field("d", pa.float64()),
        pa.field("small", pa.int16()),
        pa.field("flag", pa.bool_()),
        pa.field("ts", pa.timestamp("us")),
        pa.field("ts_ms", pa.timestamp("ms")),
        pa.field("ltz", pa.timestamp("us", tz="UTC")),
        pa.field("day", pa.date32()),
        pa.field("amount", pa.decimal128(12, 2)),
    ]
)


def row(key: int, tag: str) -> dict:
    """One row with a value of every type; every seventh value column is null."""
    values = {
        "s": f"{tag}-{key}",
        "d": key / 4,
        "small": key % 300 - 150,
        "flag": key % 2 == 0,
        "ts": datetime(2024, 1, 1, 12, 0, key % 60, key * 7 % 1_000_000),
        "ts_ms": datetime(2024, 2, 1, 8, key % 60, 0, key % 1000 * 1000),
        "ltz": datetime(2024, 1, 2, 3, 4, key % 60, tzinfo=UTC),
        "day": date(2024, 1, 1 + key % 28),
        "amount": Decimal(f"{key - 150}.25"),
    }
    nulls = {name for i, name in enumerate(values) if (key + i) % 7 == 0}
    return {"id": key, **{k: None if k in nulls else v for k, v in values.items()}}


def _datetime(value: object) -> datetime | None:
    """A reader's timestamp as a naive UTC datetime (Java prints ISO text, an instant with Z)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    assert isinstance(value, datetime)
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value


def normalized(rows: list[dict]) -> dict[int, tuple]:
    """Rows by id in comparable form (readers differ in datetime, date and decimal objects)."""
    out = {}
    for r in rows:
        day, amount = r["day"], r["amount"]
        if isinstance(day, int):  # Java's DATE: days since the epoch
            day = date(1970, 1, 1) + timedelta(days=day)
        out[r["id"]] = (
            r["s"],
            r["d"],
            r["small"],
            r["flag"],
            _datetime(r["ts"]),
            _datetime(r["ts_ms"]),
            _datetime(r["ltz"]),
            day,
            None if amount is None else Decimal(str(amount)).quantize(Decimal("0.01")),
        )
    return out


def rust_rows(warehouse: str) -> list[dict]:
    """Every row pypaimon-rust's DataFusion reader returns."""
    ctx = SQLContext()
    ctx.register_catalog("paimon", {"warehouse": warehouse})
    return [r for b in ctx.sql("SELECT * FROM paimon.db.t") for r in b.to_pylist()]


def assert_everyone_reads(warehouse: str, paimon_java, model: dict[int, dict]) -> None:
    """pypaimon, pypaimon-rust and Paimon's Java reader all return the model, from Avro files."""
    assert extensions(warehouse) == {"avro"}
    expected = normalized(list(model.values()))
    assert normalized(read_rows(open_table(warehouse, "db.t"))) == expected
    assert normalized(rust_rows(warehouse)) == expected
    java = [dict(zip(SCHEMA.names, r, strict=True)) for r in paimon_java.read(warehouse, "db", "t")]
    assert normalized(java) == expected


@pytest.mark.parametrize("options", [{}, {"deletion-vectors.enabled": "true"}])
def test_avro_tables_compact_to_avro_and_read_back_everywhere(warehouse, paimon_java, options):
    spec = TableSpec("db", "t", SCHEMA, ("id",), 2, (), {"file.format": "avro", **options})
    create_table(warehouse, spec)
    rng = random.Random(3)
    model: dict[int, dict] = {}
    for commit in range(4):
        rows = [row(k, f"c{commit}") for k in rng.sample(range(300), 120 if commit else 300)]
        write_with_pypaimon(open_table(warehouse, "db.t"), pa.Table.from_pylist(rows, SCHEMA))
        model.update({r["id"]: r for r in rows})
        result = compact(warehouse, full=commit == 0)
        assert result.results or commit, "the first, full compaction rewrites every bucket"
        assert_everyone_reads(warehouse, paimon_java, model)
    ours = [row(k, "ours") for k in range(250, 320)]
    ingest_arrow(open_table(warehouse, "db.t"), pa.Table.from_pylist(ours, SCHEMA))
    model.update({r["id"]: r for r in ours})
    if not options:  # merge-on-read: level-0 files are read as they are
        assert_everyone_reads(warehouse, paimon_java, model)
    compact(warehouse)
    assert_everyone_reads(warehouse, paimon_java, model)
    compact(warehouse, full=True)
    assert_everyone_reads(warehouse, paimon_java, model)


NESTED = pa.schema(
    [
        pa.field("id", pa.int32(), nullable=False),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("point", pa.struct([("x", pa.int64()), ("label", pa.string())])),
        pa.field("scores", pa.map_(pa.string(), pa.float64())),
        pa.field("by_day", pa.map_(pa.int32(), pa.decimal128(10, 3))),
    ]
)


def nested_row(key: int, tag: str) -> dict:
    """Lists, rows and maps (string and int keys), empty and null ones included."""
    return {
        "id": key,
        "tags": None if key % 5 == 0 else [f"{tag}{i}" for i in range(key % 3)],
        "point": None if key % 4 == 0 else {"x": key * 10, "label": None if key % 3 else tag},
        "scores": None if key % 6 == 0 else {f"k{i}": i / 2 for i in range(key % 4)},
        "by_day": [(i, Decimal(f"-{key}.{i:03d}")) for i in range(key % 3)],
    }


def canonical(rows: list[dict], columns: list[str]) -> list[dict]:
    """Rows in id order through the NESTED Arrow types, map entries sorted: Avro maps are
    unordered (Rust and Java read them into hash maps)."""
    table = pa.Table.from_pylist(rows, NESTED).sort_by("id").select(columns)
    return [
        {k: sorted(v) if k in ("scores", "by_day") and v else v for k, v in r.items()}
        for r in table.to_pylist()
    ]


def test_nested_types_round_trip_through_avro_ingest_and_compaction(warehouse):
    """pypaimon-rust 0.4 reads every nested field of an Avro ROW as null once a null ROW came
    before it in the file (pypaimon's own Avro files show it too), so its ROW column is not
    compared."""
    spec = TableSpec("db", "t", NESTED, ("id",), 1, (), {"file.format": "avro"})
    create_table(warehouse, spec)
    model: dict[int, dict] = {}
    for commit in range(3):
        rows = [nested_row(k, f"c{commit}") for k in range(commit * 20, commit * 20 + 40)]
        ingest_arrow(open_table(warehouse, "db.t"), pa.Table.from_pylist(rows, NESTED))
        model.update({r["id"]: r for r in rows})
    compact(warehouse, full=True)
    assert extensions(warehouse) == {"avro"}
    expected = pa.Table.from_pylist(sorted(model.values(), key=lambda r: r["id"]), NESTED)
    ours = pa.Table.from_pylist(read_rows(open_table(warehouse, "db.t")), NESTED)
    assert ours.sort_by("id").equals(expected)
    readable = [c for c in NESTED.names if c != "point"]
    assert canonical(rust_rows(warehouse), readable) == canonical(list(model.values()), readable)


def test_what_paimon_writes_otherwise_is_refused_before_anything_is_written(warehouse):
    refused = [
        (
            pa.int64(),
            {"file.compression": "lz4"},
            r"'file\.compression' is 'lz4' and 'file\.format' is 'avro'",
        ),
        (pa.int64(), {"avro.codec": "snappy"}, r"'avro\.codec' is 'snappy'"),
        (pa.timestamp("ns"), {}, r"'file\.format' is 'avro' and column 'v' \(TIMESTAMP\(9\)\)"),
    ]
    for i, (value_type, options, message) in enumerate(refused):
        schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", value_type)])
        spec = TableSpec("db", f"t{i}", schema, ("id",), 1, (), {"file.format": "avro", **options})
        table = create_table(warehouse, spec)
        with pytest.raises(InvalidOptionError, match=message):
            ingest_arrow(table, pa.table({"id": [1], "v": pa.array([1], value_type)}))
        assert table.snapshot_manager().get_latest_snapshot() is None
