"""Levels ordering and health metrics: hand-built files, and real pypaimon-written tables."""

from __future__ import annotations

import os
from collections import defaultdict

import pytest

from dagster_paimon.errors import CorruptMetadataError, InvalidArgumentError, SnapshotNotFoundError
from dagster_paimon.kinds import health_of
from dagster_paimon.lsm.model.levels import Levels, read_levels
from dagster_paimon.lsm.model.runs import size_amplification_percent
from tests.conftest import orders_batch, write_with_pypaimon
from tests.lsm.files import data_file


def names(runs):
    return [(r.level, [f.file_name for f in r.run.files]) for r in runs]


def test_level0_orders_newest_flush_first_then_min_seq_creation_and_name():
    files = [
        data_file("a", max_seq=5, min_seq=3, creation_ms=10),
        data_file("b", max_seq=9, min_seq=6),
        data_file("c", max_seq=5, min_seq=1, creation_ms=30),
        data_file("d", max_seq=5, min_seq=3, creation_ms=5),
        data_file("f", max_seq=5, min_seq=3, creation_ms=10),
        data_file("e", max_seq=5, min_seq=3, creation_ms=10),
    ]
    levels = Levels(files, num_levels=3)
    assert [f.file_name for f in levels.level0] == ["b", "c", "d", "a", "e", "f"]
    assert names(levels.level_sorted_runs()) == [(0, [n]) for n in "bcdaef"]


def test_l0_only_tree():
    levels = Levels([data_file("x", max_seq=1), data_file("y", max_seq=2)], num_levels=6)
    assert levels.number_of_sorted_runs() == 2
    assert levels.non_empty_highest_level() == 0
    assert levels.number_of_levels() == 6
    assert levels.max_level() == 5


def test_mixed_levels_give_l0_files_then_ascending_levels_sorted_by_min_key():
    files = [
        data_file("l3-hi", level=3, min_key=50, max_key=90, size=40),
        data_file("l0", level=0, max_seq=100, size=3),
        data_file("l1-b", level=1, min_key=20, max_key=29, size=5),
        data_file("l3-lo", level=3, min_key=0, max_key=49, size=60),
        data_file("l1-a", level=1, min_key=0, max_key=19, size=5),
    ]
    levels = Levels(files, num_levels=6)
    runs = levels.level_sorted_runs()
    assert names(runs) == [(0, ["l0"]), (1, ["l1-a", "l1-b"]), (3, ["l3-lo", "l3-hi"])]
    assert levels.number_of_sorted_runs() == 3
    assert levels.non_empty_highest_level() == 3
    assert levels.levels[1].files == []
    assert size_amplification_percent(runs) == pytest.approx(100 * (3 + 10) / 100)
    assert [f.file_name for f in levels.all_files()] == ["l0", "l1-a", "l1-b", "l3-lo", "l3-hi"]


def test_single_max_level_run_has_no_amplification():
    levels = Levels(
        [data_file("m", level=5, size=10), data_file("n", level=5, min_key=1, max_key=1)], 6
    )
    assert levels.number_of_sorted_runs() == 1
    assert levels.non_empty_highest_level() == 5
    assert size_amplification_percent(levels.level_sorted_runs()) == 0.0


def test_empty_tree():
    levels = Levels([], num_levels=6)
    assert levels.level_sorted_runs() == []
    assert levels.number_of_sorted_runs() == 0
    assert levels.non_empty_highest_level() == -1


def test_files_above_configured_levels_extend_the_tree():
    levels = Levels([data_file("deep", level=8)], num_levels=3)
    assert levels.number_of_levels() == 9
    assert levels.non_empty_highest_level() == 8


def test_overlapping_files_in_one_level_are_corrupt_metadata():
    files = [
        data_file("a", level=2, min_key=0, max_key=10),
        data_file("b", level=2, min_key=10, max_key=20),
    ]
    with pytest.raises(CorruptMetadataError, match="level 2 files a and b"):
        Levels(files, num_levels=6)


def expected_health(table):
    """Health computed independently: pypaimon's own scan splits and file sizes on disk."""
    splits = table.new_read_builder().new_scan().plan().splits()
    buckets = defaultdict(list)
    for split in splits:
        part = {k: str(v) for k, v in split.partition.to_dict().items()}
        for meta, path in zip(split.files, split.file_paths, strict=True):
            buckets[(tuple(part.items()), split.bucket)].append((meta, os.path.getsize(path)))
    result = {}
    for (part, bucket), files in buckets.items():
        assert all(meta.level == 0 for meta, _ in files), "fixture writes level 0 only"
        newest_first = sorted(files, key=lambda fs: -fs[0].max_sequence_number)
        sizes = [size for _, size in newest_first]
        amp = 100.0 * sum(sizes[:-1]) / sizes[-1] if len(sizes) > 1 else 0.0
        result[(part, bucket)] = {
            "files": len(files),
            "total_bytes": sum(sizes),
            "level0_files": len(files),
            "sorted_runs": len(files),
            "levels": {"0": len(files)},
            "size_amplification_percent": round(amp, 2),
        }
    return result


def test_health_of_a_pypaimon_written_table_matches_an_independent_count(orders_table):
    health = health_of(read_levels(orders_table))
    expected = expected_health(orders_table)
    assert health.snapshot_id == 4
    assert len(health.buckets) == 4
    assert {(tuple(b.partition.items()), b.bucket) for b in health.buckets} == set(expected)
    for b in health.buckets:
        want = expected[(tuple(b.partition.items()), b.bucket)]
        got = b.to_dict()
        assert {k: got[k] for k in want} == want
        assert b.sorted_runs == 4
    summary = health.aggregate()
    assert summary["buckets"] == 4
    assert summary["files"] == 16
    assert summary["total_bytes"] == sum(e["total_bytes"] for e in expected.values())
    assert summary["max_sorted_runs"] == 4
    assert summary["max_size_amplification_percent"] == max(
        e["size_amplification_percent"] for e in expected.values()
    )


def test_health_at_an_older_snapshot_and_partition_filter(orders_table):
    old = health_of(read_levels(orders_table, snapshot_id=2))
    assert old.snapshot_id == 2
    assert {b.sorted_runs for b in old.buckets} == {2}
    one_day = health_of(read_levels(orders_table, partition={"dt": "2024-01-02"}))
    assert {b.partition["dt"] for b in one_day.buckets} == {"2024-01-02"}
    assert len(one_day.buckets) == 2
    assert read_levels(orders_table, partition={"dt": "1999-01-01"}).buckets == []


def test_unknown_snapshot_and_non_partition_filter_are_errors(orders_table):
    with pytest.raises(SnapshotNotFoundError, match="snapshot 99"):
        read_levels(orders_table, snapshot_id=99)
    with pytest.raises(InvalidArgumentError, match="not partition keys"):
        read_levels(orders_table, partition={"id": "1"})


def test_empty_table_has_no_snapshot_and_no_buckets(warehouse):
    from dagster_paimon.table import create_table
    from tests.conftest import orders_spec

    levels = read_levels(create_table(warehouse, orders_spec()))
    assert levels.snapshot_id is None
    assert health_of(levels).to_dict()["totals"]["max_sorted_runs"] == 0


def test_num_levels_comes_from_table_options(warehouse):
    from dagster_paimon.table import create_table
    from tests.conftest import orders_spec

    table = create_table(warehouse, orders_spec(**{"num-sorted-run.compaction-trigger": "3"}))
    write_with_pypaimon(table, orders_batch(0))
    levels = read_levels(table)
    assert all(b.levels.number_of_levels() == 4 for b in levels.buckets)
