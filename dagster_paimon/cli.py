"""`dagster-paimon`: the operators' CLI over the library; JSON keys are a stable contract.

Each command imports its engine when it runs, so `--help` and usage errors answer at once.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import timedelta
from typing import TYPE_CHECKING

from dagster_paimon.errors import (
    DagsterPaimonError,
    DatabaseNotFoundError,
    InvalidOptionError,
    InvalidTableSpecError,
    SchemaMismatchError,
    SnapshotNotFoundError,
    TableNotFoundError,
    WarehouseUnreachableError,
    transient_cause,
)

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

    from dagster_paimon.spark.session import PendingSession

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
# sysexits' EX_TEMPFAIL: the store kept failing transiently; the same command can be run again
EXIT_TRANSIENT = 75

INPUT_ERRORS = (
    ValueError,
    DatabaseNotFoundError,
    TableNotFoundError,
    WarehouseUnreachableError,
    InvalidTableSpecError,
    InvalidOptionError,
    SchemaMismatchError,
    SnapshotNotFoundError,
)

log = logging.getLogger("dagster_paimon")


class UsageError(ValueError):
    """A flag value the parser accepted but that makes no sense (exit code 2)."""


def parse_partition(text: str | None) -> dict[str, str] | None:
    """--partition K=V[,K=V]; anything else is a usage error."""
    from dagster_paimon.partition import parse_partition_spec

    try:
        return parse_partition_spec(text)
    except ValueError as e:
        raise UsageError(f"--{e}") from e


def catalog_options(args: argparse.Namespace) -> dict[str, str]:
    """S3 settings from the PAIMON_S3_* variables, flags winning; a local warehouse needs none."""
    from dagster_paimon.storage.s3 import S3Settings, is_s3_uri

    if not is_s3_uri(args.warehouse):
        return {}
    env = S3Settings.from_env(os.environ)
    settings = dataclasses.replace(
        env,
        endpoint=args.s3_endpoint or env.endpoint,
        region=args.s3_region or env.region,
        path_style=args.s3_path_style or env.path_style,
    )
    return settings.catalog_options()


def table_of(args: argparse.Namespace) -> FileStoreTable:
    """The --table of --warehouse, with the S3 settings of flags and environment."""
    from dagster_paimon.table import open_table

    return open_table(args.warehouse, args.table, catalog_options(args))


def cmd_health(args: argparse.Namespace) -> tuple[dict, str]:
    """LSM health of every bucket, optionally of one partition."""
    from dagster_paimon.lsm.model.levels import read_levels
    from dagster_paimon.unsupported import unsupported_modes

    table = table_of(args)
    health = read_levels(table, partition=parse_partition(args.partition)).health()
    unsupported = [found for _, found in unsupported_modes(table.table_schema)]
    summary = health.summary()
    if unsupported:
        summary += "\nunsupported by dagster-paimon: " + "; ".join(unsupported)
    return {**health.to_dict(), "unsupported": unsupported}, summary


def cmd_compact(args: argparse.Namespace) -> tuple[dict, str]:
    """Plan, and unless --dry-run run and commit, compaction of every bucket."""
    from dagster_paimon.lsm.compaction import compact_open_table
    from dagster_paimon.table import TableRef

    options = catalog_options(args)
    partition = parse_partition(args.partition)
    spark = args.executor == "spark" and not args.dry_run
    with _starting_session(args) if spark else nullcontext() as pending:
        table = table_of(args)
        executor = None
        if pending is not None:
            from dagster_paimon.spark.executor import SparkExecutor

            executor = SparkExecutor(pending.session())
        result = compact_open_table(
            table,
            TableRef.of(args.warehouse, args.table, options),
            full=args.full,
            partition=partition,
            executor=executor,
            dry_run=args.dry_run,
        )
    return result.to_dict(), result.summary()


def _starting_session(args: argparse.Namespace) -> AbstractContextManager[PendingSession]:
    """The session of --spark-remote or --spark-master, its JVM booting while the command
    imports and opens the table; Spark's own logging only with --verbose. Our commands run
    `mapInArrow` tasks, never the `paimon` data source, so it is not registered."""
    from dagster_paimon.spark.session import starting_session

    return starting_session(
        args.spark_master, remote=args.spark_remote, quiet=not args.verbose, source=False
    )


def _spark_flags(parser: argparse.ArgumentParser) -> None:
    """Where Spark runs: a master URL, or a Spark Connect server."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--spark-master", default="local[*]", help="Spark master URL")
    where.add_argument("--spark-remote", help="Spark Connect URL (sc://host:port)")


def cmd_ingest(args: argparse.Namespace) -> tuple[dict, str]:
    """Ingest files into level 0 with Spark: one APPEND (or OVERWRITE) snapshot."""
    if "://" not in args.source and not os.path.exists(args.source):
        raise UsageError(f"--source {args.source!r} does not exist")
    with _starting_session(args) as pending:
        table_of(args)
        from dagster_paimon.spark.ingest import ingest_files

        report = ingest_files(
            pending.session(),
            args.warehouse,
            args.table,
            args.source,
            fmt=args.format,
            mode=args.mode,
            catalog_options=catalog_options(args),
        )
    return report.to_dict(), report.summary()


def _add_spark_commands(commands: argparse._SubParsersAction) -> None:
    """ingest (Spark data source into level 0)."""
    ingest = commands.add_parser("ingest", help="write files into level 0 with Spark")
    _common(ingest)
    ingest.add_argument("--source", required=True, help="file or directory to ingest")
    ingest.add_argument("--format", choices=("parquet", "csv", "json"), default="parquet")
    ingest.add_argument("--mode", choices=("append", "overwrite"), default="append")
    _spark_flags(ingest)
    ingest.set_defaults(handler=cmd_ingest)


def _duration(text: str | None) -> timedelta | None:
    """An --older-than DURATION; anything unparsable is a usage error."""
    from dagster_paimon.options import duration_ms

    if text is None:
        return None
    try:
        return timedelta(milliseconds=duration_ms(text))
    except ValueError as e:
        raise UsageError(f"--older-than must be a duration like 1h, 30min or 2d: {e}") from e


def cmd_expire(args: argparse.Namespace) -> tuple[dict, str]:
    """Expire snapshots or long-lived changelogs by retention options and flag overrides."""
    from dagster_paimon.maintenance.expire import expire_changelogs, expire_snapshots

    table = table_of(args)
    expire = expire_snapshots if args.command == "expire-snapshots" else expire_changelogs
    result = expire(
        table,
        older_than=_duration(args.older_than),
        retain_min=args.retain_min,
        retain_max=args.retain_max,
        max_deletes=args.max_deletes,
        dry_run=args.dry_run,
    )
    return result.to_dict(), result.summary()


def cmd_compact_manifests(args: argparse.Namespace) -> tuple[dict, str]:
    """Merge manifests (minor by the table's thresholds, or --full) into a new snapshot."""
    from dagster_paimon.maintenance.manifests import compact_manifests

    table = table_of(args)
    result = compact_manifests(table, full=args.full, dry_run=args.dry_run)
    return result.to_dict(), result.summary()


def cmd_remove_orphans(args: argparse.Namespace) -> tuple[dict, str]:
    """Delete files no snapshot, tag, changelog or branch references, older than a threshold."""
    from dagster_paimon.maintenance.orphans import remove_orphans

    table = table_of(args)
    older_than = _duration(args.older_than)
    older_than = timedelta(days=1) if older_than is None else older_than
    result = remove_orphans(table, older_than=older_than, dry_run=args.dry_run)
    return result.to_dict(), result.summary()


def _add_maintenance_commands(commands: argparse._SubParsersAction) -> None:
    """expire-snapshots, expire-changelogs, compact-manifests and remove-orphans."""
    for name, what in (("expire-snapshots", "snapshots"), ("expire-changelogs", "changelogs")):
        expire = commands.add_parser(name, help=f"expire {what} by retention, keeping tags")
        _common(expire)
        expire.add_argument("--retain-min", type=int, help=f"keep at least N {what}")
        expire.add_argument("--retain-max", type=int, help=f"keep at most N {what}")
        expire.add_argument("--older-than", help="expire only past this age (e.g. 1h)")
        expire.add_argument("--max-deletes", type=int, help=f"expire at most N {what} per run")
        expire.add_argument("--dry-run", action="store_true", help="list, delete nothing")
        expire.set_defaults(handler=cmd_expire)
    manifests = commands.add_parser("compact-manifests", help="merge small manifests")
    _common(manifests)
    manifests.add_argument("--full", action="store_true", help="full compaction at any size")
    manifests.add_argument("--dry-run", action="store_true", help="estimate, write nothing")
    manifests.set_defaults(handler=cmd_compact_manifests)
    orphans = commands.add_parser("remove-orphans", help="delete old unreferenced files")
    _common(orphans)
    orphans.add_argument("--older-than", help="only files older than this (default 1d)")
    orphans.add_argument("--dry-run", action="store_true", help="list, delete nothing")
    orphans.set_defaults(handler=cmd_remove_orphans)


def cmd_doctor(args: argparse.Namespace) -> tuple[dict, str]:
    """Check every snapshot and tag for missing files; --rollback-unreadable removes a broken
    newest run of snapshots. Exit 0 when the table is healthy or was repaired; exit 1 when it
    is unhealthy and not repaired (the report is still printed) or a rollback is refused."""
    from dagster_paimon.errors import TableUnhealthyError
    from dagster_paimon.maintenance.doctor import doctor

    result = doctor(table_of(args), repair=args.rollback_unreadable)
    if result.healthy:
        return result.to_dict(), result.summary()
    print(json.dumps(result.to_dict()) if args.json else result.summary())
    raise TableUnhealthyError("; ".join(filter(None, [result.verdict(), result.repair()])))


def _add_doctor_command(commands: argparse._SubParsersAction) -> None:
    """doctor (missing files; optional rollback of unreadable newest snapshots)."""
    doctor = commands.add_parser(
        "doctor",
        help="find missing files; exit 1 if the table is unhealthy and not repaired",
        description="Check that every snapshot and tag of the table can be read. Exit 0 when "
        "it is healthy or was repaired, 1 when it is unhealthy and not repaired (the report "
        "is still printed) or a rollback is refused.",
    )
    _common(doctor)
    doctor.add_argument(
        "--rollback-unreadable",
        action="store_true",
        help="delete the newest snapshots if they are unreadable and an older one is not; "
        "never deletes manifests or data files",
    )
    doctor.set_defaults(handler=cmd_doctor)


def _common(parser: argparse.ArgumentParser) -> None:
    """Flags every command takes."""
    parser.add_argument("--warehouse", required=True, help="warehouse path or s3://bucket/prefix")
    parser.add_argument("--s3-endpoint", help="S3-compatible endpoint (env PAIMON_S3_ENDPOINT)")
    parser.add_argument("--s3-region", help="S3 region (env PAIMON_S3_REGION)")
    parser.add_argument(
        "--s3-path-style",
        action="store_true",
        help="path-style bucket addressing, as MinIO needs (env PAIMON_S3_PATH_STYLE)",
    )
    parser.add_argument("--table", required=True, help="DB.TABLE")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, one sub-command per operation."""
    parser = argparse.ArgumentParser(
        prog="dagster-paimon", description="Operate Apache Paimon primary-key tables."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    health = commands.add_parser("health", help="sorted runs and size amplification per bucket")
    _common(health)
    health.add_argument("--partition", help="only buckets of this partition, K=V[,K=V]")
    health.set_defaults(handler=cmd_health)
    compact = commands.add_parser("compact", help="universal (or full) compaction of buckets")
    _common(compact)
    compact.add_argument("--partition", help="only buckets of this partition, K=V[,K=V]")
    compact.add_argument("--full", action="store_true", help="compact every bucket fully")
    compact.add_argument("--dry-run", action="store_true", help="print the plan, write nothing")
    compact.add_argument(
        "--executor", choices=("local", "spark"), default="local", help="where tasks run"
    )
    _spark_flags(compact)
    compact.set_defaults(handler=cmd_compact)
    _add_spark_commands(commands)
    _add_maintenance_commands(commands)
    _add_doctor_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; exit 0 on success, 2 on bad usage or input, 75 when the store kept
    failing transiently through every retry and running it again is safe, 1 on other failures
    (an append whose snapshot may have landed among them: the message says what to check)."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(message)s",
        stream=sys.stderr,
    )
    handler: Callable[[argparse.Namespace], tuple[dict, str]] = args.handler
    try:
        payload, text = handler(args)
    except Exception as e:
        transient = transient_cause(e)
        if transient is None:
            return _failed(args.command, e)
        print(f"dagster-paimon {args.command}: failed transiently: {transient}", file=sys.stderr)
        return EXIT_TRANSIENT if transient.retry_safe else EXIT_FAILURE
    print(json.dumps(payload, sort_keys=False) if args.json else text)
    return EXIT_OK


def _failed(command: str, error: Exception) -> int:
    """Report a failure on stderr in one line; its exit code by kind."""
    try:
        raise error
    except INPUT_ERRORS as e:
        print(f"dagster-paimon {command}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except DagsterPaimonError as e:
        print(f"dagster-paimon {command}: failed: {e}", file=sys.stderr)
        return EXIT_FAILURE
    except Exception as e:
        log.exception("unexpected failure")
        print(f"dagster-paimon {command}: failed: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
