"""Append-table compaction, differential against Paimon Java's own compaction of a copy.

Each table is written (by pypaimon, or by Paimon's Java writer with write-only=true so Java does
not compact as it writes), optionally given deletion vectors by Java's DELETE (Spark's path:
AppendDeletionFileMaintainer; 0.9 and 1.0 write deletion vectors on append tables only that way),
then copied: Java's dedicated compaction job compacts one copy (AppendTables.java), we
compact the other through `PaimonTable.compact`. Then Java, pypaimon and pypaimon-rust read
exactly the rows of an independent model from ours; the files per (partition, bucket) are
Java's; a bucketed table reads each bucket in the same order as Java's copy and as before
compaction.

The inputs are chosen where Java's planner is deterministic and its versions agree: an
unaware-bucket partition of 50 small files is one coordinator task (0.9/1.0 bin at 50 files,
later versions compact a tail of >= compaction.min.file-num files) and one of 3 files is left as
it is; with deletion vectors the files sharing a deletion index file are one task.

pypaimon 2.1 stamps every file of a bucketed append table with sequence number 1, so Java's
BucketedAppendCompactManager (files in a TreeSet by sequence number) sees one file per bucket and
leaves such a bucket alone: for those tables we compare with what Java does to the same rows
written by its own writer, and keep Java's read order of the bucket.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from pypaimon import CatalogFactory, Schema
from pypaimon_rust.datafusion import SQLContext

from dagster_paimon.io.index import VectorIndex, deleted_rows, deletion_indexes
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.paimon_table import PaimonTable
from dagster_paimon.table import open_table
from tests.conftest import write_with_pypaimon
from tests.java.test_java_tables import pypaimon_reads_java_manifests

pytestmark = pytest.mark.slow

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
COMMITS = 50  # files in partition a: one unaware coordinator task in every Java version
DOOMED = list(range(0, COMMITS * 10, 7))  # ids Java's DELETE removes


def batches() -> list[list[tuple[str, int, str]]]:
    """Commit c writes ids 10c..10c+9 to day a; the first 3 commits write day b too."""
    out = []
    for c in range(COMMITS):
        rows = [("a", i, f"c{c}") for i in range(10 * c, 10 * c + 10)]
        if c < 3:
            rows += [("b", 10_000 + i, f"c{c}") for i in range(10 * c, 10 * c + 5)]
        out.append(rows)
    return out


def options(bucket: int, dv: bool) -> dict[str, str]:
    """The table options of one layout."""
    opts = {"bucket": str(bucket)}
    if bucket > 0:
        opts["bucket-key"] = "id"
    if dv:
        opts["deletion-vectors.enabled"] = "true"
    return opts


def write_pypaimon(warehouse: Path, bucket: int, partitioned: bool, dv: bool) -> None:
    """db.t written by pypaimon, one commit per batch."""
    catalog = CatalogFactory.create({"warehouse": str(warehouse)})
    catalog.create_database("db", True)
    schema = Schema.from_pyarrow_schema(
        SCHEMA, partition_keys=["dt"] if partitioned else None, options=options(bucket, dv)
    )
    catalog.create_table("db.t", schema, False)
    table = catalog.get_table("db.t")
    for rows in batches():
        write_with_pypaimon(
            table,
            pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in rows], SCHEMA),
        )


def write_java(
    java, warehouse: Path, bucket: int, partitioned: bool, dv: bool, **extra: str
) -> None:
    """db.t written by Paimon's Java writer, one batch commit per batch, write-only."""
    spec = {
        "columns": [["dt", "STRING"], ["id", "BIGINT"], ["v", "STRING"]],
        "primaryKeys": [],
        "partitionKeys": ["dt"] if partitioned else [],
        "options": {**options(bucket, dv), "write-only": "true", **extra},
    }
    steps = [[["+I", *r] for r in rows] for rows in batches()]
    java.write(str(warehouse), "db", "t", steps, spec=spec, stream=False)


def model(dv: bool) -> list[list]:
    """Every row written, less Java's deletes: sorted."""
    rows = [list(r) for rows in batches() for r in rows]
    return sorted(r for r in rows if not (dv and r[1] in DOOMED))


def pypaimon_rows(warehouse: Path) -> list[list]:
    """pypaimon's read of db.t, sorted."""
    table = CatalogFactory.create({"warehouse": str(warehouse)}).get_table("db.t")
    builder = table.new_read_builder()
    with pypaimon_reads_java_manifests():  # manifests Java 0.9/1.0 wrote
        data = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return sorted([r["dt"], r["id"], r["v"]] for r in data.to_pylist())


def rust_rows(warehouse: Path) -> list[list]:
    """pypaimon-rust's SELECT of db.t, sorted."""
    ctx = SQLContext()
    ctx.register_catalog("paimon", {"warehouse": str(warehouse)})
    batches_ = ctx.sql("SELECT dt, id, v FROM paimon.db.t")
    return sorted([r["dt"], r["id"], r["v"]] for b in batches_ for r in b.to_pylist())


def files(layout: list[dict]) -> dict[tuple, int]:
    """Data files per (partition, bucket)."""
    return {(tuple(b["partition"]), b["bucket"]): b["files"] for b in layout}


def orders(layout: list[dict]) -> dict[tuple, list]:
    """Each bucket's rows in the order Java's read returns them."""
    return {(tuple(b["partition"]), b["bucket"]): b["rows"] for b in layout}


def copies(tmp_path: Path, base: Path) -> tuple[Path, Path]:
    """Two copies of a written warehouse: ours and Java's."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    shutil.copytree(base, ours)
    shutil.copytree(base, theirs)
    return ours, theirs


def assert_everyone_reads(layout: list[dict], warehouse: Path, dv: bool) -> None:
    """Java (its read of every bucket in `layout`), pypaimon and pypaimon-rust read exactly the
    model."""
    expected = model(dv)
    assert sorted(r for b in layout for r in b["rows"]) == expected
    assert pypaimon_rows(warehouse) == expected
    assert rust_rows(warehouse) == expected


LAYOUTS = [
    pytest.param(
        partitioned, dv, id=f"{'part' if partitioned else 'flat'}-{'dv' if dv else 'plain'}"
    )
    for partitioned in (True, False)
    for dv in (False, True)
]


@pytest.mark.parametrize("writer", ["pypaimon", "java"])
@pytest.mark.parametrize(("partitioned", "dv"), LAYOUTS)
def test_unaware_bucket_compaction_drops_files_as_javas_coordinator(
    paimon_java, tmp_path, writer, partitioned, dv
):
    base = tmp_path / "base"
    if writer == "pypaimon":
        write_pypaimon(base, -1, partitioned, dv)
    else:
        write_java(paimon_java, base, -1, partitioned, dv)
    if dv:
        paimon_java.append_delete(str(base), "db", "t", "id", DOOMED)
    ours, theirs = copies(tmp_path, base)

    report = paimon_java.append_compact(str(theirs), "db", "t", full=False)
    assert report["tasks"], "Java's coordinator compacts this input"
    PaimonTable.open(str(ours), "db.t").compact()

    our_layout = paimon_java.append_layout(str(ours), "db", "t")
    assert files(our_layout) == files(paimon_java.append_layout(str(theirs), "db", "t"))
    assert_everyone_reads(our_layout, ours, dv)


@pytest.mark.parametrize(("partitioned", "dv"), LAYOUTS)
@pytest.mark.parametrize("version", ["paimon_java", "paimon_java_1_0"], ids=["0.9", "1.0"])
def test_bucketed_full_compaction_matches_javas_files_and_order(
    request, tmp_path, version, partitioned, dv
):
    java = request.getfixturevalue(version)
    base = tmp_path / "base"
    write_java(java, base, 2, partitioned, dv)
    if dv:
        java.append_delete(str(base), "db", "t", "id", DOOMED)
    before = orders(java.append_layout(str(base), "db", "t"))
    ours, theirs = copies(tmp_path, base)

    java.append_compact(str(theirs), "db", "t", full=True)
    PaimonTable.open(str(ours), "db.t").compact(full=True)

    java_layout = java.append_layout(str(theirs), "db", "t")
    our_layout = java.append_layout(str(ours), "db", "t")
    assert set(files(java_layout).values()) == {1}
    assert files(our_layout) == files(java_layout)
    assert orders(our_layout) == orders(java_layout) == before
    assert_everyone_reads(our_layout, ours, dv)


@pytest.mark.parametrize("partitioned", [True, False], ids=["part", "flat"])
def test_bucketed_pick_compacts_the_window_java_picks(paimon_java, tmp_path, partitioned):
    """Paimon's pick (not full) of a bucket: the first files in sequence order, as many as
    compaction.min.file-num and max.file-num allow (BucketedAppendCompactManager)."""
    base = tmp_path / "base"
    write_java(paimon_java, base, 2, partitioned, False)
    before = orders(paimon_java.append_layout(str(base), "db", "t"))
    ours, theirs = copies(tmp_path, base)

    paimon_java.append_compact(str(theirs), "db", "t", full=False)
    PaimonTable.open(str(ours), "db.t").compact()

    java_layout = paimon_java.append_layout(str(theirs), "db", "t")
    our_layout = paimon_java.append_layout(str(ours), "db", "t")
    assert files(our_layout) == files(java_layout)
    assert orders(our_layout) == orders(java_layout) == before
    assert_everyone_reads(our_layout, ours, False)


def pypaimon_orders(warehouse: Path) -> dict[tuple, list]:
    """Each bucket's rows in the order pypaimon's splits read them."""
    table = CatalogFactory.create({"warehouse": str(warehouse)}).get_table("db.t")
    builder = table.new_read_builder()
    out: dict[tuple, list] = {}
    with pypaimon_reads_java_manifests():  # manifests Java 0.9 wrote
        splits = builder.new_scan().plan().splits()
    for split in splits:
        partition = tuple(str(v) for v in split.partition.values)
        rows = builder.new_read().to_arrow([split]).to_pylist()
        out.setdefault((partition, split.bucket), []).extend(
            [r["dt"], r["id"], r["v"]] for r in rows
        )
    return out


@pytest.mark.parametrize(("partitioned", "dv"), LAYOUTS)
def test_pypaimon_written_buckets_compact_to_one_file_in_read_order(
    paimon_java, tmp_path, partitioned, dv
):
    base = tmp_path / "base"
    write_pypaimon(base, 2, partitioned, dv)
    if dv:
        paimon_java.append_delete(str(base), "db", "t", "id", DOOMED)
    before = orders(paimon_java.append_layout(str(base), "db", "t"))
    assert pypaimon_orders(base) == before
    ours, theirs = copies(tmp_path, base)
    # Java sees one file per bucket (every file has sequence number 1): nothing to compact.
    if not dv:
        assert paimon_java.append_compact(str(theirs), "db", "t", full=True)["tasks"] == []

    PaimonTable.open(str(ours), "db.t").compact(full=True)

    our_layout = paimon_java.append_layout(str(ours), "db", "t")
    assert set(files(our_layout).values()) == {1}
    assert orders(our_layout) == before
    assert pypaimon_orders(ours) == before
    assert_everyone_reads(our_layout, ours, dv)


def vector_indexes(warehouse: Path) -> dict[tuple, VectorIndex]:
    """Each partition's deletion-vector index files, as our reader lists them."""
    table = open_table(str(warehouse), "db.t")
    snapshot = table.snapshot_manager().get_latest_snapshot()
    return {(p.values, b): index for (p, b), index in deletion_indexes(table, snapshot).items()}


@pytest.mark.parametrize("partitioned", [True, False], ids=["part", "flat"])
def test_javas_several_index_files_per_partition_read_and_compact_exactly(
    paimon_java_1_0, tmp_path, partitioned
):
    """Java's unaware-bucket DELETE rolls index files at deletion-vector.index-file.target-size
    and a second DELETE adds files beside the first's: every reader of ours takes their union,
    and our compaction leaves what Java's leaves."""
    java = paimon_java_1_0
    base = tmp_path / "base"
    rolled = {"deletion-vector.index-file.target-size": "64b"}
    write_java(java, base, -1, partitioned, True, **rolled)
    half = len(DOOMED) // 2
    java.append_delete(str(base), "db", "t", "id", DOOMED[:half])
    java.append_delete(str(base), "db", "t", "id", DOOMED[half:])
    indexes = vector_indexes(base)
    assert max(len(index.files) for index in indexes.values()) > 2
    # Java 0.9 and 1.0-SNAPSHOT record no cardinality: health counts the vectors themselves
    assert sum(sum(deleted_rows(index).values()) for index in indexes.values()) == 0
    health = PaimonTable.open(str(base), "db.t").health()
    assert health.totals.deleted_rows == len(DOOMED)
    levels = read_levels(open_table(str(base), "db.t"))
    assert sum(n for b in levels.buckets for n in b.deleted_rows().values()) == len(DOOMED)
    assert_everyone_reads(java.append_layout(str(base), "db", "t"), base, True)
    ours, theirs = copies(tmp_path, base)

    java.append_compact(str(theirs), "db", "t", full=False)
    result = PaimonTable.open(str(ours), "db.t").compact()
    assert any(t.dv_index is not None and len(t.dv_index.files) > 1 for t in result.tasks)

    assert vector_indexes(ours) == vector_indexes(theirs) == {}
    assert_everyone_reads(java.append_layout(str(ours), "db", "t"), ours, True)
