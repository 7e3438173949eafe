"""The read-only commands that judge tables: health, doctor, tables."""

from __future__ import annotations

from typing import Any

import click

from dagster_paimon.cli.command import command, operation_command
from dagster_paimon.cli.shared import Shared


@operation_command(
    "health",
    "dagster-paimon health --warehouse /data/wh --table db.orders --partition dt=2024-01-01",
)
def health(shared: Shared, **given: Any) -> None:
    """Health of every bucket, optionally of one partition; reads only. A primary-key table
    ("kind": "primary-key") reports its LSM trees: files, level-0 files, sorted runs, size
    amplification. An append table ("kind": "append") reports files, small files (below
    target-file-size x compaction.small-file-ratio), bytes, rows and rows deletion vectors
    delete. Either kind names, under "conflicting_compactors" (null when none), other writers
    whose COMPACT snapshots are among the table's newest while it is not write-only."""
    table = shared.paimon_table()
    shared.output.result(table.health(**given), table.option_findings())


@operation_command(
    "partitions-to-compact", "dagster-paimon partitions-to-compact --table db.orders --json"
)
def partitions_to_compact(shared: Shared, **given: Any) -> None:
    """List the partitions that need compaction now, as the Dagster sensors judge them: a
    bucket past the sorted-run trigger or the size-amplification limit (append tables: enough
    small files); reads only."""
    shared.output.result(shared.paimon_table().partitions_to_compact(**given))


@operation_command("doctor", "dagster-paimon doctor --table db.orders --rollback-unreadable")
def doctor(shared: Shared, **given: Any) -> None:
    """Check that every snapshot and tag of the table can be read. Exit 0 when it is healthy
    or was repaired, 1 when it is unhealthy and not repaired (the report is still printed) or
    a rollback is refused."""
    from dagster_paimon.errors import TableUnhealthyError

    table = shared.paimon_table()
    result = table.doctor(**given)
    shared.output.result(result, table.option_findings())
    if not result.healthy:
        raise TableUnhealthyError("; ".join(filter(None, [result.verdict(), result.repair()])))


@command(
    "tables",
    "list tables (primary-key and append) with a health summary",
    "dagster-paimon tables --warehouse s3://bucket/wh --match 'shop.*' --exclude '*.tmp_*'",
    needs_table=False,
)
@click.option("--database", metavar="DB", help="only tables of this database")
@click.option(
    "--match",
    "include",
    metavar="PATTERN",
    multiple=True,
    help="only tables whose DB.TABLE matches this shell pattern (repeatable)",
)
@click.option(
    "--exclude", metavar="PATTERN", multiple=True, help="leave out matching tables (repeatable)"
)
def tables(
    shared: Shared, database: str | None, include: tuple[str, ...], exclude: tuple[str, ...]
) -> None:
    """List the tables of the warehouse, one line each: snapshot, buckets, files, bytes, and for
    primary-key tables level-0 files, the largest number of sorted runs and size amplification
    of any bucket; for append tables (no primary key, listed after them) small files and rows
    deleted by deletion vectors. Each JSON row's "kind" is "primary-key" or "append".
    Directories that are not Paimon tables are listed as skipped, with why. A table whose
    health cannot be read is listed with its error and the command exits 1. --match or
    --database matching no table is an input error (exit 2); a warehouse without any lists
    nothing."""
    from dagster_paimon.overview import warehouse_overview

    found = warehouse_overview(
        shared.warehouse,
        shared.catalog_options(),
        database=database,
        include=include,
        exclude=exclude,
    )
    shared.output.tables(found.rows)
    found.check_readable()
