"""The consumer commands, over the table's front door: list, expire, clear, reset."""

from __future__ import annotations

from typing import Any

from dagster_paimon.cli.command import operation_command
from dagster_paimon.cli.shared import Shared


@operation_command("list-consumers", "dagster-paimon list-consumers --table db.orders")
def list_consumers(shared: Shared) -> None:
    """List the table's streaming consumers (consumer/consumer-<id>), the snapshot each reads
    next and when it was last written; snapshot expiry keeps the oldest of them."""
    shared.output.result(shared.paimon_table().consumers())


@operation_command(
    "expire-consumers",
    "dagster-paimon expire-consumers --table db.orders --older-than 7d --dry-run",
)
def expire_consumers(shared: Shared, **given: Any) -> None:
    """Remove consumers whose file was last written more than --older-than (default: the
    table's consumer.expiration-time) ago, so a reader that left stops holding back snapshot
    expiry."""
    shared.output.result(shared.paimon_table().expire_consumers(**given))


@operation_command(
    "clear-consumers",
    "dagster-paimon clear-consumers --table db.orders --including 'flink-.*' --excluding 'prod'",
)
def clear_consumers(shared: Shared, **given: Any) -> None:
    """Remove the consumers whose id fully matches --including and not --excluding (Paimon's
    clear_consumers procedure)."""
    shared.output.result(shared.paimon_table().clear_consumers(**given))


@operation_command(
    "reset-consumer",
    "dagster-paimon reset-consumer --table db.orders --consumer flink-a --next-snapshot 42",
)
def reset_consumer(shared: Shared, **given: Any) -> None:
    """Make an existing consumer read snapshot N next; the snapshot must exist."""
    shared.output.result(shared.paimon_table().reset_consumer(**given))
