"""The consumer commands, over the table's front door: list, expire, clear, reset."""

from __future__ import annotations

from datetime import timedelta

import click

from dagster_paimon.cli.command import command
from dagster_paimon.cli.params import COUNT, Duration
from dagster_paimon.cli.shared import Shared


@command(
    "list-consumers",
    "list streaming consumers and the snapshot each reads next",
    "dagster-paimon list-consumers --table db.orders",
)
def list_consumers(shared: Shared) -> None:
    """List the table's streaming consumers (consumer/consumer-<id>), the snapshot each reads
    next and when it was last written; snapshot expiry keeps the oldest of them."""
    shared.output.result(shared.paimon_table().consumers())


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
def expire_consumers(shared: Shared, expiration_time: timedelta | None, dry_run: bool) -> None:
    """Remove consumers whose file was last written more than the expiration time ago, so a
    reader that left stops holding back snapshot expiry."""
    result = shared.paimon_table().expire_consumers(
        expiration_time=expiration_time, dry_run=dry_run
    )
    shared.output.result(result)


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
def clear_consumers(shared: Shared, including: str, excluding: str | None, dry_run: bool) -> None:
    """Remove the consumers whose id fully matches --including and not --excluding (Paimon's
    clear_consumers procedure)."""
    result = shared.paimon_table().clear_consumers(
        including=including, excluding=excluding, dry_run=dry_run
    )
    shared.output.result(result)


@command(
    "reset-consumer",
    "move a consumer to another snapshot",
    "dagster-paimon reset-consumer --table db.orders --consumer flink-a --next-snapshot 42",
)
@click.option("--consumer", "consumer_id", required=True, metavar="ID", help="the consumer id")
@click.option(
    "--next-snapshot", type=COUNT, required=True, metavar="N", help="the snapshot to read next"
)
def reset_consumer(shared: Shared, consumer_id: str, next_snapshot: int) -> None:
    """Make an existing consumer read snapshot N next; the snapshot must exist."""
    shared.output.result(shared.paimon_table().reset_consumer(consumer_id, next_snapshot))
