"""The tag commands, over the table's front door: list, create, delete, expire, auto-tag."""

from __future__ import annotations

from datetime import timedelta

import click

from dagster_paimon.cli.command import command
from dagster_paimon.cli.params import Duration
from dagster_paimon.cli.shared import Shared


@command("tags", "list the table's tags", "dagster-paimon tags --table db.orders --json")
def tags(shared: Shared) -> None:
    """List the table's tags, by snapshot id: name, snapshot, and retention if it has one."""
    shared.output.tags(shared.identifier, shared.paimon_table().list_tags())


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
) -> None:
    """Create a tag on a snapshot (the latest by default). A tag that exists is an input error
    (exit 2), as in Paimon."""
    result = shared.paimon_table().create_tag(
        name, snapshot_id=snapshot_id, time_retained=time_retained
    )
    shared.output.result(result)


@command(
    "delete-tag",
    "delete a tag and the files only it kept",
    "dagster-paimon delete-tag --table db.orders --name release-1 --dry-run",
)
@click.option("--name", required=True, help="the tag to delete")
@click.option("--dry-run", is_flag=True, help="report, delete nothing")
def delete_tag(shared: Shared, name: str, dry_run: bool) -> None:
    """Delete a tag; if its snapshot was expired, also the data, manifest, index and statistics
    files no remaining snapshot, tag, changelog or branch uses. An unknown tag exits 2."""
    shared.output.result(shared.paimon_table().delete_tag(name, dry_run=dry_run))


@command(
    "expire-tags",
    "delete tags past their time retained",
    "dagster-paimon expire-tags --table db.orders --dry-run",
)
@click.option("--dry-run", is_flag=True, help="report, delete nothing")
def expire_tags(shared: Shared, dry_run: bool) -> None:
    """Delete every tag whose time retained (from its creation) has passed, with the files only
    it kept alive. Tags without a retention stay."""
    shared.output.result(shared.paimon_table().expire_tags(dry_run=dry_run))


@command(
    "auto-tag",
    "create the period tags Paimon's writers would",
    "dagster-paimon auto-tag --table db.orders --dry-run",
)
@click.option("--dry-run", is_flag=True, help="report, write and delete nothing")
def auto_tag(shared: Shared, dry_run: bool) -> None:
    """Do what Paimon's writers do after a commit: create a tag for every period that ended
    (tag.automatic-creation process-time, watermark or batch; tag.creation-period,
    tag.creation-delay, tag.period-formatter), delete the oldest auto tags beyond
    tag.num-retained-max, and expire tags by time retained."""
    shared.output.result(shared.paimon_table().create_automatic_tags(dry_run=dry_run))
