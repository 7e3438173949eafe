"""The maintenance commands, each over the table's front door (`PaimonTable`): expiry of
snapshots, changelogs and partitions, manifest compaction, orphan removal, the maintenance
pass, rollback. Their flags come from the operations' declarations (operations.py)."""

from __future__ import annotations

from typing import Any

import click

from dagster_paimon.cli.command import operation_command
from dagster_paimon.cli.shared import Shared


def _check_retention(retain_min: int | None, retain_max: int | None) -> None:
    """--retain-max below --retain-min is a usage error, before the table is opened."""
    if retain_min is not None and retain_max is not None and retain_max < retain_min:
        raise click.BadParameter(
            f"{retain_max} is less than --retain-min {retain_min}", param_hint="'--retain-max'"
        )


@operation_command(
    "expire-snapshots",
    "dagster-paimon expire-snapshots --table db.orders --retain-min 10 --older-than 7d",
)
def expire_snapshots(shared: Shared, **given: Any) -> None:
    """Expire snapshots by the table's snapshot.* retention options, the flags given replacing
    them for this run; tags, consumers and branches keep what they reference."""
    _check_retention(given["retain_min"], given["retain_max"])
    shared.output.result(shared.paimon_table().expire_snapshots(**given))


@operation_command(
    "expire-changelogs",
    "dagster-paimon expire-changelogs --table db.orders --retain-max 100 --dry-run",
)
def expire_changelogs(shared: Shared, **given: Any) -> None:
    """Expire long-lived changelogs by the table's changelog.* retention options (falling back
    to snapshot.*), the flags given replacing them for this run."""
    _check_retention(given["retain_min"], given["retain_max"])
    shared.output.result(shared.paimon_table().expire_changelogs(**given))


@operation_command(
    "expire-partitions",
    "dagster-paimon expire-partitions --table db.orders --older-than 30d --dry-run",
)
def expire_partitions(shared: Shared, **given: Any) -> None:
    """Drop expired partitions in an OVERWRITE snapshot, as Paimon's partition expiry does,
    by the table's partition.* options, the flags given replacing them for this run. The
    files go later with expire-snapshots. partition.expiration-check-interval only paces
    Java's check after each commit: this command always checks."""
    shared.output.result(shared.paimon_table().expire_partitions(**given))


@operation_command("compact-manifests", "dagster-paimon compact-manifests --table db.orders --full")
def compact_manifests(shared: Shared, **given: Any) -> None:
    """Merge the latest snapshot's manifests (minor, by the table's manifest.* thresholds, or
    --full) and commit them in a new snapshot."""
    shared.output.result(shared.paimon_table().compact_manifests(**given))


@operation_command(
    "remove-orphans",
    "dagster-paimon remove-orphans --table db.orders --older-than 3d --dry-run",
)
def remove_orphans(shared: Shared, **given: Any) -> None:
    """Delete files that no snapshot, tag, changelog or branch references and that are older
    than --older-than (younger ones may belong to a commit in progress), including the temp
    files (.<name>.<uuid>.tmp) a killed metadata write left in snapshot/, changelog/, tag/,
    consumer/ or schema/."""
    shared.output.result(shared.paimon_table().remove_orphans(**given))


@operation_command(
    "maintain",
    "dagster-paimon maintain --table db.orders --option partition.expiration-time=90d --dry-run",
)
def maintain(shared: Shared, **given: Any) -> None:
    """Run what Paimon's writers maintain after a commit, in their order: automatic tag
    creation, tag expiry, partition expiry, consumer expiry, snapshot expiry. A step the
    options do not ask for (no tag.automatic-creation, partition.expiration-time,
    consumer.expiration-time) is skipped; a failing step stops the pass, earlier steps'
    changes stay. --option overrides one of the options the steps read for this pass only;
    an unknown or malformed one exits 2 before any step."""
    shared.output.result(shared.paimon_table().maintain(**given))


@operation_command(
    "rollback",
    "dagster-paimon rollback --table db.orders --tag daily-2024-06-01 --dry-run",
)
def rollback(shared: Shared, **given: Any) -> None:
    """Roll the table back to exactly one of --snapshot, --tag or --timestamp: newer snapshots,
    long-lived changelogs and tags are removed with the files only they used."""
    targets = (given["snapshot_id"], given["tag"], given["timestamp"])
    if sum(x is not None for x in targets) != 1:
        raise click.UsageError("give exactly one of --snapshot, --tag or --timestamp")
    shared.output.result(shared.paimon_table().rollback(**given))
