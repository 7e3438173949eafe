"""`dagster-paimon`: the operators' CLI over the library; JSON keys are a stable contract.

Every argument is parsed and checked by click before a command imports its engine or touches
the warehouse, so `--help`, `--version` and usage errors answer at once and a bad flag is
reported as itself, whatever else is wrong.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

import click
from click.core import ParameterSource

from dagster_paimon.arguments import parse_duration, parse_identifier, parse_partition_spec
from dagster_paimon.errors import (
    DagsterPaimonError,
    InputError,
    InternalError,
    InvalidArgumentError,
    TableNotFoundError,
    TransientStoreError,
    transient_cause,
)

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

    from dagster_paimon.lsm.compaction import TaskExecutor
    from dagster_paimon.spark.session import PendingSession
    from dagster_paimon.table import TableRef

PROG = "dagster-paimon"
WAREHOUSE_ENV = "PAIMON_WAREHOUSE"

EXIT_OK = 0
# the operation failed: a commit conflict, corrupt metadata, an unhealthy table, an abort
EXIT_FAILURE = 1
# usage or input: a flag, an argument, a table or warehouse that is not there; nothing changed
EXIT_USAGE = 2
# sysexits' EX_SOFTWARE: an exception dagster-paimon did not expect, a bug (traceback logged)
EXIT_SOFTWARE = 70
# sysexits' EX_TEMPFAIL: the store kept failing transiently; the same command can be run again
EXIT_TRANSIENT = 75
# Ctrl-C, as shells report SIGINT
EXIT_INTERRUPTED = 130

EXIT_CODES = f"""\b
Exit codes:
  {EXIT_OK}   success
  {EXIT_FAILURE}   the operation failed (commit conflict, corrupt metadata, unhealthy table,
      maintenance aborted, an I/O error): see the message
  {EXIT_USAGE}   usage or input error (bad flag, unknown table or database, unreachable
      warehouse, option or data the table cannot take); nothing was changed
  {EXIT_SOFTWARE}  unexpected error, a bug in dagster-paimon: the traceback is logged
  {EXIT_TRANSIENT}  the store kept failing transiently; running the same command again is safe
  {EXIT_INTERRUPTED} interrupted (Ctrl-C)

\b
With --json, a result is one JSON document on stdout and an error is one JSON object,
the last line on stderr:
  {{"error": {{"type": "TableNotFoundError", "message": "...", "exit_code": 2}}}}
(a transient error adds "retry_safe" and "table_unchanged").

\b
Environment: PAIMON_WAREHOUSE (default --warehouse), PAIMON_S3_ENDPOINT,
PAIMON_S3_REGION, PAIMON_S3_PATH_STYLE, PAIMON_S3_ACCESS_KEY_ID,
PAIMON_S3_SECRET_ACCESS_KEY, PAIMON_S3_SESSION_TOKEN (flags win)."""

log = logging.getLogger("dagster_paimon")


# -- argument types: parsed before any command runs ------------------------------------------


class Duration(click.ParamType):
    """`30s`, `15m`, `12h`, `7d` (Paimon's units; a bare number is milliseconds)."""

    name = "duration"

    def __init__(self, *, positive: bool = False):
        self.positive = positive

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        """DURATION in usage lines."""
        return "DURATION"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """A timedelta, or a usage error naming the flag."""
        if isinstance(value, timedelta):
            return value
        try:
            duration = parse_duration(str(value))
        except InvalidArgumentError as e:
            self.fail(str(e), param, ctx)
        if self.positive and duration <= timedelta(0):
            self.fail("must be positive: younger files may belong to a commit", param, ctx)
        return duration


class PartitionSpec(click.ParamType):
    """`K=V[,K=V]` into a dict."""

    name = "partition"

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        """K=V[,K=V] in usage lines."""
        return "K=V[,K=V]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """The spec as a dict, or a usage error naming the flag."""
        if isinstance(value, dict):
            return value
        try:
            return parse_partition_spec(str(value))
        except InvalidArgumentError as e:
            self.fail(str(e), param, ctx)


class OptionPair(click.ParamType):
    """`KEY=VALUE`: one table or catalog option (the value may hold "=")."""

    name = "option"

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        """KEY=VALUE in usage lines."""
        return "KEY=VALUE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """A (key, value) pair, or a usage error naming the flag."""
        if isinstance(value, tuple):
            return value
        key, sep, text = str(value).partition("=")
        if not sep or not key.strip():
            self.fail(f"{value!r} is not KEY=VALUE", param, ctx)
        return key.strip(), text.strip()


class Identifier(click.ParamType):
    """`DB.TABLE`, checked for shape only (whether it exists is the warehouse's to say)."""

    name = "identifier"

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        """DB.TABLE in usage lines."""
        return "DB.TABLE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """The identifier, or a usage error naming the flag."""
        try:
            parse_identifier(str(value))
        except InvalidArgumentError as e:
            self.fail(str(e), param, ctx)
        return str(value)


COUNT = click.IntRange(min=1)


# -- shared flags: on the group and on every command, merged ----------------------------------


@dataclasses.dataclass(frozen=True)
class Shared:
    """The flags every command takes, wherever they were given."""

    warehouse: str | None
    table: str | None
    json: bool
    verbose: bool
    s3_endpoint: str | None
    s3_region: str | None
    s3_path_style: bool
    catalog_option: tuple[tuple[str, str], ...] = ()


SHARED = tuple(f.name for f in dataclasses.fields(Shared))
FLAGS = ("json", "verbose", "s3_path_style")
REPEATED = ("catalog_option",)


def shared_options(f: Callable, *, table: bool = True) -> Callable:
    """The shared flags, the same on the group and on each command (--table hidden on a
    command that takes none: given there, it is refused)."""
    options = [
        click.option(
            "--warehouse",
            metavar="URI",
            envvar=WAREHOUSE_ENV,
            show_envvar=True,
            help="warehouse path or s3://bucket/prefix",
        ),
        click.option("--table", type=Identifier(), hidden=not table, help="the table, as DB.TABLE"),
        click.option(
            "--json",
            "json",
            is_flag=True,
            help="print one JSON document on stdout (errors: one JSON object on stderr)",
        ),
        click.option("-v", "--verbose", is_flag=True, help="log progress to stderr"),
        click.option(
            "--s3-endpoint", metavar="URL", help="S3-compatible endpoint (env PAIMON_S3_ENDPOINT)"
        ),
        click.option("--s3-region", metavar="REGION", help="S3 region (env PAIMON_S3_REGION)"),
        click.option(
            "--s3-path-style",
            is_flag=True,
            help="path-style bucket addressing, as MinIO needs (env PAIMON_S3_PATH_STYLE)",
        ),
        click.option(
            "--catalog-option",
            type=OptionPair(),
            multiple=True,
            help="a catalog option, with Paimon's keys (repeatable; over the S3 flags)",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


@dataclasses.dataclass
class Run:
    """What main needs to report an outcome: the command and whether --json was asked for."""

    command: str = ""
    json: bool = False
    group: dict[str, tuple[Any, ParameterSource | None]] = dataclasses.field(default_factory=dict)


def _merged(ctx: click.Context, own: dict[str, Any]) -> Shared:
    """A command's shared flags merged with the group's: given after the command wins, then
    given before it, then the environment; switches are on if given anywhere."""
    run: Run = ctx.find_object(Run) or Run()
    values: dict[str, Any] = {}
    for name in SHARED:
        mine, source = own.pop(name), ctx.get_parameter_source(name)
        theirs, their_source = run.group.get(name, (None, None))
        if name in FLAGS:
            values[name] = bool(mine or theirs)
        elif name in REPEATED:
            values[name] = tuple(theirs or ()) + tuple(mine or ())
        elif source == ParameterSource.COMMANDLINE or their_source != ParameterSource.COMMANDLINE:
            values[name] = mine
        else:
            values[name] = theirs
    return Shared(**values)


def command(
    name: str, summary: str, example: str, *, needs_table: bool = True, **kwargs: Any
) -> Callable[[Callable[..., tuple[Any, str]]], click.Command]:
    """A sub-command: shared flags, an example in --help, and the flags merged and checked
    (a warehouse, a table) before the handler runs."""

    def decorate(handler: Callable[..., tuple[Any, str]]) -> click.Command:
        @click.pass_context
        def callback(ctx: click.Context, **params: Any) -> tuple[Any, str]:
            shared = _merged(ctx, params)
            run = ctx.find_object(Run)
            if run is not None:
                run.command, run.json = name, shared.json
            if not shared.warehouse:
                raise click.UsageError(
                    f"Missing option '--warehouse' (or set {WAREHOUSE_ENV})", ctx=ctx
                )
            if needs_table and not shared.table:
                raise click.UsageError("Missing option '--table'", ctx=ctx)
            if not needs_table and shared.table:
                raise click.UsageError(f"{name} takes no --table", ctx=ctx)
            _configure_logging(shared.verbose)
            return handler(shared, **params)

        callback.__doc__ = handler.__doc__
        # the handler's own options (decorated before this one) go to the command
        vars(callback)["__click_params__"] = list(getattr(handler, "__click_params__", []))
        epilog = f"\b\nExample:\n  {example}"
        cmd = click.command(name, help=handler.__doc__, short_help=summary, epilog=epilog, **kwargs)
        return cmd(shared_options(callback, table=needs_table))

    return decorate


def _configure_logging(verbose: bool) -> None:
    """Progress on stderr with --verbose; warnings and errors (tracebacks) always."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(message)s",
        stream=sys.stderr,
    )


def _version() -> str:
    """The installed distribution's version."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(PROG)
    except PackageNotFoundError:
        return "unknown"


@click.group(
    PROG,
    help="Operate Apache Paimon primary-key tables: health, compaction, ingest, maintenance.\n\n"
    "Shared flags (--warehouse, --table, --json, --verbose, --s3-*) go before or after the "
    "command; given in both places, the one after the command wins.",
    epilog=EXIT_CODES,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(_version(), "--version", prog_name=PROG, message="%(prog)s %(version)s")
@shared_options
@click.pass_context
def cli(ctx: click.Context, **params: Any) -> None:
    """Remember the shared flags given before the command, for the command to merge."""
    run = ctx.ensure_object(Run)
    run.group = {name: (params[name], ctx.get_parameter_source(name)) for name in SHARED}
    run.json = run.json or bool(params["json"])


# -- helpers of the commands ---------------------------------------------------------------


def catalog_options(shared: Shared) -> dict[str, str]:
    """S3 settings from the PAIMON_S3_* variables, flags winning (a local warehouse needs
    none), then every --catalog-option."""
    return {**_s3_options(shared), **dict(shared.catalog_option)}


def _s3_options(shared: Shared) -> dict[str, str]:
    """S3 settings from the PAIMON_S3_* variables, flags winning; a local warehouse needs none."""
    from dagster_paimon.storage.s3 import S3Settings, is_s3_uri

    assert shared.warehouse is not None
    if not is_s3_uri(shared.warehouse):
        return {}
    env = S3Settings.from_env(os.environ)
    settings = dataclasses.replace(
        env,
        endpoint=shared.s3_endpoint or env.endpoint,
        region=shared.s3_region or env.region,
        path_style=shared.s3_path_style or env.path_style,
    )
    return settings.catalog_options()


def table_of(shared: Shared) -> FileStoreTable:
    """The --table of --warehouse, with the S3 settings of flags and environment."""
    from dagster_paimon.table import open_table

    assert shared.warehouse is not None and shared.table is not None
    return open_table(shared.warehouse, shared.table, catalog_options(shared))


def _spark_flags(f: Callable) -> Callable:
    """Where Spark runs: a master URL, or a Spark Connect server (not both)."""
    f = click.option("--spark-remote", metavar="URL", help="Spark Connect URL (sc://host:port)")(f)
    return click.option(
        "--spark-master", metavar="URL", default="local[*]", show_default=True, help="master URL"
    )(f)


def _spark_where(spark_master: str, spark_remote: str | None) -> None:
    """--spark-master and --spark-remote exclude each other."""
    ctx = click.get_current_context()
    if spark_remote and ctx.get_parameter_source("spark_master") == ParameterSource.COMMANDLINE:
        raise click.UsageError(
            "--spark-master and --spark-remote exclude each other: give one", ctx=ctx
        )


def _starting_session(
    shared: Shared, spark_master: str, spark_remote: str | None
) -> AbstractContextManager[PendingSession]:
    """The session of --spark-remote or --spark-master, its JVM booting while the command
    imports and opens the table; Spark's own logging only with --verbose. Our commands run
    `mapInArrow` tasks, never the `paimon` data source, so it is not registered."""
    from dagster_paimon.spark.session import starting_session

    return starting_session(
        spark_master, remote=spark_remote, quiet=not shared.verbose, source=False
    )


PARTITION = click.option("--partition", type=PartitionSpec(), help="only buckets of this partition")
DRY_RUN = click.option("--dry-run", is_flag=True, help="plan and print, change nothing")


# -- commands ----------------------------------------------------------------------------------


@command(
    "health",
    "sorted runs and size amplification (append tables: small files) per bucket",
    "dagster-paimon health --warehouse /data/wh --table db.orders --partition dt=2024-01-01",
)
@PARTITION
def health(shared: Shared, partition: dict[str, str] | None) -> tuple[dict, str]:
    """Health of every bucket, optionally of one partition; reads only. A primary-key table
    ("kind": "primary-key") reports its LSM trees: files, level-0 files, sorted runs, size
    amplification. An append table ("kind": "append") reports files, small files (below
    target-file-size x compaction.small-file-ratio), bytes, rows and rows deletion vectors
    delete. Either kind names, under "conflicting_compactors" (null when none), other writers
    whose COMPACT snapshots are among the table's newest while it is not write-only."""
    from dagster_paimon.kinds import table_health

    table = table_of(shared)
    report = table_health(table, partition)
    return _with_findings(table, report.to_dict(), report.summary())


def _with_findings(table: FileStoreTable, data: dict, summary: str) -> tuple[dict, str]:
    """A read-only command's output with what the option census finds in the table's options:
    the modes refused (JSON `unsupported`) and the keys it does not know (`unknown_options`)."""
    from dagster_paimon.unsupported import option_findings

    findings = option_findings(table.table_schema)
    if findings["unsupported"]:
        summary += "\nunsupported by dagster-paimon: " + "; ".join(findings["unsupported"])
    if findings["unknown_options"]:
        unknown = ", ".join(findings["unknown_options"])
        summary += f"\noptions the census does not know (operations warn): {unknown}"
    return {**data, **findings}, summary


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
    type=click.Choice(["local", "spark"]),
    default="local",
    show_default=True,
    help="where rewrite tasks run",
)
@_spark_flags
def compact(
    shared: Shared,
    partition: dict[str, str] | None,
    full: bool,
    dry_run: bool,
    executor: str,
    spark_master: str,
    spark_remote: str | None,
) -> tuple[dict, str]:
    """Plan Paimon's universal compaction (or a full one) of every bucket (append tables:
    small-file compaction per bucket or per partition) and, unless --dry-run, run it and
    commit one COMPACT snapshot."""
    from dagster_paimon.kinds import compact_open_table

    def run(table: FileStoreTable, ref: TableRef, tasks: TaskExecutor | None) -> Any:
        return compact_open_table(
            table, ref, full=full, partition=partition, executor=tasks, dry_run=dry_run
        )

    result = _on_executor(shared, executor, dry_run, spark_master, spark_remote, run)
    return result.to_dict(), result.summary()


def _on_executor(
    shared: Shared,
    executor: str,
    dry_run: bool,
    spark_master: str,
    spark_remote: str | None,
    run: Callable[[FileStoreTable, TableRef, TaskExecutor | None], Any],
) -> Any:
    """Run a compaction-like operation on the local or the Spark executor: the Spark session's
    JVM boots while the table opens (a dry run starts none)."""
    _spark_where(spark_master, spark_remote)
    from dagster_paimon.table import TableRef

    assert shared.warehouse is not None and shared.table is not None
    options = catalog_options(shared)
    spark = executor == "spark" and not dry_run
    pending_session = _starting_session(shared, spark_master, spark_remote) if spark else None
    with pending_session or nullcontext() as pending:
        table = table_of(shared)
        tasks = None
        if pending is not None:
            from dagster_paimon.spark.executor import SparkExecutor

            tasks = SparkExecutor(pending.session())
        return run(table, TableRef.of(shared.warehouse, shared.table, options), tasks)


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
    type=click.Choice(["local", "spark"]),
    default="local",
    show_default=True,
    help="where the source buckets are read and rewritten",
)
@_spark_flags
def rescale(
    shared: Shared,
    bucket_num: int,
    partitions: tuple[dict[str, str], ...],
    dry_run: bool,
    executor: str,
    spark_master: str,
    spark_remote: str | None,
) -> tuple[dict, str]:
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

    result = _on_executor(shared, executor, dry_run, spark_master, spark_remote, run)
    return result.to_dict(), result.summary()


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
@_spark_flags
def ingest(
    shared: Shared, source: str, fmt: str, mode: str, spark_master: str, spark_remote: str | None
) -> tuple[dict, str]:
    """Ingest parquet, CSV or JSON-lines files into level 0 with Spark: one APPEND (or
    OVERWRITE) snapshot."""
    _spark_where(spark_master, spark_remote)
    if "://" not in source and not os.path.exists(source):
        raise click.BadParameter(f"{source!r} does not exist", param_hint="'--source'")
    assert shared.warehouse is not None and shared.table is not None
    from dagster_paimon.lsm.write.layout import check_writable

    # a refused table is refused before a JVM is started for it
    check_writable(table_of(shared), overwrite=mode == "overwrite")
    with _starting_session(shared, spark_master, spark_remote) as pending:
        from dagster_paimon.spark.ingest import ingest_files

        report = ingest_files(
            pending.session(),
            shared.warehouse,
            shared.table,
            source,
            fmt=fmt,
            mode=mode,
            catalog_options=catalog_options(shared),
        )
    return report.to_dict(), report.summary()


def _retention_flags(what: str) -> Callable[[Callable], Callable]:
    """--retain-min, --retain-max, --older-than, --max-deletes, --dry-run."""

    def decorate(f: Callable) -> Callable:
        for option in reversed(
            [
                click.option(
                    "--retain-min", type=COUNT, metavar="N", help=f"keep at least N {what}"
                ),
                click.option(
                    "--retain-max", type=COUNT, metavar="N", help=f"keep at most N {what}"
                ),
                click.option(
                    "--older-than",
                    type=Duration(),
                    help=f"expire only {what} older than this (e.g. 12h, 7d)",
                ),
                click.option(
                    "--max-deletes",
                    type=COUNT,
                    metavar="N",
                    help=f"expire at most N {what} per run",
                ),
                click.option("--dry-run", is_flag=True, help="list, delete nothing"),
            ]
        ):
            f = option(f)
        return f

    return decorate


def _expire(
    shared: Shared,
    target: str,
    retain_min: int | None,
    retain_max: int | None,
    older_than: timedelta | None,
    max_deletes: int | None,
    dry_run: bool,
) -> tuple[dict, str]:
    """Expire snapshots or long-lived changelogs by retention options and flag overrides."""
    if retain_min is not None and retain_max is not None and retain_max < retain_min:
        raise click.BadParameter(
            f"{retain_max} is less than --retain-min {retain_min}", param_hint="'--retain-max'"
        )
    from dagster_paimon.maintenance.expire import expire_changelogs, expire_snapshots

    expire = expire_snapshots if target == "snapshots" else expire_changelogs
    result = expire(
        table_of(shared),
        older_than=older_than,
        retain_min=retain_min,
        retain_max=retain_max,
        max_deletes=max_deletes,
        dry_run=dry_run,
    )
    return result.to_dict(), result.summary()


@command(
    "expire-snapshots",
    "expire snapshots by retention, keeping tags",
    "dagster-paimon expire-snapshots --table db.orders --retain-min 10 --older-than 7d",
)
@_retention_flags("snapshots")
def expire_snapshots(shared: Shared, **flags: Any) -> tuple[dict, str]:
    """Expire snapshots by the table's snapshot.* retention options, the flags given replacing
    them for this run; tags, consumers and branches keep what they reference."""
    return _expire(shared, "snapshots", **flags)


@command(
    "expire-changelogs",
    "expire long-lived changelogs by retention",
    "dagster-paimon expire-changelogs --table db.orders --retain-max 100 --dry-run",
)
@_retention_flags("changelogs")
def expire_changelogs(shared: Shared, **flags: Any) -> tuple[dict, str]:
    """Expire long-lived changelogs by the table's changelog.* retention options (falling back
    to snapshot.*), the flags given replacing them for this run."""
    return _expire(shared, "changelogs", **flags)


@command(
    "expire-partitions",
    "drop partitions past partition.expiration-time",
    "dagster-paimon expire-partitions --table db.orders --older-than 30d --dry-run",
)
@click.option(
    "--older-than",
    type=Duration(),
    help="drop partitions older than this (default: partition.expiration-time)",
)
@click.option(
    "--strategy",
    type=click.Choice(["values-time", "update-time"]),
    help="partition time from its values, or its last file creation "
    "(default: partition.expiration-strategy, else values-time)",
)
@click.option(
    "--max-num",
    type=COUNT,
    metavar="N",
    help="drop at most N partitions (default: partition.expiration-max-num, else 100)",
)
@click.option("--dry-run", is_flag=True, help="list, drop nothing")
def expire_partitions(
    shared: Shared,
    older_than: timedelta | None,
    strategy: Literal["values-time", "update-time"] | None,  # click.Choice checked it
    max_num: int | None,
    dry_run: bool,
) -> tuple[dict, str]:
    """Drop expired partitions in an OVERWRITE snapshot, as Paimon's partition expiry does,
    by the table's partition.* options, the flags given replacing them for this run. The
    files go later with expire-snapshots. partition.expiration-check-interval only paces
    Java's check after each commit: this command always checks."""
    from dagster_paimon.maintenance.partitions import expire_partitions

    result = expire_partitions(
        table_of(shared),
        expiration_time=older_than,
        strategy=strategy,
        max_num=max_num,
        dry_run=dry_run,
    )
    return result.to_dict(), result.summary()


@command(
    "compact-manifests",
    "merge small manifests",
    "dagster-paimon compact-manifests --table db.orders --full",
)
@click.option("--full", is_flag=True, help="full compaction at any size")
@click.option("--dry-run", is_flag=True, help="estimate, write nothing")
def compact_manifests(shared: Shared, full: bool, dry_run: bool) -> tuple[dict, str]:
    """Merge the latest snapshot's manifests (minor, by the table's manifest.* thresholds, or
    --full) and commit them in a new snapshot."""
    from dagster_paimon.maintenance.manifests import compact_manifests

    result = compact_manifests(table_of(shared), full=full, dry_run=dry_run)
    return result.to_dict(), result.summary()


@command(
    "remove-orphans",
    "delete old unreferenced files",
    "dagster-paimon remove-orphans --table db.orders --older-than 3d --dry-run",
)
@click.option(
    "--older-than",
    type=Duration(positive=True),
    default="1d",
    show_default=True,
    help="only files older than this",
)
@click.option("--dry-run", is_flag=True, help="list, delete nothing")
def remove_orphans(shared: Shared, older_than: timedelta, dry_run: bool) -> tuple[dict, str]:
    """Delete files that no snapshot, tag, changelog or branch references and that are older
    than --older-than (younger ones may belong to a commit in progress), including the temp
    files (.<name>.<uuid>.tmp) a killed metadata write left in snapshot/, changelog/, tag/,
    consumer/ or schema/."""
    from dagster_paimon.maintenance.orphans import remove_orphans

    result = remove_orphans(table_of(shared), older_than=older_than, dry_run=dry_run)
    return result.to_dict(), result.summary()


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
def doctor(shared: Shared, rollback_unreadable: bool) -> tuple[dict, str]:
    """Check that every snapshot and tag of the table can be read. Exit 0 when it is healthy
    or was repaired, 1 when it is unhealthy and not repaired (the report is still printed) or
    a rollback is refused."""
    from dagster_paimon.errors import TableUnhealthyError
    from dagster_paimon.maintenance.doctor import doctor

    table = table_of(shared)
    result = doctor(table, repair=rollback_unreadable)
    data, summary = _with_findings(table, result.to_dict(), result.summary())
    if result.healthy:
        return data, summary
    click.echo(json.dumps(data) if shared.json else summary)
    raise TableUnhealthyError("; ".join(filter(None, [result.verdict(), result.repair()])))


@command("tags", "list the table's tags", "dagster-paimon tags --table db.orders --json")
def tags(shared: Shared) -> tuple[list, str]:
    """List the table's tags, by snapshot id: name, snapshot, and retention if it has one."""
    from dagster_paimon.maintenance.tags import list_tags

    found = list_tags(table_of(shared))
    text = "\n".join(t.summary() for t in found) or f"{shared.table}: no tags"
    return [t.to_dict() for t in found], text


@command(
    "create-tag",
    "tag a snapshot so it outlives expiry",
    "dagster-paimon create-tag --table db.orders --name release-1 --snapshot 42 --time-retained 7d",
)
@click.option("--name", required=True, help="the tag's name")
@click.option("--snapshot", "snapshot_id", type=int, help="the snapshot to tag (default: latest)")
@click.option(
    "--time-retained",
    type=Duration(positive=True),
    help="expire the tag after this long (default: tag.default-time-retained, else never)",
)
def create_tag(
    shared: Shared, name: str, snapshot_id: int | None, time_retained: timedelta | None
) -> tuple[dict, str]:
    """Create a tag on a snapshot (the latest by default). A tag that exists is an input error
    (exit 2), as in Paimon."""
    from dagster_paimon.maintenance.tags import create_tag

    result = create_tag(
        table_of(shared), name, snapshot_id=snapshot_id, time_retained=time_retained
    )
    return result.to_dict(), result.summary()


@command(
    "delete-tag",
    "delete a tag and the files only it kept",
    "dagster-paimon delete-tag --table db.orders --name release-1 --dry-run",
)
@click.option("--name", required=True, help="the tag to delete")
@click.option("--dry-run", is_flag=True, help="report, delete nothing")
def delete_tag(shared: Shared, name: str, dry_run: bool) -> tuple[dict, str]:
    """Delete a tag; if its snapshot was expired, also the data, manifest, index and statistics
    files no remaining snapshot, tag, changelog or branch uses. An unknown tag exits 2."""
    from dagster_paimon.maintenance.tags import delete_tag

    result = delete_tag(table_of(shared), name, dry_run=dry_run)
    return result.to_dict(), result.summary()


@command(
    "expire-tags",
    "delete tags past their time retained",
    "dagster-paimon expire-tags --table db.orders --dry-run",
)
@click.option("--dry-run", is_flag=True, help="report, delete nothing")
def expire_tags(shared: Shared, dry_run: bool) -> tuple[dict, str]:
    """Delete every tag whose time retained (from its creation) has passed, with the files only
    it kept alive. Tags without a retention stay."""
    from dagster_paimon.maintenance.tags import expire_tags

    result = expire_tags(table_of(shared), dry_run=dry_run)
    return result.to_dict(), result.summary()


@command(
    "auto-tag",
    "create the period tags Paimon's writers would",
    "dagster-paimon auto-tag --table db.orders --dry-run",
)
@click.option("--dry-run", is_flag=True, help="report, write and delete nothing")
def auto_tag(shared: Shared, dry_run: bool) -> tuple[dict, str]:
    """Do what Paimon's writers do after a commit: create a tag for every period that ended
    (tag.automatic-creation process-time, watermark or batch; tag.creation-period,
    tag.creation-delay, tag.period-formatter), delete the oldest auto tags beyond
    tag.num-retained-max, and expire tags by time retained."""
    from dagster_paimon.maintenance.tags import create_automatic_tags

    result = create_automatic_tags(table_of(shared), dry_run=dry_run)
    return result.to_dict(), result.summary()


@command(
    "maintain",
    "one maintenance pass: tags, partitions, consumers, snapshots",
    "dagster-paimon maintain --table db.orders --option partition.expiration-time=90d --dry-run",
)
@click.option(
    "--option",
    "options",
    type=OptionPair(),
    multiple=True,
    help="a table option this pass reads instead of the table's (repeatable; the table is "
    "not changed)",
)
@click.option("--dry-run", is_flag=True, help="report each step, change nothing")
def maintain(
    shared: Shared, options: tuple[tuple[str, str], ...], dry_run: bool
) -> tuple[dict, str]:
    """Run what Paimon's writers maintain after a commit, in their order: automatic tag
    creation, tag expiry, partition expiry, consumer expiry, snapshot expiry. A step the
    options do not ask for (no tag.automatic-creation, partition.expiration-time,
    consumer.expiration-time) is skipped; a failing step stops the pass, earlier steps'
    changes stay. --option overrides one of the options the steps read for this pass only;
    an unknown or malformed one exits 2 before any step."""
    from dagster_paimon.maintenance.maintain import maintain

    result = maintain(table_of(shared), options=dict(options), dry_run=dry_run)
    return result.to_dict(), result.summary()


@command(
    "list-consumers",
    "list streaming consumers and the snapshot each reads next",
    "dagster-paimon list-consumers --table db.orders",
)
def list_consumers(shared: Shared) -> tuple[dict, str]:
    """List the table's streaming consumers (consumer/consumer-<id>), the snapshot each reads
    next and when it was last written; snapshot expiry keeps the oldest of them."""
    from dagster_paimon.maintenance.consumers import list_consumers

    result = list_consumers(table_of(shared))
    return result.to_dict(), result.summary()


@command(
    "expire-consumers",
    "remove consumers not written for a while",
    "dagster-paimon expire-consumers --table db.orders --expiration-time 7d --dry-run",
)
@click.option(
    "--expiration-time",
    type=Duration(),
    help="remove consumers last written longer ago than this (default: the table's "
    "consumer.expiration-time; unset, none expires)",
)
@click.option("--dry-run", is_flag=True, help="list, delete nothing")
def expire_consumers(
    shared: Shared, expiration_time: timedelta | None, dry_run: bool
) -> tuple[dict, str]:
    """Remove consumers whose file was last written more than the expiration time ago, so a
    reader that left stops holding back snapshot expiry."""
    from dagster_paimon.maintenance.consumers import expire_consumers

    result = expire_consumers(table_of(shared), expiration_time=expiration_time, dry_run=dry_run)
    return result.to_dict(), result.summary()


@command(
    "clear-consumers",
    "remove consumers by id pattern",
    "dagster-paimon clear-consumers --table db.orders --including 'flink-.*' --excluding 'prod'",
)
@click.option(
    "--including",
    default=".*",
    show_default=True,
    help="regular expression a consumer id must match in full",
)
@click.option("--excluding", help="regular expression of consumer ids to keep")
@click.option("--dry-run", is_flag=True, help="list, delete nothing")
def clear_consumers(
    shared: Shared, including: str, excluding: str | None, dry_run: bool
) -> tuple[dict, str]:
    """Remove the consumers whose id fully matches --including and not --excluding (Paimon's
    clear_consumers procedure)."""
    from dagster_paimon.maintenance.consumers import clear_consumers

    result = clear_consumers(
        table_of(shared), including=including, excluding=excluding, dry_run=dry_run
    )
    return result.to_dict(), result.summary()


@command(
    "reset-consumer",
    "move a consumer to another snapshot",
    "dagster-paimon reset-consumer --table db.orders --consumer flink-a --next-snapshot 42",
)
@click.option("--consumer", "consumer_id", required=True, metavar="ID", help="the consumer id")
@click.option(
    "--next-snapshot", type=COUNT, required=True, metavar="N", help="the snapshot to read next"
)
def reset_consumer(shared: Shared, consumer_id: str, next_snapshot: int) -> tuple[dict, str]:
    """Make an existing consumer read snapshot N next; the snapshot must exist."""
    from dagster_paimon.maintenance.consumers import reset_consumer

    result = reset_consumer(table_of(shared), consumer_id, next_snapshot)
    return result.to_dict(), result.summary()


def _timestamp(value: str | None) -> datetime | None:
    """An ISO 8601 time (a naive one is UTC)."""
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError as e:
        raise click.BadParameter(
            f"{value!r} is not an ISO 8601 time", param_hint="'--timestamp'"
        ) from e


@command(
    "rollback",
    "roll back to a snapshot, a tag or a time",
    "dagster-paimon rollback --table db.orders --tag daily-2024-06-01 --dry-run",
)
@click.option("--snapshot", "snapshot_id", type=COUNT, metavar="N", help="the snapshot id")
@click.option("--tag", metavar="NAME", help="the tag")
@click.option(
    "--timestamp", metavar="ISO", help="the newest snapshot at or before this time (naive: UTC)"
)
@click.option("--dry-run", is_flag=True, help="list, delete nothing")
def rollback(
    shared: Shared,
    snapshot_id: int | None,
    tag: str | None,
    timestamp: str | None,
    dry_run: bool,
) -> tuple[dict, str]:
    """Roll the table back to exactly one of --snapshot, --tag or --timestamp: newer snapshots,
    long-lived changelogs and tags are removed with the files only they used."""
    when = _timestamp(timestamp)
    if sum(x is not None for x in (snapshot_id, tag, when)) != 1:
        raise click.UsageError("give exactly one of --snapshot, --tag or --timestamp")
    from dagster_paimon.maintenance.rollback import rollback_to

    result = rollback_to(
        table_of(shared), snapshot_id=snapshot_id, tag=tag, timestamp=when, dry_run=dry_run
    )
    return result.to_dict(), result.summary()


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
) -> tuple[list, str]:
    """List the tables of the warehouse, one line each: snapshot, buckets, files, bytes, and for
    primary-key tables level-0 files, the largest number of sorted runs and size amplification
    of any bucket; for append tables (no primary key, listed after them) small files and rows
    deleted by deletion vectors. Each JSON row's "kind" is "primary-key" or "append".
    Directories that are not Paimon tables are listed as skipped, with why. A table whose
    health cannot be read is listed with its error and the command exits 1. --match or
    --database matching no table is an input error (exit 2); a warehouse without any lists
    nothing."""
    from dagster_paimon.discovery import list_tables

    assert shared.warehouse is not None
    options = catalog_options(shared)
    patterns = include or ((f"{database}.*",) if database else ())
    found = list_tables(shared.warehouse, options, include=patterns, exclude=exclude)
    entries = sorted(
        [(t.identifier, None) for t in found.tables if database in (None, t.database)]
        + [(name, why) for name, why in found.skipped if database in (None, name.split(".")[0])]
    )
    if patterns and not any(why is None for _, why in entries):
        where = f"database {database!r}" if database else f"{list(patterns)}"
        raise TableNotFoundError(f"no table of {shared.warehouse!r} matches {where}")
    if not entries:
        return [], "no tables"
    from dagster_paimon.storage.pool import parallel_map

    # tables are read at once on the shared I/O pool: on an object store each is latency-bound
    read = parallel_map(lambda entry: _table_row(shared, entry[0], entry[1], options), entries)
    rows = [row for row, _ in read]
    text = _tables_text(rows)
    failures = [e for _, e in read if e is not None]
    if failures:
        click.echo(json.dumps(rows) if shared.json else text)
        bugs = [e for e in failures if _unexpected(e)]
        if bugs:
            raise bugs[0]  # exit 70 with its traceback: the rows above say which table
        raise TablesUnreadableError(
            f"{len(failures)} of {len(rows)} tables could not be read: "
            + ", ".join(r["table"] for r in rows if r["error"])
        )
    return rows, text


class TablesUnreadableError(DagsterPaimonError):
    """Some tables listed by `tables` could not be read (each row says why)."""


def _table_row(
    shared: Shared, name: str, skipped: str | None, options: dict[str, str]
) -> tuple[dict[str, Any], Exception | None]:
    """One table's kind and health totals (health's JSON without the buckets), or why it is
    skipped, or the error reading it (a transient one fails the command: rerunning it is
    safe)."""
    row: dict[str, Any] = {
        "table": name,
        "kind": None,
        "snapshot_id": None,
        "totals": None,
        "unsupported": [],
        "unknown_options": [],
    }
    row.update(skipped=skipped, error=None)
    if skipped is not None:
        return row, None
    from dagster_paimon.kinds import health_of
    from dagster_paimon.lsm.model.levels import read_levels
    from dagster_paimon.table import open_table
    from dagster_paimon.unsupported import option_findings

    assert shared.warehouse is not None
    try:
        table = open_table(shared.warehouse, name, options)
        report = health_of(read_levels(table))
    except Exception as e:
        if transient_cause(e) is not None:
            raise
        row["error"] = f"{type(e).__name__}: {e}"
        return row, e
    row.update(
        kind=report.kind,
        snapshot_id=report.snapshot_id,
        totals=report.aggregate(),
        **option_findings(table.table_schema),
    )
    return row, None


def _tables_text(rows: list[dict[str, Any]]) -> str:
    """One aligned line per table: primary-key tables, then append tables (their own
    columns), then the skipped and unreadable ones."""
    from dagster_paimon.table import APPEND, PRIMARY_KEY

    lsm = ["table", "snapshot", "buckets", "files", "bytes", "L0", "max-runs", "max-amp %"]
    append = ["table", "snapshot", "buckets", "files", "bytes", "small", "deleted-rows"]
    lines: dict[str, list[list[str]]] = {PRIMARY_KEY: [], APPEND: []}
    notes = []
    for r in rows:
        s = r["totals"]
        if s is None:
            notes.append(f"{r['table']}: " + (f"skipped, {r['skipped']}" if r["skipped"] else
                                              f"error, {r['error']}"))  # fmt: skip
            continue
        head = [r["table"], str(r["snapshot_id"]), str(s["buckets"]), str(s["files"])]
        head.append(str(s["total_bytes"]))
        if r["kind"] == APPEND:
            tail = [str(s["small_files"]), str(s["deleted_rows"])]
        else:
            tail = [
                str(s["level0_files"]),
                str(s["max_sorted_runs"]),
                f"{s['max_size_amplification_percent']:.1f}",
            ]
        lines[r["kind"]].append(head + tail + _notes(r))
    blocks = [_aligned(h, lines[k]) for h, k in ((lsm, PRIMARY_KEY), (append, APPEND)) if lines[k]]
    return "\n".join([line for block in blocks for line in block] + notes)


def _notes(row: dict[str, Any]) -> list[str]:
    """A table line's trailing note: the modes refused and the options the census lacks."""
    notes = ["unsupported: " + "; ".join(row["unsupported"])] if row["unsupported"] else []
    if row["unknown_options"]:
        notes.append("unknown options: " + ", ".join(row["unknown_options"]))
    return ["; ".join(notes)] if notes else []


def _aligned(headers: list[str], lines: list[list[str]]) -> list[str]:
    """Headers and lines in columns as wide as their widest cell (a trailing note unpadded)."""
    widths = [max(len(r[i]) for r in [headers, *lines]) for i in range(len(headers))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(row, [*widths, 0], strict=False)).rstrip()
        for row in [headers, *lines]
    ]


for _command in (
    health,
    compact,
    rescale,
    ingest,
    expire_snapshots,
    expire_changelogs,
    expire_partitions,
    compact_manifests,
    remove_orphans,
    doctor,
    tags,
    create_tag,
    delete_tag,
    expire_tags,
    auto_tag,
    maintain,
    list_consumers,
    expire_consumers,
    clear_consumers,
    reset_consumer,
    rollback,
    tables,
):
    cli.add_command(_command)


# -- running and reporting ---------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command and return its exit code (see EXIT_CODES); never raises for a failure."""
    args = list(sys.argv[1:] if argv is None else argv)
    run = Run(json="--json" in args[: args.index("--")] if "--" in args else "--json" in args)
    try:
        outcome = cli.main(args, prog_name=PROG, standalone_mode=False, obj=run)
    except click.exceptions.NoArgsIsHelpError as e:
        click.echo(e.ctx.get_help() if e.ctx else str(e), err=True)
        return EXIT_USAGE
    except click.ClickException as e:
        return _report(run, e, EXIT_USAGE, _usage_message(e))
    except click.exceptions.Abort:
        return _report(run, KeyboardInterrupt(), EXIT_INTERRUPTED, "interrupted")
    except Exception as e:
        return _failed(run, e)
    if isinstance(outcome, int):  # --help and --version return their exit code
        return outcome
    payload, text = outcome
    click.echo(json.dumps(payload, sort_keys=False) if run.json else text)
    return EXIT_OK


def _usage_message(e: click.ClickException) -> str:
    """One line: click's message, and where to look when it is about how to call a command."""
    message = e.format_message()
    ctx = getattr(e, "ctx", None)
    if isinstance(e, click.UsageError) and not isinstance(e, click.BadParameter) and ctx:
        message += f" (see '{ctx.command_path} --help')"
    return message


def _failed(run: Run, error: Exception) -> int:
    """Report a failure in one line (or one JSON object) on stderr; its exit code by kind."""
    transient = transient_cause(error)
    if transient is not None:
        code = EXIT_TRANSIENT if transient.retry_safe else EXIT_FAILURE
        return _report(run, transient, code, f"failed transiently: {transient}")
    if isinstance(error, InputError):
        return _report(run, error, EXIT_USAGE, f"error: {error}")
    if not _unexpected(error):
        return _report(run, error, EXIT_FAILURE, f"failed: {error}")
    log.error("unexpected failure, a bug in dagster-paimon", exc_info=error)
    return _report(run, error, EXIT_SOFTWARE, f"failed: {type(error).__name__}: {error}")


def _unexpected(error: BaseException) -> bool:
    """A bug: our own invariant failing, or an exception none of our layers typed (an I/O
    error the store raised untyped is an operation failure, not a bug)."""
    return isinstance(error, InternalError) or not isinstance(error, DagsterPaimonError | OSError)


def _report(run: Run, error: BaseException, code: int, message: str) -> int:
    """Print the error to stderr as one line, or with --json as one JSON object."""
    if run.json:
        body: dict[str, Any] = {
            # click's subclasses (NoSuchOption, BadParameter, ...) are all one kind here
            "type": "UsageError"
            if isinstance(error, click.ClickException)
            else type(error).__name__,
            "message": str(error) if not isinstance(error, click.ClickException) else message,
            "exit_code": code,
        }
        if isinstance(error, TransientStoreError):
            body.update(retry_safe=error.retry_safe, table_unchanged=error.table_unchanged)
        click.echo(json.dumps({"error": body}), err=True)
    else:
        ctx = getattr(error, "ctx", None)
        where = ctx.command_path if ctx else f"{PROG} {run.command}" if run.command else PROG
        if isinstance(error, click.ClickException):
            message = f"error: {message}"
        click.echo(f"{where}: {message}", err=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
