"""ORC tables (Paimon's default format before 1.0): compaction and ingest read and write ORC.

pypaimon writes ORC level-0 files; our compaction (with deletion-vector lookups too) and ingest
write ORC through pyarrow's writer; pypaimon, pypaimon-rust and Paimon's Java reader read the
model, decimal columns included, and a writer's failure fails the compaction and changes
nothing. ORC columns pyarrow cannot write are refused before anything is written (Avro:
test_avro.py).
"""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as orc
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
        pa.field("ts", pa.timestamp("us")),
        pa.field("ltz", pa.timestamp("us", tz="UTC")),
        pa.field("day", pa.date32()),
        pa.field("amount", pa.decimal128(12, 2)),
        pa.field("wide", pa.decimal128(18, 4)),
    ]
)


def row(key: int, tag: str) -> dict:
    """One row with a value of every type."""
    return {
        "id": key,
        "s": f"{tag}-{key}",
        "d": key / 4,
        "ts": datetime(2024, 1, 1, 12, 0, key % 60),
        "ltz": datetime(2024, 1, 2, 3, 4, key % 60, tzinfo=UTC),
        "day": date(2024, 1, 1 + key % 28),
        "amount": None if key % 9 == 4 else Decimal(f"{'-' if key % 2 else ''}{key}.25"),
        "wide": Decimal(f"{(-1) ** key * (key * 10**10 + 10**10 - 1)}.5678"),
    }


def _decimal(value: object, quantum: str) -> str | None:
    """A decimal at its column's scale as text, whichever object a reader returns."""
    return None if value is None else str(Decimal(str(value)).quantize(Decimal(quantum)))


def normalized(rows: list[dict]) -> dict[int, tuple]:
    """Rows by id as comparable strings (readers differ in datetime and decimal objects)."""
    out = {}
    for r in rows:
        ts, ltz, day = r["ts"], r["ltz"], r["day"]
        if isinstance(ts, str):  # Java's LocalDateTime text
            ts = datetime.fromisoformat(ts)
        if isinstance(day, int):  # Java's DATE: days since the epoch
            day = date(1970, 1, 1) + timedelta(days=day)
        if isinstance(ltz, str):  # Java prints an instant as its UTC date-time
            ltz = datetime.fromisoformat(ltz.replace("Z", "+00:00"))
        if isinstance(ltz, datetime) and ltz.tzinfo is None:
            ltz = ltz.replace(tzinfo=UTC)
        out[r["id"]] = (
            r["s"],
            float(r["d"]),
            ts.strftime("%Y-%m-%d %H:%M:%S") if ts else None,
            ltz.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") if ltz else None,
            str(day),
            _decimal(r["amount"], "0.01"),
            _decimal(r["wide"], "0.0001"),
        )
    return out


@pytest.mark.parametrize("options", [{}, {"deletion-vectors.enabled": "true"}])
def test_orc_tables_compact_to_orc_and_read_back_everywhere(warehouse, paimon_java, options):
    spec = TableSpec("db", "t", SCHEMA, ("id",), 2, (), {"file.format": "orc", **options})
    create_table(warehouse, spec)
    rng = random.Random(2)
    model: dict[int, dict] = {}
    for commit in range(4):
        rows = [row(k, f"c{commit}") for k in rng.sample(range(300), 120 if commit else 300)]
        write_with_pypaimon(open_table(warehouse, "db.t"), pa.Table.from_pylist(rows, SCHEMA))
        model.update({r["id"]: r for r in rows})
        compact(warehouse, full=commit == 0)
    ours = [row(k, "ours") for k in range(250, 320)]
    ingest_arrow(open_table(warehouse, "db.t"), pa.Table.from_pylist(ours, SCHEMA))
    model.update({r["id"]: r for r in ours})
    compact(warehouse)
    assert extensions(warehouse) == {"orc"}
    expected = normalized(list(model.values()))
    assert normalized(read_rows(open_table(warehouse, "db.t"))) == expected

    assert_rust_and_java_read(warehouse, paimon_java, expected)


def assert_rust_and_java_read(warehouse: str, paimon_java, expected: dict[int, tuple]) -> None:
    """pypaimon-rust and Paimon's Java reader both read `expected` from db.t."""
    ctx = SQLContext()
    ctx.register_catalog("paimon", {"warehouse": warehouse})
    rust = [r for b in ctx.sql("SELECT * FROM paimon.db.t") for r in b.to_pylist()]
    assert normalized(rust) == expected
    java = [dict(zip(SCHEMA.names, r, strict=True)) for r in paimon_java.read(warehouse, "db", "t")]
    assert normalized(java) == expected


def test_orc_time_columns_are_refused(warehouse):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("t", pa.time32("ms"))])
    table = create_table(
        warehouse, TableSpec("db", "t", schema, ("id",), 1, (), {"file.format": "orc"})
    )
    with pytest.raises(InvalidOptionError, match=r"columns \['t'\] are TIME"):
        ingest_arrow(table, pa.table({"id": [1], "t": pa.array([1000], pa.time32("ms"))}))


def orc_table_with_history(warehouse: str) -> dict[int, dict]:
    """An ORC table after three pypaimon commits of overlapping keys; the model of its rows."""
    spec = TableSpec("db", "t", SCHEMA, ("id",), 1, (), {"file.format": "orc"})
    create_table(warehouse, spec)
    rng = random.Random(5)
    model: dict[int, dict] = {}
    for commit in range(3):
        rows = [row(k, f"c{commit}") for k in rng.sample(range(2000), 1500)]
        write_with_pypaimon(open_table(warehouse, "db.t"), pa.Table.from_pylist(rows, SCHEMA))
        model.update({r["id"]: r for r in rows})
    return model


def test_a_writer_failure_fails_the_compaction_and_changes_nothing(warehouse, monkeypatch):
    model = orc_table_with_history(warehouse)
    table = open_table(warehouse, "db.t")
    snapshot = table.snapshot_manager().get_latest_snapshot().id
    files = sorted(p.name for p in Path(warehouse).rglob("*.orc"))
    write = orc.ORCWriter.write

    def failing(self, data):
        """pyarrow's writer, failing after it took a batch."""
        write(self, data)
        raise OSError("writer ran out of disk")

    monkeypatch.setattr(orc.ORCWriter, "write", failing)
    with pytest.raises(OSError, match="writer ran out of disk"):
        compact(warehouse, full=True)
    monkeypatch.undo()
    table = open_table(warehouse, "db.t")
    assert table.snapshot_manager().get_latest_snapshot().id == snapshot
    assert sorted(p.name for p in Path(warehouse).rglob("*.orc")) == files
    assert normalized(read_rows(table)) == normalized(list(model.values()))
