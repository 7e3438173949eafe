"""Which kind a table is, resolved once from its primary keys, and the reports that need it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dagster_paimon.format.schema import TableSchema
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.kinds.append import APPEND_KIND
from dagster_paimon.kinds.health import PartitionsToCompact, TableHealth
from dagster_paimon.kinds.kind import Assessment, TableKind
from dagster_paimon.kinds.primary_key import PRIMARY_KEY_KIND
from dagster_paimon.lsm.model.compactors import ConflictingCompactors, conflicting_compactors
from dagster_paimon.lsm.model.levels import TableLevels, read_levels
from dagster_paimon.table import table_kind

KINDS: Mapping[str, TableKind] = {k.name: k for k in (PRIMARY_KEY_KIND, APPEND_KIND)}


def kind_for_keys(primary_keys: Sequence[str]) -> TableKind:
    """The kind of a table with these primary keys (none: an append table)."""
    return KINDS[table_kind(primary_keys)]


def kind_of(schema: TableSchema | None) -> TableKind:
    """The kind of a table with this schema; a table without one yet reads as primary-key."""
    return kind_for_keys(schema.primary_keys) if schema is not None else PRIMARY_KEY_KIND


def health_of(levels: TableLevels, compactors: ConflictingCompactors | None = None) -> TableHealth:
    """The health report of `levels` as the table's kind measures it."""
    return kind_of(levels.schema).health(levels, compactors)


def table_health(table: FileStoreTable, partition: Mapping[str, str] | None = None) -> TableHealth:
    """The latest snapshot's health report of the table's kind, naming writers that compact the
    table beside us (RECENT_SNAPSHOTS snapshot reads more than the levels, none for a
    write-only table).

    Raises what read_levels raises.
    """
    levels = read_levels(table, partition=partition)
    return health_of(levels, conflicting_compactors(table, levels.snapshot_id))


def table_assessment(table: FileStoreTable) -> Assessment:
    """The latest snapshot's health judged against the table's kind's own limits (what the
    Dagster check reports), naming writers that compact the table beside us."""
    levels = read_levels(table)
    return kind_of(levels.schema).assess(levels, conflicting_compactors(table, levels.snapshot_id))


def table_partitions_to_compact(
    table: FileStoreTable, *, trigger: int | None = None, max_amp: int | None = None
) -> PartitionsToCompact:
    """The partitions that need compaction now by the kind's triggers (the sensors' rule),
    each as {column: value}; ({},) for an unpartitioned table that needs it."""
    levels = read_levels(table)
    due = kind_of(levels.schema).partitions_to_compact(levels, trigger=trigger, max_amp=max_amp)
    return PartitionsToCompact(
        table=table.identifier.get_full_name(),
        snapshot_id=levels.snapshot_id,
        partitions=tuple(dict(p) for p in sorted(due)),
    )
