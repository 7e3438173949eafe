"""Rewriter against MergeTreeCompactManagerFactory.createRewriter, ChangelogMergeTreeRewriter,
LookupMergeTreeCompactRewriter and FullChangelogMergeTreeCompactRewriter."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dagster_paimon.lsm.compaction.rewriter import (
    FULL_CHANGELOG,
    LOOKUP,
    MERGE,
    Rewriter,
    contains_delete_records,
)
from dagster_paimon.lsm.model.options import CompactionOptions
from tests.conftest import DV
from tests.lsm.files import data_file

MAX_LEVEL = 5  # num-levels 6, the default with num-sorted-run.compaction-trigger 5


def rewriter_of(options: dict[str, str]) -> Rewriter:
    """The rewriter of a table with these options."""
    return Rewriter.for_options(CompactionOptions.from_table_options(options))


LOOKUP_CHANGELOG = {"changelog-producer": "lookup"}
FULL = {"changelog-producer": "full-compaction"}
FIRST_ROW = {"merge-engine": "first-row"}
FORCE_LOOKUP = {"force-lookup": "true"}


@pytest.mark.parametrize(
    ("options", "kind", "produces_changelog"),
    [
        ({}, MERGE, False),
        ({"changelog-producer": "none"}, MERGE, False),
        ({"changelog-producer": "input"}, MERGE, False),
        ({"merge-engine": "partial-update"}, MERGE, False),
        (FULL, FULL_CHANGELOG, True),
        ({**FULL, **DV}, FULL_CHANGELOG, True),
        ({**FULL, **FIRST_ROW}, FULL_CHANGELOG, True),
        (LOOKUP_CHANGELOG, LOOKUP, True),
        (DV, LOOKUP, False),
        ({**DV, **LOOKUP_CHANGELOG}, LOOKUP, True),
        (FIRST_ROW, LOOKUP, False),
        ({**FIRST_ROW, **LOOKUP_CHANGELOG}, LOOKUP, True),
        (FORCE_LOOKUP, LOOKUP, False),
        ({"force-lookup": "false"}, MERGE, False),
    ],
)
def test_kind_for_options(options: dict[str, str], kind: str, produces_changelog: bool) -> None:
    """full-compaction first, then LookupStrategy.needLookup, else the plain rewriter."""
    chosen = rewriter_of(options)
    assert chosen.kind == kind
    assert chosen.produces_changelog is produces_changelog
    assert chosen.max_level == MAX_LEVEL


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, dict(lookup_merge=False, first_row=False, deletion_vectors=False)),
        (DV, dict(lookup_merge=True, first_row=False, deletion_vectors=True)),
        (LOOKUP_CHANGELOG, dict(lookup_merge=True, lookup_changelog=True)),
        (FORCE_LOOKUP, dict(lookup_merge=True, lookup_changelog=False)),
        (FIRST_ROW, dict(lookup_merge=False, first_row=True, lookup_changelog=False)),
        ({**FULL, **DV}, dict(lookup_merge=True, deletion_vectors=True, lookup_changelog=False)),
        (FULL, dict(lookup_merge=False, lookup_changelog=False)),
        ({}, dict(deduplicate_without_sequence=True)),
        ({"sequence.field": "v"}, dict(deduplicate_without_sequence=False)),
        ({"merge-engine": "partial-update"}, dict(deduplicate_without_sequence=False)),
        (FIRST_ROW, dict(deduplicate_without_sequence=False)),
    ],
)
def test_flags_for_options(options: dict[str, str], expected: dict[str, bool]) -> None:
    """LookupMergeFunction wraps every lookup engine but first-row (LookupMergeFunction.wrap)."""
    chosen = rewriter_of(options)
    assert {name: getattr(chosen, name) for name in expected} == expected


@pytest.mark.parametrize(("levels", "max_level"), [("2", 1), ("4", 3), ("10", 9)])
def test_max_level_is_the_last_level(levels: str, max_level: int) -> None:
    assert rewriter_of({"num-levels": levels}).max_level == max_level


def test_default_levels_follow_the_compaction_trigger() -> None:
    """num-levels defaults to num-sorted-run.compaction-trigger + 1."""
    assert rewriter_of({"num-sorted-run.compaction-trigger": "3"}).max_level == 3


LOOKUP_REWRITER = rewriter_of(LOOKUP_CHANGELOG)
FULL_REWRITER = rewriter_of(FULL)
MERGE_REWRITER = rewriter_of({})


@pytest.mark.parametrize(
    ("chosen", "output_level", "levels", "expected"),
    [
        # rewriteLookupChangelog: some level-0 file and an output above level 0
        (LOOKUP_REWRITER, 3, [0, 1], True),
        (LOOKUP_REWRITER, 1, [0], True),
        (LOOKUP_REWRITER, MAX_LEVEL, [0, 0, 4, 5], True),
        (LOOKUP_REWRITER, 3, [1, 2], False),
        (LOOKUP_REWRITER, 0, [0, 0], False),
        (rewriter_of(DV), 2, [0], True),
        (rewriter_of(FIRST_ROW), 2, [0], True),
        # full-compaction: only into the max level
        (FULL_REWRITER, MAX_LEVEL, [0, 3], True),
        (FULL_REWRITER, MAX_LEVEL, [4, 5], True),
        (FULL_REWRITER, 4, [0, 3], False),
        (MERGE_REWRITER, MAX_LEVEL, [0, 3], False),
        (MERGE_REWRITER, 2, [0], False),
    ],
)
def test_changelog_rewrite(
    chosen: Rewriter, output_level: int, levels: list[int], expected: bool
) -> None:
    files = [data_file(f"f{i}", level) for i, level in enumerate(levels)]
    assert chosen.changelog_rewrite(output_level, files) is expected


NO_CHANGELOG_NO_REWRITE = (False, False)
CHANGELOG_NO_REWRITE = (True, False)
CHANGELOG_WITH_REWRITE = (True, True)


@pytest.mark.parametrize(
    ("options", "output_level", "file_level", "delete_rows", "expected"),
    [
        # MergeTreeCompactRewriter: a plain upgrade
        ({}, 3, 0, 0, NO_CHANGELOG_NO_REWRITE),
        ({}, MAX_LEVEL, 0, 0, NO_CHANGELOG_NO_REWRITE),
        # FullChangelogMergeTreeCompactRewriter: changelog only into the max level
        (FULL, MAX_LEVEL, 0, 0, CHANGELOG_NO_REWRITE),
        (FULL, MAX_LEVEL, 3, 5, CHANGELOG_NO_REWRITE),
        (FULL, 3, 0, 0, NO_CHANGELOG_NO_REWRITE),
        ({**FULL, **DV}, 3, 0, 5, NO_CHANGELOG_NO_REWRITE),
        # LookupMergeTreeCompactRewriter: files above level 0 just move
        (LOOKUP_CHANGELOG, 3, 1, 0, NO_CHANGELOG_NO_REWRITE),
        (DV, MAX_LEVEL, 2, 5, NO_CHANGELOG_NO_REWRITE),
        # deletion vectors: a level-0 file with deletes (or an unknown count) is rewritten
        (DV, 3, 0, 1, CHANGELOG_WITH_REWRITE),
        (DV, MAX_LEVEL, 0, 1, CHANGELOG_WITH_REWRITE),
        (DV, 3, 0, None, CHANGELOG_WITH_REWRITE),
        ({**DV, "sequence.field": "v"}, MAX_LEVEL, 0, None, CHANGELOG_WITH_REWRITE),
        # without deletes: into the max level no rewrite
        (DV, MAX_LEVEL, 0, 0, CHANGELOG_NO_REWRITE),
        (LOOKUP_CHANGELOG, MAX_LEVEL, 0, 0, CHANGELOG_NO_REWRITE),
        (LOOKUP_CHANGELOG, MAX_LEVEL, 0, 3, CHANGELOG_NO_REWRITE),
        (
            {**LOOKUP_CHANGELOG, "merge-engine": "aggregation"},
            MAX_LEVEL,
            0,
            0,
            CHANGELOG_NO_REWRITE,
        ),
        # deduplicate without sequence.field: merging changes nothing
        (DV, 3, 0, 0, CHANGELOG_NO_REWRITE),
        (LOOKUP_CHANGELOG, 3, 0, 4, CHANGELOG_NO_REWRITE),
        (FORCE_LOOKUP, 1, 0, 0, CHANGELOG_NO_REWRITE),
        # other engines, or a sequence.field, must rewrite
        ({**LOOKUP_CHANGELOG, "sequence.field": "v"}, 3, 0, 0, CHANGELOG_WITH_REWRITE),
        ({**DV, "merge-engine": "partial-update"}, 3, 0, 0, CHANGELOG_WITH_REWRITE),
        ({**LOOKUP_CHANGELOG, "merge-engine": "aggregation"}, 3, 0, 0, CHANGELOG_WITH_REWRITE),
        (FIRST_ROW, 3, 0, 0, CHANGELOG_WITH_REWRITE),
        (FIRST_ROW, MAX_LEVEL, 0, 0, CHANGELOG_NO_REWRITE),
    ],
)
def test_upgrade_strategy(
    options: dict[str, str],
    output_level: int,
    file_level: int,
    delete_rows: int | None,
    expected: tuple[bool, bool],
) -> None:
    file = replace(data_file("f", file_level), delete_row_count=delete_rows)
    assert rewriter_of(options).upgrade_strategy(output_level, file) == expected


def test_contains_delete_records_treats_an_unknown_count_as_deletes() -> None:
    assert contains_delete_records(replace(data_file("f"), delete_row_count=None))
    assert contains_delete_records(data_file("f", delete_rows=2))
    assert not contains_delete_records(data_file("f", delete_rows=0))


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, False),
        (LOOKUP_CHANGELOG, False),
        (FIRST_ROW, False),
        (FORCE_LOOKUP, False),
        (DV, True),
        ({**DV, **LOOKUP_CHANGELOG}, True),
        # FullChangelogMergeTreeCompactRewriter passes forceDropDelete = false
        ({**FULL, **DV}, False),
    ],
)
def test_force_drop_delete(options: dict[str, str], expected: bool) -> None:
    """ChangelogMergeTreeRewriter's forceDropDelete: a lookup rewriter with a DV maintainer."""
    assert rewriter_of(options).force_drop_delete is expected
