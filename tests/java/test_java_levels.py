"""Each level in the format and compression Java writes it (`file.format.per.level`,
`file.compression.per.level`, KeyValueFileWriterFactory): a Java-written table compacted by Java
on one copy and by us on another holds the same (level, format, codec) files; our level-0
ingest writes what Java's writer wrote at level 0."""

from __future__ import annotations

import shutil
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dagster_paimon.ingest.arrow import ingest_arrow
from dagster_paimon.paimon_table import PaimonTable
from dagster_paimon.snapshot.entries import live_entries
from dagster_paimon.table import open_table
from tests.java.test_java_tables import NAMES, Model, java_read, spec

pytestmark = pytest.mark.slow

LEVELS = {"file.format.per.level": "0:avro", "file.compression.per.level": "5:gzip"}


def codec(path: Path) -> str:
    """A data file's format and compression codec, as its own metadata records them."""
    if path.suffix == ".avro":
        with path.open("rb") as f:
            return f"avro/{fastavro.reader(f).metadata.get('avro.codec', 'null')}"
    return f"parquet/{pq.ParquetFile(path).metadata.row_group(0).column(0).compression.lower()}"


def live_files(warehouse: Path) -> set[tuple[int, str]]:
    """(level, format/codec) of every live data file of the latest snapshot."""
    table = open_table(str(warehouse), "db.t")
    latest = table.snapshot_manager().get_latest_snapshot()
    found = set()
    for e in live_entries(table, latest):
        partition = f"dt={e.partition.values[0]}"
        path = warehouse / "db.db" / "t" / partition / f"bucket-{e.bucket}" / e.file.file_name
        found.add((e.file.level, codec(path)))
    return found


@pytest.mark.parametrize("version", ["paimon_java", "paimon_java_1_0"], ids=["0.9", "1.0"])
def test_levels_are_written_in_javas_format_and_compression(request, tmp_path, version):
    java = request.getfixturevalue(version)
    base, ours, theirs = tmp_path / "base", tmp_path / "ours", tmp_path / "theirs"
    model = Model()
    steps = [model.commit(c, range(3 * c, 3 * c + 12)) for c in range(3)]
    java.write(str(base), "db", "t", steps, spec=spec(**{"write-only": "true", **LEVELS}))
    level0 = live_files(base)
    assert level0 == {(0, "avro/zstandard")}
    shutil.copytree(base, ours)
    shutil.copytree(base, theirs)

    java.write(str(theirs), "db", "t", ["compact"])
    PaimonTable.open(str(ours), "db.t").compact(full=True)
    assert live_files(ours) == live_files(theirs) == {(5, "parquet/gzip")}

    row = ("2024-01-01", 99, "ours", 7, 0.5)
    types = [pa.string(), pa.int32(), pa.string(), pa.int64(), pa.float64()]
    data = pa.table([pa.array([v], t) for v, t in zip(row, types, strict=True)], names=NAMES)
    ingest_arrow(open_table(str(ours), "db.t"), data)
    model.rows[row[:2]] = row
    assert live_files(ours) == {(5, "parquet/gzip"), *level0}
    assert java_read(java, str(ours)) == model.rows
