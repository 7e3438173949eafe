"""The manifest merge at commit against Java's (0.9 and 1.0): the same commits, made by Paimon's
Java writer into one table and by our ingest and compaction into another, leave the same number
of manifests in every snapshot, and Java reads our table row for row."""

from __future__ import annotations

import pyarrow as pa
import pytest

from dagster_paimon.format.manifest import TableManifests
from dagster_paimon.ingest.arrow import ingest_arrow
from dagster_paimon.io.filekind import ADD
from dagster_paimon.kinds import compact_open_table
from dagster_paimon.table import TableRef, open_table
from tests.java.test_java_tables import COLUMNS, NAMES, Model, java_read, pypaimon_read, spec

pytestmark = pytest.mark.slow

SCHEMA = pa.schema(
    [
        ("dt", pa.string()),
        ("id", pa.int32()),
        ("v", pa.string()),
        ("n", pa.int64()),
        ("d", pa.float64()),
    ]
)
assert [name for name, _ in COLUMNS] == SCHEMA.names

Counts = list[tuple[int, int, int]]


def steps(commits: int, compact_at: tuple[int, ...]) -> list[list[list] | str]:
    """Upsert commits over two days, with Java's full compaction after the given commits."""
    model = Model()
    out: list[list[list] | str] = []
    for c in range(commits):
        out.append(model.commit(c, range(3 * c, 3 * c + 8)))
        if c in compact_at:
            out.append("compact")
    return out


def ours(warehouse: str, plan: list[list[list] | str]) -> None:
    """The same commits by our ingest (one APPEND each) and full compaction (one COMPACT)."""
    ref = TableRef.of(warehouse, "db.t")
    for step in plan:
        table = open_table(warehouse, "db.t")
        if step == "compact":
            compact_open_table(table, ref, full=True)
        else:
            # -U retracts the row its +U replaces: last write wins either way
            rows = [dict(zip(NAMES, row[1:], strict=True)) for row in step if row[0] != "-U"]
            ingest_arrow(table, pa.Table.from_pylist(rows, schema=SCHEMA))


def manifest_counts(warehouse: str) -> Counts:
    """Per snapshot: (its kind's first letter as a number, base manifests, base + delta)."""
    table = open_table(warehouse, "db.t")
    manager, manifests = table.snapshot_manager(), TableManifests(table)
    counts = []
    for snapshot_id in range(1, manager.get_latest_snapshot().id + 1):
        snapshot = manager.get_snapshot_by_id(snapshot_id)
        counts.append(
            (
                ord(snapshot.commit_kind[0]),
                len(manifests.base(snapshot)),
                len(manifests.all(snapshot)),
            )
        )
    return counts


def deletes_in_base(warehouse: str) -> int:
    """DELETE entries left in the latest base list."""
    table = open_table(warehouse, "db.t")
    manifests = TableManifests(table)
    base = manifests.base(table.snapshot_manager().get_latest_snapshot())
    return sum(e.kind != ADD for m in base for e in manifests.entries_of(m))


@pytest.mark.parametrize("version", ["paimon_java", "paimon_java_1_0"], ids=["0.9", "1.0"])
@pytest.mark.parametrize(
    ("options", "commits", "compact_at"),
    [
        ({}, 40, (12, 33)),
        ({"manifest.merge-min-count": "4"}, 24, (6, 13)),
        ({"manifest.full-compaction-threshold-size": "1 b"}, 14, (4, 9)),
    ],
    ids=["defaults", "min-count-4", "full-past-threshold"],
)
def test_java_and_our_commits_leave_the_same_manifests(
    request, tmp_path, version, options, commits, compact_at
):
    java = request.getfixturevalue(version)
    table_spec = spec(**{"write-only": "true", **options})
    plan = steps(commits, compact_at)
    java_wh, our_wh = str(tmp_path / "java"), str(tmp_path / "ours")
    # batch commits: one snapshot per step, as ours (a stream compaction job adds an empty APPEND)
    java.write(java_wh, "db", "t", plan, spec=table_spec, stream=False)
    java.write(our_wh, "db", "t", [], spec=table_spec, stream=False)
    ours(our_wh, plan)

    theirs = manifest_counts(java_wh)
    assert len(theirs) == len(plan), "one snapshot per step"
    assert manifest_counts(our_wh) == theirs
    assert max(total for _, _, total in theirs) <= int(options.get("manifest.merge-min-count", 30))
    assert deletes_in_base(our_wh) == deletes_in_base(java_wh)
    rows = java_read(java, java_wh)
    assert java_read(java, our_wh) == rows
    assert pypaimon_read(our_wh) == rows
