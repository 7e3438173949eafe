"""Deletion-vector and lookup-changelog tables written by pypaimon, maintained by our compaction.

pypaimon 2.1 writes level 0 only; readers skip level 0 on deletion-vector and first-row tables,
so such a table shows nothing until compacted. Each scenario writes upserts (and deletes) over a
big compacted base, compacts after each write (minor: vectors accumulate on untouched files),
then fully; pypaimon's reader must return an independent model, and the changelog of each
compaction, applied to the model at the previous one, must give the model now.
"""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pypaimon.manifest.manifest_file_manager import ManifestFileManager
from pypaimon.manifest.manifest_list_manager import ManifestListManager
from pyroaring import BitMap64

from dagster_paimon.ingest.arrow import ingest_arrow
from dagster_paimon.io.index import deleted_rows, deletion_indexes, read_vectors
from dagster_paimon.io.paths import data_file_path
from dagster_paimon.kinds import health_of
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.partition import Partition
from dagster_paimon.spark.read import plan_splits, read_split
from dagster_paimon.table import TableSpec, create_table, open_table
from tests.conftest import write_with_pypaimon
from tests.lsm.kvmodel import read_rows
from tests.lsm.tables import compact_db_t as compact
from tests.maintenance.appends import delete_beside, latest

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        pa.field("v", pa.int64()),
        pa.field("w", pa.string()),
        pa.field("op", pa.string()),
    ]
)
DAYS = ("2024-01-01", "2024-01-02")
BASE_KEYS = 600
KEY_SPACE = 700
KIND_NAMES = {0: "+I", 1: "-U", 2: "+U", 3: "-D"}


class Model:
    """What a table of one merge engine holds after applying writes in order (the oracle)."""

    def __init__(self, engine: str):
        self.engine = engine
        self.rows: dict[tuple, dict] = {}

    def apply(self, rows: list[dict]) -> None:
        """Fold written rows (op = +I or -D) into the model."""
        for r in rows:
            key = (r["dt"], r["id"])
            old = self.rows.get(key)
            if self.engine == "first-row":
                if old is None and r["op"] == "+I":
                    self.rows[key] = self._value(r)
            elif r["op"] == "-D" and self.engine == "aggregation":
                # sum retracts; last_non_null_value forgets a retracted non-null value
                v, w = (None, None) if old is None else (old["v"], old["w"])
                v = v if r["v"] is None else (v or 0) - r["v"]
                self.rows[key] = {"v": v, "w": None if r["w"] is not None else w}
            elif r["op"] == "-D":
                self.rows.pop(key, None)
            elif old is None or self.engine == "deduplicate":
                self.rows[key] = self._value(r)
            elif self.engine == "partial-update":
                self.rows[key] = {
                    n: r[n] if r[n] is not None else old[n] for n in ("v", "w", "op")
                } | {"op": r["op"]}
            else:  # aggregation: v sums, w keeps the last non-null value
                v = old["v"] if r["v"] is None else (old["v"] or 0) + r["v"]
                self.rows[key] = {"v": v, "w": r["w"] if r["w"] is not None else old["w"]}

    def _value(self, r: dict) -> dict:
        """The value columns a row contributes."""
        if self.engine == "aggregation":
            return {"v": r["v"], "w": r["w"]}
        return {"v": r["v"], "w": r["w"], "op": r["op"]}

    def snapshot(self) -> dict[tuple, dict]:
        """A copy of the current contents."""
        return {k: dict(v) for k, v in self.rows.items()}


def visible(rows: list[dict], engine: str) -> dict[tuple, dict]:
    """Rows as read back, keyed like the model (aggregation ignores `op`)."""
    names = ("v", "w") if engine == "aggregation" else ("v", "w", "op")
    return {(r["dt"], r["id"]): {n: r[n] for n in names} for r in rows}


def our_rows(table) -> list[dict]:
    """Every row our merge-on-read (the Spark source's split reader) returns."""
    return [
        row
        for split in plan_splits(table)
        for batch in read_split(table, split, tuple(SCHEMA.names))
        for row in batch.to_pylist()
    ]


def check_reads(table, engine: str, options: dict, model: Model) -> None:
    """pypaimon's reader and ours both return the model.

    pypaimon 2.1 merges every level on read, while Java's readers of lookup tables merge level
    0 with the newest record above it only (LookupMergeFunction): an aggregation would count a
    looked-up value twice, so pypaimon is not an oracle for lookup aggregation tables.
    """
    assert visible(our_rows(table), engine) == model.rows
    lookup_aggregation = engine == "aggregation" and "deletion-vectors.enabled" not in options
    if not lookup_aggregation:
        assert visible(read_rows(table), engine) == model.rows


def changelog_rows(table, snapshot_id: int) -> list[dict]:
    """Every changelog record a snapshot publishes, file by file in write order."""
    snapshot = table.snapshot_manager().get_snapshot_by_id(snapshot_id)
    if not snapshot.changelog_manifest_list:
        return []
    rows = []
    for meta in ManifestListManager(table).read(snapshot.changelog_manifest_list):
        for entry in ManifestFileManager(table).read(meta.file_name):
            part = Partition.of_row(entry.partition)
            path = data_file_path(table, part, entry.bucket, entry.file)
            assert entry.file.file_name.startswith("changelog-")
            rows += pq.ParquetFile(path).read().to_pylist()
    return rows


def apply_changelog(state: dict, changes: list[dict], engine: str) -> dict:
    """Replay a changelog on a state; every retraction must name the value it retracts."""
    state = {k: dict(v) for k, v in state.items()}
    names = ("v", "w") if engine == "aggregation" else ("v", "w", "op")
    for c in changes:
        key, kind = (c["dt"], c["id"]), KIND_NAMES[c["_VALUE_KIND"]]
        value = {n: c[n] for n in names}
        if kind in ("-U", "-D"):
            assert state.pop(key) == value, f"{kind} of {key} retracts a value not there"
        else:
            assert kind in ("+I", "+U") and key not in state, f"{kind} of {key}"
            state[key] = value
    return state


def random_rows(rng: random.Random, count: int, tag: str, deletes: bool) -> list[dict]:
    """Upserts (some nulls) and, if asked, deletes over existing and new keys."""
    rows = []
    for key in rng.sample(range(KEY_SPACE), count):
        delete = deletes and rng.random() < 0.2
        rows.append(
            {
                "dt": DAYS[key % 2],
                "id": key,
                "v": None if rng.random() < 0.2 else rng.randint(0, 99),
                "w": None if rng.random() < 0.3 else tag,
                "op": "-D" if delete else "+I",
            }
        )
    return rows


def write(warehouse: str, rows: list[dict], engine: str) -> None:
    """pypaimon writes the rows; its writer cannot retract aggregations (NotImplementedError),
    so an aggregation's deletes go through our own level-0 writer, in a second commit."""
    table = open_table(warehouse, "db.t")
    deletes = [r for r in rows if r["op"] == "-D"] if engine == "aggregation" else []
    adds = [r for r in rows if r not in deletes]
    write_with_pypaimon(table, pa.Table.from_pylist(adds, SCHEMA))
    if deletes:
        ingest_arrow(open_table(warehouse, "db.t"), pa.Table.from_pylist(deletes, SCHEMA))


def make_table(warehouse: str, **options: str):
    """A partitioned table with two buckets whose row kinds come from the `op` column."""
    spec = TableSpec(
        "db", "t", SCHEMA, ("dt", "id"), 2, ("dt",), {"rowkind.field": "op", **options}
    )
    return create_table(warehouse, spec)


SCENARIOS = {
    "dv-deduplicate": ("deduplicate", {"deletion-vectors.enabled": "true"}, True),
    "dv-partial-update": ("partial-update", {"deletion-vectors.enabled": "true"}, False),
    "dv-aggregation": (
        "aggregation",
        {"deletion-vectors.enabled": "true", "fields.v.aggregate-function": "sum"},
        False,
    ),
    "dv-aggregation-deletes": (
        "aggregation",
        {"deletion-vectors.enabled": "true", "fields.v.aggregate-function": "sum"},
        True,
    ),
    "dv-lookup-changelog": (
        "deduplicate",
        {"deletion-vectors.enabled": "true", "changelog-producer": "lookup"},
        True,
    ),
    "lookup-changelog": ("deduplicate", {"changelog-producer": "lookup"}, True),
    "lookup-changelog-partial-update": (
        "partial-update",
        {"changelog-producer": "lookup", "changelog-producer.row-deduplicate": "true"},
        False,
    ),
    "lookup-changelog-aggregation": (
        "aggregation",
        {"changelog-producer": "lookup", "fields.v.aggregate-function": "sum"},
        False,
    ),
    "first-row-lookup": ("first-row", {"changelog-producer": "lookup"}, False),
    "first-row": ("first-row", {}, False),
}


def java_rows(paimon_java, warehouse: str, engine: str) -> dict[tuple, dict]:
    """Paimon's Java reader's rows, keyed like the model."""
    rows = [dict(zip(SCHEMA.names, r, strict=True)) for r in paimon_java.read(warehouse, "db", "t")]
    return visible(rows, engine)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_minor_then_full_compactions_read_back_as_the_model(warehouse, paimon_java, name):
    engine, options, deletes = SCENARIOS[name]
    make_table(warehouse, **{"merge-engine": engine, **options})
    rng = random.Random(name)
    model = Model(engine)
    base = [{"dt": DAYS[k % 2], "id": k, "v": k, "w": "base", "op": "+I"} for k in range(BASE_KEYS)]
    write_with_pypaimon(open_table(warehouse, "db.t"), pa.Table.from_pylist(base, SCHEMA))
    model.apply(base)
    if options.get("deletion-vectors.enabled") or engine == "first-row":
        assert read_rows(open_table(warehouse, "db.t")) == []  # level 0 only: invisible
    produces = options.get("changelog-producer") == "lookup"
    before: dict = {}
    marked = 0
    index_manifest = None
    for round_ in range(5):
        if round_:
            rows = random_rows(rng, 50, f"r{round_}", deletes)
            write(warehouse, rows, engine)
            model.apply(rows)
        result = compact(warehouse, full=round_ == 0)
        table = open_table(warehouse, "db.t")
        check_reads(table, engine, options, model)
        marked += health_of(read_levels(table)).totals.deleted_rows
        indexes = result.metrics()["deletion_vector_indexes_written"]
        manifest = table.snapshot_manager().get_latest_snapshot().index_manifest
        assert (indexes > 0) == (manifest != index_manifest)
        index_manifest = manifest
        if produces:
            changes = changelog_rows(table, result.snapshot_id)
            assert apply_changelog(before, changes, engine) == model.rows
            written = result.metrics()["changelog_files_written"]
            assert (written > 0) == bool(changes)
            assert "changelog files" in result.summary() or not changes
        before = model.snapshot()
    # Paimon's own reader agrees while vectors and several levels are live
    assert java_rows(paimon_java, warehouse, engine) == model.rows
    levels = read_levels(open_table(warehouse, "db.t"))
    if options.get("deletion-vectors.enabled"):
        assert marked > 0  # minor compactions marked rows of files they did not rewrite
        assert all(b.levels.level0 == [] for b in levels.buckets)
    compact(warehouse, full=True)
    table = open_table(warehouse, "db.t")
    check_reads(table, engine, options, model)
    after = read_levels(table)
    assert health_of(after).totals.deleted_rows == 0
    assert all(len(b.levels.level_sorted_runs()) == 1 for b in after.buckets)


def test_full_compaction_changelog_is_the_diff_between_full_compactions(warehouse):
    make_table(warehouse, **{"changelog-producer": "full-compaction"})
    rng = random.Random(3)
    model = Model("deduplicate")
    before: dict = {}
    for round_ in range(4):
        rows = random_rows(rng, 80, f"r{round_}", deletes=round_ > 0)
        write_with_pypaimon(open_table(warehouse, "db.t"), pa.Table.from_pylist(rows, SCHEMA))
        model.apply(rows)
        minor = compact(warehouse)
        if minor.snapshot_id is not None:
            assert changelog_rows(open_table(warehouse, "db.t"), minor.snapshot_id) == []
        full = compact(warehouse, full=True)
        table = open_table(warehouse, "db.t")
        changes = changelog_rows(table, full.snapshot_id)
        assert apply_changelog(before, changes, "deduplicate") == model.rows
        snapshot = table.snapshot_manager().get_snapshot_by_id(full.snapshot_id)
        assert snapshot.changelog_record_count == len(changes)
        before = model.snapshot()


def test_row_deduplicate_suppresses_updates_to_the_same_value(warehouse):
    make_table(
        warehouse,
        **{"changelog-producer": "lookup", "changelog-producer.row-deduplicate": "true"},
    )
    rows = [{"dt": DAYS[0], "id": k, "v": k, "w": "x", "op": "+I"} for k in range(10)]
    write_with_pypaimon(open_table(warehouse, "db.t"), pa.Table.from_pylist(rows, SCHEMA))
    compact(warehouse, full=True)
    same = rows[:5]
    changed = [{**r, "v": 100 + r["id"]} for r in rows[5:7]]
    write_with_pypaimon(open_table(warehouse, "db.t"), pa.Table.from_pylist(same + changed, SCHEMA))
    result = compact(warehouse)
    changes = changelog_rows(open_table(warehouse, "db.t"), result.snapshot_id)
    assert [(c["id"], KIND_NAMES[c["_VALUE_KIND"]], c["v"]) for c in changes] == [
        (5, "-U", 5),
        (5, "+U", 105),
        (6, "-U", 6),
        (6, "+U", 106),
    ]


def test_bitmap64_vectors_are_written_and_read_by_our_reader(warehouse):
    make_table(
        warehouse,
        **{"deletion-vectors.enabled": "true", "deletion-vectors.bitmap64": "true"},
    )
    model = Model("deduplicate")
    rng = random.Random(5)
    base = [{"dt": DAYS[k % 2], "id": k, "v": k, "w": "base", "op": "+I"} for k in range(BASE_KEYS)]
    for rows in (base, random_rows(rng, 60, "a", True), random_rows(rng, 60, "b", True)):
        write_with_pypaimon(open_table(warehouse, "db.t"), pa.Table.from_pylist(rows, SCHEMA))
        model.apply(rows)
        compact(warehouse, full=rows is base)
    table = open_table(warehouse, "db.t")
    snapshot = table.snapshot_manager().get_latest_snapshot()
    indexes = deletion_indexes(table, snapshot)
    vectors = [
        v
        for (part, bucket), index in indexes.items()
        for v in read_vectors(table, part, bucket, index).values()
    ]
    assert vectors and all(isinstance(v, BitMap64) for v in vectors)
    # pypaimon 2.1 reads only 32-bit vectors; our merge-on-read applies both kinds
    assert visible(our_rows(table), "deduplicate") == model.rows


def test_overwrite_drops_the_vectors_of_the_partitions_it_replaces(warehouse):
    make_table(warehouse, **{"deletion-vectors.enabled": "true"})
    base = [{"dt": DAYS[k % 2], "id": k, "v": k, "w": "base", "op": "+I"} for k in range(BASE_KEYS)]
    write_with_pypaimon(open_table(warehouse, "db.t"), pa.Table.from_pylist(base, SCHEMA))
    compact(warehouse, full=True)
    rows = random_rows(random.Random(9), 60, "u", deletes=True)
    write_with_pypaimon(open_table(warehouse, "db.t"), pa.Table.from_pylist(rows, SCHEMA))
    compact(warehouse)
    table = open_table(warehouse, "db.t")
    indexes = deletion_indexes(table, table.snapshot_manager().get_latest_snapshot())
    assert {p.values for p, _ in indexes} == {(DAYS[0],), (DAYS[1],)}

    day = [{"dt": DAYS[0], "id": 1, "v": 1, "w": "new", "op": "+I"}]
    ingest_arrow(table, pa.Table.from_pylist(day, SCHEMA), mode="overwrite")
    table = open_table(warehouse, "db.t")
    after = deletion_indexes(table, table.snapshot_manager().get_latest_snapshot())
    assert {p.values for p, _ in after} == {(DAYS[1],)}
    assert after == {k: v for k, v in indexes.items() if k[0].values == (DAYS[1],)}
    assert [r for r in read_rows(table) if r["dt"] == DAYS[0]] == []  # level 0 only
    compact(warehouse)
    assert [r for r in read_rows(open_table(warehouse, "db.t")) if r["dt"] == DAYS[0]] == day


def test_a_bucket_whose_vectors_lie_in_several_index_files_compacts_to_one(warehouse, paimon_java):
    """BucketedDvMaintainer restores every index file of the bucket and writes one: a minor
    compaction marking more rows keeps every vector, a full one drops them all."""
    make_table(warehouse, **{"deletion-vectors.enabled": "true"})
    model = Model("deduplicate")
    rng = random.Random(21)
    base = [{"dt": DAYS[k % 2], "id": k, "v": k, "w": "base", "op": "+I"} for k in range(BASE_KEYS)]
    for rows in (base, random_rows(rng, 60, "a", False)):
        write_with_pypaimon(open_table(warehouse, "db.t"), pa.Table.from_pylist(rows, SCHEMA))
        model.apply(rows)
        compact(warehouse, full=rows is base)
    table = open_table(warehouse, "db.t")
    indexes = deletion_indexes(table, table.snapshot_manager().get_latest_snapshot())
    key, index = min(indexes.items(), key=lambda kv: (kv[0][0].values, kv[0][1]))
    level = next(b for b in read_levels(table).buckets if (b.partition, b.bucket) == key)
    unmarked = next(f for f in level.levels.all_files() if f.file_name not in index.holders)
    doomed = pq.ParquetFile(data_file_path(table, key[0], key[1], unmarked)).read().slice(0, 2)
    delete_beside(table, {unmarked.file_name: [0, 1]})
    for r in doomed.to_pylist():
        model.rows.pop((r["dt"], r["id"]))
    table = open_table(warehouse, "db.t")
    index = deletion_indexes(table, table.snapshot_manager().get_latest_snapshot())[key]
    assert len(index.files) == 2
    counted = health_of(read_levels(table)).totals.deleted_rows
    assert counted == sum(
        n for i in deletion_indexes(table, latest(table)).values() for n in deleted_rows(i).values()
    )
    check_reads(table, "deduplicate", {}, model)
    assert java_rows(paimon_java, warehouse, "deduplicate") == model.rows

    rows = random_rows(rng, 60, "b", False)
    write_with_pypaimon(open_table(warehouse, "db.t"), pa.Table.from_pylist(rows, SCHEMA))
    model.apply(rows)
    result = compact(warehouse)
    table = open_table(warehouse, "db.t")
    assert result.metrics()["deletion_vector_indexes_written"] > 0
    after = deletion_indexes(table, latest(table))
    assert all(len(i.files) == 1 for i in after.values())
    check_reads(table, "deduplicate", {}, model)
    assert java_rows(paimon_java, warehouse, "deduplicate") == model.rows

    compact(warehouse, full=True)
    table = open_table(warehouse, "db.t")
    assert health_of(read_levels(table)).totals.deleted_rows == 0
    check_reads(table, "deduplicate", {}, model)
