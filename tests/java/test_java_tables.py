"""Tables Paimon's Java writers (0.9 and 1.0) wrote: we read their levels and compact them, then
Java and pypaimon read them as the model, and Java's writer restores from our files, appends and
compacts again."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import fastavro
import pytest
from pypaimon.manifest.manifest_file_manager import ManifestFileManager

from dagster_paimon.format.manifest import fill_defaults
from dagster_paimon.io.index import DELETION_VECTORS
from dagster_paimon.kinds import compact_open_table, health_of
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.table import TableRef, open_table
from tests.lsm.kvmodel import read_rows

pytestmark = pytest.mark.slow

COLUMNS = [["dt", "STRING"], ["id", "INT"], ["v", "STRING"], ["n", "BIGINT"], ["d", "DOUBLE"]]
NAMES = [name for name, _ in COLUMNS]
DAYS = ("2024-01-01", "2024-01-02")

Key = tuple[str, int]
Row = tuple[str, int, str, int, float]


def spec(**options: str) -> dict:
    """A deduplicate table keyed by (dt, id), partitioned by dt, in 2 buckets."""
    return {
        "columns": COLUMNS,
        "primaryKeys": ["dt", "id"],
        "partitionKeys": ["dt"],
        "options": {"bucket": "2", **options},
    }


class Model:
    """The table as it should read: last write wins, deletes remove."""

    def __init__(self) -> None:
        self.rows: dict[Key, Row] = {}

    def commit(self, commit: int, upserts: range, deletes: range = range(0)) -> list[list]:
        """One commit's rows for Java's writer ([row kind, values...]), applied to the model."""
        out: list[list] = []
        for day in DAYS:
            for i in upserts:
                row: Row = (day, i, f"c{commit}-{i}", commit * 1000 + i, i / 4)
                updating = (day, i) in self.rows
                if updating and commit % 2:  # a changelog source's update pair
                    out.append(["-U", *self.rows[(day, i)]])
                out.append(["+U" if updating else "+I", *row])
                self.rows[(day, i)] = row
            for i in deletes:
                out.append(["-D", day, i, None, None, None])
                self.rows.pop((day, i), None)
        return out


def java_read(java, warehouse: str) -> dict[Key, Row]:
    """What Paimon's Java reader returns, by key."""
    return {(r[0], r[1]): tuple(r) for r in java.read(warehouse, "db", "t")}


@contextmanager
def pypaimon_reads_java_manifests() -> Iterator[None]:
    """pypaimon's own reader (the oracle) with our defaults for fields Java 0.9/1.0 omit: a test
    shim over pypaimon alone, so the oracle's data reading stays pypaimon's."""
    original = ManifestFileManager._get_value_stats_fields
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            ManifestFileManager,
            "_get_value_stats_fields",
            lambda self, file_dict, schema: original(self, fill_defaults(file_dict), schema),
        )
        yield


def pypaimon_read(warehouse: str) -> dict[Key, Row]:
    """What pypaimon's own reader returns, by key."""
    with pypaimon_reads_java_manifests():
        rows = read_rows(open_table(warehouse, "db.t"))
    return {(r["dt"], r["id"]): tuple(r[c] for c in NAMES) for r in rows}


def dv_ranges(warehouse: str) -> list:
    """`_DELETIONS_VECTORS_RANGES` of every deletion-vector entry of the latest index manifest,
    decoded from the Avro as written."""
    table = open_table(warehouse, "db.t")
    snapshot = table.snapshot_manager().get_latest_snapshot()
    path = f"{table.table_path}/manifest/{snapshot.index_manifest}"
    with table.file_io.new_input_stream(path) as stream:
        records = list(fastavro.reader(stream))
    return [r["_DELETIONS_VECTORS_RANGES"] for r in records if r["_INDEX_TYPE"] == DELETION_VECTORS]


@pytest.mark.parametrize(
    ("version", "options"),
    [
        ("paimon_java", {"write-only": "true"}),
        ("paimon_java_1_0", {"write-only": "true"}),
        ("paimon_java", {"deletion-vectors.enabled": "true"}),
    ],
    ids=["0.9-write-only", "1.0-write-only", "0.9-deletion-vectors"],
)
def test_java_written_tables_compact_and_java_writes_on(request, warehouse, version, options):
    java = request.getfixturevalue(version)
    model = Model()
    steps = [model.commit(c, range(3 * c, 3 * c + 20), deletes=range(c, c + 2)) for c in range(6)]
    java.write(warehouse, "db", "t", steps, spec=spec(**options))
    table = open_table(warehouse, "db.t")
    dv = "deletion-vectors.enabled" in options

    before = health_of(read_levels(table)).aggregate()
    assert before["buckets"] == 4
    if "write-only" in options:
        assert before["max_sorted_runs"] == len(steps)
    result = compact_open_table(table, TableRef.of(warehouse, "db.t"), full=True)
    assert result.snapshot_id is not None
    assert health_of(read_levels(open_table(warehouse, "db.t"))).aggregate()["max_sorted_runs"] == 1
    if dv:  # no vector left: Java's empty list, not null
        assert dv_ranges(warehouse) and all(ranges == [] for ranges in dv_ranges(warehouse))
    assert java_read(java, warehouse) == model.rows
    assert pypaimon_read(warehouse) == model.rows

    # Java's writer restores from our files (levels, sequence numbers, deletion vectors).
    java.write(warehouse, "db", "t", [model.commit(6, range(25, 35), deletes=range(4, 6))])
    java.write(warehouse, "db", "t", [model.commit(7, range(0, 10)), "compact"])
    assert java_read(java, warehouse) == model.rows
    assert pypaimon_read(warehouse) == model.rows
