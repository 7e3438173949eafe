"""The ingest command: files written into level 0 with Spark."""

from __future__ import annotations

import os

import click

from dagster_paimon.cli.command import command
from dagster_paimon.cli.session import check_spark_where, spark_flags, starting_session
from dagster_paimon.cli.shared import Shared


@command(
    "ingest",
    "write files into level 0 with Spark",
    "dagster-paimon ingest --table db.orders --source s3://bucket/in/2024-01-01/ --format parquet",
)
@click.option("--source", required=True, metavar="PATH", help="file or directory to ingest")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["parquet", "csv", "json"]),
    default="parquet",
    show_default=True,
    help="format of the source files (csv with a header)",
)
@click.option(
    "--mode",
    type=click.Choice(["append", "overwrite"]),
    default="append",
    show_default=True,
    help="append, or overwrite the partitions the data holds",
)
@spark_flags
def ingest(
    shared: Shared, source: str, fmt: str, mode: str, spark_master: str, spark_remote: str | None
) -> None:
    """Ingest parquet, CSV or JSON-lines files into level 0 with Spark: one APPEND (or
    OVERWRITE) snapshot."""
    check_spark_where(spark_master, spark_remote)
    if "://" not in source and not os.path.exists(source):
        raise click.BadParameter(f"{source!r} does not exist", param_hint="'--source'")
    from dagster_paimon.lsm.write.layout import check_writable

    # a refused table is refused before a JVM is started for it
    check_writable(shared.open_table(), overwrite=mode == "overwrite")
    with starting_session(shared, spark_master, spark_remote) as pending:
        from dagster_paimon.spark.ingest import ingest_files

        report = ingest_files(
            pending.session(),
            shared.warehouse,
            shared.identifier,
            source,
            fmt=fmt,
            mode=mode,
            catalog_options=shared.catalog_options(),
        )
    shared.output.result(report)
