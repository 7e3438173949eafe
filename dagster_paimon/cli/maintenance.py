"""The maintenance commands, each over the table's front door (`PaimonTable`): expiry of
snapshots, changelogs and partitions, manifest compaction, orphan removal, the maintenance
pass, rollback."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Literal, TypeVar

import click

from dagster_paimon.cli.command import command
from dagster_paimon.cli.params import COUNT, Duration, OptionPair
from dagster_paimon.cli.shared import Shared

F = TypeVar("F", bound=Callable[..., None])


def retention_flags(what: str) -> Callable[[F], F]:
    """--retain-min, --retain-max, --older-than, --max-deletes, --dry-run."""

    def decorate(f: F) -> F:
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


def _check_retention(retain_min: int | None, retain_max: int | None) -> None:
    """--retain-max below --retain-min is a usage error, before the table is opened."""
    if retain_min is not None and retain_max is not None and retain_max < retain_min:
        raise click.BadParameter(
            f"{retain_max} is less than --retain-min {retain_min}", param_hint="'--retain-max'"
        )


@command(
    "expire-snapshots",
    "expire snapshots by retention, keeping tags",
    "dagster-paimon expire-snapshots --table db.orders --retain-min 10 --older-than 7d",
)
@retention_flags("snapshots")
def expire_snapshots(
    shared: Shared,
    retain_min: int | None,
    retain_max: int | None,
    older_than: timedelta | None,
    max_deletes: int | None,
    dry_run: bool,
) -> None:
    """Expire snapshots by the table's snapshot.* retention options, the flags given replacing
    them for this run; tags, consumers and branches keep what they reference."""
    _check_retention(retain_min, retain_max)
    result = shared.paimon_table().expire_snapshots(
        older_than=older_than,
        retain_min=retain_min,
        retain_max=retain_max,
        max_deletes=max_deletes,
        dry_run=dry_run,
    )
    shared.output.result(result)


@command(
    "expire-changelogs",
    "expire long-lived changelogs by retention",
    "dagster-paimon expire-changelogs --table db.orders --retain-max 100 --dry-run",
)
@retention_flags("changelogs")
def expire_changelogs(
    shared: Shared,
    retain_min: int | None,
    retain_max: int | None,
    older_than: timedelta | None,
    max_deletes: int | None,
    dry_run: bool,
) -> None:
    """Expire long-lived changelogs by the table's changelog.* retention options (falling back
    to snapshot.*), the flags given replacing them for this run."""
    _check_retention(retain_min, retain_max)
    result = shared.paimon_table().expire_changelogs(
        older_than=older_than,
        retain_min=retain_min,
        retain_max=retain_max,
        max_deletes=max_deletes,
        dry_run=dry_run,
    )
    shared.output.result(result)


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
) -> None:
    """Drop expired partitions in an OVERWRITE snapshot, as Paimon's partition expiry does,
    by the table's partition.* options, the flags given replacing them for this run. The
    files go later with expire-snapshots. partition.expiration-check-interval only paces
    Java's check after each commit: this command always checks."""
    result = shared.paimon_table().expire_partitions(
        expiration_time=older_than, strategy=strategy, max_num=max_num, dry_run=dry_run
    )
    shared.output.result(result)


@command(
    "compact-manifests",
    "merge small manifests",
    "dagster-paimon compact-manifests --table db.orders --full",
)
@click.option("--full", is_flag=True, help="full compaction at any size")
@click.option("--dry-run", is_flag=True, help="estimate, write nothing")
def compact_manifests(shared: Shared, full: bool, dry_run: bool) -> None:
    """Merge the latest snapshot's manifests (minor, by the table's manifest.* thresholds, or
    --full) and commit them in a new snapshot."""
    shared.output.result(shared.paimon_table().compact_manifests(full=full, dry_run=dry_run))


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
def remove_orphans(shared: Shared, older_than: timedelta, dry_run: bool) -> None:
    """Delete files that no snapshot, tag, changelog or branch references and that are older
    than --older-than (younger ones may belong to a commit in progress), including the temp
    files (.<name>.<uuid>.tmp) a killed metadata write left in snapshot/, changelog/, tag/,
    consumer/ or schema/."""
    result = shared.paimon_table().remove_orphans(older_than=older_than, dry_run=dry_run)
    shared.output.result(result)


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
def maintain(shared: Shared, options: tuple[tuple[str, str], ...], dry_run: bool) -> None:
    """Run what Paimon's writers maintain after a commit, in their order: automatic tag
    creation, tag expiry, partition expiry, consumer expiry, snapshot expiry. A step the
    options do not ask for (no tag.automatic-creation, partition.expiration-time,
    consumer.expiration-time) is skipped; a failing step stops the pass, earlier steps'
    changes stay. --option overrides one of the options the steps read for this pass only;
    an unknown or malformed one exits 2 before any step."""
    shared.output.result(shared.paimon_table().maintain(options=dict(options), dry_run=dry_run))


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
) -> None:
    """Roll the table back to exactly one of --snapshot, --tag or --timestamp: newer snapshots,
    long-lived changelogs and tags are removed with the files only they used."""
    when = _timestamp(timestamp)
    if sum(x is not None for x in (snapshot_id, tag, when)) != 1:
        raise click.UsageError("give exactly one of --snapshot, --tag or --timestamp")
    result = shared.paimon_table().rollback(
        snapshot_id=snapshot_id, tag=tag, timestamp=when, dry_run=dry_run
    )
    shared.output.result(result)
