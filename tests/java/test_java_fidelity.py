"""What we write decodes field for field as what Paimon's Java writer writes for the same
operation: two copies of one Java-written table, one fully compacted by Java's own compaction
job, the other by ours, then their snapshots, manifest lists, manifest entries and index
manifests compared as decoded from the Avro/JSON files (names, sizes, times and users aside)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import fastavro
import pytest

from dagster_paimon.kinds import compact_open_table
from dagster_paimon.table import TableRef, open_table
from tests.java.test_java_tables import Model, spec

pytestmark = pytest.mark.slow

TABLE = Path("db.db") / "t"
PER_RUN = ("_FILE_NAME", "_FILE_SIZE", "_CREATION_TIME")
"""Data-file fields that name or time one particular run of a compaction."""


def latest_snapshot(warehouse: Path) -> dict:
    """The latest snapshot as its JSON says."""
    directory = warehouse / TABLE / "snapshot"
    latest = max(int(p.name.split("-")[1]) for p in directory.glob("snapshot-*"))
    return json.loads((directory / f"snapshot-{latest}").read_text())


PER_COMMIT = {
    "id",
    "baseManifestList",
    "baseManifestListSize",
    "deltaManifestList",
    "deltaManifestListSize",
    "indexManifest",
    "commitUser",
    "commitIdentifier",
    "timeMillis",
    "uuid",
    "writerVersion",
}
"""Snapshot fields that name one commit's files, user and time (uuid is 2.0's, writerVersion
pypaimon's: Java ignores both)."""


def snapshot_fields(snapshot: dict) -> dict:
    """A snapshot's content as Java reads it: null, Java 1.0's empty `logOffsets` and its zero
    `changelogRecordCount` (2.0 writes null for no changelog) read as absent."""
    return {
        k: v
        for k, v in snapshot.items()
        if k not in PER_COMMIT
        and v not in (None, {})
        and not (k == "changelogRecordCount" and v == 0)
    }


def avro_records(path: Path) -> list[dict]:
    """Every record of one Avro file, decoded."""
    with path.open("rb") as f:
        return list(fastavro.reader(f))


def delta_entries(warehouse: Path, snapshot: dict) -> list[dict]:
    """The entries of the snapshot's delta manifests, as written."""
    manifests = warehouse / TABLE / "manifest"
    lists = avro_records(manifests / snapshot["deltaManifestList"])
    return [e for meta in lists for e in avro_records(manifests / meta["_FILE_NAME"])]


def comparable(entry: dict) -> tuple:
    """An entry without what names or times one run, as a sortable key and the rest."""
    file = {k: v for k, v in entry["_FILE"].items() if k not in PER_RUN}
    rest = {k: v for k, v in entry.items() if k != "_FILE"}
    key = (entry["_KIND"], entry["_PARTITION"], entry["_BUCKET"], file["_LEVEL"])
    if entry["_KIND"] == 1:  # a DELETE names an input file, the same in both copies
        key += (entry["_FILE"]["_FILE_NAME"],)
        file = entry["_FILE"]
    return key, rest, file


def index_records(warehouse: Path, snapshot: dict) -> list[dict]:
    """The index manifest's records without index file names, sizes and null fields."""
    if snapshot.get("indexManifest") is None:
        return []
    records = avro_records(warehouse / TABLE / "manifest" / snapshot["indexManifest"])
    drop = ("_FILE_NAME", "_FILE_SIZE")
    return sorted(
        # nullable fields a newer schema adds read as absent (`_EXTERNAL_PATH`, `_GLOBAL_INDEX`)
        ({k: v for k, v in r.items() if k not in drop and v is not None} for r in records),
        key=lambda r: (r["_PARTITION"], r["_BUCKET"]),
    )


@pytest.mark.parametrize("version", ["paimon_java", "paimon_java_1_0"], ids=["0.9", "1.0"])
def test_our_full_compaction_writes_what_javas_writes(request, tmp_path, version):
    """A deletion-vector table Java's writer compacted once, then wrote more."""
    java = request.getfixturevalue(version)
    base = tmp_path / "base"
    model = Model()
    steps: list = [
        model.commit(c, range(3 * c, 3 * c + 20), deletes=range(c, c + 2)) for c in (0, 1)
    ]
    steps.append("compact")
    steps += [model.commit(c, range(3 * c, 3 * c + 20), deletes=range(c, c + 2)) for c in (2, 3)]
    java.write(str(base), "db", "t", steps, spec=spec(**{"deletion-vectors.enabled": "true"}))
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    shutil.copytree(base, ours)
    shutil.copytree(base, theirs)

    java.write(str(theirs), "db", "t", ["compact"])
    table = open_table(str(ours), "db.t")
    compact_open_table(table, TableRef.of(str(ours), "db.t"), full=True)

    mine, javas = latest_snapshot(ours), latest_snapshot(theirs)
    assert snapshot_fields(mine) == snapshot_fields(javas)
    assert ("indexManifest" in mine) == ("indexManifest" in javas)

    my_entries = sorted(map(comparable, delta_entries(ours, mine)), key=lambda e: e[0])
    java_entries = sorted(map(comparable, delta_entries(theirs, javas)), key=lambda e: e[0])
    assert [e[0] for e in my_entries] == [e[0] for e in java_entries]
    for (key, my_rest, my_file), (_, java_rest, java_file) in zip(
        my_entries, java_entries, strict=True
    ):
        assert my_rest == java_rest, key
        shared = set(java_file) & set(my_file)
        assert set(java_file) <= set(my_file), key
        assert {k: my_file[k] for k in shared} == {k: java_file[k] for k in shared}, key

    assert index_records(ours, mine) == index_records(theirs, javas)
