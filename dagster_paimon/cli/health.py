"""The read-only commands that judge tables: health, doctor, tables."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from dagster_paimon.cli.command import command
from dagster_paimon.cli.params import PARTITION
from dagster_paimon.cli.shared import Shared

if TYPE_CHECKING:
    from dagster_paimon.cli.output import Findings
    from dagster_paimon.format.table import FileStoreTable


@command(
    "health",
    "sorted runs and size amplification (append tables: small files) per bucket",
    "dagster-paimon health --warehouse /data/wh --table db.orders --partition dt=2024-01-01",
)
@PARTITION
def health(shared: Shared, partition: dict[str, str] | None) -> None:
    """Health of every bucket, optionally of one partition; reads only. A primary-key table
    ("kind": "primary-key") reports its LSM trees: files, level-0 files, sorted runs, size
    amplification. An append table ("kind": "append") reports files, small files (below
    target-file-size x compaction.small-file-ratio), bytes, rows and rows deletion vectors
    delete. Either kind names, under "conflicting_compactors" (null when none), other writers
    whose COMPACT snapshots are among the table's newest while it is not write-only."""
    from dagster_paimon.kinds import table_health

    table = shared.open_table()
    report = table_health(table, partition)
    shared.output.result(report, _findings(table))


def _findings(table: FileStoreTable) -> Findings:
    """What the option census finds in the table's options: the modes refused (JSON
    `unsupported`) and the keys it does not know (`unknown_options`)."""
    from dagster_paimon.unsupported import option_findings

    return option_findings(table.table_schema)


@command(
    "doctor",
    "find missing files; exit 1 if the table is unhealthy and not repaired",
    "dagster-paimon doctor --table db.orders --rollback-unreadable",
)
@click.option(
    "--rollback-unreadable",
    is_flag=True,
    help="delete the newest snapshots if they are unreadable and an older one is not; never "
    "deletes manifests or data files",
)
def doctor(shared: Shared, rollback_unreadable: bool) -> None:
    """Check that every snapshot and tag of the table can be read. Exit 0 when it is healthy
    or was repaired, 1 when it is unhealthy and not repaired (the report is still printed) or
    a rollback is refused."""
    from dagster_paimon.errors import TableUnhealthyError
    from dagster_paimon.maintenance.doctor import doctor

    table = shared.open_table()
    result = doctor(table, repair=rollback_unreadable)
    shared.output.result(result, _findings(table))
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
