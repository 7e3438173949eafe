"""Interop matrix: tables pypaimon 2.1 and pypaimon-rust 0.4 write, maintained by us, read by both.

For every (writer, layout) cell the writer creates the table and makes three commits with
overlapping keys and deletes (row kinds from the `op` column, `rowkind.field`, which both
writers honour), we ingest overlapping rows with deletes, the writer commits on top of ours, we
compact (Paimon's pick, then full), expire every snapshot but the latest, compact manifests and
remove orphans. After every step pypaimon's reader and pypaimon-rust's SELECT must both return
exactly an independent model: the list of records written, merged last-write-wins per key.
This proves that we read every file and index both writers produce, and that both read every
file, deletion vector, hash index, changelog, snapshot and manifest we write, in every layout.

Layouts: classic parquet, thin mode, ORC, Avro, deletion vectors, lookup changelog, postpone
buckets (our ingest refuses them: only the writer writes, our compaction moves its rows),
dynamic buckets, record-level expiry and schema evolution (pypaimon's alter_table renames and
adds a column after two commits; both writers go on with the new schema). Both writers create
and write every layout; the one difference: pypaimon-rust writes only uncompressed ORC, so its
ORC tables say 'file.compression' = 'none' (cell rust-orc-uncompressed). Values are strings and
integers, which both readers return as the same Python objects: nothing is normalised.

pypaimon 2.1 records `delete_row_count` 0 for every data file it writes, so a file of its that
holds only deletes and is alone in its bucket is raw-convertible: both readers return its -D
records as rows until a compaction rewrites it. Java's compaction trusts the count and would
upgrade it to the top level unchanged; ours counts the retractions of every file it would
upgrade to the top level (or out of level 0 of a deletion-vector table) and rewrites it. The
last test pins that down apart from the matrix.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa
import pytest
from pypaimon.schema.data_types import AtomicType
from pypaimon.schema.schema_change import SchemaChange
from pypaimon_rust.datafusion import PaimonCatalog, SQLContext

from dagster_paimon.errors import InvalidOptionError
from dagster_paimon.ingest.arrow import ingest_arrow
from dagster_paimon.kinds import compact_open_table
from dagster_paimon.maintenance.options import RetentionOverrides
from dagster_paimon.paimon_table import PaimonTable
from dagster_paimon.results import Metrics
from dagster_paimon.table import TableRef, TableSpec, create_table, open_catalog, open_table
from tests.conftest import committed_files, data_files_on_disk, write_with_pypaimon
from tests.hooks import compact_manifests, expire_snapshots, remove_orphans
from tests.lsm.kvmodel import read_rows

IDENTIFIER = "db.t"
KEY = ("dt", "id")
DAYS = ("2024-01-01", "2024-01-02")
IDS = range(12)
DAY_S = 24 * 3600
NOW = int(time.time())
FRESH, OLD = NOW - 3600, NOW - 3 * DAY_S
PAD = 1000  # random bytes in the foreign writer's first values: its files outweigh ours
SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        pa.field("t", pa.int64()),
        pa.field("v", pa.string()),
        pa.field("op", pa.string()),
    ]
)
# the schema-evolution layout: v renamed to val, w added at the end (field ids kept)
EVOLVED = pa.schema(
    [*(f.with_name("val") if f.name == "v" else f for f in SCHEMA), ("w", pa.string())]
)
SQL_TYPES = {pa.string(): "STRING", pa.int64(): "BIGINT"}
Row = dict[str, object]
Rows = dict[tuple, Row]


@dataclass(frozen=True)
class Layout:
    """A table layout: bucket mode, options, and what readers see of it before compaction."""

    name: str
    bucket: int = 2
    options: dict[str, str] = field(default_factory=dict)
    rust_options: dict[str, str] = field(default_factory=dict)  # extra when rust creates it
    rust_variant: str = ""  # what rust_options change, for the cell id
    hides_level0: bool = False  # readers see only compacted (or moved) files
    expires: bool = False  # compaction drops rows whose t is more than a day old
    evolves: bool = False  # pypaimon alters the table after two commits


LAYOUTS = (
    Layout("classic"),
    Layout("thin", options={"data-file.thin-mode": "true"}),
    # pypaimon-rust's ORC writer only writes uncompressed files: its tables say so
    Layout(
        "orc",
        options={"file.format": "orc"},
        rust_options={"file.compression": "none"},
        rust_variant="uncompressed",
    ),
    Layout("avro", options={"file.format": "avro"}),
    Layout("dv", options={"deletion-vectors.enabled": "true"}, hides_level0=True),
    Layout("lookup", options={"changelog-producer": "lookup"}),
    Layout("postpone", bucket=-2, hides_level0=True),
    Layout("dynamic", bucket=-1, options={"dynamic-bucket.target-row-num": "5"}),
    Layout(
        "expiry",
        options={"record-level.expire-time": "1 d", "record-level.time-field": "t"},
        expires=True,
    ),
    Layout("evolution", evolves=True),
)


def table_options(layout: Layout) -> dict[str, str]:
    """Options every writer gives the table: row kinds come from the `op` column."""
    return {"rowkind.field": "op", **layout.options}


def rust_context(warehouse: str) -> SQLContext:
    """pypaimon-rust's SQL over the warehouse as catalog `paimon`, schema read afresh."""
    ctx = SQLContext()
    ctx.register_catalog("paimon", {"warehouse": warehouse})
    return ctx


def sql_literal(value: object) -> str:
    """A value as a SQL literal."""
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(value)


@dataclass(frozen=True)
class Writer:
    """A foreign writer: how it creates the table and commits rows."""

    name: str
    create: Callable[[str, Layout], None]
    write: Callable[[str, list[Row], pa.Schema], None]


def pypaimon_create(warehouse: str, layout: Layout) -> None:
    """pypaimon's catalog creates the table (through our TableSpec)."""
    spec = TableSpec("db", "t", SCHEMA, KEY, layout.bucket, ("dt",), table_options(layout))
    create_table(warehouse, spec)


def pypaimon_write(warehouse: str, rows: list[Row], schema: pa.Schema) -> None:
    """One pypaimon batch commit."""
    write_with_pypaimon(open_table(warehouse, IDENTIFIER), pa.Table.from_pylist(rows, schema))


def rust_create(warehouse: str, layout: Layout) -> None:
    """pypaimon-rust's CREATE TABLE with the layout's options."""
    options = {"bucket": str(layout.bucket), **table_options(layout), **layout.rust_options}
    columns = ", ".join(
        f"{f.name} {SQL_TYPES[f.type]}{'' if f.nullable else ' NOT NULL'}" for f in SCHEMA
    )
    with_ = ", ".join(f"'{k}' = '{v}'" for k, v in options.items())
    ctx = rust_context(warehouse)
    ctx.sql("CREATE DATABASE paimon.db")
    ctx.sql(
        f"CREATE TABLE paimon.db.t ({columns}, PRIMARY KEY (dt, id)) "
        f"PARTITIONED BY (dt) WITH ({with_})"
    )


def rust_write(warehouse: str, rows: list[Row], schema: pa.Schema) -> None:
    """One pypaimon-rust INSERT (one commit)."""
    values = ", ".join("(" + ", ".join(sql_literal(r[n]) for n in schema.names) + ")" for r in rows)
    names = ", ".join(schema.names)
    rust_context(warehouse).sql(f"INSERT INTO paimon.db.t ({names}) VALUES {values}")


WRITERS = (
    Writer("pypaimon", pypaimon_create, pypaimon_write),
    Writer("rust", rust_create, rust_write),
)


def merged(records: list[Row]) -> Rows:
    """The last record per key, unless it is a delete."""
    rows: Rows = {}
    for r in records:
        key = (r["dt"], r["id"])
        if r["op"] in ("-D", "-U"):
            rows.pop(key, None)
        else:
            rows[key] = r
    return rows


class Model:
    """Every record written, in commit order; readers must see them merged per key."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.records: list[Row] = []
        self.compacted = 0  # records[:compacted] were in the table at the last compaction
        self.filtered = False  # the last compaction was full: expired records are gone

    def add(self, rows: list[Row]) -> None:
        """Records committed, in order."""
        self.records.extend(rows)

    def evolve(self) -> None:
        """The table renamed v to val and added w: old records read that way."""
        self.records = [
            {"dt": r["dt"], "id": r["id"], "t": r["t"], "val": r["v"], "op": r["op"], "w": None}
            for r in self.records
        ]

    def compaction(self, *, full: bool) -> None:
        """Our compaction committed: everything written so far is in compacted files."""
        self.compacted = len(self.records)
        self.filtered = full

    def expected(self) -> Rows:
        """What a reader returns now: the last record per key unless it is a delete.

        Deletion-vector and postpone tables show only compacted files. Record-level expiry
        drops each expired record (t + 1 day < now; a null t never expires) before merging,
        so an older live version resurfaces, exactly as Paimon's compaction reader does.
        """
        records = self.records[: self.compacted] if self.layout.hides_level0 else self.records
        if self.layout.expires and self.filtered:
            assert self.compacted == len(self.records), "expiry is checked after full compaction"
            now = int(time.time())
            records = [r for r in records if r["t"] is None or r["t"] + DAY_S >= now]
        return merged(records)

    def live_keys(self) -> set[tuple]:
        """Keys whose last record is not a delete."""
        return set(merged(self.records))


def batch(
    rng: random.Random, tag: str, schema: pa.Schema, live: set[tuple], rows: int = 10, pad: int = 0
) -> list[Row]:
    """Distinct keys out of 24: upserts, deletes of live keys, fresh, old and null times.

    `pad` random bytes (as hex) lengthen each value, so that a bulk load outweighs later
    commits and Paimon's compaction pick leaves it at the top level (deletion vectors).

    Deletes only hit live keys (pypaimon's delete_row_count, see the module docstring).
    """
    keys = rng.sample([(dt, i) for dt in DAYS for i in IDS], rows)
    out = []
    for dt, i in keys:
        kinds = ["+I", "+U", "-D"] if (dt, i) in live else ["+I", "+U"]
        op = rng.choices(kinds, weights=[5, 3, 2][: len(kinds)])[0]
        t = rng.choices([FRESH, OLD, None], weights=[5, 3, 2])[0]
        row: Row = {"dt": dt, "id": i, "t": t, "op": op}
        value = f"{tag}-{i}" + (f"-{rng.randbytes(pad).hex()}" if pad else "")
        if "val" in schema.names:
            row |= {"val": value, "w": f"w-{tag}"}
        else:
            row["v"] = value
        out.append({n: row[n] for n in schema.names})
    return out


def pypaimon_rows(warehouse: str) -> Rows:
    """Every row pypaimon's reader returns, by key."""
    return {(r["dt"], r["id"]): r for r in read_rows(open_table(warehouse, IDENTIFIER))}


def rust_rows(warehouse: str) -> Rows:
    """Every row pypaimon-rust's SELECT returns, by key."""
    batches = rust_context(warehouse).sql("SELECT * FROM paimon.db.t")
    return {(r["dt"], r["id"]): r for b in batches for r in b.to_pylist()}


def check(warehouse: str, model: Model, stage: str) -> None:
    """Both readers return exactly the model."""
    expected = model.expected()
    assert pypaimon_rows(warehouse) == expected, f"pypaimon read after {stage}"
    assert rust_rows(warehouse) == expected, f"pypaimon-rust read after {stage}"


def rust_changelog(warehouse: str, snapshot_id: int) -> dict[tuple, list[str]]:
    """Row kinds per key of the changelog pypaimon-rust reads for one snapshot."""
    table = PaimonCatalog({"warehouse": warehouse}).get_table(IDENTIFIER)
    builder = table.new_read_builder().with_include_row_kind(True)
    plan = builder.new_incremental_scan(snapshot_id - 1, snapshot_id, mode="changelog").plan()
    kinds: dict[tuple, list[str]] = {}
    for b in builder.new_read().read(plan.splits()):
        for r in b.to_pylist():
            kinds.setdefault((r["dt"], r["id"]), []).append(r["rowkind"])
    return kinds


def compact(warehouse: str, model: Model, *, full: bool) -> Metrics:
    """Our compaction, as the CLI runs it; its metrics."""
    table = open_table(warehouse, IDENTIFIER)
    result = compact_open_table(table, TableRef(warehouse, IDENTIFIER), full=full)
    model.compaction(full=full)
    return result.metrics()


def cell_id(writer: Writer, layout: Layout) -> str:
    """writer-layout, with what the writer changes in the layout."""
    variant = layout.rust_variant if writer.name == "rust" else ""
    return "-".join(filter(None, (writer.name, layout.name, variant)))


CELLS = [pytest.param(w, layout, id=cell_id(w, layout)) for w in WRITERS for layout in LAYOUTS]


@pytest.mark.parametrize(("writer", "layout"), CELLS)
def test_foreign_tables_survive_our_maintenance(warehouse: str, writer: Writer, layout: Layout):
    """Writer commits -> our ingest -> writer again -> compaction -> expiry, manifests, orphans."""
    rng = random.Random(f"{writer.name}-{layout.name}")
    model = Model(layout)
    schema = SCHEMA

    def write(tag: str, **kwargs: int) -> None:
        rows = batch(rng, tag, schema, model.live_keys(), **kwargs)
        writer.write(warehouse, rows, schema)
        model.add(rows)

    # a. the foreign writer: a bulk load of every key and two more commits, long values (the
    # schema evolves before the third)
    writer.create(warehouse, layout)
    write(f"{writer.name}0", rows=len(DAYS) * len(IDS), pad=PAD)
    write(f"{writer.name}1", pad=PAD)
    if layout.evolves:
        changes = [
            SchemaChange.rename_column("v", "val"),
            SchemaChange.add_column("w", AtomicType("STRING")),
        ]
        open_catalog(warehouse).alter_table(IDENTIFIER, changes)
        schema = EVOLVED
        model.evolve()
    write(f"{writer.name}2", pad=PAD)
    if layout.hides_level0:  # so that the reads after our ingest see rows
        assert compact(warehouse, model, full=True)["snapshot_id"] is not None
    check(warehouse, model, "the foreign commits")

    # b. our ingest, overlapping keys, with deletes
    ours = batch(rng, "ours", schema, model.live_keys())
    table = open_table(warehouse, IDENTIFIER)
    if layout.bucket == -2:
        with pytest.raises(InvalidOptionError, match="postpone bucket mode"):
            ingest_arrow(table, pa.Table.from_pylist(ours, schema))
    else:
        result = ingest_arrow(table, pa.Table.from_pylist(ours, schema))
        assert result.snapshot_id is not None
        model.add(ours)
    check(warehouse, model, "our ingest")

    # c. the foreign writer on top of our files: its sequence numbers continue ours
    write(f"{writer.name}3")
    check(warehouse, model, "the foreign commit on top of ours")

    # d. our compaction: Paimon's pick, then full
    minor = compact(warehouse, model, full=False)
    if layout.hides_level0 or layout.name == "lookup":  # level 0 always goes up (or moves)
        assert minor["snapshot_id"] is not None
    if layout.name == "dv":  # level 0 went up to level 4, marking replaced rows of level 5
        assert minor["deletion_vector_indexes_written"] > 0
    if layout.name == "lookup":
        # nothing was compacted before: lookups find no older version, every live key is new
        assert minor["changelog_files_written"] > 0
        changelog = rust_changelog(warehouse, minor["snapshot_id"])
        assert changelog == {k: ["+I"] for k in model.expected()}
    if not layout.expires:  # which expired rows a minor compaction drops depends on its pick
        check(warehouse, model, "minor compaction")
    compact(warehouse, model, full=True)  # nothing to do if the pick left one run per bucket
    check(warehouse, model, "full compaction")

    # e. expiry down to the latest snapshot, manifest compaction, orphan removal
    table = open_table(warehouse, IDENTIFIER)
    overrides = RetentionOverrides(retain_min=1, retain_max=1, time_retained_ms=0)
    expired = expire_snapshots(table, overrides=overrides)
    assert expired.expired_ids and expired.earliest == expired.expired_ids[-1] + 1
    check(warehouse, model, "snapshot expiry")
    manifests = compact_manifests(open_table(warehouse, IDENTIFIER), full=True)
    assert manifests.snapshot_id is not None
    assert manifests.manifests_after == 1 < manifests.manifests_before
    stray = os.path.join(open_table(warehouse, IDENTIFIER).table_path, "dt=2024-01-01", "bucket-0")
    os.makedirs(stray, exist_ok=True)
    stray = os.path.join(stray, "data-stray-0.parquet")
    with open(stray, "wb") as f:
        f.write(b"left by a failed write")
    now_ms = int(time.time() * 1000) + 3_600_000
    orphans = remove_orphans(open_table(warehouse, IDENTIFIER), older_than_ms=1, now_ms=now_ms)
    assert stray in orphans.orphans and not os.path.exists(stray)
    table = open_table(warehouse, IDENTIFIER)
    assert data_files_on_disk(table) == committed_files(table)
    check(warehouse, model, "manifest compaction and orphan removal")


@pytest.mark.parametrize(
    "options",
    [{}, {"changelog-producer": "lookup"}, {"deletion-vectors.enabled": "true"}],
    ids=["classic", "lookup", "dv"],
)
def test_full_compaction_drops_pypaimon_deletes_alone_in_a_bucket(
    warehouse: str, options: dict[str, str]
):
    """A pypaimon file deleting an absent key, alone in its bucket, ends without the delete."""
    schema = pa.schema(
        [pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("op", pa.string())]
    )
    spec = TableSpec("db", "t", schema, ("id",), 1, (), {"rowkind.field": "op", **options})
    rows = [{"id": 1, "v": "absent", "op": "-D"}, {"id": 2, "v": "kept", "op": "+I"}]
    write_with_pypaimon(create_table(warehouse, spec), pa.Table.from_pylist(rows, schema))
    result = PaimonTable.open(warehouse, IDENTIFIER).compact(full=True)
    assert result.snapshot_id is not None
    unit = result.to_dict()["units"][0]
    assert (unit["rewritten_files"], unit["upgraded_files"]) == (1, 0), "reports what ran"
    assert "1 upgraded" not in result.summary()
    expected = {2: {"id": 2, "v": "kept", "op": "+I"}}
    assert {r["id"]: r for r in read_rows(open_table(warehouse, IDENTIFIER))} == expected
    rust = rust_context(warehouse).sql("SELECT * FROM paimon.db.t")
    assert {r["id"]: r for b in rust for r in b.to_pylist()} == expected
