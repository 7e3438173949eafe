"""Compaction decisions, ported case by case from Paimon's Java tests plus property checks."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pypaimon.data.timestamp import Timestamp

from dagster_paimon.errors import InvalidOptionError
from dagster_paimon.lsm.compaction.strategy import (
    CompactUnit,
    EarlyFullCompaction,
    ForceUpLevel0Compaction,
    LevelSortedRun,
    OffPeakHours,
    SortedRun,
    UniversalCompaction,
    creation_epoch_millis,
    drop_delete,
    estimate_last_full_compaction_ms,
    pick_full_compaction,
    strategy_from_options,
    trigger_compaction,
)
from dagster_paimon.lsm.model.options import CompactionOptions
from tests.lsm.files import data_file

_names = itertools.count()


def run(level: int, *sizes: int) -> LevelSortedRun:
    """A sorted run at a level holding one file per size (one file of size 1 by default)."""
    files = [
        data_file(f"f{next(_names)}", level=level, size=s, min_key=i, max_key=i)
        for i, s in enumerate(sizes or (1,))
    ]
    return LevelSortedRun(level, SortedRun(files))


def runs(*spec: tuple[int, int]) -> list[LevelSortedRun]:
    """Runs from (level, size) pairs, as Java's level(level, size) lists."""
    return [run(level, size) for level, size in spec]


def level0(*sizes: int) -> list[LevelSortedRun]:
    """Level-0 runs of the given sizes, as Java's level0(...)."""
    return [run(0, s) for s in sizes]


def sizes(unit: CompactUnit | None) -> list[int] | None:
    """File sizes of a unit, the shape Java's tests assert on."""
    return None if unit is None else [f.file_size for f in unit.files]


def of_testing(max_size_amp: int, size_ratio: int, trigger: int) -> UniversalCompaction:
    """Java's UniversalCompactionTest.ofTesting."""
    return UniversalCompaction(max_size_amp, size_ratio, trigger)


class FakeClock:
    """A settable millisecond clock, standing in for System.currentTimeMillis."""

    def __init__(self, now: int = 0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Run in UTC so local wall-clock creation times equal epoch millis."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


# --- create_unit -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("run_levels", "max_level", "run_count", "output_level", "picked"),
    [
        # Java testOutputLevel
        ([0, 0, 1, 3, 4], 5, 1, 1, 3),
        ([0, 0, 1, 3, 4], 5, 2, 1, 3),
        ([0, 0, 1, 3, 4], 5, 3, 2, 3),
        ([0, 0, 1, 3, 4], 5, 4, 3, 4),
        ([0, 0, 1, 3, 4], 5, 5, 5, 5),
        # walking past level-0 runs takes the first non-L0 run and its level
        ([0, 0, 0, 2, 4], 4, 1, 2, 4),
        # walking reaches the end: everything, so the max level
        ([0, 0, 0, 2], 4, 1, 4, 4),
        ([0, 0, 0], 4, 2, 4, 3),
        # next run at level 1 would give level 0: walk on to it
        ([0, 1, 3], 3, 1, 1, 2),
        # all runs picked -> max level even when the last run sits lower
        ([0, 1, 2], 5, 3, 5, 3),
    ],
)
def test_create_unit(
    run_levels: list[int], max_level: int, run_count: int, output_level: int, picked: int
) -> None:
    rs = [run(level) for level in run_levels]
    unit = of_testing(25, 1, 3).create_unit(rs, max_level, run_count)
    assert unit.output_level == output_level
    assert unit.files == [f for r in rs[:picked] for f in r.run.files]
    assert not unit.file_rewrite


# --- pick ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "num_levels", "spec", "expected_sizes", "output_level"),
    [
        pytest.param(
            (25, 1, 3), 3, [(0, 1), (0, 2), (0, 3), (0, 3)], [1, 2, 3, 3], 2, id="size-amp"
        ),
        pytest.param(
            (25, 1, 3), 4, [(0, 1), (1, 1), (2, 1), (3, 50)], [1, 1, 1], 2, id="size-ratio"
        ),
        pytest.param((25, 1, 3), 4, [(0, 1), (1, 2), (2, 3), (3, 50)], [1, 2, 3], 2, id="file-num"),
        pytest.param(
            (25, 1, 3), 3, [(0, 1), (0, 1), (1, 1), (2, 50)], [1, 1, 1], 1, id="no-output-l0"
        ),
        pytest.param(
            (25, 1, 3), 3, [(0, 1), (0, 2), (1, 3), (2, 50)], [1, 2, 3], 1, id="no-output-l0-2"
        ),
        pytest.param(
            (200, 1, 3),
            3,
            [(0, 10), (0, 20), (1, 97), (2, 100)],
            [10, 20, 97, 100],
            2,
            id="file-num-considers-level-2",
        ),
        pytest.param(
            (200, 1, 5),
            6,
            [(0, 1), (0, 1), (0, 1), (0, 1024), (0, 1024 * 1024)],
            [1, 1, 1, 1024, 1024 * 1024],
            5,
            id="extreme-no-output-l0",
        ),
        pytest.param(
            (200, 1, 5),
            5,
            [(0, 1), (0, 1), (0, 1), (2, 100), (4, 1000)],
            [1, 1, 1],
            1,
            id="seeds-worked-example",
        ),
        pytest.param(
            (200, 1, 3), 6, [(0, 1), (4, 199), (5, 100)], None, None, id="size-amp-at-threshold"
        ),
        pytest.param(
            (200, 1, 3),
            6,
            [(0, 2), (4, 199), (5, 100)],
            [2, 199, 100],
            5,
            id="size-amp-just-over",
        ),
        pytest.param(
            (200, 1, 3),
            4,
            [(0, 1), (0, 1), (1, 100), (2, 1000)],
            [1, 1, 100],
            1,
            id="ratio-absorbs-level-1-once-triggered",
        ),
        pytest.param(
            (200, 1, 3),
            4,
            [(0, 1), (0, 1), (0, 50), (3, 1000)],
            [1, 1, 50],
            2,
            id="ratio-absorbs-level-0-once-triggered",
        ),
        pytest.param(
            (200, 1, 3),
            4,
            [(0, 1), (0, 100), (1, 100), (3, 1000)],
            [1, 100, 100],
            2,
            id="file-num-then-ratio-absorbs-level-1",
        ),
        pytest.param((200, 1, 4), 4, [(0, 1), (0, 100), (3, 1000)], None, None, id="below-trigger"),
        pytest.param((200, 1, 1), 3, [(2, 10)], None, None, id="single-max-level-run"),
        pytest.param((200, 1, 1), 3, [], None, None, id="no-runs"),
    ],
)
def test_pick(
    params: tuple[int, int, int],
    num_levels: int,
    spec: list[tuple[int, int]],
    expected_sizes: list[int] | None,
    output_level: int | None,
) -> None:
    unit = of_testing(*params).pick(num_levels, runs(*spec))
    assert sizes(unit) == expected_sizes
    if unit is not None and output_level is not None:
        assert unit.output_level == output_level


@pytest.mark.parametrize(
    ("candidate", "earliest", "max_amp", "picked"),
    [
        (200, 100, 200, False),  # exactly at the threshold: 200% is allowed
        (201, 100, 200, True),
        (25, 100, 25, False),
        (26, 100, 25, True),
        (0, 0, 0, False),
        (1, 0, 0, True),
    ],
)
def test_pick_for_size_amp_threshold(
    candidate: int, earliest: int, max_amp: int, picked: bool
) -> None:
    rs = [run(0, candidate), run(3, earliest)]
    unit = UniversalCompaction(max_amp, 1, 2).pick_for_size_amp(3, rs)
    assert (unit is not None) == picked
    if unit is not None:
        assert unit.output_level == 3
        assert unit.files == [rs[0].run.files[0], rs[1].run.files[0]]


def test_pick_for_size_amp_below_trigger() -> None:
    assert UniversalCompaction(0, 1, 3).pick_for_size_amp(3, [run(0, 100), run(2, 1)]) is None


def _append_and_pick_for_size_amp(compaction: UniversalCompaction, current: list[int]) -> list[int]:
    """Java's appendAndPickForSizeAmp: a new file of size 1 arrives, then maybe a full merge."""
    new = [1, *current]
    unit = compaction.pick_for_size_amp(3, level0(*new))
    return new if unit is None else [sum(sizes(unit) or [])]


def test_size_amplification_sequence() -> None:
    compaction = of_testing(25, 0, 1)
    expected = [
        [2], [3], [4], [1, 4], [6], [1, 6], [8], [1, 8], [1, 1, 8], [11], [1, 11],
        [1, 1, 11], [14], [1, 14], [1, 1, 14], [1, 1, 1, 14], [18],
    ]  # fmt: skip
    current = [1]
    for step in expected:
        current = _append_and_pick_for_size_amp(compaction, current)
        assert current == step


def _pick_for_size_ratio(compaction: UniversalCompaction, current: list[int]) -> list[int]:
    """Java's pickForSizeRatio helper: run i sits at level i; merged runs become one."""
    rs = [run(i, s) for i, s in enumerate(current)]
    unit = compaction.pick_for_size_ratio(len(current), rs)
    if unit is None:
        return current
    picked = sizes(unit) or []
    rest = list(current)
    for s in picked:
        rest.remove(s)
    return [sum(picked), *rest]


def test_size_ratio_sequence() -> None:
    compaction = of_testing(25, 1, 5)
    expected = [
        [5], [1, 5], [1, 1, 5], [1, 1, 1, 5], [4, 5], [1, 4, 5], [1, 1, 4, 5], [3, 4, 5],
        [1, 3, 4, 5], [2, 3, 4, 5], [1, 2, 3, 4, 5], [16], [1, 16], [1, 1, 16],
        [1, 1, 1, 16], [4, 16], [1, 4, 16], [1, 1, 4, 16], [3, 4, 16], [1, 3, 4, 16],
        [2, 3, 4, 16], [1, 2, 3, 4, 16], [11, 16],
    ]  # fmt: skip
    current = [1, 1, 1, 1]
    for step in expected:
        current = _pick_for_size_ratio(compaction, [1, *current])
        assert current == step


@pytest.mark.parametrize(
    ("size_ratio", "expected"), [(10, [8, 9, 10]), (20, [27])], ids=["ratio-10", "ratio-20"]
)
def test_size_ratio_threshold(size_ratio: int, expected: list[int]) -> None:
    assert _pick_for_size_ratio(of_testing(25, size_ratio, 2), [8, 9, 10]) == expected


def test_pick_for_size_ratio_below_trigger_two_arg_form() -> None:
    compaction = of_testing(25, 100, 3)
    assert compaction.pick_for_size_ratio(3, level0(1, 1)) is None
    unit = compaction.pick_for_size_ratio(3, level0(1, 1), 1)
    assert sizes(unit) == [1, 1]


def test_pick_for_size_ratio_untriggered_single_candidate_is_none() -> None:
    assert of_testing(25, 1, 1).pick_for_size_ratio(3, [run(0, 1), run(1, 10)], 1) is None


def test_pick_for_size_ratio_force_picks_a_single_candidate() -> None:
    unit = of_testing(25, 1, 1).pick_for_size_ratio(3, [run(0, 1), run(2, 10)], 1, True)
    assert sizes(unit) == [1]
    assert unit is not None and unit.output_level == 1


def test_size_ratio_compares_in_double_precision() -> None:
    # Java multiplies and compares as doubles: 2**53 + 1 rounds to 2**53, so it is "not bigger"
    big = 2**53
    unit = of_testing(1000, 0, 2).pick_for_size_ratio(4, [run(0, big), run(1, big + 1)])
    assert sizes(unit) == [big, big + 1]


# --- off-peak hours -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("start", "end"),
    [(-1, -1), (5, 5), (2, -1), (-1, 2)],
    ids=["unset", "same", "no-end", "no-start"],
)
def test_off_peak_hours_off(start: int, end: int) -> None:
    assert OffPeakHours.create(start, end, 10) is None


@pytest.mark.parametrize(
    ("start", "end", "hour", "ratio"),
    [
        (2, 8, 1, 0),
        (2, 8, 2, 10),
        (2, 8, 5, 10),
        (2, 8, 7, 10),
        (2, 8, 8, 0),
        (2, 8, 9, 0),
        (22, 6, 21, 0),
        (22, 6, 22, 10),
        (22, 6, 23, 10),
        (22, 6, 0, 10),
        (22, 6, 5, 10),
        (22, 6, 6, 0),
        (22, 6, 10, 0),
    ],
)
def test_off_peak_hours_ratio(start: int, end: int, hour: int, ratio: int) -> None:
    off_peak = OffPeakHours.create(start, end, 10)
    assert off_peak is not None
    assert off_peak.current_ratio(hour) == ratio


def test_off_peak_hours_from_options() -> None:
    options = CompactionOptions.from_table_options(
        {
            "compaction.offpeak.start.hour": "22",
            "compaction.offpeak.end.hour": "6",
            "compaction.offpeak-ratio": "10",
        }
    )
    off_peak = OffPeakHours.from_options(options)
    assert off_peak is not None
    assert off_peak.current_ratio(23) == 10
    assert off_peak.current_ratio(7) == 0
    assert OffPeakHours.from_options(CompactionOptions()) is None
    same = {"compaction.offpeak.start.hour": "5", "compaction.offpeak.end.hour": "5"}
    assert OffPeakHours.from_options(CompactionOptions.from_table_options(same)) is None


@pytest.mark.parametrize(("hour", "expected"), [(23, [27]), (12, [8, 9, 10])])
def test_off_peak_ratio_widens_size_ratio(hour: int, expected: list[int]) -> None:
    compaction = UniversalCompaction(
        25, 10, 2, off_peak_hours=OffPeakHours.create(22, 6, 10), hour_of_day=lambda: hour
    )
    assert _pick_for_size_ratio(compaction, [8, 9, 10]) == expected


# --- early full compaction -----------------------------------------------------------------


def test_early_full_compaction_from_options() -> None:
    assert EarlyFullCompaction.from_options(CompactionOptions()) is None
    for opts in (
        {"compaction.optimization-interval": "1 h"},
        {"compaction.total-size-threshold": "100 mb"},
        {"compaction.incremental-size-threshold": "100 mb"},
        {"compaction.optimization-interval": "1 h", "compaction.total-size-threshold": "100 mb"},
    ):
        trigger = EarlyFullCompaction.from_options(CompactionOptions.from_table_options(opts))
        assert trigger is not None
    trigger = EarlyFullCompaction.from_options(
        CompactionOptions.from_table_options({"compaction.optimization-interval": "1 h"}),
        1234567890,
    )
    assert trigger is not None
    assert trigger.full_compaction_interval_ms == 3_600_000
    assert trigger.last_full_compaction_ms == 1234567890


def test_early_full_single_run_and_no_options() -> None:
    assert EarlyFullCompaction(1000, 1000, None).try_full_compact(5, level0(100)) is None
    assert EarlyFullCompaction().try_full_compact(5, level0(100, 200)) is None


def _full(trigger: EarlyFullCompaction, rs: Sequence[LevelSortedRun]) -> int | None:
    """Output level of the early full unit, None when it does not fire."""
    unit = trigger.try_full_compact(5, rs)
    if unit is None:
        return None
    assert unit.files == [f for r in rs for f in r.run.files]
    return unit.output_level


def test_early_full_interval() -> None:
    clock = FakeClock(10_000)
    trigger = EarlyFullCompaction(1000, now_ms=clock)
    assert _full(trigger, level0(100, 200)) == 4
    clock.now += 500
    assert _full(trigger, level0(100, 200)) is None
    clock.now += 501
    assert _full(trigger, level0(100, 200)) == 4


def test_early_full_interval_seeded_recent_and_old() -> None:
    clock = FakeClock(10_000)
    recent = EarlyFullCompaction(1000, last_full_compaction_ms=9_500, now_ms=clock)
    assert _full(recent, level0(100, 200)) is None
    clock.now += 501
    assert _full(recent, level0(100, 200)) == 4
    old = EarlyFullCompaction(1000, last_full_compaction_ms=5_000, now_ms=FakeClock(10_000))
    assert _full(old, level0(100, 200)) == 4


def test_early_full_interval_boundary_is_strict() -> None:
    trigger = EarlyFullCompaction(1000, last_full_compaction_ms=0, now_ms=FakeClock(1000))
    assert _full(trigger, level0(1, 1)) is None


def test_early_full_total_size_threshold() -> None:
    trigger = EarlyFullCompaction(None, 1000, None)
    assert _full(trigger, level0(100, 200)) == 4
    assert _full(trigger, level0(500, 500)) is None
    assert _full(trigger, level0(500, 1000)) is None


def test_early_full_incremental_size_threshold() -> None:
    trigger = EarlyFullCompaction(None, None, 500)
    assert _full(trigger, level0(400, 200)) == 4
    assert _full(trigger, level0(100, 200)) is None
    assert _full(trigger, [run(0, 100), run(0, 300), run(4, 500)]) is None
    assert _full(trigger, [run(0, 100), run(0, 300), run(0, 300), run(4, 500)]) == 4


def test_early_full_interval_triggers_first() -> None:
    trigger = EarlyFullCompaction(1000, 500, None, now_ms=FakeClock(10_000))
    assert _full(trigger, level0(300, 300)) == 4


def test_early_full_threshold_when_interval_not_due() -> None:
    clock = FakeClock(10_000)
    trigger = EarlyFullCompaction(1000, 500, None, now_ms=clock)
    assert _full(trigger, level0(10, 20)) == 4
    clock.now += 500
    assert _full(trigger, level0(30, 30)) == 4
    assert _full(trigger, level0(300, 300)) is None


@pytest.mark.parametrize(
    ("total", "incremental", "second"),
    [(500, None, (300, 100)), (None, 500, (300, 300))],
    ids=["total-size", "incremental-size"],
)
def test_early_full_size_trigger_restarts_interval(
    total: int | None, incremental: int | None, second: tuple[int, int]
) -> None:
    clock = FakeClock(10_000)
    trigger = EarlyFullCompaction(1000, total, incremental, now_ms=clock)
    assert _full(trigger, level0(300, 300 if total else 100)) == 4
    clock.now += 100
    assert _full(trigger, level0(*second)) == 4
    assert trigger.last_full_compaction_ms == 10_100
    clock.now += 901
    assert _full(trigger, level0(300, 300 if total else 100)) is None


def test_universal_optimized_compaction_interval() -> None:
    clock = FakeClock(0)
    compaction = UniversalCompaction(100, 1, 3, EarlyFullCompaction(1000, now_ms=clock))
    three = [(0, 1), (1, 3), (2, 5)]
    assert sizes(compaction.pick(3, runs(*three))) == [1, 3, 5]
    clock.now = 1001
    assert sizes(compaction.pick(3, runs(*three))) == [1, 3, 5]
    assert compaction.pick(3, runs(*three)) is None
    clock.now = 1500
    assert sizes(compaction.pick(3, runs((0, 3), (1, 3), (2, 5)))) == [3, 3, 5]
    clock.now = 2001  # the size-amplification pick at 1500 restarted the interval
    assert compaction.pick(3, runs(*three)) is None


def test_universal_total_size_threshold() -> None:
    compaction = UniversalCompaction(100, 1, 3, EarlyFullCompaction(None, 10, None))
    assert sizes(compaction.pick(3, runs((0, 1), (1, 3), (2, 5)))) == [1, 3, 5]
    assert compaction.pick(3, runs((0, 2), (1, 6), (2, 10))) is None
    assert compaction.pick(3, [run(3, 5)]) is None


def test_full_create_unit_marks_full_compaction_done() -> None:
    clock = FakeClock(5_000)
    early = EarlyFullCompaction(1000, last_full_compaction_ms=4_500, now_ms=clock)
    compaction = UniversalCompaction(200, 1, 3, early)
    compaction.create_unit(level0(1, 1, 1), 4, 1)
    assert early.last_full_compaction_ms == 5_000
    clock.now = 6_000
    compaction.create_unit([run(0), run(1), run(3)], 4, 1)
    assert early.last_full_compaction_ms == 5_000


def test_size_amp_marks_full_compaction_done() -> None:
    clock = FakeClock(7_000)
    early = EarlyFullCompaction(10_000, last_full_compaction_ms=6_000, now_ms=clock)
    unit = UniversalCompaction(0, 1, 2, early).pick_for_size_amp(3, [run(0, 1), run(2, 1)])
    assert unit is not None
    assert early.last_full_compaction_ms == 7_000


# --- force up level 0 ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected_sizes", "output_level"),
    [
        ([(0, 1), (0, 1)], [1, 1], 2),
        ([(0, 1), (1, 10)], [1, 10], 2),
        ([(0, 1), (0, 5), (2, 10)], [1, 5], 1),
        ([(2, 10)], None, None),
        ([(0, 1), (0, 5), (0, 10), (0, 20)], [1, 5, 10, 20], 2),
        ([(0, 1), (1, 99), (2, 100)], [1, 99, 100], 2),
        ([(0, 1), (1, 99), (2, 102)], [1, 99], 1),
        ([], None, None),
    ],
)
def test_force_up_level_0(
    spec: list[tuple[int, int]], expected_sizes: list[int] | None, output_level: int | None
) -> None:
    unit = ForceUpLevel0Compaction(of_testing(200, 1, 5), None).pick(3, runs(*spec))
    assert sizes(unit) == expected_sizes
    assert (unit and unit.output_level) == output_level


@pytest.mark.parametrize(
    ("spec", "expected_sizes", "output_level"),
    [
        ([(0, 1), (0, 2), (0, 2), (0, 2)], [1, 2, 2, 2], 2),
        ([(0, 1), (1, 2), (2, 2)], [1, 2, 2], 2),
        ([(0, 1), (2, 2)], [1], 1),
    ],
    ids=["l0-to-max", "l0-force-pick", "l0-to-empty-level"],
)
def test_lookup_radical(
    spec: list[tuple[int, int]], expected_sizes: list[int], output_level: int
) -> None:
    unit = ForceUpLevel0Compaction(of_testing(25, 1, 3), None).pick(3, runs(*spec))
    assert sizes(unit) == expected_sizes
    assert unit is not None and unit.output_level == output_level


def test_force_pick_l0_every_max_interval() -> None:
    max_interval = 5
    compaction = ForceUpLevel0Compaction(UniversalCompaction(25, 1, 5), max_interval)
    for spec, expected_sizes, output_level in [
        ([(0, 1), (0, 2), (0, 2), (0, 2)], [1, 2, 2, 2], 2),
        ([(0, 2), (1, 2), (2, 2)], [2, 2, 2], 2),
        ([(0, 1), (2, 2)], [1], 1),
    ]:
        rs = runs(*spec)
        for _ in range(max_interval - 1):
            assert compaction.pick(3, rs) is None
        unit = compaction.pick(3, rs)
        assert sizes(unit) == expected_sizes
        assert unit is not None and unit.output_level == output_level


def test_force_up_level_0_counter_only_counts_fallbacks() -> None:
    compaction = ForceUpLevel0Compaction(of_testing(25, 1, 3), 2)
    assert compaction.pick(3, runs((0, 1), (2, 100))) is None  # counter 1
    assert compaction.pick(3, level0(1, 2, 3, 3)) is not None  # universal pick, no count
    assert compaction.pick(3, runs((0, 1), (2, 100))) is not None  # counter 2 -> fire


def test_force_pick_l0_without_level_0() -> None:
    compaction = of_testing(25, 1, 3)
    assert compaction.force_pick_l0(3, [run(1, 1), run(2, 2)]) is None
    assert compaction.force_pick_l0(3, []) is None


# --- full compaction -----------------------------------------------------------------------


def test_pick_full_compaction_no_runs() -> None:
    assert pick_full_compaction(3, []) is None


def test_pick_full_compaction_all_runs_to_max_level() -> None:
    rs = [run(0, 1), run(1, 2), run(3, 4)]
    unit = pick_full_compaction(5, rs)
    assert unit == CompactUnit(4, [f for r in rs for f in r.run.files])


def test_pick_full_compaction_single_run_below_max_level() -> None:
    rs = [run(2, 10, 20)]
    assert pick_full_compaction(4, rs) == CompactUnit(3, list(rs[0].run.files))


def test_pick_full_compaction_single_max_level_run() -> None:
    rs = [run(3, 10, 20, 30)]
    a, b, c = rs[0].run.files
    assert pick_full_compaction(4, rs) is None
    assert pick_full_compaction(4, rs, force_rewrite_all_files=True) == CompactUnit(
        3, [a, b, c], file_rewrite=True
    )
    assert pick_full_compaction(4, rs, dv_files={b.file_name}) == CompactUnit(3, [b], True)
    assert pick_full_compaction(4, rs, dv_files=set()) is None
    expired = pick_full_compaction(4, rs, record_level_expire=lambda f: f.file_size >= 20)
    assert expired == CompactUnit(3, [b, c], True)
    assert pick_full_compaction(4, rs, record_level_expire=True) == CompactUnit(3, [a, b, c], True)
    mixed = pick_full_compaction(
        4, rs, record_level_expire=lambda f: f is c, dv_files={a.file_name}
    )
    assert mixed == CompactUnit(3, [a, c], True)


# --- strategy selection --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "kind", "max_interval"),
    [
        ({}, "universal", None),
        ({"write-only": "true"}, None, None),
        ({"write-only": "true", "changelog-producer": "lookup"}, None, None),
        ({"changelog-producer": "lookup"}, "force", None),
        ({"changelog-producer": "input"}, "universal", None),
        ({"deletion-vectors.enabled": "true"}, "force", None),
        ({"merge-engine": "first-row"}, "force", None),
        ({"force-lookup": "true"}, "force", None),
        ({"changelog-producer": "lookup", "lookup-compact": "radical"}, "force", None),
        ({"changelog-producer": "lookup", "lookup-compact": "gentle"}, "force", 10),
        (
            {
                "changelog-producer": "lookup",
                "lookup-compact": "gentle",
                "lookup-compact.max-interval": "3",
            },
            "force",
            5,
        ),
        (
            {
                "deletion-vectors.enabled": "true",
                "lookup-compact": "gentle",
                "lookup-compact.max-interval": "7",
            },
            "force",
            7,
        ),
        (
            {
                "force-lookup": "true",
                "lookup-compact": "gentle",
                "num-sorted-run.compaction-trigger": "2",
            },
            "force",
            4,
        ),
        ({"lookup-compact": "gentle"}, "universal", None),
        ({"compaction.force-up-level-0": "true"}, "force", None),
        (
            {"compaction.force-up-level-0": "true", "lookup-compact": "gentle"},
            "force",
            None,
        ),
        (
            {
                "compaction.force-up-level-0": "true",
                "merge-engine": "first-row",
                "lookup-compact": "gentle",
            },
            "force",
            10,
        ),
    ],
)
def test_strategy_from_options(
    table: dict[str, str], kind: str | None, max_interval: int | None
) -> None:
    strategy = strategy_from_options(CompactionOptions.from_table_options(table))
    if kind is None:
        assert strategy is None
    elif kind == "universal":
        assert isinstance(strategy, UniversalCompaction)
    else:
        assert isinstance(strategy, ForceUpLevel0Compaction)
        assert strategy.max_compact_interval == max_interval


def test_strategy_from_options_carries_universal_parameters() -> None:
    strategy = strategy_from_options(
        CompactionOptions.from_table_options(
            {
                "compaction.max-size-amplification-percent": "150",
                "compaction.size-ratio": "3",
                "num-sorted-run.compaction-trigger": "7",
                "compaction.offpeak.start.hour": "1",
                "compaction.offpeak.end.hour": "4",
                "compaction.offpeak-ratio": "9",
                "compaction.total-size-threshold": "1 kb",
            }
        )
    )
    assert isinstance(strategy, UniversalCompaction)
    assert (strategy.max_size_amp, strategy.size_ratio) == (150, 3)
    assert strategy.num_run_compaction_trigger == 7
    assert strategy.off_peak_hours is not None
    assert strategy.off_peak_hours.current_ratio(2) == 9
    assert strategy.early_full_compaction is not None
    assert strategy.early_full_compaction.total_size_threshold == 1024
    defaults = strategy_from_options(CompactionOptions())
    assert isinstance(defaults, UniversalCompaction)
    assert (defaults.max_size_amp, defaults.size_ratio) == (200, 1)
    assert defaults.num_run_compaction_trigger == 5
    assert defaults.early_full_compaction is None
    assert defaults.off_peak_hours is None


@pytest.mark.usefixtures("utc")
def test_strategy_seeds_last_full_compaction_from_max_level_files() -> None:
    options = CompactionOptions.from_table_options(
        {"compaction.optimization-interval": "10 s", "compaction.force-up-level-0": "true"}
    )
    files = [
        data_file("a", level=5, creation_ms=5_000),
        data_file("b", level=5, creation_ms=9_000),
        data_file("c", level=2, creation_ms=20_000),
    ]
    clock = FakeClock(15_000)
    strategy = strategy_from_options(options, files, now_ms=clock)
    assert isinstance(strategy, ForceUpLevel0Compaction)
    early = strategy.universal.early_full_compaction
    assert early is not None
    assert early.last_full_compaction_ms == 9_000
    two = [run(0, 1), run(5, 1000)]
    assert early.try_full_compact(6, two) is None
    clock.now = 19_001
    assert early.try_full_compact(6, two) is not None


@pytest.mark.usefixtures("utc")
def test_estimate_last_full_compaction() -> None:
    files = [data_file("a", level=3, creation_ms=7), data_file("b", level=1, creation_ms=99)]
    assert estimate_last_full_compaction_ms(files, 4) == 7
    assert estimate_last_full_compaction_ms(files, 5) is None
    assert estimate_last_full_compaction_ms([], 4) is None
    assert estimate_last_full_compaction_ms([data_file("z", level=3, creation_ms=0)], 4) == 0


def test_creation_time_is_local_wall_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "CST-8")  # POSIX: eight hours east of UTC, no DST
    time.tzset()
    try:
        f = data_file("a", level=1)
        f.creation_time = Timestamp.from_epoch_millis(86_400_000 + 8 * 3_600_000)
        assert creation_epoch_millis(f) == 86_400_000
        f.creation_time = None
        assert creation_epoch_millis(f) is None
    finally:
        monkeypatch.undo()
        time.tzset()


# --- trigger -------------------------------------------------------------------------------


class FixedStrategy:
    """A strategy that always answers with one prepared unit."""

    def __init__(self, unit: CompactUnit | None) -> None:
        self.unit = unit

    def pick(self, num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        return self.unit


@pytest.mark.parametrize(
    ("files", "output_level", "kept"),
    [
        ([], 1, False),
        ([("a", 2)], 2, False),
        ([("a", 1)], 2, True),
        ([("a", 2), ("b", 2)], 2, True),
        ([("a", 0)], 0, False),
    ],
)
def test_trigger_filters_useless_units(
    files: list[tuple[str, int]], output_level: int, kept: bool
) -> None:
    unit = CompactUnit(output_level, [data_file(n, level=lv) for n, lv in files])
    picked = trigger_compaction([], 3, FixedStrategy(unit), False, CompactionOptions())
    assert picked == (unit if kept else None)


def test_trigger_without_pick() -> None:
    assert trigger_compaction([run(0)], 3, FixedStrategy(None), False, CompactionOptions()) is None


def test_trigger_normal_uses_strategy() -> None:
    rs = runs((0, 1), (0, 2), (0, 3), (0, 3))
    unit = trigger_compaction(rs, 3, of_testing(25, 1, 3), False, CompactionOptions())
    assert sizes(unit) == [1, 2, 3, 3]


def test_trigger_full_ignores_strategy_and_filter() -> None:
    rs = [run(2, 5)]
    never = FixedStrategy(None)
    assert trigger_compaction(rs, 3, never, True, CompactionOptions()) is None
    forced = CompactionOptions.from_table_options({"compaction.force-rewrite-all-files": "true"})
    unit = trigger_compaction(rs, 3, never, True, forced)
    assert unit == CompactUnit(2, list(rs[0].run.files), True)
    a = rs[0].run.files[0]
    with_dv = trigger_compaction(rs, 3, never, True, CompactionOptions(), dv_files={a.file_name})
    assert with_dv == CompactUnit(2, [a], True)
    expired = trigger_compaction(rs, 3, never, True, CompactionOptions(), record_level_expire=True)
    assert expired == CompactUnit(2, [a], True)
    lower = [run(1, 5)]
    assert trigger_compaction(lower, 3, never, True, CompactionOptions()) == CompactUnit(
        2, list(lower[0].run.files)
    )


def test_trigger_write_only() -> None:
    assert trigger_compaction(level0(1, 2, 3), 3, None, False, CompactionOptions()) is None
    with pytest.raises(InvalidOptionError, match="write-only"):
        trigger_compaction(level0(1, 2, 3), 3, None, True, CompactionOptions())


@pytest.mark.parametrize(
    ("output_level", "highest", "dv", "expected"),
    [
        (0, 0, False, False),
        (0, 3, True, False),
        (1, 3, False, False),
        (1, 3, True, True),
        (3, 3, False, True),
        (4, 3, False, True),
        (2, -1, False, True),
        (5, 5, True, True),
    ],
)
def test_drop_delete(output_level: int, highest: int, dv: bool, expected: bool) -> None:
    assert drop_delete(output_level, highest, dv) is expected


# --- properties ----------------------------------------------------------------------------


@st.composite
def bucket_runs(draw: st.DrawFn) -> tuple[int, list[LevelSortedRun]]:
    """A level layout as Levels produces it: L0 runs first, then ascending levels >= 1."""
    num_levels = draw(st.integers(2, 8))
    sizes_ = st.integers(0, 10**6)
    l0 = [run(0, draw(sizes_)) for _ in range(draw(st.integers(0, 7)))]
    upper_levels = draw(st.sets(st.integers(1, num_levels - 1)))
    upper = [
        run(level, *draw(st.lists(sizes_, min_size=1, max_size=3)))
        for level in sorted(upper_levels)
    ]
    return num_levels, l0 + upper


universal_params = st.tuples(st.integers(0, 400), st.integers(0, 10), st.integers(1, 7))


def _sorted_run_count(level_of_runs: list[int]) -> int:
    """Level-0 runs count one each; every other non-empty level is one run."""
    return level_of_runs.count(0) + len({lv for lv in level_of_runs if lv > 0})


@settings(max_examples=400, deadline=None)
@given(layout=bucket_runs(), params=universal_params, force=st.booleans())
def test_picked_unit_is_a_prefix_and_reduces_runs(
    layout: tuple[int, list[LevelSortedRun]], params: tuple[int, int, int], force: bool
) -> None:
    num_levels, rs = layout
    universal = of_testing(*params)
    strategy = ForceUpLevel0Compaction(universal, None) if force else universal
    unit = strategy.pick(num_levels, rs)
    if unit is None:
        return
    prefix = next(
        (
            k
            for k in range(1, len(rs) + 1)
            if [f for r in rs[:k] for f in r.run.files] == unit.files
        ),
        None,
    )
    assert prefix is not None, "unit files are not the files of a prefix of the runs"
    assert 0 < unit.output_level <= num_levels - 1
    assert all(unit.output_level >= r.level for r in rs[:prefix])
    after = [r.level for r in rs[prefix:]] + [unit.output_level]
    assert _sorted_run_count(after) <= len(rs)


@settings(max_examples=300, deadline=None)
@given(layout=bucket_runs(), params=universal_params)
def test_no_pick_below_trigger(
    layout: tuple[int, list[LevelSortedRun]], params: tuple[int, int, int]
) -> None:
    num_levels, rs = layout
    universal = of_testing(*params)
    if len(rs) < universal.num_run_compaction_trigger:
        assert universal.pick(num_levels, rs) is None
