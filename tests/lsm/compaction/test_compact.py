"""Table-wide planning over real pypaimon-written tables: what each bucket would compact."""

from __future__ import annotations

import pytest

from dagster_paimon.errors import InvalidOptionError
from dagster_paimon.kinds import health_of, plan_compaction
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.table import create_table
from tests.conftest import orders_batch, orders_spec, write_with_pypaimon


def table_with_commits(warehouse, commits, **options):
    table = create_table(warehouse, orders_spec(**options))
    for commit in range(commits):
        write_with_pypaimon(table, orders_batch(commit))
    return table


def test_below_the_trigger_nothing_is_planned(warehouse):
    table = table_with_commits(warehouse, 4)
    plan = plan_compaction(read_levels(table))
    assert plan.base_snapshot_id == 4
    assert plan.tasks == ()


def test_full_compaction_rewrites_every_bucket_into_the_max_level(warehouse):
    table = table_with_commits(warehouse, 4)
    plan = plan_compaction(read_levels(table), full=True)
    assert len(plan.tasks) == 4
    for task in plan.tasks:
        assert task.output_level == 5
        assert task.drop_delete
        assert len(task.rewritten_files) == 4
        assert task.upgrades == ()
    total = health_of(read_levels(table)).aggregate()["total_bytes"]
    assert sum(t.rewritten_bytes for t in plan.tasks) == total


def test_size_amplification_over_the_trigger_plans_a_full_merge(warehouse):
    # trigger 3: four similar L0 files -> size amp 300% > 200% -> all runs to max level 3
    table = table_with_commits(warehouse, 4, **{"num-sorted-run.compaction-trigger": "3"})
    plan = plan_compaction(read_levels(table, partition={"dt": "2024-01-01"}))
    assert [(t.partition.spec, t.output_level, len(t.files)) for t in plan.tasks] == [
        ({"dt": "2024-01-01"}, 3, 4),
        ({"dt": "2024-01-01"}, 3, 4),
    ]


def test_write_only_tables_are_still_compacted_by_a_dedicated_job(warehouse):
    table = table_with_commits(warehouse, 4, **{"write-only": "true"})
    assert len(plan_compaction(read_levels(table), full=True).tasks) == 4


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"deletion-vectors.enabled": "true", "changelog-producer": "full-compaction"},
            "supports deletion vectors only with the none, input or lookup",
        ),
        (
            {"merge-engine": "first-row", "deletion-vectors.enabled": "true"},
            "first-row merge engine never deletes",
        ),
        (
            {"merge-engine": "first-row", "changelog-producer": "full-compaction"},
            "only 'none' and 'lookup' with the first-row",
        ),
        ({"record-level.expire-time": "1 d"}, "record-level.expire-time"),
    ],
)
def test_option_combinations_paimon_rejects_or_we_do_not_compact_are_refused(
    warehouse, options, message
):
    table = create_table(warehouse, orders_spec(**options))
    with pytest.raises(InvalidOptionError, match=message):
        plan_compaction(read_levels(table))
