"""Crash matrix: kill every table-changing operation at every failpoint it passes.

For each (operation, failpoint) a copy of one small real table (pypaimon commits, one full
compaction, more pypaimon commits) is handed to a child process armed with the failpoint.
The child must die by SIGKILL (the step was reached); afterwards pypaimon must read the
latest snapshot as exactly the committed writes (the child's own write included only if its
snapshot landed), every listed snapshot must read as it did; rerunning the operation without
the failpoint must succeed; and once orphan removal ran, every file left under the table
directory must be referenced by some snapshot.

A last test breaks the commit order inside the child (snapshot file before its manifests)
and proves the same check then fails.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from dagster_paimon import failpoints as fp
from dagster_paimon.format.manifest import TableManifests
from dagster_paimon.io.index import deletion_indexes
from dagster_paimon.kinds import compact_open_table
from dagster_paimon.snapshot.entries import live_entries
from dagster_paimon.table import TableRef, create_table, open_table
from tests.conftest import orders_batch, orders_spec, write_with_pypaimon
from tests.crash_child import BREAK_COMMIT_ENV, FAILED_EXIT, IDENTIFIER, Zygote, run_child
from tests.lsm.kvmodel import apply_dedup
from tests.tablefiles import (
    check_snapshots,
    diff_rows,
    load_snapshot,
    rows_by_key,
    snapshot_ids,
    table_root,
    unreferenced_files,
)

KEY = ("dt", "id")
DAY1, DAY2 = "2024-01-01", "2024-01-02"
WRITE_KINDS = ("APPEND", "OVERWRITE")
# operations whose snapshot changes the rows (partition expiry, alone or in the pass, drops DAY1)
CHANGES_ROWS = ("ingest", "overwrite", "expire-partitions", "maintain")
RETAINED = 2  # expiry keeps the newest two snapshots (6 and 7) and expires 1-5
EXPIRE_ARGS = {
    "retention": {
        "retain_min": RETAINED,
        "retain_max": RETAINED,
        "time_retained_ms": 0,
        "max_deletes": 1000,
    }
}
# commits merge the latest manifests before writing their own (Paimon's manifest merge)
MERGING = {"manifest.merge-min-count": "2"}
COMMIT_STEPS = (fp.MANIFESTS_WRITTEN, fp.MANIFEST_LIST_WRITTEN, fp.BEFORE_SNAPSHOT)
WRITE_STEPS = (fp.DATA_FILE_WRITTEN, *COMMIT_STEPS, fp.AFTER_SNAPSHOT)

MATRIX = [
    *[("compact", f) for f in WRITE_STEPS],
    *[("ingest", f) for f in WRITE_STEPS],
    *[("overwrite", f) for f in WRITE_STEPS],
    *[("compact-manifests", f) for f in (*COMMIT_STEPS, fp.AFTER_SNAPSHOT)],
    *[("expire-partitions", f) for f in (*COMMIT_STEPS, fp.AFTER_SNAPSHOT)],
    *[
        ("expire", f)
        for f in (
            fp.FILE_DELETED,
            f"{fp.FILE_DELETED}@2",
            fp.DATA_FILES_EXPIRED,
            fp.METADATA_EXPIRED,
            fp.RECORDS_EXPIRED,
        )
    ],
    ("remove-orphans", fp.FILE_DELETED),
]


def _row(dt: str, key: int, v: str, kind: str) -> dict:
    return {"dt": dt, "id": key, "v": v, "_row_kind": kind}


# upserts of existing keys, deletes of existing keys, new keys; both partitions, both buckets
INGEST_ROWS = [
    *[_row(DAY1, k, f"ingested-{k}", "+U") for k in range(0, 24, 4)],
    *[_row(DAY2, k, f"ingested-{k}", "+I") for k in range(1, 25, 4)],
    _row(DAY1, 30, "gone", "-D"),
    _row(DAY2, 31, "gone", "-D"),
    _row(DAY1, 42, "gone", "-D"),
    *[_row(DAY1, k, f"new-{k}", "+I") for k in range(1000, 1012, 2)],
    *[_row(DAY2, k, f"new-{k}", "+I") for k in range(1001, 1013, 2)],
]
# replaces all of DAY1 (and only DAY1) with these rows
OVERWRITE_ROWS = [_row(DAY1, k, f"overwritten-{k}", "+I") for k in (*range(0, 16, 2), 500)]


def op_args(op: str) -> dict:
    """The JSON arguments of each operation in the matrix."""
    return {
        "compact": {"full": True},
        "ingest": {"rows": INGEST_ROWS},
        "overwrite": {"rows": OVERWRITE_ROWS},
        "expire": EXPIRE_ARGS,
        "compact-manifests": {"full": True},
        # before 2024-01-01 12:00: DAY1 only
        "expire-partitions": {"expiration_hours": 36, "now": "2024-01-03T00:00:00"},
        "remove-orphans": {},
    }[op]


def _apply(model: dict, rows: list[dict]) -> None:
    """Apply written rows (with `_row_kind`, default +I) to a {key: row} model."""
    apply_dedup(
        model,
        [
            {"dt": r["dt"], "id": r["id"], "v": r["v"], "_kind": r.get("_row_kind", "+I")}
            for r in rows
        ],
        KEY,
    )


@dataclass
class Template:
    """The table every case starts from, and what each of its snapshots holds."""

    warehouse: Path
    expected: dict[int, dict] = field(default_factory=dict)

    @property
    def latest_id(self) -> int:
        return max(self.expected)

    @property
    def model(self) -> dict:
        """Rows of the latest snapshot."""
        return self.expected[self.latest_id]

    def after(self, op: str) -> dict:
        """Rows once `op`'s own write (if it writes rows) has landed."""
        model = dict(self.model)
        if op == "ingest":
            _apply(model, INGEST_ROWS)
        elif op == "overwrite":
            model = {k: v for k, v in model.items() if k[0] != DAY1}
            _apply(model, OVERWRITE_ROWS)
        elif op in ("expire-partitions", "maintain"):
            model = {k: v for k, v in model.items() if k[0] != DAY1}
        return model


@pytest.fixture(scope="module")
def zygote():
    """One pre-imported process forking every child of this module (starts in background)."""
    z = Zygote()
    yield z
    z.close()


@pytest.fixture(scope="module")
def template(tmp_path_factory, zygote) -> Template:
    """Snapshots 1-4 pypaimon appends, 5 a full compaction, 6-7 pypaimon appends; every commit
    of ours merges the manifests (merge-min-count 2), so each commit step has merged ones."""
    warehouse = tmp_path_factory.mktemp("template") / "warehouse"
    warehouse.mkdir()
    table = create_table(str(warehouse), orders_spec(**MERGING))
    built = Template(warehouse)
    model: dict = {}

    def append(commit: int) -> None:
        batch = orders_batch(commit)
        write_with_pypaimon(table, batch)
        _apply(model, batch.to_pylist())
        built.expected[snapshot_ids(table)[-1]] = dict(model)

    for commit in range(4):
        append(commit)
    result = compact_open_table(table, TableRef.of(str(warehouse), IDENTIFIER), full=True)
    assert result.snapshot_id == 5
    assert len(TableManifests(table).base(load_snapshot(table, 5))) == 1, "merged at commit"
    built.expected[5] = dict(model)
    for commit in (4, 5):
        append(commit)
    assert sorted(built.expected) == list(range(1, 8))
    return built


def fresh_table(warehouse: Path):
    """A new table object (no state carried between checks)."""
    return open_table(str(warehouse), IDENTIFIER)


def check_committed(
    warehouse: Path, template: Template, op: str, *, readable_from: int | None = None
) -> bool:
    """(b): the latest snapshot reads as the committed writes; every snapshot reads as it did.

    Returns whether `op`'s own write landed (a new APPEND/OVERWRITE snapshot exists).
    Snapshots below `readable_from` may be half-expired and are only required to be listed.
    """
    table = fresh_table(warehouse)
    new = [i for i in snapshot_ids(table) if i > template.latest_id]
    landed = any(load_snapshot(table, i).commit_kind in WRITE_KINDS for i in new)
    expected = template.after(op) if landed else template.model
    try:
        actual = rows_by_key(table, KEY)
    except AssertionError:
        raise
    except Exception as e:
        raise AssertionError(f"the latest snapshot does not read: {e!r}") from e
    problem = diff_rows(actual, expected)
    assert not problem, f"latest snapshot (write landed: {landed}): {problem}"

    def expected_at(snapshot) -> dict:
        if snapshot.id in template.expected:
            return template.expected[snapshot.id]
        return template.after(op) if op in CHANGES_ROWS else template.model

    check_snapshots(table, KEY, expected_at, readable_from=readable_from)
    return landed


def plant_strays(warehouse: Path) -> list[str]:
    """Leftovers of aborted work, old: a real unreferenced data file, junk named like ours."""
    root = table_root(fresh_table(warehouse))
    real = sorted((root / f"dt={DAY1}" / "bucket-0").glob("data-*.parquet"))[0]
    strays = {
        f"dt={DAY1}/bucket-0/data-{uuid.uuid4()}-0.parquet": real.read_bytes(),
        f"dt={DAY2}/bucket-1/data-{uuid.uuid4()}-0.parquet": b"not parquet",
        f"manifest/manifest-{uuid.uuid4()}-0": b"junk manifest",
        f"manifest/manifest-list-{uuid.uuid4()}-0": b"junk manifest list",
    }
    old = time.time() - 3 * 24 * 3600
    for relative, content in strays.items():
        path = root / relative
        path.write_bytes(content)
        os.utime(path, (old, old))
    return sorted(strays)


@pytest.mark.parametrize(("op", "failpoint"), MATRIX, ids=[f"{o}-{f}" for o, f in MATRIX])
def test_crash_matrix(op, failpoint, template, zygote, tmp_path):
    warehouse = tmp_path / "warehouse"
    shutil.copytree(template.warehouse, warehouse)
    strays = plant_strays(warehouse) if op == "remove-orphans" else []
    args = op_args(op)

    # (a) the child reaches the step and dies there
    crashed = zygote.run(op, str(warehouse), args, failpoint=failpoint)
    assert crashed.returncode == -signal.SIGKILL, crashed.describe()

    # (b) committed data intact; the crashed op's snapshot exists exactly when it got past it
    table = fresh_table(warehouse)
    new_ids = [i for i in snapshot_ids(table) if i > template.latest_id]
    if failpoint == fp.AFTER_SNAPSHOT:
        assert len(new_ids) == 1, f"snapshot created before the kill: {new_ids}"
    else:
        assert new_ids == [], f"no snapshot may land before the snapshot step: {new_ids}"
    if op != "expire":  # a half-run expiry leaves listed snapshots naming deleted files
        leftovers = unreferenced_files(table)
        if failpoint == fp.AFTER_SNAPSHOT:
            assert leftovers == set(), "a landed snapshot must reference all its op wrote"
        elif op in ("compact", "ingest", "overwrite"):
            assert leftovers, "killed after writing data files, yet nothing was left behind"
        elif op == "remove-orphans":
            assert leftovers < set(strays) and len(leftovers) == len(strays) - 1, leftovers
    readable_from = template.latest_id - RETAINED + 1 if op == "expire" else None
    landed = check_committed(warehouse, template, op, readable_from=readable_from)
    assert landed == (op in CHANGES_ROWS and failpoint == fp.AFTER_SNAPSHOT)

    # (c) the same operation, unarmed, succeeds and finishes the job
    rerun = zygote.run(op, str(warehouse), args)
    assert rerun.returncode == 0, rerun.describe()
    landed = check_committed(warehouse, template, op)
    assert landed == (op in CHANGES_ROWS)
    if op == "expire":
        assert snapshot_ids(fresh_table(warehouse)) == list(
            range(template.latest_id - RETAINED + 1, template.latest_id + 1)
        )
    root = table_root(fresh_table(warehouse))
    assert not [s for s in strays if (root / s).exists()], "orphan removal left strays"

    # (d) after orphan removal (every file old enough) every remaining file is referenced
    assert_orphans_removed(zygote, warehouse)
    check_committed(warehouse, template, op)


def test_broken_commit_order_is_caught(template, tmp_path):
    """Snapshot-N created before its manifests: killed there, the table must fail check (b)."""
    warehouse = tmp_path / "warehouse"
    shutil.copytree(template.warehouse, warehouse)
    crashed = run_child(
        "compact",
        str(warehouse),
        op_args("compact"),
        failpoint=fp.MANIFESTS_WRITTEN,
        extra_env={BREAK_COMMIT_ENV: "1"},
    )
    assert crashed.returncode == -signal.SIGKILL, crashed.describe()
    assert snapshot_ids(fresh_table(warehouse))[-1] == template.latest_id + 1
    with pytest.raises(AssertionError, match="does not read"):
        check_committed(warehouse, template, "compact")


DV_STEPS = (fp.DATA_FILE_WRITTEN, fp.INDEX_FILE_WRITTEN, *COMMIT_STEPS, fp.AFTER_SNAPSHOT)


@dataclass
class DvTemplate:
    """A deletion-vector table: a fully compacted base, then level-0 writes readers skip."""

    warehouse: Path
    visible: dict
    written: dict


@pytest.fixture(scope="module")
def dv_template(tmp_path_factory) -> DvTemplate:
    """A big base fully compacted, then two small appends overwriting some of its keys."""
    warehouse = tmp_path_factory.mktemp("dv") / "warehouse"
    warehouse.mkdir()
    table = create_table(str(warehouse), orders_spec(**{"deletion-vectors.enabled": "true"}))
    model: dict = {}
    base = orders_batch(0, rows=2000)
    write_with_pypaimon(table, base)
    _apply(model, base.to_pylist())
    compact_open_table(table, TableRef.of(str(warehouse), IDENTIFIER), full=True)
    visible = dict(model)
    for commit in (4, 5):
        write_with_pypaimon(table, orders_batch(commit))
        _apply(model, orders_batch(commit).to_pylist())
    assert rows_by_key(fresh_table(warehouse), KEY) == visible  # level 0 is not read
    return DvTemplate(warehouse, visible, model)


@pytest.mark.parametrize("failpoint", DV_STEPS)
def test_deletion_vector_compaction_crash(failpoint, dv_template, zygote, tmp_path):
    """A minor compaction marking vectors, killed at each step, leaves no half-written vectors."""
    warehouse = tmp_path / "warehouse"
    shutil.copytree(dv_template.warehouse, warehouse)
    crashed = zygote.run("compact", str(warehouse), {"full": False}, failpoint=failpoint)
    assert crashed.returncode == -signal.SIGKILL, crashed.describe()

    landed = failpoint == fp.AFTER_SNAPSHOT
    table = fresh_table(warehouse)
    assert rows_by_key(table, KEY) == (dv_template.written if landed else dv_template.visible)
    indexes = deletion_indexes(table, table.snapshot_manager().get_latest_snapshot())
    assert bool(indexes) == landed, "vectors are visible exactly when the compaction landed"

    rerun = zygote.run("compact", str(warehouse), {"full": False})
    assert rerun.returncode == 0, rerun.describe()
    table = fresh_table(warehouse)
    assert rows_by_key(table, KEY) == dv_template.written
    assert deletion_indexes(table, table.snapshot_manager().get_latest_snapshot())
    assert_orphans_removed(zygote, warehouse)


def assert_orphans_removed(zygote, warehouse: Path) -> None:
    """Orphan removal succeeds and leaves only files some snapshot references."""
    cleaned = zygote.run("remove-orphans", str(warehouse), {})
    assert cleaned.returncode == 0, cleaned.describe()
    assert unreferenced_files(fresh_table(warehouse)) == set()


POSTPONE_STEPS = (fp.DATA_FILE_WRITTEN, *COMMIT_STEPS, fp.AFTER_SNAPSHOT)


@pytest.fixture(scope="module")
def postpone_template(tmp_path_factory) -> DvTemplate:
    """A postpone-bucket table: rows parked by three pypaimon commits, none visible yet."""
    warehouse = tmp_path_factory.mktemp("postpone") / "warehouse"
    warehouse.mkdir()
    table = create_table(
        str(warehouse), orders_spec(bucket=-2, **{"postpone.default-bucket-num": "2"})
    )
    model: dict = {}
    for commit in range(3):
        write_with_pypaimon(table, orders_batch(commit))
        _apply(model, orders_batch(commit).to_pylist())
    assert rows_by_key(fresh_table(warehouse), KEY) == {}
    return DvTemplate(warehouse, {}, model)


@pytest.mark.parametrize("failpoint", POSTPONE_STEPS)
def test_postpone_move_crash(failpoint, postpone_template, zygote, tmp_path):
    """A postpone compaction killed at each step leaves the rows parked; a rerun moves them."""
    warehouse = tmp_path / "warehouse"
    shutil.copytree(postpone_template.warehouse, warehouse)
    crashed = zygote.run("compact", str(warehouse), {"full": False}, failpoint=failpoint)
    assert crashed.returncode == -signal.SIGKILL, crashed.describe()

    landed = failpoint == fp.AFTER_SNAPSHOT
    expected = postpone_template.written if landed else postpone_template.visible
    assert rows_by_key(fresh_table(warehouse), KEY) == expected

    rerun = zygote.run("compact", str(warehouse), {"full": False})
    assert rerun.returncode == 0, rerun.describe()
    assert rows_by_key(fresh_table(warehouse), KEY) == postpone_template.written
    assert_orphans_removed(zygote, warehouse)


@pytest.mark.parametrize("failpoint", (fp.INDEX_FILE_WRITTEN, fp.BEFORE_SNAPSHOT))
def test_dynamic_bucket_ingest_crash(failpoint, zygote, tmp_path):
    """A dynamic-bucket ingest killed after writing a HASH file or before its snapshot changes
    nothing; a rerun lands, and orphan removal leaves only referenced files."""
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    table = create_table(str(warehouse), orders_spec(bucket=-1))
    write_with_pypaimon(table, orders_batch(0))
    before = rows_by_key(fresh_table(warehouse), KEY)
    rows = orders_batch(1).to_pylist()
    crashed = zygote.run("ingest", str(warehouse), {"rows": rows}, failpoint=failpoint)
    assert crashed.returncode == -signal.SIGKILL, crashed.describe()
    assert rows_by_key(fresh_table(warehouse), KEY) == before
    rerun = zygote.run("ingest", str(warehouse), {"rows": rows})
    assert rerun.returncode == 0, rerun.describe()
    expected = dict(before)
    _apply(expected, rows)
    assert rows_by_key(fresh_table(warehouse), KEY) == expected
    assert_orphans_removed(zygote, warehouse)


# a pypaimon commit into every bucket INGEST_ROWS writes, overlapping its keys
RIVAL_ROWS = [{"dt": dt, "id": k, "v": f"rival-{k}"} for dt in (DAY1, DAY2) for k in range(24)]
RESEQUENCE_STEPS = (
    fp.FILES_RESEQUENCED,
    f"{fp.FILES_RESEQUENCED}@2",
    fp.MANIFESTS_WRITTEN,
    fp.BEFORE_SNAPSHOT,
    fp.AFTER_SNAPSHOT,
)


@pytest.mark.parametrize("failpoint", RESEQUENCE_STEPS)
def test_renumbered_ingest_crash(failpoint, template, zygote, tmp_path):
    """An ingest that lost its buckets to another writer, killed while renumbering its files or
    committing them, leaves the other writer's rows readable; a rerun lands after them."""
    warehouse = tmp_path / "warehouse"
    shutil.copytree(template.warehouse, warehouse)
    args = {"rows": INGEST_ROWS, "rival": RIVAL_ROWS}
    crashed = zygote.run("racing-ingest", str(warehouse), args, failpoint=failpoint)
    assert crashed.returncode == -signal.SIGKILL, crashed.describe()
    assert "to another writer; rewriting" in crashed.stderr, crashed.describe()

    landed = failpoint == fp.AFTER_SNAPSHOT
    expected = dict(template.model)
    _apply(expected, RIVAL_ROWS)
    after_both = dict(expected)
    _apply(after_both, INGEST_ROWS)
    table = fresh_table(warehouse)
    assert snapshot_ids(table)[-1] == template.latest_id + (2 if landed else 1)
    problem = diff_rows(rows_by_key(table, KEY), after_both if landed else expected)
    assert not problem, problem
    assert bool(unreferenced_files(table)) != landed, "only a killed attempt leaves strays"

    rerun = zygote.run("ingest", str(warehouse), {"rows": INGEST_ROWS})
    assert rerun.returncode == 0, rerun.describe()
    assert not diff_rows(rows_by_key(fresh_table(warehouse), KEY), after_both)
    assert_orphans_removed(zygote, warehouse)
    assert not diff_rows(rows_by_key(fresh_table(warehouse), KEY), after_both)


@pytest.fixture(scope="module")
def sidecar_template(tmp_path_factory) -> DvTemplate:
    """A table whose data files carry a bloom-filter index as a `.index` sidecar file."""
    warehouse = tmp_path_factory.mktemp("sidecar") / "warehouse"
    warehouse.mkdir()
    options = {"file-index.bloom-filter.columns": "v", "file-index.in-manifest-threshold": "1 b"}
    table = create_table(str(warehouse), orders_spec(**options))
    model: dict = {}
    for commit in range(3):
        write_with_pypaimon(table, orders_batch(commit))
        _apply(model, orders_batch(commit).to_pylist())
    return DvTemplate(warehouse, dict(model), dict(model))


@pytest.mark.parametrize("failpoint", WRITE_STEPS)
def test_file_index_compaction_crash(failpoint, sidecar_template, zygote, tmp_path):
    """A compaction writing index sidecars, killed at each step: rows as committed, and once
    it reruns and orphans are removed no data file or sidecar is left unreferenced."""
    warehouse = tmp_path / "warehouse"
    shutil.copytree(sidecar_template.warehouse, warehouse)
    crashed = zygote.run("compact", str(warehouse), {"full": True}, failpoint=failpoint)
    assert crashed.returncode == -signal.SIGKILL, crashed.describe()
    assert rows_by_key(fresh_table(warehouse), KEY) == sidecar_template.written

    rerun = zygote.run("compact", str(warehouse), {"full": True})
    assert rerun.returncode == 0, rerun.describe()
    table = fresh_table(warehouse)
    assert rows_by_key(table, KEY) == sidecar_template.written
    latest = table.snapshot_manager().get_latest_snapshot()
    assert all(e.file.extra_files for e in live_entries(table, latest))
    assert_orphans_removed(zygote, warehouse)


TAG_STEPS = (fp.FILE_DELETED, f"{fp.FILE_DELETED}@2", f"{fp.FILE_DELETED}@4")


@pytest.fixture(scope="module")
def tagged_template(template, tmp_path_factory) -> Path:
    """The template with tag "b" on snapshot 2 and "a" on snapshot 4, snapshots 1-5 expired:
    deleting "a" frees the level-0 files of commits 3 and 4 (compaction 5 replaced them)."""
    from dagster_paimon.maintenance.options import RetentionOverrides
    from tests.hooks import create_tag, expire_snapshots

    warehouse = tmp_path_factory.mktemp("tagged") / "warehouse"
    shutil.copytree(template.warehouse, warehouse)
    table = fresh_table(warehouse)
    create_tag(table, "b", snapshot_id=2)
    create_tag(table, "a", snapshot_id=4)
    expire_snapshots(table, overrides=RetentionOverrides(**EXPIRE_ARGS["retention"]))
    return warehouse


def tag_reads(warehouse: Path, name: str) -> dict:
    """A tag's rows through pypaimon's time travel."""
    return rows_by_key(fresh_table(warehouse).copy({"scan.tag-name": name}), KEY)


@pytest.mark.parametrize("failpoint", TAG_STEPS)
def test_tag_deletion_crash(failpoint, template, tagged_template, zygote, tmp_path):
    warehouse = tmp_path / "warehouse"
    shutil.copytree(tagged_template, warehouse)
    crashed = zygote.run("delete-tag", str(warehouse), {"name": "a"}, failpoint=failpoint)
    assert crashed.returncode == -signal.SIGKILL, crashed.describe()
    # the tag file goes first: no tag is left naming deleted files
    assert not (table_root(fresh_table(warehouse)) / "tag" / "tag-a").exists()
    assert not diff_rows(tag_reads(warehouse, "b"), template.expected[2])
    check_committed(warehouse, template, "expire", readable_from=template.latest_id - 1)
    # what the crashed run left is orphaned, and orphan removal reclaims it
    assert_orphans_removed(zygote, warehouse)
    assert not diff_rows(tag_reads(warehouse, "b"), template.expected[2])
    check_committed(warehouse, template, "expire")


def test_tag_deletion_frees_files(template, tagged_template, zygote, tmp_path):
    warehouse = tmp_path / "warehouse"
    shutil.copytree(tagged_template, warehouse)
    done = zygote.run("delete-tag", str(warehouse), {"name": "a"})
    assert done.returncode == 0, done.describe()
    assert done.result["data_files"] >= 3  # so the crash cases stop among data files
    assert unreferenced_files(fresh_table(warehouse)) == set()


ROLLBACK_TARGET = 3
ROLLBACK_STEPS = (
    fp.ROLLBACK_LATEST_MOVED,
    fp.FILE_DELETED,  # snapshot 7 removed
    f"{fp.FILE_DELETED}@3",  # snapshots 7, 6 and 5 removed
    fp.ROLLBACK_RECORDS_REMOVED,  # snapshots 7-4 and the tag removed
    f"{fp.FILE_DELETED}@6",  # the first data file deleted
)


@pytest.mark.parametrize("failpoint", ROLLBACK_STEPS)
def test_rollback_crash(failpoint, template, zygote, tmp_path):
    """A rollback to snapshot 3 (a tag on 6 goes too) killed at each step leaves a table whose
    latest snapshot reads as the old latest or the target, every listed snapshot as it did; a
    rerun finishes the rollback, and orphan removal leaves only referenced files."""
    warehouse = tmp_path / "warehouse"
    shutil.copytree(template.warehouse, warehouse)
    fresh_table(warehouse).create_tag("t6", 6)
    args = {"snapshot_id": ROLLBACK_TARGET}
    crashed = zygote.run("rollback", str(warehouse), args, failpoint=failpoint)
    assert crashed.returncode == -signal.SIGKILL, crashed.describe()

    table = fresh_table(warehouse)
    ids = snapshot_ids(table)
    assert ids == list(range(1, ids[-1] + 1)) and ids[-1] >= ROLLBACK_TARGET
    latest = rows_by_key(table, KEY)
    assert latest in (template.expected[ids[-1]], template.expected[ROLLBACK_TARGET])
    check_snapshots(table, KEY, lambda s: template.expected[s.id])

    rerun = zygote.run("rollback", str(warehouse), args)
    assert rerun.returncode == 0, rerun.describe()
    table = fresh_table(warehouse)
    assert snapshot_ids(table) == list(range(1, ROLLBACK_TARGET + 1))
    assert rows_by_key(table, KEY) == template.expected[ROLLBACK_TARGET]
    assert table.tag_manager().list_tags() == []
    assert_orphans_removed(zygote, warehouse)
    assert rows_by_key(fresh_table(warehouse), KEY) == template.expected[ROLLBACK_TARGET]


RESCALE_ARGS = {"bucket_num": 4, "partition": {"dt": DAY1}}
RESCALE_STEPS = (
    fp.DATA_FILE_WRITTEN,  # a level-0 file of a source bucket's rows
    f"{fp.DATA_FILE_WRITTEN}@3",  # among the merged runs of the new buckets
    *COMMIT_STEPS,
    fp.AFTER_SNAPSHOT,
)


def day1_bucket_counts(warehouse: Path) -> set[int]:
    """The bucket counts DAY1's live files record (`_TOTAL_BUCKETS`)."""
    from dagster_paimon.snapshot.entries import live_entries

    table = fresh_table(warehouse)
    entries = live_entries(table, table.snapshot_manager().get_latest_snapshot())
    return {e.total_buckets for e in entries if e.partition.values == [DAY1]}


@pytest.mark.parametrize("failpoint", RESCALE_STEPS)
def test_rescale_crash(failpoint, template, zygote, tmp_path):
    """Rescaling DAY1 from 2 to 4 buckets, killed at each step: every snapshot reads as it did
    and the OVERWRITE exists exactly when the kill came after it; a rerun rescales, and orphan
    removal leaves only referenced files."""
    warehouse = tmp_path / "warehouse"
    shutil.copytree(template.warehouse, warehouse)
    crashed = zygote.run("rescale", str(warehouse), RESCALE_ARGS, failpoint=failpoint)
    assert crashed.returncode == -signal.SIGKILL, crashed.describe()

    table = fresh_table(warehouse)
    new_ids = [i for i in snapshot_ids(table) if i > template.latest_id]
    assert len(new_ids) == (1 if failpoint == fp.AFTER_SNAPSHOT else 0), new_ids
    check_committed(warehouse, template, "rescale")  # the rows never change
    assert day1_bucket_counts(warehouse) == ({4} if new_ids else {2})
    if new_ids:
        assert unreferenced_files(table) == set(), "a landed rescale references all it wrote"
    else:
        assert unreferenced_files(table), "killed after writing files, nothing was left behind"

    rerun = zygote.run("rescale", str(warehouse), RESCALE_ARGS)
    assert rerun.returncode == 0, rerun.describe()
    check_committed(warehouse, template, "rescale")
    assert day1_bucket_counts(warehouse) == {4}
    assert_orphans_removed(zygote, warehouse)
    check_committed(warehouse, template, "rescale")


APPEND_IDENTIFIER = {"identifier": "db.t"}


@pytest.fixture(scope="module")
def append_template(tmp_path_factory) -> tuple[Path, Counter]:
    """A bucketed, partitioned append table of six pypaimon commits; its rows."""
    from tests.lsm.compaction.test_append import make_append_table, multiset, write_commits

    warehouse = tmp_path_factory.mktemp("append") / "warehouse"
    warehouse.mkdir()
    make_append_table(str(warehouse), bucket=2, partitioned=True)
    return warehouse, multiset(write_commits(str(warehouse), 6))


@pytest.mark.parametrize("failpoint", (fp.DATA_FILE_WRITTEN, *COMMIT_STEPS, fp.AFTER_SNAPSHOT))
def test_append_compaction_crash(failpoint, append_template, zygote, tmp_path):
    """An append compaction killed at each step reads as before; a rerun (or the landed
    snapshot) compacts, and orphan removal leaves only referenced files."""
    from tests.lsm.compaction.test_append import multiset, pypaimon_rows

    template, rows = append_template
    warehouse = tmp_path / "warehouse"
    shutil.copytree(template, warehouse)
    before = snapshot_ids(open_table(str(warehouse), "db.t"))
    crashed = zygote.run("compact", str(warehouse), APPEND_IDENTIFIER, failpoint=failpoint)
    assert crashed.returncode == -signal.SIGKILL, crashed.describe()

    landed = failpoint == fp.AFTER_SNAPSHOT
    assert (snapshot_ids(open_table(str(warehouse), "db.t")) != before) == landed
    assert multiset(pypaimon_rows(str(warehouse))) == rows

    rerun = zygote.run("compact", str(warehouse), APPEND_IDENTIFIER)
    assert rerun.returncode == 0, rerun.describe()
    assert (rerun.result["snapshot_id"] is None) == landed  # landed: nothing left to do
    assert multiset(pypaimon_rows(str(warehouse))) == rows
    cleaned = zygote.run("remove-orphans", str(warehouse), APPEND_IDENTIFIER)
    assert cleaned.returncode == 0, cleaned.describe()
    assert unreferenced_files(open_table(str(warehouse), "db.t")) == set()


def _tags(warehouse: Path) -> dict[str, int]:
    """Every tag's snapshot, by name; each must read (a torn tag file fails here)."""
    from dagster_paimon.maintenance.tags import list_tags

    return {t.name: t.snapshot_id for t in list_tags(fresh_table(warehouse))}


def check_tags(warehouse: Path, template: Template, op: str) -> dict[str, int]:
    """Every tag reads as its snapshot did when it was committed."""
    tags = _tags(warehouse)
    for name, snapshot_id in tags.items():
        expected = template.expected.get(snapshot_id, template.after(op))
        assert not diff_rows(tag_reads(warehouse, name), expected), name
    return tags


def _consumers(warehouse: Path) -> dict[str, int]:
    """Every consumer's next snapshot, by id; each file must parse."""
    from dagster_paimon.maintenance.consumers import list_consumers

    found = list_consumers(fresh_table(warehouse)).consumers
    return {c.consumer_id: c.next_snapshot for c in found}


def plant_consumers(warehouse: Path, ids: dict[str, int], *, old: tuple[str, ...]) -> None:
    """Consumers reading `ids[c]` next; those in `old` last written three days ago."""
    from tests.maintenance.oracle import set_consumer

    table = fresh_table(warehouse)
    for consumer_id, next_snapshot in ids.items():
        set_consumer(table, consumer_id, next_snapshot)
    stale = time.time() - 3 * 24 * 3600
    for consumer_id in old:
        os.utime(table_root(table) / "consumer" / f"consumer-{consumer_id}", (stale, stale))


def maintain_options() -> dict[str, str]:
    """Every step of the pass does something on the template: a batch tag on snapshot 7; DAY1
    (not DAY2) older than the expiration; consumer `gone` expired; snapshots 1-6 expired."""
    from datetime import datetime

    # values-time: DAY1 expires (its midnight is before now - this), DAY2 does not
    minutes = int((datetime.now() - datetime(2024, 1, 1, 12)).total_seconds() // 60)
    return {
        "tag.automatic-creation": "batch",
        "partition.expiration-time": f"{minutes} min",
        "consumer.expiration-time": "1 d",
        "snapshot.num-retained.min": "2",
        "snapshot.num-retained.max": "2",
        "snapshot.time-retained": "1 ms",
    }


# the pass's steps in order, and where each failpoint kills it
PASS_STEPS = (
    fp.TAG_WRITTEN,  # 1. the batch tag on snapshot 7 written
    fp.MANIFESTS_WRITTEN,  # 3. partition expiry's OVERWRITE being committed
    fp.BEFORE_SNAPSHOT,
    fp.AFTER_SNAPSHOT,  # its snapshot 8 landed
    fp.FILE_DELETED,  # 4. the consumer file of `gone` deleted
    fp.CONSUMERS_REMOVED,
    fp.DATA_FILES_EXPIRED,  # 5. snapshot expiry, midway
    fp.METADATA_EXPIRED,
    fp.RECORDS_EXPIRED,
)
PAST_PARTITIONS = PASS_STEPS[PASS_STEPS.index(fp.AFTER_SNAPSHOT) :]
PAST_CONSUMERS = PASS_STEPS[PASS_STEPS.index(fp.FILE_DELETED) :]
EXPIRING = PASS_STEPS[PASS_STEPS.index(fp.DATA_FILES_EXPIRED) :]


@pytest.mark.parametrize("failpoint", PASS_STEPS)
def test_maintenance_pass_crash(failpoint, template, zygote, tmp_path):
    """The pass (tag creation, partition expiry, consumer expiry, snapshot expiry) killed at a
    step of each: the latest snapshot reads as committed, every retained snapshot and tag as
    it did, what earlier steps did stays; a rerun finishes the pass, orphan removal the rest."""
    warehouse = tmp_path / "warehouse"
    shutil.copytree(template.warehouse, warehouse)
    plant_consumers(warehouse, {"gone": 3, "live": 7}, old=("gone",))
    args = {"options": maintain_options()}
    crashed = zygote.run("maintain", str(warehouse), args, failpoint=failpoint)
    assert crashed.returncode == -signal.SIGKILL, crashed.describe()

    readable_from = template.latest_id if failpoint in EXPIRING else None
    landed = check_committed(warehouse, template, "maintain", readable_from=readable_from)
    assert landed == (failpoint in PAST_PARTITIONS)
    assert list(check_tags(warehouse, template, "maintain").values()) == [template.latest_id]
    gone = failpoint in PAST_CONSUMERS
    assert _consumers(warehouse) == ({"live": 7} if gone else {"gone": 3, "live": 7})
    assert snapshot_ids(fresh_table(warehouse))[-1] == template.latest_id + landed

    rerun = zygote.run("maintain", str(warehouse), args)
    assert rerun.returncode == 0, rerun.describe()
    assert check_committed(warehouse, template, "maintain")
    assert snapshot_ids(fresh_table(warehouse)) == [template.latest_id, template.latest_id + 1]
    assert len(check_tags(warehouse, template, "maintain")) == 1
    assert _consumers(warehouse) == {"live": 7}
    assert_orphans_removed(zygote, warehouse)
    check_committed(warehouse, template, "maintain")
    check_tags(warehouse, template, "maintain")


CONSUMER_CASES = [
    ("expire-consumers", {"expiration_hours": 24}, fp.FILE_DELETED),
    ("expire-consumers", {"expiration_hours": 24}, fp.CONSUMERS_REMOVED),
    ("clear-consumers", {"including": "old-.*"}, fp.FILE_DELETED),
    ("clear-consumers", {"including": "old-.*"}, fp.CONSUMERS_REMOVED),
    ("reset-consumer", {"consumer_id": "new", "next_snapshot": 6}, fp.CONSUMER_RESET),
]
CONSUMERS = {"old-a": 2, "old-b": 3, "new": 5}


@pytest.mark.parametrize(
    ("op", "args", "failpoint"), CONSUMER_CASES, ids=[f"{o}-{f}" for o, _, f in CONSUMER_CASES]
)
def test_consumer_crash(op, args, failpoint, template, zygote, tmp_path):
    """Expiring, clearing or resetting consumers killed at its delete or write: every consumer
    file left parses and is as before or as done, the rows are untouched; a rerun finishes."""
    warehouse = tmp_path / "warehouse"
    shutil.copytree(template.warehouse, warehouse)
    plant_consumers(warehouse, CONSUMERS, old=("old-a", "old-b"))
    done = {"new": 6, **{k: v for k, v in CONSUMERS.items() if k != "new"}}
    if op != "reset-consumer":
        done = {"new": 5}
    crashed = zygote.run(op, str(warehouse), args, failpoint=failpoint)
    assert crashed.returncode == -signal.SIGKILL, crashed.describe()

    left = _consumers(warehouse)
    assert left == done or (
        failpoint == fp.FILE_DELETED and len(left) == 2 and left.items() <= CONSUMERS.items()
    ), left
    assert not check_committed(warehouse, template, op)

    rerun = zygote.run(op, str(warehouse), args)
    assert rerun.returncode == 0, rerun.describe()
    assert _consumers(warehouse) == done
    assert_orphans_removed(zygote, warehouse)
    check_committed(warehouse, template, op)


@pytest.mark.parametrize("failpoint", (fp.TAG_WRITTEN,))
def test_tag_creation_crash(failpoint, template, zygote, tmp_path):
    """create-tag killed once its tag file is written: the tag reads as its snapshot; the job
    is done, so a rerun is refused as Java refuses an existing tag (TagExistsError)."""
    warehouse = tmp_path / "warehouse"
    shutil.copytree(template.warehouse, warehouse)
    args = {"name": "release", "snapshot_id": 5}
    crashed = zygote.run("create-tag", str(warehouse), args, failpoint=failpoint)
    assert crashed.returncode == -signal.SIGKILL, crashed.describe()
    assert check_tags(warehouse, template, "create-tag") == {"release": 5}
    assert not check_committed(warehouse, template, "create-tag")

    rerun = zygote.run("create-tag", str(warehouse), args)
    assert rerun.returncode == FAILED_EXIT and "TagExistsError" in rerun.stderr, rerun.describe()
    assert check_tags(warehouse, template, "create-tag") == {"release": 5}
    assert_orphans_removed(zygote, warehouse)
    assert not diff_rows(tag_reads(warehouse, "release"), template.expected[5])


def test_tag_success_file_crash(template, zygote, tmp_path):
    """With tag.create-success-file, create-tag killed between the tag file and its success file
    leaves the tag without it (never a success file naming no tag); a rerun writes it and
    succeeds; orphan removal leaves both."""
    from pypaimon.schema.schema_change import SchemaChange

    from dagster_paimon.table import open_catalog

    warehouse = tmp_path / "warehouse"
    shutil.copytree(template.warehouse, warehouse)
    change = SchemaChange.set_option("tag.create-success-file", "true")
    open_catalog(str(warehouse)).alter_table(IDENTIFIER, [change])
    success = table_root(fresh_table(warehouse)) / "tag" / "tag-success-file" / "release_SUCCESS"
    args = {"name": "release", "snapshot_id": 5}
    crashed = zygote.run("create-tag", str(warehouse), args, failpoint=fp.TAG_WRITTEN)
    assert crashed.returncode == -signal.SIGKILL, crashed.describe()
    assert check_tags(warehouse, template, "create-tag") == {"release": 5}
    assert not success.exists()

    rerun = zygote.run("create-tag", str(warehouse), args)
    assert rerun.returncode == 0, rerun.describe()
    assert success.exists() and check_tags(warehouse, template, "create-tag") == {"release": 5}
    assert_orphans_removed(zygote, warehouse)
    assert success.exists()
    check_committed(warehouse, template, "create-tag")


AUTO_TAG_OPTIONS = {"tag.automatic-creation": "batch", "tag.num-retained-max": "1"}


@pytest.mark.parametrize("failpoint", (fp.TAG_WRITTEN, fp.FILE_DELETED))
def test_automatic_tag_crash(failpoint, template, zygote, tmp_path):
    """Batch auto-tagging with at most one tag: the new tag on snapshot 7 is written, then the
    older tag `old` (snapshot 2) deleted. Killed after either, every tag left reads as its
    snapshot; a rerun leaves the one auto tag, orphan removal nothing unreferenced."""
    from tests.hooks import create_tag

    warehouse = tmp_path / "warehouse"
    shutil.copytree(template.warehouse, warehouse)
    create_tag(fresh_table(warehouse), "old", snapshot_id=2)
    args = {"options": AUTO_TAG_OPTIONS}
    crashed = zygote.run("auto-tags", str(warehouse), args, failpoint=failpoint)
    assert crashed.returncode == -signal.SIGKILL, crashed.describe()
    tags = check_tags(warehouse, template, "auto-tags")
    (auto,) = [name for name in tags if name != "old"]
    assert auto.startswith("batch-write-") and tags[auto] == template.latest_id
    assert ("old" in tags) == (failpoint == fp.TAG_WRITTEN)
    check_committed(warehouse, template, "auto-tags")

    rerun = zygote.run("auto-tags", str(warehouse), args)
    assert rerun.returncode == 0, rerun.describe()
    assert check_tags(warehouse, template, "auto-tags") == {auto: template.latest_id}
    assert_orphans_removed(zygote, warehouse)
    check_committed(warehouse, template, "auto-tags")
    check_tags(warehouse, template, "auto-tags")
