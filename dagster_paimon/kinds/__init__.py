"""Table kinds: primary-key tables (LSM trees) and append tables behind one protocol, resolved
once per table from its primary keys; table-wide health and compaction go through it.

What adapters (CLI, Dagster) and PaimonTable use is exported here.
"""

from dagster_paimon.kinds.append import APPEND_KIND
from dagster_paimon.kinds.compact import compact_open_table, plan_compaction
from dagster_paimon.kinds.health import (
    BucketHealth,
    HealthTotals,
    PartitionsToCompact,
    TableHealth,
)
from dagster_paimon.kinds.kind import Assessment, KindOptions, PartitionKey, TableKind
from dagster_paimon.kinds.primary_key import PRIMARY_KEY_KIND, assess_lsm_health
from dagster_paimon.kinds.resolve import (
    health_of,
    kind_for_keys,
    kind_of,
    table_assessment,
    table_health,
    table_partitions_to_compact,
)

__all__ = [
    "APPEND_KIND",
    "PRIMARY_KEY_KIND",
    "Assessment",
    "BucketHealth",
    "HealthTotals",
    "KindOptions",
    "PartitionKey",
    "PartitionsToCompact",
    "TableHealth",
    "TableKind",
    "assess_lsm_health",
    "compact_open_table",
    "health_of",
    "kind_for_keys",
    "kind_of",
    "plan_compaction",
    "table_assessment",
    "table_health",
    "table_partitions_to_compact",
]
