"""Streaming consumers (Java's ConsumerManager): list, expire by age, reset, clear by pattern.

A consumer is `consumer/consumer-<id>` holding `{"nextSnapshot": N}`: the snapshot a streaming
reader reads next, which snapshot expiry keeps. Expiry removes consumers whose file was last
written more than `consumer.expiration-time` ago (the file's modification time, as Java reads
it); clearing removes those whose id fully matches `including` and not `excluding`; resetting
writes a new position. Each removal deletes only consumer files: no snapshot or data file.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, replace
from datetime import timedelta

from dagster_paimon.errors import ConsumerNotFoundError, InvalidArgumentError
from dagster_paimon.failpoints import CONSUMER_RESET, CONSUMERS_REMOVED, failpoint
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.maintenance.context import DEFAULT_CONTEXT, MaintenanceContext, table_name
from dagster_paimon.maintenance.options import consumer_expiration_ms
from dagster_paimon.results import DETAIL, METRIC, Reported, run_planned, timedelta_ms
from dagster_paimon.snapshot.metadata import CONSUMER_PREFIX, Consumer
from dagster_paimon.snapshot.resolve import resolve_snapshot
from dagster_paimon.storage.files import delete_logged
from dagster_paimon.storage.snapshots import replace_file
from dagster_paimon.unsupported import CONSUMERS, check_supported_layout

EXPIRE = "expire"
CLEAR = "clear"


@dataclass(frozen=True, kw_only=True)
class ConsumerList(Reported):
    """Every consumer of a table and the snapshot each reads next."""

    table: str
    consumers: tuple[Consumer, ...]
    seconds: float = 0.0

    FIELDS = {"table": DETAIL, "consumers": METRIC, "min_next_snapshot": METRIC}

    @property
    def min_next_snapshot(self) -> int | None:
        """The oldest snapshot a consumer still needs (snapshot expiry stops below it)."""
        return min((c.next_snapshot for c in self.consumers), default=None)

    def summary(self) -> str:
        """One line, then one per consumer."""
        if not self.consumers:
            return f"{self.table}: no consumers"
        lines = [f"{self.table}: {len(self.consumers)} consumers"]
        for c in self.consumers:
            when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(c.modified_ms / 1000))
            lines.append(f"  {c.consumer_id}: next snapshot {c.next_snapshot} (written {when})")
        return "\n".join(lines)


@dataclass(frozen=True, kw_only=True)
class ConsumerRemovalResult(Reported):
    """Consumers an expiry or a clear removed (or, dry, would remove)."""

    table: str
    action: str
    removed: tuple[str, ...]
    kept: tuple[str, ...]
    dry_run: bool
    expiration_ms: int | None = None
    seconds: float = 0.0

    FIELDS = {
        "table": DETAIL,
        "action": DETAIL,
        "removed": METRIC,
        "kept": METRIC,
        "expiration_ms": DETAIL,
        "dry_run": DETAIL,
        "seconds": METRIC,
    }

    def summary(self) -> str:
        """One human line."""
        if self.action == EXPIRE and self.expiration_ms is None:
            return f"{self.table}: consumer.expiration-time is not set; no consumer expires"
        verb = "would remove" if self.dry_run else "removed"
        names = f" ({', '.join(self.removed)})" if self.removed else ""
        return (
            f"{self.table}: {self.action}: {verb} {len(self.removed)} consumers{names}, "
            f"{len(self.kept)} kept"
        )


@dataclass(frozen=True)
class ConsumerRemovalPlan:
    """The consumer files to delete; previewing or executing it."""

    table: str
    action: str
    removed: tuple[Consumer, ...]
    kept: tuple[str, ...]
    expiration_ms: int | None = None

    def preview(self) -> ConsumerRemovalResult:
        """What executing the plan would remove."""
        return ConsumerRemovalResult(
            table=self.table,
            action=self.action,
            removed=tuple(c.consumer_id for c in self.removed),
            kept=self.kept,
            expiration_ms=self.expiration_ms,
            dry_run=True,
        )


@dataclass(frozen=True, kw_only=True)
class ConsumerResetResult(Reported):
    """A consumer moved to a new next snapshot."""

    table: str
    consumer_id: str
    previous: int
    next_snapshot: int
    seconds: float = 0.0

    FIELDS = {
        "table": DETAIL,
        "consumer_id": DETAIL,
        "previous": DETAIL,
        "next_snapshot": METRIC,
        "seconds": METRIC,
    }

    def summary(self) -> str:
        """One human line."""
        return (
            f"{self.table}: consumer {self.consumer_id} now reads snapshot "
            f"{self.next_snapshot} next (was {self.previous})"
        )


def list_consumers(
    table: FileStoreTable, *, context: MaintenanceContext = DEFAULT_CONTEXT
) -> ConsumerList:
    """Every consumer of the table's main branch; reads only.

    Raises MaintenanceAbortedError (not input) for a consumer file that cannot be decoded.
    """
    start = time.perf_counter()
    found = context.metadata(table).consumers()
    return ConsumerList(
        table=table_name(table), consumers=tuple(found), seconds=time.perf_counter() - start
    )


def plan_consumer_expiry(
    table: FileStoreTable,
    *,
    expiration_ms: int | None = None,
    context: MaintenanceContext = DEFAULT_CONTEXT,
) -> ConsumerRemovalPlan:
    """Consumers whose file was last written before now - expiration (by default the table's
    consumer.expiration-time; unset, none expires); reads only."""
    check_supported_layout(table.table_schema, operation=CONSUMERS)
    if expiration_ms is None:
        expiration_ms = consumer_expiration_ms(table.table_schema.options)
    consumers = context.metadata(table).consumers()
    if expiration_ms is None:
        return ConsumerRemovalPlan(
            table_name(table), EXPIRE, (), tuple(c.consumer_id for c in consumers)
        )
    cutoff = context.clock.now_ms() - expiration_ms
    removed = tuple(c for c in consumers if c.modified_ms < cutoff)
    kept = tuple(c.consumer_id for c in consumers if c.modified_ms >= cutoff)
    return ConsumerRemovalPlan(table_name(table), EXPIRE, removed, kept, expiration_ms)


def _pattern(text: str | None, name: str) -> re.Pattern[str] | None:
    """A consumer-id pattern (Java's regular expressions, matched against the whole id)."""
    if text is None or not text.strip():
        return None
    try:
        return re.compile(text)
    except re.error as e:
        raise InvalidArgumentError(f"{name} is not a valid regular expression: {e}") from e


def plan_consumer_clear(
    table: FileStoreTable,
    *,
    including: str = ".*",
    excluding: str | None = None,
    context: MaintenanceContext = DEFAULT_CONTEXT,
) -> ConsumerRemovalPlan:
    """Consumers whose id fully matches `including` and not `excluding`; reads only.

    Raises InvalidArgumentError for a malformed pattern.
    """
    check_supported_layout(table.table_schema, operation=CONSUMERS)
    include = _pattern(including, "including") or re.compile(".*")
    exclude = _pattern(excluding, "excluding")
    consumers = context.metadata(table).consumers()

    def cleared(c: Consumer) -> bool:
        hit = include.fullmatch(c.consumer_id) is not None
        return hit and (exclude is None or exclude.fullmatch(c.consumer_id) is None)

    removed = tuple(c for c in consumers if cleared(c))
    kept = tuple(c.consumer_id for c in consumers if not cleared(c))
    return ConsumerRemovalPlan(table_name(table), CLEAR, removed, kept)


def execute_consumer_removal(
    table: FileStoreTable,
    plan: ConsumerRemovalPlan,
    *,
    context: MaintenanceContext = DEFAULT_CONTEXT,
) -> ConsumerRemovalResult:
    """Delete the plan's consumer files (one already gone counts as removed)."""
    start = time.perf_counter()
    delete_logged(context.table_files(table), [c.path for c in plan.removed], "consumers")
    failpoint(CONSUMERS_REMOVED)
    return replace(plan.preview(), dry_run=False, seconds=time.perf_counter() - start)


def expire_consumers(
    table: FileStoreTable,
    *,
    expiration_time: timedelta | None = None,
    dry_run: bool = False,
    context: MaintenanceContext = DEFAULT_CONTEXT,
) -> ConsumerRemovalResult:
    """Remove consumers not written for `expiration_time` (None: the table's
    consumer.expiration-time; when that is unset too, nothing expires).

    Raises InvalidArgumentError (a negative or non-timedelta duration), InvalidOptionError (a
    malformed consumer.expiration-time); not input: MaintenanceAbortedError (an undecodable
    consumer file), TransientStoreError.
    """
    expiration_ms = None
    if expiration_time is not None:
        expiration_ms = timedelta_ms(expiration_time, "expiration_time")
    return run_planned(
        lambda: plan_consumer_expiry(table, expiration_ms=expiration_ms, context=context),
        lambda plan: execute_consumer_removal(table, plan, context=context),
        dry_run=dry_run,
    )


def clear_consumers(
    table: FileStoreTable,
    *,
    including: str = ".*",
    excluding: str | None = None,
    dry_run: bool = False,
    context: MaintenanceContext = DEFAULT_CONTEXT,
) -> ConsumerRemovalResult:
    """Remove the consumers whose id fully matches `including` and not `excluding`
    (Java's clear_consumers procedure).

    Raises InvalidArgumentError (a malformed pattern); not input: MaintenanceAbortedError,
    TransientStoreError.
    """
    return run_planned(
        lambda: plan_consumer_clear(
            table, including=including, excluding=excluding, context=context
        ),
        lambda plan: execute_consumer_removal(table, plan, context=context),
        dry_run=dry_run,
    )


def reset_consumer(
    table: FileStoreTable,
    consumer_id: str,
    next_snapshot: int,
    *,
    context: MaintenanceContext = DEFAULT_CONTEXT,
) -> ConsumerResetResult:
    """Make a consumer read `next_snapshot` next (Java's reset_consumer procedure).

    The snapshot must exist, as Java checks. Unlike Java, an unknown consumer is not created:
    a mistyped id would otherwise hold back snapshot expiry from then on.

    Raises InvalidArgumentError (an empty id or a non-positive snapshot), ConsumerNotFoundError,
    SnapshotNotFoundError; not input: TransientStoreError.
    """
    start = time.perf_counter()
    check_supported_layout(table.table_schema, operation=CONSUMERS)
    if not isinstance(consumer_id, str) or not consumer_id or "/" in consumer_id:
        raise InvalidArgumentError(f"consumer id must be a non-empty name, got {consumer_id!r}")
    if isinstance(next_snapshot, bool) or not isinstance(next_snapshot, int) or next_snapshot < 1:
        raise InvalidArgumentError(f"next snapshot must be an int >= 1, got {next_snapshot!r}")
    meta = context.metadata(table)
    current = {c.consumer_id: c for c in meta.consumers()}.get(consumer_id)
    if current is None:
        raise ConsumerNotFoundError(
            f"consumer {consumer_id!r} of {table_name(table)} does not exist; nothing was changed"
        )
    resolve_snapshot(table, next_snapshot)
    path = f"{meta.main.dir('consumer')}/{CONSUMER_PREFIX}{consumer_id}"
    # Java's pretty-printed Consumer JSON
    replace_file(meta.file_io, path, f'{{\n  "nextSnapshot" : {next_snapshot}\n}}')
    failpoint(CONSUMER_RESET)
    return ConsumerResetResult(
        table=table_name(table),
        consumer_id=consumer_id,
        previous=current.next_snapshot,
        next_snapshot=next_snapshot,
        seconds=time.perf_counter() - start,
    )
