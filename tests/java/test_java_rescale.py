"""Rescale against Paimon's own: on copies of one table, our rescale and what Java's rescale
procedure does with Paimon 0.9's and 1.0's classes (PaimonRescale.java) put every row in the
same bucket, record the same bucket count per partition, commit one OVERWRITE each, read the
same to Java and pypaimon (the model), and make Java's writer refuse the old count alike."""

from __future__ import annotations

import shutil

import pytest

from dagster_paimon.paimon_table import PaimonTable
from dagster_paimon.snapshot.entries import live_entries
from dagster_paimon.table import open_table
from tests.java.test_java_tables import pypaimon_reads_java_manifests
from tests.lsm.compaction.test_rescale import DAYS, THREE_DAYS, fill, fill_three_days, make
from tests.lsm.kvmodel import read_rows

pytestmark = pytest.mark.slow

VERSIONS = ("paimon_java", "paimon_java_1_0")


def bucket_of_row(warehouse: str) -> dict[tuple, int]:
    """Each row's key and value to the bucket pypaimon's reader finds it in."""
    table = open_table(warehouse, "db.t")
    builder = table.new_read_builder()
    out = {}
    with pypaimon_reads_java_manifests():
        for split in builder.new_scan().plan().splits():
            for r in builder.new_read().to_arrow([split]).to_pylist():
                out[(r["dt"], r["id"], r["v"])] = split.bucket
    return out


def pypaimon_rows(warehouse: str) -> list[list]:
    """Every row pypaimon's reader returns, sorted."""
    with pypaimon_reads_java_manifests():
        rows = read_rows(open_table(warehouse, "db.t"))
    return sorted([r["dt"], r["id"], r["v"]] for r in rows)


def layout(warehouse: str) -> set[tuple]:
    """(partition, bucket, total buckets) of every live file."""
    table = open_table(warehouse, "db.t")
    latest = table.snapshot_manager().get_latest_snapshot()
    return {
        (tuple(e.partition.values), e.bucket, e.total_buckets) for e in live_entries(table, latest)
    }


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    ("old", "new", "partitions"),
    [
        (2, 3, [{"dt": THREE_DAYS[0]}, {"dt": THREE_DAYS[2]}]),
        (3, 1, [{"dt": THREE_DAYS[1]}]),
        (2, 5, None),
    ],
    ids=["two-partitions", "one-partition", "whole-table"],
)
def test_rescale_matches_java(request, tmp_path, version, old, new, partitions):
    java = request.getfixturevalue(version)
    base = str(tmp_path / "base")
    (tmp_path / "base").mkdir()
    make(base, bucket=old, partitioned=True)
    model = fill_three_days(base)
    before = open_table(base, "db.t").snapshot_manager().get_latest_snapshot().id
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    shutil.copytree(base, ours)
    shutil.copytree(base, theirs)

    result = PaimonTable.open(ours, "db.t").rescale(bucket_num=new, partitions=partitions)
    done = java.rescale(theirs, "db", "t", new, partitions)

    assert result.snapshot_id == done["snapshot"] == before + 1
    assert done["kind"] == "OVERWRITE"
    assert open_table(ours, "db.t").snapshot_manager().get_latest_snapshot().commit_kind == (
        "OVERWRITE"
    )
    assert done["rows"] == sum(
        1 for dt, _ in model.rows if partitions is None or {"dt": dt} in partitions
    )
    assert layout(ours) == layout(theirs)
    rescaled = {p["dt"] for p in partitions} if partitions else set(THREE_DAYS)
    assert {(p[0], t) for p, _, t in layout(ours)} == {
        (d, new if d in rescaled else old) for d in THREE_DAYS
    }
    assert bucket_of_row(ours) == bucket_of_row(theirs)

    expected = sorted([r["dt"], r["id"], r["v"]] for r in model.rows.values())
    reads = [{"warehouse": w, "database": "db", "table": "t"} for w in (ours, theirs)]
    for got in java.start_reads(reads)():
        assert "error" not in got, got.get("error", "")[:2000]
        assert sorted(got["rows"]) == expected
    assert pypaimon_rows(ours) == pypaimon_rows(theirs) == expected


@pytest.mark.parametrize("version", VERSIONS)
def test_java_writer_refuses_the_old_count_alike(request, tmp_path, version):
    """Into a partition rescaled by us or by Java, Java's writer with the table's old count
    fails with the same message; the other partition takes the write in both."""
    java = request.getfixturevalue(version)
    base = str(tmp_path / "base")
    (tmp_path / "base").mkdir()
    make(base, bucket=2, partitioned=True)
    fill(base)
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    shutil.copytree(base, ours)
    shutil.copytree(base, theirs)
    PaimonTable.open(ours, "db.t").rescale(bucket_num=4, partitions=[{"dt": DAYS[0]}])
    java.rescale(theirs, "db", "t", 4, [{"dt": DAYS[0]}])

    def job(warehouse: str, day: str) -> dict:
        step = [["+I", day, i, f"j{i}"] for i in range(200, 210)]
        return {
            "warehouse": warehouse,
            "database": "db",
            "table": "t",
            "mode": "batch",
            "steps": [step],
        }

    jobs = [job(w, d) for d in DAYS for w in (ours, theirs)]
    refused_ours, refused_theirs, ok_ours, ok_theirs = java.start_writes(jobs)()
    messages = []
    for refused in (refused_ours, refused_theirs):
        error = refused[-1]["error"]
        line = next(x for x in error.splitlines() if "new bucket num" in x)
        messages.append(line[line.index("Try to write") :])
    assert messages[0] == messages[1]
    assert f"dt={DAYS[0]}" in messages[0] and "new bucket num 2" in messages[0]
    assert "previous bucket num is 4" in messages[0]
    for ok in (ok_ours, ok_theirs):
        assert "error" not in ok[-1], ok[-1].get("error", "")[:2000]
    assert layout(ours) == layout(theirs)
    assert bucket_of_row(ours) == bucket_of_row(theirs)


def test_java_refuses_then_writes_after_the_option_is_altered(paimon_java_1_0, warehouse):
    """As Java's own rescale flow: a rescaled table's old `bucket` option makes Java's writer
    refuse; altered to the new count, Java writes into the rescaled buckets and reads right."""
    from pypaimon import CatalogFactory
    from pypaimon.schema.schema_change import SchemaChange

    make(warehouse, bucket=2, partitioned=False)
    model = fill(warehouse)
    PaimonTable.open(warehouse, "db.t").rescale(bucket_num=4)
    step = [["+I", DAYS[0], i, f"j{i}"] for i in range(0, 100, 2)]
    with pytest.raises(AssertionError, match="new bucket num 2"):
        paimon_java_1_0.write(warehouse, "db", "t", [step])
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.alter_table("db.t", [SchemaChange.set_option("bucket", "4")], False)
    paimon_java_1_0.write(warehouse, "db", "t", [step])
    for _, dt, i, v in step:
        model.rows[(dt, i)] = {"dt": dt, "id": i, "v": v}
    expected = sorted([r["dt"], r["id"], r["v"]] for r in model.rows.values())
    assert sorted(paimon_java_1_0.read(warehouse, "db", "t")) == expected
