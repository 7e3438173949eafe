"""plan_task against Java's MergeTreeCompactTask and FileRewriteCompactTask."""

from __future__ import annotations

import pickle
from dataclasses import replace
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pypaimon.manifest.schema.data_file_meta import DataFileMeta
from pypaimon.manifest.schema.simple_stats import SimpleStats
from pypaimon.table.row.binary_row import BinaryRow
from pypaimon.table.row.generic_row import GenericRowSerializer

from dagster_paimon.errors import InternalError
from dagster_paimon.lsm.compaction.plan import RewriteGroup, TaskPlan, Upgrade, plan_task
from dagster_paimon.lsm.model.levels import Levels
from dagster_paimon.lsm.model.options import CompactionOptions
from dagster_paimon.lsm.model.runs import CompactUnit, SortedRun
from dagster_paimon.partition import Partition
from tests.lsm.files import DT_FIELD, KEY_FIELD, data_file, key

# min_file_size = int(100 * 0.7) = 70: size < 70 is small, >= 70 is big.
OPTIONS = CompactionOptions(target_file_size=100)
SMALL, BIG = 10, 70
MAX_LEVEL = 5


def plan(
    files: list[DataFileMeta],
    output_level: int = 3,
    *,
    options: CompactionOptions = OPTIONS,
    max_level: int = MAX_LEVEL,
    file_rewrite: bool = False,
    **kwargs,
) -> TaskPlan:
    """Plan a unit over `files` in one unpartitioned bucket."""
    return plan_task(
        CompactUnit.from_files(output_level, files, file_rewrite),
        max_level=max_level,
        drop_delete=output_level > 0,
        options=options,
        partition=Partition(()),
        bucket=0,
        total_buckets=1,
        **kwargs,
    )


def bounds(files) -> tuple[int, int]:
    """Key span covered by some files."""
    return min(f.min_key.values[0] for f in files), max(f.max_key.values[0] for f in files)


def names(files) -> list[str]:
    """File names, for readable assertions."""
    return [f.file_name for f in files]


def groups(p: TaskPlan) -> list[list[list[str]]]:
    """Each rewrite group as its sections, each section as its runs' file names (runs sorted)."""
    return [
        [sorted(names(run.files) for run in section) for section in g.sections] for g in p.rewrites
    ]


def untouched(p: TaskPlan) -> tuple[DataFileMeta, ...]:
    """Input files already at the output level that need neither rewrite nor upgrade."""
    touched = {f.file_name for f in (*p.rewritten_files, *p.upgraded_files)}
    return tuple(f for f in p.files if f.file_name not in touched)


def upgraded(p: TaskPlan) -> list[tuple[str, int]]:
    """(file, new level) per upgrade."""
    return [(u.file.file_name, u.output_level) for u in p.upgrades]


# --- Ports of MergeTreeCompactManagerTest (minFileSize 2, 3 levels, file size = key span) ---


def java_file(i: int, level: int, lo: int, hi: int) -> DataFileMeta:
    """DataFileTestUtils.newFile(level, min, max, maxSeq=i): size is the key span."""
    return data_file(f"f{i}", level=level, size=hi - lo + 1, min_key=lo, max_key=hi, max_seq=i)


def run_java_case(inputs, pick) -> list[tuple[int, int, int]]:
    """Plan then apply like Java's TestRewriter: each rewrite group becomes one min..max file."""
    files = [java_file(i, *spec) for i, spec in enumerate(inputs)]
    levels = Levels(files, num_levels=3)
    unit = pick(levels.max_level(), levels.level_sorted_runs())
    p = plan_task(
        unit,
        max_level=levels.max_level(),
        drop_delete=False,
        options=CompactionOptions(target_file_size=2, small_file_ratio=1.0),
        partition=Partition(()),
        bucket=0,
        total_buckets=1,
    )
    picked = {f.file_name for f in unit.files}
    out = [(f.level, *bounds([f])) for f in files if f.file_name not in picked]
    out += [(p.output_level, *bounds(g.files)) for g in p.rewrites]
    out += [(u.output_level, *bounds([u.file])) for u in p.upgrades]
    out += [(f.level, *bounds([f])) for f in untouched(p)]
    return sorted(out)


def everything(max_level, runs):
    """testStrategy(): all runs to the max level."""
    return CompactUnit.from_level_runs(max_level, runs)


@pytest.mark.parametrize(
    ("inputs", "pick", "expected"),
    [
        pytest.param([(3, 1, 3)], everything, [(3, 1, 3)], id="testNoCompaction"),
        pytest.param(
            [(0, 1, 3), (1, 1, 5), (1, 6, 7)], everything, [(2, 1, 5), (2, 6, 7)], id="testNormal"
        ),
        pytest.param(
            [(0, 1, 3), (0, 1, 5), (0, 6, 8)], everything, [(2, 1, 5), (2, 6, 8)], id="testUpgrade"
        ),
        pytest.param([(0, 1, 1), (0, 2, 2)], everything, [(2, 1, 2)], id="testSmallFiles"),
        pytest.param(
            [(0, 1, 5), (0, 6, 6), (1, 7, 8), (1, 9, 10)],
            everything,
            [(2, 1, 5), (2, 6, 6), (2, 7, 8), (2, 9, 10)],
            id="testSmallFilesNoCompact",
        ),
        pytest.param(
            [(0, 1, 5), (0, 6, 6), (1, 7, 7), (1, 9, 10)],
            everything,
            [(2, 1, 5), (2, 6, 7), (2, 9, 10)],
            id="testSmallFilesCrossLevel",
        ),
        pytest.param(
            [(0, 1, 5), (0, 6, 6), (1, 1, 4), (1, 6, 8), (1, 10, 11), (2, 1, 3), (2, 4, 6)],
            everything,
            [(2, 1, 8), (2, 10, 11)],
            id="testComplex",
        ),
        pytest.param(
            [(0, 1, 5), (0, 6, 6), (1, 1, 4), (1, 6, 8), (1, 10, 10), (2, 1, 3), (2, 4, 6)],
            everything,
            [(2, 1, 10)],
            id="testSmallInComplex",
        ),
        pytest.param(
            [(0, 1, 3), (0, 1, 5), (0, 1, 8)],
            lambda _max, runs: CompactUnit.from_level_runs(0, runs[:2]),
            [(0, 1, 3), (0, 1, 8)],
            id="testOutputToZeroLevel",
        ),
        pytest.param(
            [(0, 1, 3), (0, 1, 5), (2, 1, 7)],
            lambda _max, runs: CompactUnit.from_level_runs(1, runs[:2]),
            [(1, 1, 5), (2, 1, 7)],
            id="testCompactToPenultimateLayer",
        ),
    ],
)
def test_java_merge_tree_compact_manager_cases(inputs, pick, expected):
    assert run_java_case(inputs, pick) == expected


# --- do_compact: sections, small files, big files ---


def test_overlapping_files_form_one_section_merged_as_one_group():
    a = data_file("a", level=0, size=BIG, min_key=0, max_key=5)
    b = data_file("b", level=0, size=BIG, min_key=3, max_key=8)
    c = data_file("c", level=1, size=BIG, min_key=6, max_key=9)
    p = plan([a, b, c])
    assert groups(p) == [[[["a", "c"], ["b"]]]]
    assert p.upgrades == ()
    assert sorted(names(p.rewritten_files)) == ["a", "b", "c"]


def test_big_file_flushes_small_candidates_then_is_upgraded():
    s1 = data_file("s1", size=SMALL, min_key=0, max_key=0)
    s2 = data_file("s2", size=SMALL, min_key=1, max_key=1)
    big = data_file("big", size=BIG, min_key=2, max_key=2)
    s3 = data_file("s3", size=SMALL, min_key=3, max_key=3)
    p = plan([s3, big, s1, s2])
    # s1 + s2 merge (two single-run sections); big moves; lone s3 is upgraded, not rewritten.
    assert groups(p) == [[[["s1"]], [["s2"]]]]
    assert upgraded(p) == [("big", 3), ("s3", 3)]
    assert untouched(p) == ()


def test_overlapping_section_and_small_files_merge_together_until_a_big_file():
    a = data_file("a", size=SMALL, min_key=0, max_key=4)
    b = data_file("b", size=SMALL, min_key=2, max_key=5)
    s = data_file("s", size=SMALL, min_key=6, max_key=6)
    big = data_file("big", size=BIG, min_key=7, max_key=9)
    t = data_file("t", size=SMALL, min_key=10, max_key=10)
    u = data_file("u", size=SMALL, min_key=11, max_key=11)
    p = plan([a, b, s, big, t, u])
    assert groups(p) == [[[["a"], ["b"]], [["s"]]], [[["t"]], [["u"]]]]
    assert upgraded(p) == [("big", 3)]


def test_big_overlapping_files_are_still_merged():
    a = data_file("a", size=BIG, min_key=0, max_key=4)
    b = data_file("b", size=BIG, min_key=4, max_key=6)
    p = plan([a, b])
    assert groups(p) == [[[["a"], ["b"]]]]


def test_lone_small_file_at_output_level_is_left_alone():
    s = data_file("s", level=3, size=SMALL)
    p = plan([s])
    assert p.is_empty
    assert names(untouched(p)) == ["s"]


def test_big_file_at_output_level_is_left_alone_and_others_move():
    stay = data_file("stay", level=3, size=BIG, min_key=0, max_key=1)
    move = data_file("move", level=1, size=BIG, min_key=2, max_key=3)
    p = plan([stay, move])
    assert p.rewrites == ()
    assert upgraded(p) == [("move", 3)]
    assert names(untouched(p)) == ["stay"]


def test_output_level_zero_upgrades_nothing_for_level_zero_files():
    a = data_file("a", size=BIG, min_key=0, max_key=1)
    b = data_file("b", size=BIG, min_key=5, max_key=6)
    p = plan([a, b], output_level=0)
    assert p.is_empty
    assert names(untouched(p)) == ["a", "b"]


# --- upgrade(): files rewritten alone ---


@pytest.mark.parametrize(("delete_rows", "rewritten"), [(0, False), (3, True), (None, True)])
def test_big_file_to_max_level_with_delete_rows_is_rewritten_alone(delete_rows, rewritten):
    f = replace(data_file("f", level=1, size=BIG), delete_row_count=delete_rows)
    p = plan([f], output_level=MAX_LEVEL)
    if rewritten:
        assert p.rewrites == (RewriteGroup.alone(f, drop_delete=True, changelog=False),)
        assert p.upgrades == ()
    else:
        assert p.rewrites == ()
        assert upgraded(p) == [("f", MAX_LEVEL)]


@pytest.mark.parametrize("delete_rows", [3, None])
def test_delete_rows_below_max_level_are_upgraded(delete_rows):
    f = replace(data_file("f", level=1, size=BIG), delete_row_count=delete_rows)
    p = plan([f], output_level=MAX_LEVEL - 1)
    assert p.rewrites == ()
    assert upgraded(p) == [("f", MAX_LEVEL - 1)]


def test_file_already_at_max_level_with_deletes_is_rewritten_alone():
    f = data_file("f", level=MAX_LEVEL, size=BIG, delete_rows=1)
    p = plan([f], output_level=MAX_LEVEL)
    assert groups(p) == [[[["f"]]]]


def test_lone_small_file_with_deletes_at_max_level_is_rewritten_alone():
    f = data_file("f", level=0, size=SMALL, delete_rows=1)
    p = plan([f], output_level=MAX_LEVEL)
    assert p.rewrites == (RewriteGroup.alone(f, drop_delete=True, changelog=False),)
    assert p.upgrades == ()


def test_flush_comes_before_the_big_file_rewritten_alone():
    s1 = data_file("s1", size=SMALL, min_key=0, max_key=0)
    s2 = data_file("s2", size=SMALL, min_key=1, max_key=1)
    big = data_file("big", size=BIG, min_key=2, max_key=2, delete_rows=2)
    p = plan([big, s1, s2], output_level=MAX_LEVEL)
    assert groups(p) == [[[["s1"]], [["s2"]]], [[["big"]]]]


def test_force_rewrite_all_files_rewrites_big_and_same_level_files_alone():
    options = CompactionOptions(target_file_size=100, force_rewrite_all_files=True)
    a = data_file("a", level=3, size=BIG, min_key=0, max_key=1)
    b = data_file("b", level=0, size=BIG, min_key=2, max_key=3)
    c = data_file("c", level=0, size=SMALL, min_key=4, max_key=6)
    d = data_file("d", level=0, size=SMALL, min_key=5, max_key=7)
    p = plan([d, c, b, a], options=options)
    assert groups(p) == [[[["a"]]], [[["b"]]], [[["c"], ["d"]]]]
    assert p.upgrades == ()


def test_record_level_expired_files_are_rewritten_alone():
    options = CompactionOptions(target_file_size=100, record_level_expire_time_ms=1000)
    old = data_file("old", level=1, size=BIG, min_key=0, max_key=1)
    new = data_file("new", level=1, size=BIG, min_key=2, max_key=3)
    p = plan([old, new], options=options, record_level_expire=lambda f: f.file_name == "old")
    assert groups(p) == [[[["old"]]]]
    assert upgraded(p) == [("new", 3)]


def test_record_level_expire_true_rewrites_every_big_file_alone():
    options = CompactionOptions(target_file_size=100, record_level_expire_time_ms=1000)
    a = data_file("a", level=1, size=BIG, min_key=0, max_key=1)
    b = data_file("b", level=3, size=BIG, min_key=2, max_key=3)
    p = plan([a, b], options=options, record_level_expire=True)
    assert groups(p) == [[[["a"]]], [[["b"]]]]


def test_record_level_expiry_needs_a_check():
    options = CompactionOptions(record_level_expire_time_ms=1000)
    with pytest.raises(InternalError, match="record_level_expire"):
        plan([data_file("f")], options=options)


# --- FileRewriteCompactTask units ---


def test_file_rewrite_unit_rewrites_every_file_alone_in_unit_order():
    a = data_file("a", level=MAX_LEVEL, size=BIG, min_key=0, max_key=5)
    b = data_file("b", level=MAX_LEVEL, size=SMALL, min_key=3, max_key=4, delete_rows=0)
    p = plan([b, a], output_level=MAX_LEVEL, file_rewrite=True)
    assert p.rewrites == (
        RewriteGroup.alone(b, drop_delete=True, changelog=False),
        RewriteGroup.alone(a, drop_delete=True, changelog=False),
    )
    assert p.upgrades == ()
    assert untouched(p) == ()


def test_empty_file_rewrite_unit_is_an_empty_plan():
    assert plan([], output_level=MAX_LEVEL, file_rewrite=True).is_empty


# --- Values: upgrade, summaries, JSON, pickling ---


def test_upgrade_changes_only_the_level():
    f = data_file("f", level=0, size=BIG, min_key=1, max_key=4, min_seq=3, max_seq=9)
    up = Upgrade(f, 4).upgraded_file()
    assert up.level == 4
    assert replace(up, level=0) == f
    assert f.level == 0


def test_upgrade_to_the_same_level_is_refused():
    with pytest.raises(InternalError, match="already at level"):
        Upgrade(data_file("f", level=2), 2)


def test_output_level_beyond_max_level_is_refused():
    with pytest.raises(InternalError, match="outside"):
        plan([data_file("f")], output_level=MAX_LEVEL + 1)


def test_summary_and_to_dict():
    s1 = data_file("s1", size=SMALL, min_key=0, max_key=0)
    s2 = data_file("s2", size=SMALL + 1, min_key=1, max_key=1)
    big = data_file("big", size=BIG, min_key=2, max_key=2)
    stay = data_file("stay", level=3, size=BIG + 1, min_key=5, max_key=5)
    p = plan_task(
        CompactUnit.from_files(3, [s1, s2, big, stay]),
        max_level=MAX_LEVEL,
        drop_delete=False,
        options=OPTIONS,
        partition=Partition(("2024-01-01",), (DT_FIELD,)),
        bucket=7,
        total_buckets=8,
    )
    assert p.input_bytes == 2 * SMALL + 1 + 2 * BIG + 1
    assert p.rewritten_bytes == 2 * SMALL + 1
    assert p.to_dict() == {
        "partition": {"dt": "2024-01-01"},
        "bucket": 7,
        "output_level": 3,
        "drop_delete": False,
        "input_files": 4,
        "rewritten_files": 2,
        "upgraded_files": 1,
        "input_bytes": 2 * SMALL + 1 + 2 * BIG + 1,
        "rewritten_bytes": 2 * SMALL + 1,
        "input_file_names": ["s1", "s2", "big", "stay"],
        "rewrite_groups": [["s1", "s2"]],
        "upgraded_file_names": ["big"],
        "changelog_groups": 0,
        "scanned_upgrades": 0,
    }


def test_plan_with_manifest_style_binary_row_stats_pickles():
    # Manifests give key/value stats as BinaryRow, which has no __eq__: the bytes survive
    # pickling but a round-tripped DataFileMeta no longer compares equal to the original.
    row = BinaryRow(GenericRowSerializer.to_bytes(key(1)), [KEY_FIELD])
    f = replace(data_file("f", size=BIG), key_stats=SimpleStats(row, row, [0]))
    p = plan([f])
    back = pickle.loads(pickle.dumps(p))
    assert back.to_dict() == p.to_dict()
    assert back.upgrades[0].file.key_stats.min_values.data == row.data
    assert back.upgrades[0].upgraded_file().key_stats.max_values.get_field(0) == 1


# --- Properties ---

file_specs = st.lists(
    st.tuples(
        st.integers(0, 5),  # level
        st.integers(0, 30),  # min key
        st.integers(0, 4),  # key span
        st.sampled_from([SMALL, BIG, 200]),  # size
        st.sampled_from([0, 0, 2, None]),  # delete rows
    ),
    max_size=12,
)


def build(specs) -> list[DataFileMeta]:
    """Files with unique names from generated specs."""
    return [
        replace(
            data_file(f"f{i}", level=lv, size=size, min_key=lo, max_key=lo + span, max_seq=i),
            delete_row_count=deletes,
        )
        for i, (lv, lo, span, size, deletes) in enumerate(specs)
    ]


@settings(max_examples=300, deadline=None)
@given(
    specs=file_specs,
    output_level=st.integers(0, MAX_LEVEL),
    force=st.booleans(),
    file_rewrite=st.booleans(),
)
def test_plan_properties(specs, output_level, force, file_rewrite):
    files = build(specs)
    options = CompactionOptions(target_file_size=100, force_rewrite_all_files=force)
    p = plan(files, output_level, options=options, file_rewrite=file_rewrite)

    # Every input file appears exactly once: rewritten, upgraded or untouched.
    placed = names(p.rewritten_files) + names(p.upgraded_files) + names(untouched(p))
    assert sorted(placed) == sorted(names(files))
    assert len(p.to_dict()["input_file_names"]) == len(files)

    # Upgrades only ever change the level, to the output level.
    for u in p.upgrades:
        assert u.output_level == output_level != u.file.level
        assert replace(u.upgraded_file(), level=u.file.level) == u.file

    # A file is left alone only when it is already where it belongs and may keep its records.
    for f in untouched(p):
        assert f.level == output_level
        assert not force and not file_rewrite
        assert output_level < MAX_LEVEL or f.delete_row_count == 0

    # A single file is rewritten only when it must be; file-rewrite units merge nothing.
    for g in p.rewrites:
        if len(g.files) == 1:
            f = g.files[0]
            must = force or (output_level == MAX_LEVEL and f.delete_row_count != 0)
            assert file_rewrite or must
        else:
            assert not file_rewrite

    # Outside file-rewrite units, outputs cover disjoint key ranges: each section goes whole
    # into one group or stays one file, so the output level remains one sorted run.
    if not file_rewrite:
        spans = [bounds(g.files) for g in p.rewrites]
        spans += [bounds([f]) for f in (*p.upgraded_files, *untouched(p))]
        spans.sort()
        assert all(left[1] < right[0] for left, right in pairwise(spans))

    assert pickle.loads(pickle.dumps(p)) == p


@settings(max_examples=100, deadline=None)
@given(specs=file_specs)
def test_sorted_runs_in_a_group_are_key_ordered(specs):
    p = plan(build(specs), MAX_LEVEL - 1)
    for g in p.rewrites:
        for section in g.sections:
            for run in section:
                assert isinstance(run, SortedRun)
                for left, right in pairwise(run.files):
                    assert left.max_key.values[0] < right.min_key.values[0]
