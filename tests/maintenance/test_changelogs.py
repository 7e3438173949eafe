"""Changelog lifecycle: coupled to snapshots, or decoupled (kept longer) and expired apart."""

from __future__ import annotations

from dagster_paimon.maintenance.options import RetentionOverrides
from tests.hooks import expire_changelogs, expire_snapshots
from tests.maintenance.histories import append, history, later_ms
from tests.maintenance.oracle import (
    all_refs,
    changelog_data,
    changelog_ids,
    exists,
    hint,
    manifest_exists,
    rows_at,
    snapshot_ids,
    tag_rows,
)

KEEP_TWO = RetentionOverrides(retain_min=2, time_retained_ms=0, max_deletes=1000)
KEEP_ONE = RetentionOverrides(retain_min=1, time_retained_ms=0, max_deletes=1000)
DECOUPLED = {"changelog.num-retained.min": "5"}


def changelog_files(table) -> dict[int, frozenset[str]]:
    """Changelog data files per snapshot (changelog-producer=input)."""
    manager = table.snapshot_manager()
    return {i: changelog_data(table, manager.get_snapshot_by_id(i)) for i in snapshot_ids(table)}


def test_coupled_changelog_files_go_with_their_snapshots(warehouse):
    table = history(warehouse, 5, compact_after=(2,), **{"changelog-producer": "input"})
    produced = changelog_files(table)
    assert produced[1]
    result = expire_snapshots(table, overrides=KEEP_TWO, now_ms=later_ms())
    assert result.expired_ids == (1, 2, 3, 4)
    assert changelog_ids(table) == []
    for i in result.expired_ids:
        assert not any(exists(p) for p in produced[i])
    assert all(exists(p) for p in produced[5] | produced[6])


def test_decoupled_changelog_keeps_append_files_until_changelog_expiry(warehouse):
    table = history(warehouse, 6, compact_after=(3,), **DECOUPLED)
    ever = all_refs(table)
    compacted_away = ever[4].data - ever[5].data
    assert compacted_away
    result = expire_snapshots(table, overrides=KEEP_TWO, now_ms=later_ms())
    assert result.expired_ids == (1, 2, 3, 4, 5)
    assert changelog_ids(table) == [1, 2, 3, 4, 5]
    assert all(exists(p) for p in compacted_away)
    for i in range(1, 6):
        assert all(manifest_exists(table, n) for n in ever[i].metadata)
    assert hint(table, "changelog") == "1"

    append(table, 60)
    append(table, 61)
    assert expire_snapshots(table, overrides=KEEP_TWO, now_ms=later_ms()).expired_ids == (6, 7)
    assert changelog_ids(table) == list(range(1, 8))
    rows = {i: rows_at(table, i) for i in snapshot_ids(table)}

    result = expire_changelogs(table, overrides=KEEP_ONE, now_ms=later_ms())
    assert result.target == "changelogs"
    assert result.expired_ids == (1, 2, 3, 4, 5, 6)
    assert result.earliest == 7
    assert changelog_ids(table) == [7]
    assert not any(exists(p) for p in compacted_away)
    assert hint(table, "changelog") == "7"
    assert snapshot_ids(table) == [8, 9]
    for i, expected in rows.items():
        assert rows_at(table, i) == expected
    assert all(exists(p) for refs in all_refs(table).values() for p in refs.data)


def test_decoupled_changelog_files_outlive_their_snapshots(warehouse):
    options = {"changelog-producer": "input", **DECOUPLED}
    table = history(warehouse, 6, compact_after=(3,), **options)
    produced = changelog_files(table)
    expire_snapshots(table, overrides=KEEP_TWO, now_ms=later_ms())
    assert changelog_ids(table) == [1, 2, 3, 4, 5]
    assert all(exists(p) for i in range(1, 6) for p in produced[i])

    result = expire_changelogs(table, overrides=KEEP_ONE, now_ms=later_ms())
    assert result.expired_ids == (1, 2, 3, 4)
    for i in result.expired_ids:
        assert not any(exists(p) for p in produced[i])
    assert all(exists(p) for p in produced[5] | produced[6] | produced[7])


def test_changelog_expiry_keeps_tagged_files(warehouse):
    table = history(warehouse, 6, compact_after=(3,), **DECOUPLED)
    table.create_tag("t2", 2)
    expected = tag_rows(table, "t2")
    tagged = all_refs(table)[2].data
    expire_snapshots(table, overrides=KEEP_TWO, now_ms=later_ms())
    append(table, 70)
    append(table, 71)
    expire_snapshots(table, overrides=KEEP_TWO, now_ms=later_ms())
    expire_changelogs(table, overrides=KEEP_ONE, now_ms=later_ms())
    assert all(exists(p) for p in tagged)
    assert tag_rows(table, "t2") == expected


def test_changelog_retention_defaults_to_the_tables_options(warehouse):
    table = history(warehouse, 6, compact_after=(3,), **DECOUPLED)
    expire_snapshots(table, overrides=KEEP_TWO, now_ms=later_ms())
    young = expire_changelogs(table)
    assert young.expired_ids == ()
    assert changelog_ids(table) == [1, 2, 3, 4, 5]


def test_no_changelogs_is_a_no_op(warehouse):
    table = history(warehouse, 3)
    result = expire_changelogs(table, overrides=KEEP_ONE, now_ms=later_ms())
    assert result.expired_ids == () and result.deleted_files == 0


LOOKUP = {"changelog-producer": "lookup"}


def test_lookup_changelog_of_compactions_goes_with_their_snapshots(warehouse):
    table = history(warehouse, 5, compact_after=(2, 4), **LOOKUP)
    produced = changelog_files(table)
    compactions = [i for i, files in produced.items() if files]
    assert len(compactions) == 2  # each compaction of level 0 wrote a changelog
    result = expire_snapshots(table, overrides=KEEP_TWO, now_ms=later_ms())
    expired = set(result.expired_ids)
    for i in compactions:
        assert all(exists(p) for p in produced[i]) == (i not in expired)
    assert changelog_ids(table) == []


def test_decoupled_lookup_changelog_outlives_its_snapshots(warehouse):
    table = history(warehouse, 6, compact_after=(2, 4), **LOOKUP, **DECOUPLED)
    produced = changelog_files(table)
    compactions = [i for i, files in produced.items() if files]
    expire_snapshots(table, overrides=KEEP_TWO, now_ms=later_ms())
    assert all(exists(p) for i in compactions for p in produced[i])
    result = expire_changelogs(table, overrides=KEEP_ONE, now_ms=later_ms())
    for i in compactions:
        assert all(exists(p) for p in produced[i]) == (i not in result.expired_ids)
    assert set(compactions) & set(result.expired_ids)
