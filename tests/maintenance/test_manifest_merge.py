"""Java's ManifestFileMerger semantics on small hand-made inputs."""

from __future__ import annotations

import pytest
from pypaimon.manifest.schema.manifest_entry import ManifestEntry
from pypaimon.manifest.schema.manifest_file_meta import ManifestFileMeta
from pypaimon.manifest.schema.simple_stats import SimpleStats
from pypaimon.schema.data_types import AtomicType, DataField
from pypaimon.table.row.generic_row import GenericRow

from dagster_paimon.commit.manifest_merge import FULL, MINOR, ManifestMergeOptions, merge_manifests
from dagster_paimon.errors import CorruptMetadataError
from tests.lsm.files import data_file

DT = DataField(0, "dt", AtomicType("STRING"))
MB = 1024 * 1024
OPTIONS = ManifestMergeOptions(target_size=8 * MB, min_count=30, full_compaction_size=16 * MB)
ADD, DELETE = 0, 1


def entry(kind: int, name: str, level: int = 0, dt: str = "d1") -> ManifestEntry:
    return ManifestEntry(kind, GenericRow([dt], [DT]), 0, 1, data_file(name, level=level))


def stats(low: str, high: str) -> SimpleStats:
    return SimpleStats(GenericRow([low], [DT]), GenericRow([high], [DT]), [0])


class Store:
    """Manifests held in memory: the merger reads and writes through these two callables."""

    def __init__(self):
        self.entries: dict[str, list[ManifestEntry]] = {}
        self.written: list[list[ManifestEntry]] = []

    def add(self, name: str, size_mb: float, *entries: ManifestEntry) -> ManifestFileMeta:
        self.entries[name] = list(entries)
        dts = [e.partition.values[0] for e in entries] or ["d1"]
        return ManifestFileMeta(
            file_name=name,
            file_size=int(size_mb * MB),
            num_added_files=sum(e.kind == ADD for e in entries),
            num_deleted_files=sum(e.kind == DELETE for e in entries),
            partition_stats=stats(min(dts), max(dts)),
            schema_id=0,
        )

    def read(self, meta: ManifestFileMeta) -> list[ManifestEntry]:
        return self.entries[meta.file_name]

    def write(self, entries: list[ManifestEntry]) -> list[ManifestFileMeta]:
        self.written.append(entries)
        return [self.add(f"new-{len(self.written)}", 0.001, *entries)] if entries else []

    def merge(self, inputs, options=OPTIONS, partitioned=True):
        return merge_manifests(inputs, self.read, self, options, partitioned=partitioned)


def names(metas) -> list[str]:
    return [m.file_name for m in metas]


def test_minor_merges_runs_reaching_the_target_size_and_keeps_the_short_tail():
    s = Store()
    inputs = [
        s.add("a", 5, entry(ADD, "f1")),
        s.add("b", 4, entry(ADD, "f2")),
        s.add("c", 9, entry(ADD, "f3")),
        s.add("d", 1, entry(ADD, "f4")),
        s.add("e", 1, entry(ADD, "f5")),
    ]
    outcome = s.merge(inputs)
    assert outcome.mode == MINOR
    assert names(outcome.manifests) == ["new-1", "c", "d", "e"]
    assert [e.file.file_name for e in s.written[0]] == ["f1", "f2"]
    assert outcome.rewritten == 2


def test_minor_merges_a_tail_of_at_least_min_count_manifests():
    s = Store()
    inputs = [s.add(f"m{i}", 0.01, entry(ADD, f"f{i}")) for i in range(30)]
    outcome = s.merge(inputs)
    assert names(outcome.manifests) == ["new-1"]
    assert len(s.written[0]) == 30


def test_minor_below_min_count_changes_nothing():
    s = Store()
    inputs = [s.add(f"m{i}", 0.01, entry(ADD, f"f{i}")) for i in range(29)]
    outcome = s.merge(inputs)
    assert outcome.mode is None and outcome.manifests == inputs and not s.written


def test_pairs_cancel_a_lone_delete_stays_and_an_upgrade_does_not_cancel():
    s = Store()
    inputs = [
        s.add("big", 9, entry(ADD, "old")),
        s.add("a", 0.01, entry(ADD, "f1"), entry(ADD, "f2")),
        s.add("b", 0.01, entry(DELETE, "f1"), entry(DELETE, "f2", level=0)),
        s.add("c", 0.01, entry(ADD, "f2", level=5), entry(DELETE, "old")),
    ]
    outcome = s.merge(inputs, ManifestMergeOptions(8 * MB, 3, 16 * MB))
    assert names(outcome.manifests) == ["big", "new-1"]
    merged = [(e.kind, e.file.file_name, e.file.level) for e in s.written[0]]
    assert merged == [(ADD, "f2", 5), (DELETE, "old", 0)]


def test_a_file_added_twice_is_corrupt_metadata():
    s = Store()
    inputs = [s.add(f"m{i}", 0.01, entry(ADD, "same")) for i in range(2)]
    with pytest.raises(CorruptMetadataError, match="added twice"):
        s.merge(inputs, ManifestMergeOptions(8 * MB, 2, 16 * MB))


def test_full_drops_every_delete_and_keeps_untouched_big_manifests():
    s = Store()
    inputs = [
        s.add("big-d2", 9, entry(ADD, "x1", dt="d2")),
        s.add("big-d1", 9, entry(ADD, "y1", dt="d1"), entry(ADD, "y2", dt="d1")),
        s.add("big-d1-clean", 9, entry(ADD, "z1", dt="d1")),
        s.add("small", 0.5, entry(ADD, "f1", dt="d1")),
        s.add("deletes", 9, entry(DELETE, "y1", dt="d1"), entry(DELETE, "f1", dt="d1")),
    ]
    outcome = s.merge(inputs, ManifestMergeOptions(8 * MB, 30, 1))
    assert outcome.mode == FULL
    assert names(outcome.manifests) == ["big-d2", "big-d1-clean", "new-1"]
    assert [(e.kind, e.file.file_name) for e in s.written[0]] == [(ADD, "y2")]
    assert outcome.rewritten == 3


def test_full_below_the_trigger_falls_back_to_minor():
    s = Store()
    inputs = [s.add(f"m{i}", 0.01, entry(ADD, f"f{i}")) for i in range(30)]
    assert s.merge(inputs).mode == MINOR


def test_full_with_at_most_one_manifest_to_merge_falls_back_to_minor():
    s = Store()
    inputs = [s.add("big", 9, entry(ADD, "f1")), s.add("small", 0.5, entry(ADD, "f2"))]
    outcome = s.merge(inputs, ManifestMergeOptions(8 * MB, 30, 1))
    assert outcome.mode is None and outcome.manifests == inputs


def test_unpartitioned_deletes_touch_every_manifest():
    s = Store()
    inputs = [
        s.add("big", 9, entry(ADD, "f1")),
        s.add("other", 9, entry(ADD, "f2")),
        s.add("deletes", 0.5, entry(DELETE, "f1")),
    ]
    outcome = s.merge(inputs, ManifestMergeOptions(8 * MB, 30, 1), partitioned=False)
    assert outcome.mode == FULL
    assert names(outcome.manifests) == ["other"]
    assert s.written == [[]]
