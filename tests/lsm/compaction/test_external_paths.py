"""Tables with `data-file.external-paths`: pypaimon writes them, we compact and ingest into the
external roots by the table's strategy, readers agree, expiry and orphan removal clean there."""

from __future__ import annotations

import os
import random
import re

import pyarrow as pa
import pytest
from pypaimon.schema.schema_change import SchemaChange
from pypaimon_rust.datafusion import SQLContext

from dagster_paimon.errors import InvalidOptionError, UnsupportedLayoutError
from dagster_paimon.ingest.arrow import ingest_arrow
from dagster_paimon.io.external import entropy_dirs
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.table import open_catalog, open_table
from tests.hooks import expire_snapshots, remove_orphans
from tests.lsm.kvmodel import apply_dedup, read_rows, sorted_rows
from tests.lsm.tables import KEY, SCHEMA, cdc_batch, cdc_table, compact, write_history
from tests.maintenance.histories import EXPIRE_ALL_BUT_LAST, later_ms
from tests.maintenance.oracle import age_tree, all_files

# every strategy of release-2.0.0 that places files (pypaimon 2.1 writes each of them)
STRATEGIES = {
    "round-robin": {},
    "specific-fs": {"data-file.external-paths.specific-fs": "file"},
    "entropy-inject": {},
    "weight-robin": {"data-file.external-paths.weights": "1,2"},
}
ENTROPY = r"[01]{4}/[01]{4}/[01]{4}/[01]{8}/"


def external_table(warehouse: str, roots: list[str], strategy: str, **options: str):
    """A cdc table (full-compaction changelogs, so compaction writes changelog files too)
    placing its data files under `roots`."""
    return cdc_table(
        warehouse,
        **{
            "data-file.external-paths": ",".join(f"file://{r}" for r in roots),
            "data-file.external-paths.strategy": strategy,
            "changelog-producer": "full-compaction",
            **STRATEGIES[strategy],
            **options,
        },
    )


def live_files(table) -> list:
    """(file meta, partition value, bucket) of every file of the latest snapshot."""
    return [
        (f, b.partition.values[0], b.bucket)
        for b in read_levels(table).buckets
        for f in b.levels.all_files()
    ]


def check_placed(files, roots: list[str], strategy: str) -> None:
    """Each file is at `<root>/dt=<v>/bucket-<n>/[hash dirs/]<name>`, recorded in full."""
    for f, dt, bucket in files:
        path = f.external_path
        assert path is not None, f.file_name
        root = next(r for r in roots if path.startswith(f"file:{r}/"))
        rest = path[len(f"file:{root}/") :]
        hashed = f"{entropy_dirs(f.file_name)}/" if strategy == "entropy-inject" else ""
        assert rest == f"dt={dt}/bucket-{bucket}/{hashed}{f.file_name}"
        assert os.path.isfile(path.removeprefix("file:"))


def model_rows(model: dict) -> list[dict]:
    """The model's live rows in key order."""
    return sorted_rows(model.values(), KEY)


def rust_rows(warehouse: str) -> list[dict]:
    """Every row pypaimon-rust's DataFusion reader returns (it reads `_EXTERNAL_PATH`)."""
    ctx = SQLContext()
    ctx.register_catalog("paimon", {"warehouse": warehouse})
    return sorted_rows(
        [r for b in ctx.sql("SELECT * FROM paimon.db.cdc") for r in b.to_pylist()], KEY
    )


def plant(path: str, days: float = 3) -> str:
    """A file nobody references, `days` old."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"x" * 7)
    old = os.stat(path).st_mtime - days * 86_400
    os.utime(path, (old, old))
    return path


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_compaction_ingest_expiry_and_orphans_under_external_roots(warehouse, tmp_path, strategy):
    roots = [str(tmp_path / "ext" / "r0"), str(tmp_path / "ext" / "r1")]
    table = external_table(warehouse, roots, strategy)
    model = write_history(table, 4)
    written = live_files(table)
    check_placed(written, roots, strategy)  # pypaimon's own placement, for reference

    compact(table, warehouse, full=True)
    table = open_table(warehouse, "db.cdc")
    compacted = live_files(table)
    assert {f.level for f, _, _ in compacted} == {5}
    check_placed(compacted, roots, strategy)
    changelogs = [p for r in roots for p in all_files(r) if "/changelog-" in p]
    assert changelogs  # full-compaction changelog files went to the external roots as well

    rows = cdc_batch(random.Random(99), 99)
    ingest_arrow(table, pa.Table.from_pylist(rows, schema=SCHEMA))
    apply_dedup(model, [{**r, "_kind": r["op"]} for r in rows], KEY)
    table = open_table(warehouse, "db.cdc")
    ingested = [x for x in live_files(table) if x[0].level == 0]
    assert ingested
    check_placed(ingested, roots, strategy)

    compact(table, warehouse, full=True)
    table = open_table(warehouse, "db.cdc")
    live = live_files(table)
    check_placed(live, roots, strategy)
    assert sorted_rows(read_rows(table), KEY) == model_rows(model)
    assert rust_rows(warehouse) == model_rows(model)

    # expiry deletes the replaced files where they are: under the external roots
    replaced = {f.external_path.removeprefix("file:") for f, _, _ in written + ingested}
    assert replaced and all(os.path.isfile(p) for p in replaced)
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    assert not any(os.path.exists(p) for p in replaced)
    kept = {f.external_path.removeprefix("file:") for f, _, _ in live}
    assert all(os.path.isfile(p) for p in kept)

    # orphan removal: only old, unreferenced files laid out as this table's data files go
    for root in (table.table_path, *roots):
        age_tree(root)
    r0, r1 = roots
    stale = {
        plant(f"{r0}/dt=2024-01-01/bucket-0/data-stale-0.parquet"),
        plant(f"{r1}/dt=2024-01-02/bucket-1/changelog-stale-0.parquet"),
        plant(f"{r1}/dt=2024-01-02/bucket-0/1010/0001/0010/11111110/data-stale-1.parquet"),
        plant(f"{r0}/dt=2024-01-01/bucket-postpone/data-stale-2.parquet"),
    }
    foreign = {
        plant(f"{r0}/dt=2024-01-01/bucket-0/data-young-0.parquet", days=0),
        plant(f"{r0}/dt=2024-01-01/bucket-0/notes.txt"),
        plant(f"{r0}/dt=2024-01-01/bucket-0/1010/data-shallow.parquet"),
        plant(f"{r0}/dt=2024-01-01/bucket-0/abcd/0001/0010/11111110/data-x.parquet"),
        plant(f"{r0}/region=eu/bucket-0/data-other-table.parquet"),
        plant(f"{r0}/dt=2024-01-01/bucket-x/data-y.parquet"),
        plant(f"{r1}/data-top.parquet"),
        plant(f"{tmp_path}/ext/dt=2024-01-01/bucket-0/data-beside-the-roots.parquet"),
    }
    before = all_files(table.table_path) | all_files(str(tmp_path / "ext"))

    dry = remove_orphans(table, dry_run=True)
    assert set(dry.orphans) == stale and dry.deleted == 0
    assert all_files(table.table_path) | all_files(str(tmp_path / "ext")) == before

    result = remove_orphans(table)
    assert set(result.orphans) == stale and result.deleted == len(stale)
    after = all_files(table.table_path) | all_files(str(tmp_path / "ext"))
    assert after == before - stale
    assert kept | foreign <= after
    assert sorted_rows(read_rows(table), KEY) == model_rows(model)
    assert rust_rows(warehouse) == model_rows(model)


def objects(s3_server, bucket: str) -> set[str]:
    """Every object of the bucket (pyarrow's directory markers aside)."""
    return {f"s3://{bucket}/{k}" for k in s3_server.keys(bucket) if not k.endswith("/")}


@pytest.mark.s3
def test_external_roots_in_another_s3_bucket(s3_server, s3_warehouse):
    uri, options = s3_warehouse
    bucket = s3_server.create_bucket("ext")
    roots = [f"s3://{bucket}/r0", f"s3://{bucket}/r1"]
    table = cdc_table(
        uri,
        catalog_options=options,
        **{
            "data-file.external-paths": ",".join(roots),
            "data-file.external-paths.strategy": "entropy-inject",
        },
    )
    model = write_history(table, 3)
    written = {f.external_path for f, _, _ in live_files(table)}
    assert written
    compact(table, uri, options, full=True)
    table = open_table(uri, "db.cdc", options)
    live = {f.external_path for f, _, _ in live_files(table)}
    assert all(
        re.fullmatch(rf"s3://{bucket}/r[01]/dt=[-0-9]+/bucket-\d/{ENTROPY}data-.*", p) for p in live
    )
    assert sorted_rows(read_rows(table), KEY) == model_rows(model)

    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    assert objects(s3_server, bucket) == live and not written & objects(s3_server, bucket)

    stale = f"s3://{bucket}/r1/dt=2024-01-01/bucket-0/data-stale.parquet"
    table.file_io.write_file(stale, "stale", overwrite=False)
    later = later_ms(2 * 86_400)
    assert remove_orphans(table, dry_run=True, now_ms=later).orphans == (stale,)
    assert remove_orphans(table, now_ms=later).deleted == 1
    assert objects(s3_server, bucket) == live
    assert sorted_rows(read_rows(table), KEY) == model_rows(model)


@pytest.mark.parametrize(
    ("options", "error", "named"),
    [
        ({"data-file.external-paths": "s3://bucket/x"}, InvalidOptionError, "external-paths'"),
        ({"data-file.external-paths": "hdfs://nn/x"}, InvalidOptionError, "external-paths'"),
        ({"data-file.external-paths": "/no/scheme"}, InvalidOptionError, "external-paths'"),
        ({"data-file.external-paths.strategy": "hash-ring"}, UnsupportedLayoutError, "strategy'"),
    ],
)
def test_options_we_cannot_honour_refuse_before_anything_is_written(
    warehouse, options, error, named
):
    table = cdc_table(warehouse)
    model = write_history(table, 2)
    change = {"data-file.external-paths": "file:/elsewhere", **options}
    change.setdefault("data-file.external-paths.strategy", "round-robin")
    catalog = open_catalog(warehouse)
    catalog.alter_table("db.cdc", [SchemaChange.set_option(k, v) for k, v in change.items()])
    table = open_table(warehouse, "db.cdc")
    before = all_files(table.table_path)
    batch = pa.Table.from_pylist(cdc_batch(random.Random(5), 5), schema=SCHEMA)
    for operation in (
        lambda: compact(table, warehouse, full=True),
        lambda: ingest_arrow(table, batch),
        lambda: remove_orphans(table, dry_run=True),
    ):
        with pytest.raises(error, match=named):
            operation()
    assert all_files(table.table_path) == before
    # (pypaimon refuses a path without a scheme too: read as it was)
    unchanged = table.copy({"data-file.external-paths.strategy": "none"})
    assert sorted_rows(read_rows(unchanged), KEY) == model_rows(model)
