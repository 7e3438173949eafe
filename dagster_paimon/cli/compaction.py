"""The commands that rewrite data files: compact and rescale, locally or on Spark."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from dagster_paimon.cli.command import command
from dagster_paimon.cli.params import PARTITION, PartitionSpec
from dagster_paimon.cli.session import on_executor, spark_flags
from dagster_paimon.cli.shared import Shared

if TYPE_CHECKING:
    from dagster_paimon.format.table import FileStoreTable
    from dagster_paimon.lsm.compaction import TaskExecutor
    from dagster_paimon.table import TableRef

EXECUTOR = click.Choice(["local", "spark"])


@command(
    "compact",
    "universal (or full) compaction of buckets",
    "dagster-paimon compact --table db.orders --full --dry-run --json",
)
@PARTITION
@click.option("--full", is_flag=True, help="compact every bucket fully")
@click.option("--dry-run", is_flag=True, help="print the plan, write nothing")
@click.option(
    "--executor",
    type=EXECUTOR,
    default="local",
    show_default=True,
    help="where rewrite tasks run",
)
@spark_flags
def compact(
    shared: Shared,
    partition: dict[str, str] | None,
    full: bool,
    dry_run: bool,
    executor: str,
    spark_master: str,
    spark_remote: str | None,
) -> None:
    """Plan Paimon's universal compaction (or a full one) of every bucket (append tables:
    small-file compaction per bucket or per partition) and, unless --dry-run, run it and
    commit one COMPACT snapshot."""
    from dagster_paimon.kinds import compact_open_table

    def run(table: FileStoreTable, ref: TableRef, tasks: TaskExecutor | None) -> Any:
        return compact_open_table(
            table, ref, full=full, partition=partition, executor=tasks, dry_run=dry_run
        )

    shared.output.result(on_executor(shared, executor, dry_run, spark_master, spark_remote, run))


@command(
    "rescale",
    "rewrite a fixed-bucket table or some partitions into a new bucket count",
    "dagster-paimon rescale --table db.orders --bucket-num 8 "
    "--partition dt=2024-01-01 --partition dt=2024-01-02",
)
@click.option(
    "--bucket-num",
    type=click.IntRange(min=1),
    required=True,
    help="the new number of buckets",
)
@click.option(
    "--partition",
    "partitions",
    type=PartitionSpec(),
    multiple=True,
    help="only partitions matching this spec (repeatable: any of them); default every partition",
)
@click.option("--dry-run", is_flag=True, help="print the plan, write nothing")
@click.option(
    "--executor",
    type=EXECUTOR,
    default="local",
    show_default=True,
    help="where the source buckets are read and rewritten",
)
@spark_flags
def rescale(
    shared: Shared,
    bucket_num: int,
    partitions: tuple[dict[str, str], ...],
    dry_run: bool,
    executor: str,
    spark_master: str,
    spark_remote: str | None,
) -> None:
    """Rewrite the merged rows of the table (or of the partitions matching any --partition)
    into --bucket-num buckets and commit one OVERWRITE snapshot, as Paimon's rescale procedure
    does; it fails, nothing committed, if another writer changed those partitions meanwhile.
    A --partition matching no partition with data exits 2, nothing changed. The table's bucket
    option is not altered."""
    from dagster_paimon.lsm.compaction import rescale_open_table

    def run(table: FileStoreTable, ref: TableRef, tasks: TaskExecutor | None) -> Any:
        return rescale_open_table(
            table,
            ref,
            bucket_num=bucket_num,
            partitions=list(partitions) or None,
            executor=tasks,
            dry_run=dry_run,
        )

    shared.output.result(on_executor(shared, executor, dry_run, spark_master, spark_remote, run))
