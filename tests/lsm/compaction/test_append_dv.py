"""Append tables with deletion vectors: compaction drops the rows the vectors mark and the
vectors of the files it rewrites, as Paimon 2.0's append compaction does.

Rows are deleted with tests.maintenance.appends.delete_positions (one commit of each touched
bucket's new index file); after compaction pypaimon, pypaimon-rust and Paimon's Java readers
read exactly the model's rows minus the deleted ones, rewritten files have no vector left and
the others keep theirs.
"""

from __future__ import annotations

import os
import pickle
from collections import Counter
from types import SimpleNamespace

import pytest
from pypaimon.index.deletion_vector_meta import DeletionVectorMeta
from pypaimon.index.index_file_meta import IndexFileMeta
from pypaimon_rust.datafusion import SQLContext

from dagster_paimon.errors import (
    CommitConflictError,
    CorruptMetadataError,
    InvalidOptionError,
)
from dagster_paimon.io.index import (
    DELETION_VECTORS,
    VectorIndex,
    deleted_rows,
    deletion_indexes,
    index_entries,
    index_path,
)
from dagster_paimon.lsm.compaction.append_plan import (
    pack_unaware_vectors,
    pick_bucketed_full,
    too_many_deleted,
)
from dagster_paimon.lsm.compaction.executor import COMPACTION, LocalExecutor
from dagster_paimon.lsm.model.append_options import AppendOptions
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.paimon_table import PaimonTable
from dagster_paimon.partition import Partition
from dagster_paimon.snapshot.entries import live_entries
from dagster_paimon.table import open_table
from tests.conftest import DV, committed_files, data_files_on_disk, write_with_pypaimon
from tests.hooks import expire_snapshots
from tests.maintenance.appends import (
    ORDER,
    append_commits,
    append_table,
    delete_beside,
    delete_positions,
    events,
    file_rows,
    latest,
    model,
    rows,
)
from tests.maintenance.histories import EXPIRE_ALL_BUT_LAST, later_ms
from tests.maintenance.oracle import exists

REF = "db.events"
ROWS = 48
# every pypaimon file of 12 rows is at least this small-file size: none is small
ALL_BIG = {"compaction.small-file-ratio": "0.000001"}
MIN_TWO = {"compaction.min.file-num": "2"}
KINDS = [
    pytest.param(layout, partitioned, id=f"{layout}-{'partitioned' if partitioned else 'flat'}")
    for layout in ("bucketed", "unaware")
    for partitioned in (True, False)
]


def bucket_files(table) -> dict[tuple, list]:
    """Each bucket's live files by sequence number then creation (write order)."""
    found: dict[tuple, list] = {}
    for e in live_entries(table, latest(table)):
        found.setdefault((Partition.of_row(e.partition), e.bucket), []).append(e.file)
    return {
        k: sorted(v, key=lambda f: (f.min_sequence_number, f.creation_time.get_millisecond()))
        for k, v in found.items()
    }


def vectors(table) -> dict[str, int]:
    """Deleted rows per data file, over every bucket's index."""
    return {
        name: n
        for index in deletion_indexes(table, latest(table)).values()
        for name, n in deleted_rows(index).items()
    }


def write(table, commits: int) -> list[tuple]:
    """`commits` pypaimon commits of ROWS rows; the model of every row written."""
    batches = [events(c, ROWS) for c in range(commits)]
    for batch in batches:
        write_with_pypaimon(table, batch)
    return model(*batches)


def delete_and_model(table, deletions: dict[str, list[int]], everything: list[tuple]) -> Counter:
    """Delete the positions; the rows left, as a multiset."""
    gone = Counter(file_rows(table, name)[p] for name, ps in deletions.items() for p in ps)
    delete_positions(table, deletions)
    return Counter(everything) - gone


def assert_every_reader_reads(warehouse: str, expected: Counter, *javas) -> None:
    """pypaimon, pypaimon-rust and Paimon's Java readers read exactly `expected`."""
    table = open_table(warehouse, REF)
    assert Counter(rows(table)) == expected
    ctx = SQLContext()
    ctx.register_catalog("paimon", {"warehouse": warehouse})
    rust = [r for b in ctx.sql("SELECT * FROM paimon.db.events") for r in b.to_pylist()]
    assert Counter(tuple(r[k] for k in ORDER) for r in rust) == expected
    for paimon_java in javas:
        read = paimon_java.read(warehouse, "db", "events")
        assert Counter(tuple(r) for r in read) == expected


@pytest.mark.parametrize(("layout", "partitioned"), KINDS)
def test_compaction_drops_deleted_rows_and_their_vectors(
    warehouse, paimon_java, paimon_java_1_0, layout, partitioned
):
    table = append_table(warehouse, layout, partitioned=partitioned, **DV)
    everything = write(table, 6)
    buckets = bucket_files(table)
    # in every bucket: the first file loses a row, the last two
    deletions = {}
    for files in buckets.values():
        deletions[files[0].file_name] = [0]
        deletions[files[-1].file_name] = [0, 1]
    expected = delete_and_model(table, deletions, everything)
    assert Counter(rows(table)) == expected
    before = vectors(table)

    result = PaimonTable.open(warehouse, REF).compact()

    table = open_table(warehouse, REF)
    rewritten = {f.file_name for t in result.tasks for f in t.files}
    # bucketed: the first 5 files of each bucket by sequence (min.file-num); unaware: the
    # files with vectors are one task per partition, the 4 others too few to pack
    for files in buckets.values():
        names = [f.file_name for f in files]
        if layout == "bucketed":
            assert {n for n in names if n in rewritten} == set(names[:5])
        else:
            assert {n for n in names if n in rewritten} == {names[0], names[-1]}
    after = vectors(table)
    assert not set(after) & rewritten
    assert after == {n: c for n, c in before.items() if n not in rewritten}
    # a bucket keeps an index, empty if need be (BucketedDvMaintainer); an unaware-bucket
    # partition whose vectors all went has none (AppendDeleteFileMaintainer)
    written = len(buckets) if layout == "bucketed" else 0
    assert result.metrics()["deletion_vector_indexes_written"] == written
    assert len(deletion_indexes(table, latest(table))) == written
    health = PaimonTable.open(warehouse, REF).health()
    assert health.totals.deleted_rows == sum(after.values())
    assert_every_reader_reads(warehouse, expected, paimon_java, paimon_java_1_0)


def test_bucketed_full_compaction_rewrites_files_with_vectors_even_when_big(
    warehouse, paimon_java_1_0
):
    table = append_table(warehouse, "bucketed", partitioned=False, **DV, **ALL_BIG)
    everything = write(table, 4)
    buckets = bucket_files(table)
    with_dv = min(buckets)
    # one bucket: its third file loses rows; the other bucket none
    third = buckets[with_dv][2].file_name
    expected = delete_and_model(table, {third: [0, 3]}, everything)

    result = PaimonTable.open(warehouse, REF).compact(full=True)

    # big files before the first one with a vector stay; from it on every file is rewritten
    ((task),) = result.tasks
    assert [f.file_name for f in task.files] == [f.file_name for f in buckets[with_dv][2:]]
    table = open_table(warehouse, REF)
    assert vectors(table) == {}
    assert PaimonTable.open(warehouse, REF).health().totals.deleted_rows == 0
    assert_every_reader_reads(warehouse, expected, paimon_java_1_0)


def test_bucketed_full_compaction_with_vectors_rewrites_even_one_small_file(warehouse):
    table = append_table(warehouse, "bucketed", partitioned=False, **DV)
    append_commits(table, 1)  # one file per bucket: below the 3 full compaction needs
    result = PaimonTable.open(warehouse, REF).compact(full=True)
    assert len(result.tasks) == 2 and all(len(t.files) == 1 for t in result.tasks)
    assert result.metrics()["deletion_vector_indexes_written"] == 0  # no vector to drop
    assert rows(open_table(warehouse, REF)) == model(events(0))


@pytest.mark.parametrize(("threshold", "compacted"), [(None, True), ("0.5", False)])
def test_unaware_compacts_big_files_with_too_many_deleted_rows(
    warehouse, paimon_java, threshold, compacted
):
    options = {**DV, **ALL_BIG}
    if threshold:
        options["compaction.delete-ratio-threshold"] = threshold
    table = append_table(warehouse, "unaware", partitioned=False, **options)
    everything = write(table, 3)
    ((_, files),) = bucket_files(table).items()
    many, few = files[0].file_name, files[1].file_name
    # 12 of 48 rows is above the default 0.2 and below 0.5; 1 of 48 below both
    expected = delete_and_model(table, {many: list(range(12)), few: [5]}, everything)
    snapshot = latest(table).id

    result = PaimonTable.open(warehouse, REF).compact()

    table = open_table(warehouse, REF)
    if compacted:
        ((task),) = result.tasks
        assert [f.file_name for f in task.files] == [many]
        assert vectors(table) == {few: 1}  # kept, and still applied
    else:
        assert result.snapshot_id is None and latest(table).id == snapshot
        assert vectors(table) == {many: 12, few: 1}
    assert_every_reader_reads(warehouse, expected, paimon_java)


@pytest.mark.parametrize("layout", ["bucketed", "unaware"])
def test_the_replaced_index_file_goes_once_no_snapshot_uses_it(warehouse, layout):
    table = append_table(warehouse, layout, partitioned=False, **DV)
    everything = write(table, 2)
    files = min(bucket_files(table).items())[1]
    expected = delete_and_model(table, {files[0].file_name: [0]}, everything)
    old = _index_paths(table)
    result = PaimonTable.open(warehouse, REF).compact(full=True)
    assert result.snapshot_id is not None
    table = open_table(warehouse, REF)
    new = _index_paths(table)
    # the bucket's index is rewritten empty; the unaware partition's is gone
    assert len(old) == 1 and len(new) == (layout == "bucketed") and not old & new
    assert all(exists(p) for p in old | new)
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    assert not any(exists(p) for p in old) and all(exists(p) for p in new)
    assert Counter(rows(table)) == expected


def several_index_files(warehouse, layout: str) -> tuple[list[tuple], Counter, dict]:
    """A table one bucket (unaware: partition) of which holds two deletion-vector index files,
    as Java's unaware-bucket DELETE leaves it: rows written, rows left, deleted rows per file."""
    table = append_table(warehouse, layout, partitioned=False, **DV)
    everything = write(table, 3)
    files = min(bucket_files(table).items())[1]
    expected = delete_and_model(table, {files[0].file_name: [0]}, everything)
    gone = Counter(file_rows(table, files[1].file_name)[p] for p in (0, 1))
    delete_beside(table, {files[1].file_name: [0, 1]})
    counts = Counter(e.bucket for e in index_entries(table, latest(table)))
    assert counts[min(bucket_files(table))[1]] == 2
    return everything, expected - gone, {files[0].file_name: 1, files[1].file_name: 2}


@pytest.mark.parametrize("layout", ["bucketed", "unaware"])
def test_several_index_files_of_a_bucket_read_as_their_union(warehouse, paimon_java, layout):
    _, expected, deleted = several_index_files(warehouse, layout)
    table = open_table(warehouse, REF)
    assert vectors(table) == deleted
    levels = read_levels(table)
    assert {n: c for b in levels.buckets for n, c in b.deleted_rows().items()} == deleted
    assert PaimonTable.open(warehouse, REF).health().totals.deleted_rows == 3
    assert_every_reader_reads(warehouse, expected, paimon_java)


def test_a_data_file_in_two_index_files_is_corrupt(warehouse):
    table = append_table(warehouse, "unaware", partitioned=False, **DV)
    write(table, 2)
    name = min(bucket_files(table).items())[1][0].file_name
    delete_positions(table, {name: [0]})
    delete_beside(table, {name: [1]})
    with pytest.raises(CorruptMetadataError, match=f"{name} has a deletion vector in two"):
        PaimonTable.open(warehouse, REF).health()


def index_names(table) -> set[str]:
    """The deletion-vector index files of the latest snapshot."""
    return {n for index in deletion_indexes(table, latest(table)).values() for n in index.names}


def test_unaware_compaction_rewrites_only_the_index_files_it_touches(
    warehouse, paimon_java, paimon_java_1_0
):
    """AppendDeleteFileMaintainer: the index files holding the task's vectors go, their other
    vectors move to a new file, the partition's other index files stay as they are."""
    table = append_table(warehouse, "unaware", partitioned=False, **DV, **ALL_BIG)
    everything = write(table, 4)
    f0, f1, f2, f3 = (f.file_name for f in min(bucket_files(table).items())[1])
    many = list(range(20))  # more than compaction.delete-ratio-threshold (0.2) of 48 rows
    expected = delete_and_model(table, {f0: many, f1: [0]}, everything)  # index 1
    for name, positions in ((f2, many), (f3, [1])):  # index 2, index 3
        expected -= Counter(file_rows(table, name)[p] for p in positions)
        delete_beside(table, {name: positions})
    table = open_table(warehouse, REF)
    holders = deletion_indexes(table, latest(table))[min(bucket_files(table))].holders
    assert len(set(holders.values())) == 3
    assert vectors(table) == {f0: 20, f1: 1, f2: 20, f3: 1}

    result = PaimonTable.open(warehouse, REF).compact()

    ((task,),) = [result.tasks]
    assert {f.file_name for f in task.files} == {f0, f2}  # too many deleted rows: candidates
    assert set(task.dv_index.names) == {holders[f0], holders[f2]}
    table = open_table(warehouse, REF)
    assert vectors(table) == {f1: 1, f3: 1}
    after = deletion_indexes(table, latest(table))[min(bucket_files(table))].holders
    assert after[f3] == holders[f3]  # untouched: kept
    assert after[f1] not in set(holders.values())  # moved out of the rewritten index file
    assert PaimonTable.open(warehouse, REF).health().totals.deleted_rows == 2
    assert_every_reader_reads(warehouse, expected, paimon_java, paimon_java_1_0)


def test_a_delete_beside_the_touched_index_files_meanwhile_fails_the_compaction(warehouse):
    """A vector committed meanwhile in a new index file for a file the task rewrites would be
    lost: the commit refuses, the table keeps the other writer's snapshot."""
    table = append_table(warehouse, "unaware", partitioned=False, **DV, **MIN_TWO)
    everything = write(table, 3)
    f0, f1, f2 = (f.file_name for f in min(bucket_files(table).items())[1])
    delete_and_model(table, {f0: [0]}, everything)
    tasks = PaimonTable.open(warehouse, REF).compact(dry_run=True).tasks
    assert [{f.file_name for f in t.files} for t in tasks] == [{f0}, {f1, f2}]
    assert tasks[1].dv_index is None  # f1 has no vector yet: the task touches no index
    snapshot = latest(table)
    meanwhile = DeleteMeanwhile({f1: [0]}, delete_beside)
    with pytest.raises(CommitConflictError, match="DELETION_VECTORS index of bucket 0"):
        PaimonTable.open(warehouse, REF).compact(executor=meanwhile)
    table = open_table(warehouse, REF)
    assert latest(table).id == snapshot.id
    assert vectors(table) == {f0: 1, f1: 1}


def test_two_tasks_of_one_partition_rewrite_disjoint_index_files(warehouse, paimon_java):
    """Groups fill bins without being split: two tasks of one partition each replace their own
    index files, committed together."""
    costly = {"source.split.open-file-cost": "256 mb"}  # two files fill a bin of 2 * 256 MB
    table = append_table(warehouse, "unaware", partitioned=False, **DV, **ALL_BIG, **costly)
    everything = write(table, 3)
    f0, f1, f2 = (f.file_name for f in min(bucket_files(table).items())[1])
    many = list(range(20))  # more than compaction.delete-ratio-threshold (0.2) of 48 rows
    expected = delete_and_model(table, {f0: many}, everything)
    for name in (f1, f2):
        expected -= Counter(file_rows(table, name)[p] for p in many)
        delete_beside(table, {name: many})
    table = open_table(warehouse, REF)
    before = index_names(table)
    assert len(before) == 3

    result = PaimonTable.open(warehouse, REF).compact()

    assert len(result.tasks) == 2
    touched = [set(t.dv_index.names) for t in result.tasks]
    assert not touched[0] & touched[1] and touched[0] | touched[1] == before
    table = open_table(warehouse, REF)
    assert vectors(table) == {} and index_names(table) == set()
    assert_every_reader_reads(warehouse, expected, paimon_java)


def test_bucketed_compaction_merges_several_index_files_into_one(
    warehouse, paimon_java, paimon_java_1_0
):
    """BucketedDvMaintainer restores every index file of the bucket and writes one."""
    _, expected, _ = several_index_files(warehouse, "bucketed")
    table = open_table(warehouse, REF)
    files = min(bucket_files(table).items())[1]
    key = min(bucket_files(table))
    result = PaimonTable.open(warehouse, REF).compact(full=True)
    table = open_table(warehouse, REF)
    assert {t.bucket for t in result.tasks} >= {key[1]}
    assert not set(vectors(table)) & {f.file_name for f in files}
    assert len(deletion_indexes(table, latest(table))[key].files) == 1
    assert PaimonTable.open(warehouse, REF).health().totals.deleted_rows == 0
    assert_every_reader_reads(warehouse, expected, paimon_java, paimon_java_1_0)


def test_a_task_with_vectors_travels_to_executors_whole(warehouse):
    table = append_table(warehouse, "bucketed", partitioned=False, **DV)
    write(table, 1)
    files = min(bucket_files(table).items())[1]
    delete_positions(table, {files[0].file_name: [0]})
    tasks = PaimonTable.open(warehouse, REF).compact(full=True, dry_run=True).tasks
    assert [t.dv_index is not None for t in tasks] == [True, False]  # only where a vector is
    shipped = pickle.loads(pickle.dumps(tasks))  # as the Spark executor ships them
    assert [t.dv_index for t in shipped] == [t.dv_index for t in tasks]
    assert [t.to_dict() for t in shipped] == [t.to_dict() for t in tasks]


def test_a_file_whose_rows_are_all_deleted_leaves_no_file(warehouse, paimon_java):
    table = append_table(warehouse, "unaware", partitioned=False, **DV)
    everything = write(table, 2)
    files = min(bucket_files(table).items())[1]
    gone = files[0]
    expected = delete_and_model(table, {gone.file_name: list(range(gone.row_count))}, everything)
    result = PaimonTable.open(warehouse, REF).compact()
    ((task),) = result.tasks
    assert [f.file_name for f in task.files] == [gone.file_name]
    assert result.metrics()["files_written"] == 0
    table = open_table(warehouse, REF)
    assert [f.file_name for f in min(bucket_files(table).items())[1]] == [files[1].file_name]
    assert vectors(table) == {} and deletion_indexes(table, latest(table)) == {}
    assert_every_reader_reads(warehouse, expected, paimon_java)


def _meta(name: str, size: int, seq: int, rows: int = 100):
    """Just the metadata the planners read."""
    return SimpleNamespace(
        file_name=name, file_size=size, min_sequence_number=seq, row_count=rows, creation_time=None
    )


def _index(**deleted: int | None) -> VectorIndex:
    """A bucket's index metadata naming each file's deleted-row count."""
    ranges = {n: DeletionVectorMeta(n, 1, 1, c) for n, c in deleted.items()}
    return VectorIndex((IndexFileMeta(DELETION_VECTORS, "index-0", 1, len(ranges), ranges),))


def test_full_pick_with_vectors_stops_dropping_big_files_at_the_first_with_a_vector():
    options = AppendOptions(target_file_size=100, deletion_vectors=True)  # small: below 70
    files = [_meta("a", 90, 1), _meta("b", 90, 2), _meta("c", 90, 3), _meta("d", 10, 4)]
    assert [f.file_name for f in pick_bucketed_full(files, options, {"b"})] == ["b", "c", "d"]
    assert [f.file_name for f in pick_bucketed_full(files, options)] == ["d"]
    assert [f.file_name for f in pick_bucketed_full(files[:3], options)] == []
    plain = AppendOptions(target_file_size=100)
    assert pick_bucketed_full(files, plain, {"b"}) == []  # vectors disabled: as before


def test_delete_ratio_judges_by_the_vectors_cardinality():
    index = _index(a=21, b=20, c=None)
    assert too_many_deleted(_meta("a", 1, 1), index, 0.2)
    assert not too_many_deleted(_meta("b", 1, 1), index, 0.2)  # strictly more than the ratio
    assert too_many_deleted(_meta("c", 1, 1), index, 0.2)  # no count: Java compacts it
    assert not too_many_deleted(_meta("d", 1, 1), index, 0.2)  # no vector
    assert not too_many_deleted(_meta("a", 1, 1), None, 0.2)


def test_unaware_packing_with_vectors():
    options = AppendOptions(target_file_size=100, min_file_num=2, open_file_cost=0)
    files = [_meta("v1", 5, 1), _meta("v2", 300, 2), _meta("x", 3, 3), _meta("y", 4, 4)]
    bins = pack_unaware_vectors(files, options, {"v1": "i", "v2": "i"})
    assert [[f.file_name for f in b] for b in bins] == [["v1", "v2"], ["x", "y"]]
    # one file with a vector is a task alone; one other file is too few
    bins = pack_unaware_vectors(files[1:3], options, {"v2": "i"})
    assert [[f.file_name for f in b] for b in bins] == [["v2"]]


def test_unaware_packing_keeps_each_index_files_vectors_in_one_task():
    """packInDeletionVectorVMode: groups by index file, smallest first, fill bins whole."""
    options = AppendOptions(target_file_size=100, min_file_num=2, open_file_cost=0)
    files = [_meta("a1", 150, 1), _meta("a2", 10, 2), _meta("b1", 20, 3), _meta("c1", 5, 4)]
    holders = {"a1": "ia", "a2": "ia", "b1": "ib", "c1": "ic"}
    bins = pack_unaware_vectors(files, options, holders)
    # c (5), b (20), a (160): the bin reaches 2 * 100 only with a's files, all of them
    assert [[f.file_name for f in b] for b in bins] == [["c1", "b1", "a2", "a1"]]
    small = AppendOptions(target_file_size=10, min_file_num=2, open_file_cost=0)
    bins = pack_unaware_vectors(files, small, holders)
    assert [[f.file_name for f in b] for b in bins] == [["c1", "b1"], ["a2", "a1"]]


class DeleteMeanwhile(LocalExecutor):
    """Runs the tasks after another writer deleted rows: the index they rewrite has changed."""

    def __init__(self, deletions: dict[str, list[int]], delete=delete_positions):
        super().__init__()
        self.deletions = deletions
        self.delete = delete

    def run(self, table, ref, tasks, work=COMPACTION):
        if tasks:
            self.delete(table, self.deletions)
        return super().run(table, ref, tasks, work)


@pytest.mark.parametrize("layout", ["bucketed", "unaware"])
def test_a_delete_committed_meanwhile_fails_the_compaction(warehouse, layout):
    table = append_table(warehouse, layout, partitioned=False, **DV)
    everything = write(table, 2)
    files = min(bucket_files(table).items())[1]
    expected = delete_and_model(table, {files[0].file_name: [0]}, everything)
    old = _index_paths(table)
    meanwhile = {files[1].file_name: [1]}
    expected[file_rows(table, files[1].file_name)[1]] -= 1
    with pytest.raises(CommitConflictError, match="index"):
        PaimonTable.open(warehouse, REF).compact(full=True, executor=DeleteMeanwhile(meanwhile))
    table = open_table(warehouse, REF)
    assert Counter(rows(table)) == expected  # the delete stands, nothing compacted
    assert vectors(table) == {files[0].file_name: 1, files[1].file_name: 1}
    assert data_files_on_disk(table) == committed_files(table)
    # on disk: the first delete's index and the second's, not the compaction's
    assert _all_index_files(table) == old | _index_paths(table)


def test_a_malformed_delete_ratio_threshold_is_an_option_error(warehouse):
    table = append_table(
        warehouse, "unaware", partitioned=False, **DV, **{"compaction.delete-ratio-threshold": "x"}
    )
    write(table, 1)
    snapshot = latest(table).id
    with pytest.raises(InvalidOptionError, match="delete-ratio-threshold"):
        PaimonTable.open(warehouse, REF).compact()
    assert latest(open_table(warehouse, REF)).id == snapshot


def _all_index_files(table) -> set[str]:
    """Every index file on disk."""
    index_dir = os.path.join(table.table_path, "index")
    return {os.path.join(index_dir, n) for n in os.listdir(index_dir)}


def _index_paths(table) -> set[str]:
    """Paths of the index files the latest snapshot names."""
    return {
        index_path(table, Partition.of_row(e.partition), e.bucket, e.index_file)
        for e in index_entries(table, latest(table))
    }
