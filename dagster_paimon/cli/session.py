"""Where a command's Spark work runs: the --spark-master / --spark-remote flags and the
session, its JVM booting while the command imports its engine and opens the table."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource

if TYPE_CHECKING:
    from dagster_paimon.cli.shared import Shared
    from dagster_paimon.paimon_table import Executor, PaimonTable
    from dagster_paimon.spark.session import PendingSession

F = TypeVar("F", bound=Callable[..., Any])
R = TypeVar("R")


def spark_flags(f: F) -> F:
    """Where Spark runs: a master URL, or a Spark Connect server (not both)."""
    f = click.option("--spark-remote", metavar="URL", help="Spark Connect URL (sc://host:port)")(f)
    return click.option(
        "--spark-master", metavar="URL", default="local[*]", show_default=True, help="master URL"
    )(f)


def check_spark_where(spark_master: str, spark_remote: str | None) -> None:
    """--spark-master and --spark-remote exclude each other."""
    ctx = click.get_current_context()
    if spark_remote and ctx.get_parameter_source("spark_master") == ParameterSource.COMMANDLINE:
        raise click.UsageError(
            "--spark-master and --spark-remote exclude each other: give one", ctx=ctx
        )


def starting_session(
    shared: Shared, spark_master: str, spark_remote: str | None
) -> AbstractContextManager[PendingSession]:
    """The session of --spark-remote or --spark-master, its JVM booting while the command
    imports and opens the table; Spark's own logging only with --verbose. Our commands run
    `mapInArrow` tasks, never the `paimon` data source, so it is not registered."""
    from dagster_paimon.spark.session import starting_session

    return starting_session(
        spark_master, remote=spark_remote, quiet=not shared.verbose, source=False
    )


def on_executor(
    shared: Shared,
    given: dict[str, Any],
    spark_master: str,
    spark_remote: str | None,
    run: Callable[[PaimonTable, Executor], R],
) -> R:
    """Run a rewriting operation on its declared executor: the Spark session's JVM boots while
    the table opens (a dry run starts none)."""
    check_spark_where(spark_master, spark_remote)
    spark = given["executor"] == "spark" and not given["dry_run"]
    pending_session = starting_session(shared, spark_master, spark_remote) if spark else None
    with pending_session or nullcontext() as pending:
        table = shared.paimon_table()
        if pending is None:
            return run(table, "local")
        from dagster_paimon.spark.executor import executor_named

        return run(table, executor_named("spark", pending.session))
