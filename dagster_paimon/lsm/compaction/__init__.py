"""Compaction: strategies, task plans, task execution, executors and the table-wide run.

What adapters (CLI, Dagster, Spark) and PaimonTable use is exported here; the engine itself
never imports it. A whole table is compacted through its kind (dagster_paimon.kinds).
"""

from dagster_paimon.lsm.compaction.append_plan import AppendTask
from dagster_paimon.lsm.compaction.compact import (
    CompactionPlan,
    CompactionResult,
    execute_compaction,
)
from dagster_paimon.lsm.compaction.executor import (
    COMPACTION,
    LocalExecutor,
    TaskExecutor,
    Work,
)
from dagster_paimon.lsm.compaction.plan import TaskPlan
from dagster_paimon.lsm.compaction.rescale import (
    RescalePlan,
    RescaleResult,
    execute_rescale,
    plan_rescale,
    rescale_open_table,
)
from dagster_paimon.lsm.compaction.task import CompactResult

__all__ = [
    "COMPACTION",
    "AppendTask",
    "CompactResult",
    "CompactionPlan",
    "CompactionResult",
    "LocalExecutor",
    "RescalePlan",
    "RescaleResult",
    "TaskExecutor",
    "TaskPlan",
    "Work",
    "execute_compaction",
    "execute_rescale",
    "plan_rescale",
    "rescale_open_table",
]
