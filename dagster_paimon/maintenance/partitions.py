"""Partition expiry (Java's NormalPartitionExpire on a filesystem catalog): plan, then execute.

Which partitions expire follows release-2.0.0:

- `values-time` (the default) reads each partition's time from its values
  (`PartitionValuesTimeExpireStrategy`, `PartitionTimeExtractor`, partition_time.py) and expires
  it when `now - partition.expiration-time` is after that time. A partition whose time cannot be
  read (a value the formatter does not match, or a null) is skipped, as Java logs and skips it;
  the result lists it under `skipped_partitions` with the reason.
- `update-time` (`PartitionUpdateTimeExpireStrategy`) expires a partition when
  `now - partition.expiration-time` is after its last file creation time: the newest creation
  time over every entry of the latest snapshot's data manifests for that partition, ADD and
  DELETE alike, as Java's `PartitionEntry` merge computes it; only partitions with live files
  count.

`now` is the local wall clock (Java's `LocalDateTime.now()`). The expired partitions are sorted
by their comma-joined values as strings and the first `partition.expiration-max-num` (default
100) are dropped; the rest wait for the next run. They are dropped as a filesystem catalog does
(`FileStoreCommit.dropPartitions`): an OVERWRITE snapshot deleting every live file of those
partitions (in batches of `partition.expiration-batch-size`, one snapshot each, when set). The
data files stay until snapshot expiry removes them with the snapshots that still read them.

`partition.expiration-check-interval` only paces Java's check after each commit; a dedicated run
always checks (the option is read, so a malformed value is refused, but not applied).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta
from typing import Literal

from dagster_paimon.commit.producers import OverwriteProducer
from dagster_paimon.commit.users import new_commit_user
from dagster_paimon.errors import (
    CorruptMetadataError,
    InvalidArgumentError,
    InvalidTableSpecError,
)
from dagster_paimon.format.manifest import (
    ManifestEntry,
    TableManifests,
)
from dagster_paimon.format.metadata import Snapshot
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.io.filekind import ADD
from dagster_paimon.maintenance.context import DEFAULT_CONTEXT, MaintenanceContext, table_name
from dagster_paimon.maintenance.partition_time import (
    TIMESTAMP_FORMATTER,
    TIMESTAMP_PATTERN,
    PartitionTimeExtractor,
    UnparseableTime,
)
from dagster_paimon.options import (
    PARTITION_DEFAULT_NAME,
    at_least,
    choice,
    duration_ms,
    read_option,
)
from dagster_paimon.partition import DEFAULT_PARTITION_NAME, Partition
from dagster_paimon.results import DETAIL, METRIC, Reported, run_planned, timedelta_ms
from dagster_paimon.storage.pool import parallel_map
from dagster_paimon.unsupported import PARTITION_EXPIRY, check_supported_layout

log = logging.getLogger(__name__)

EXPIRATION_TIME = "partition.expiration-time"
CHECK_INTERVAL = "partition.expiration-check-interval"
STRATEGY = "partition.expiration-strategy"
MAX_NUM = "partition.expiration-max-num"
BATCH_SIZE = "partition.expiration-batch-size"

VALUES_TIME, UPDATE_TIME = STRATEGIES = ("values-time", "update-time")
Strategy = Literal["values-time", "update-time"]
DEFAULT_MAX_NUM = 100
DEFAULT_CHECK_INTERVAL_MS = 3_600_000


@dataclass(frozen=True)
class PartitionExpiryConfig:
    """The partition.* options of one run, arguments replacing the table's."""

    expiration_ms: int
    check_interval_ms: int
    strategy: str
    max_num: int
    batch_size: int | None
    extractor: PartitionTimeExtractor

    @classmethod
    def of(
        cls,
        options: Mapping[str, str],
        *,
        expiration_time: timedelta | None = None,
        strategy: str | None = None,
        max_num: int | None = None,
    ) -> PartitionExpiryConfig:
        """Read and check the options; raises InvalidOptionError, InvalidArgumentError."""
        if expiration_time is not None:
            expiration_ms = timedelta_ms(expiration_time, "expiration_time")
        else:
            configured = read_option(options, EXPIRATION_TIME, duration_ms, None)
            if configured is None:
                raise InvalidArgumentError(
                    f"no expiration time: the table sets no '{EXPIRATION_TIME}' and none was "
                    "given (expiration_time=, or --older-than on the command line)"
                )
            expiration_ms = configured
        if strategy is not None and strategy not in STRATEGIES:
            raise InvalidArgumentError(
                f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}"
            )
        if max_num is not None and (
            isinstance(max_num, bool) or not isinstance(max_num, int) or max_num < 1
        ):
            raise InvalidArgumentError(f"max_num must be an int >= 1, got {max_num!r}")
        chosen = strategy or read_option(options, STRATEGY, choice(STRATEGIES), VALUES_TIME)
        extractor = PartitionTimeExtractor()
        if chosen == VALUES_TIME:
            extractor = PartitionTimeExtractor.of(
                options.get(TIMESTAMP_PATTERN), options.get(TIMESTAMP_FORMATTER)
            )
        return cls(
            expiration_ms=expiration_ms,
            check_interval_ms=read_option(
                options, CHECK_INTERVAL, duration_ms, DEFAULT_CHECK_INTERVAL_MS
            ),
            strategy=chosen,
            max_num=max_num or read_option(options, MAX_NUM, at_least(1), DEFAULT_MAX_NUM),
            batch_size=read_option(options, BATCH_SIZE, at_least(1), None),
            extractor=extractor,
        )


@dataclass(frozen=True)
class PartitionState:
    """One partition of the latest snapshot as Java's PartitionEntry sums it."""

    partition: Partition
    file_count: int = 0
    last_creation_ms: int | None = None


@dataclass(frozen=True, kw_only=True)
class PartitionExpiryResult(Reported):
    """Which partitions a run dropped (or, dry, would drop), which it skipped and why."""

    table: str
    strategy: str
    expire_before: str
    expired_partitions: tuple[str, ...]
    skipped_partitions: Mapping[str, str] = field(default_factory=dict)
    deferred_partitions: int = 0
    snapshot_ids: tuple[int, ...] = ()
    dry_run: bool
    seconds: float = 0.0

    FIELDS = {
        "table": DETAIL,
        "strategy": DETAIL,
        "expire_before": DETAIL,
        "expired_partitions": METRIC,
        "skipped_partitions": METRIC,
        "deferred_partitions": METRIC,
        "snapshot_id": DETAIL,
        "snapshot_ids": DETAIL,
        "dry_run": DETAIL,
        "seconds": METRIC,
    }

    @property
    def snapshot_id(self) -> int | None:
        """The last OVERWRITE snapshot this run committed (one per batch), None if none."""
        return self.snapshot_ids[-1] if self.snapshot_ids else None

    def summary(self) -> str:
        """One human line."""
        skipped = f"; skipped {len(self.skipped_partitions)}" if self.skipped_partitions else ""
        deferred = (
            f"; {self.deferred_partitions} more past max-num" if self.deferred_partitions else ""
        )
        if not self.expired_partitions:
            return (
                f"{self.table}: no partition to expire ({self.strategy}, before "
                f"{self.expire_before}){skipped}"
            )
        verb = "would drop" if self.dry_run else "dropped"
        shown = ", ".join(self.expired_partitions[:5])
        count = len(self.expired_partitions)
        more = f" and {count - 5} more" if count > 5 else ""
        where = f" in snapshot {self.snapshot_id}" if self.snapshot_id is not None else ""
        return (
            f"{self.table}: {verb} {count} partitions ({shown}{more}) "
            f"{self.strategy} before {self.expire_before}{where}{deferred}{skipped}"
        )


@dataclass(frozen=True)
class PartitionExpiryPlan:
    """The partitions to drop, in the order and batches Java drops them."""

    table: str
    strategy: str
    expire_before: datetime
    expired: tuple[Partition, ...] = ()
    skipped: Mapping[str, str] = field(default_factory=dict)
    deferred: int = 0
    batch_size: int | None = None
    base_snapshot_id: int | None = None

    @property
    def batches(self) -> list[tuple[Partition, ...]]:
        """One commit per batch (all in one without partition.expiration-batch-size)."""
        size = self.batch_size if self.batch_size and self.batch_size < len(self.expired) else 0
        if not size:
            return [self.expired] if self.expired else []
        return [self.expired[i : i + size] for i in range(0, len(self.expired), size)]

    def preview(self) -> PartitionExpiryResult:
        """What executing the plan would drop."""
        return PartitionExpiryResult(
            table=self.table,
            strategy=self.strategy,
            expire_before=self.expire_before.isoformat(sep=" "),
            expired_partitions=tuple(p.label() for p in self.expired),
            skipped_partitions=dict(self.skipped),
            deferred_partitions=self.deferred,
            dry_run=True,
        )


def _epoch_ms(local: datetime) -> int:
    """A local wall-clock time in the system zone as epoch milliseconds (Java's atZone)."""
    return int(local.astimezone().timestamp() * 1000)


def _entries(table: FileStoreTable, snapshot: Snapshot) -> list[ManifestEntry]:
    """Every entry of the snapshot's data manifests, ADD and DELETE, unmerged."""
    manifests = TableManifests(table)
    try:
        per_manifest = parallel_map(manifests.entries_of, manifests.all(snapshot))
    except (ValueError, EOFError, KeyError, TypeError, IndexError) as e:
        raise CorruptMetadataError(
            f"cannot read the manifests of snapshot {snapshot.id} of {table_name(table)}: "
            f"{type(e).__name__}: {e}"
        ) from e
    return [e for entries in per_manifest for e in entries]


def partition_states(table: FileStoreTable, snapshot: Snapshot | None) -> list[PartitionState]:
    """Partitions with live files, their file count and last file creation time (Java's
    FileStoreScan.readPartitionEntries: ADD counts +1, DELETE -1, the newest creation time of
    either kind)."""
    if snapshot is None:
        return []
    counts: dict[Partition, int] = {}
    created: dict[Partition, int | None] = {}
    for e in _entries(table, snapshot):
        p = Partition.of_row(e.partition)
        counts[p] = counts.get(p, 0) + (1 if e.kind == ADD else -1)
        ct = e.file.creation_time
        ms = None if ct is None else _epoch_ms(ct.to_local_date_time())
        old = created.get(p)
        created[p] = ms if old is None else (old if ms is None else max(old, ms))
    return [PartitionState(p, n, created.get(p)) for p, n in counts.items() if n > 0]


def _value_text(value: object) -> str:
    """A partition value as the time extractor reads it: DATE as ISO text (not Java's day
    number, apache/paimon#6439), everything else as its string."""
    if isinstance(value, date) and not isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def _sort_key(p: Partition, default_name: str) -> str:
    """Java sorts expired partitions by their values joined with ',' as one string, a null
    value spelled as `partition.default-name` (PartitionExpireStrategy.toPartitionValue)."""
    return ",".join(default_name if v is None else str(v) for v in p.values)


def _select(
    states: Sequence[PartitionState], config: PartitionExpiryConfig, expire_before: datetime
) -> tuple[list[Partition], dict[str, str]]:
    """The expired partitions (unsorted) and those skipped, with why."""
    expired: list[Partition] = []
    skipped: dict[str, str] = {}
    if config.strategy == UPDATE_TIME:
        cutoff_ms = _epoch_ms(expire_before)
        for s in states:
            if s.last_creation_ms is None:
                skipped[s.partition.label()] = "its files record no creation time"
            elif cutoff_ms > s.last_creation_ms:
                expired.append(s.partition)
        return expired, skipped
    extractor = config.extractor
    for s in states:
        p = s.partition
        used = p.values if extractor.pattern is not None else p.values[:1]
        if any(v is None for v in used):
            skipped[p.label()] = (
                "a null partition value has no time (drop it by hand, or use the update-time "
                "strategy)"
            )
            continue
        try:
            when = extractor.extract(p.names, [_value_text(v) for v in p.values])
        except UnparseableTime as e:
            skipped[p.label()] = f"cannot read its time with {extractor.described}: {e}"
            continue
        if expire_before > when:
            expired.append(p)
    for label, why in skipped.items():
        log.warning("partition %s cannot be expired by values-time: %s", label, why)
    return expired, skipped


def plan_partition_expiry(
    table: FileStoreTable,
    *,
    expiration_time: timedelta | None = None,
    strategy: Strategy | None = None,
    max_num: int | None = None,
    context: MaintenanceContext = DEFAULT_CONTEXT,
) -> PartitionExpiryPlan:
    """Which partitions of the latest snapshot expire now; reads only.

    Each argument left None keeps the table's option (partition.expiration-time,
    partition.expiration-strategy, partition.expiration-max-num). Raises InvalidArgumentError
    (no expiration time anywhere, a negative one, an unknown strategy, max_num < 1),
    InvalidOptionError (malformed partition.* options, a formatter we cannot read),
    InvalidTableSpecError (an unpartitioned table), UnsupportedLayoutError.
    """
    schema = table.table_schema
    name = table_name(table)
    check_supported_layout(schema, operation=PARTITION_EXPIRY)
    if not schema.partition_keys:
        raise InvalidTableSpecError(f"{name} is not partitioned: it has no partition to expire")
    config = PartitionExpiryConfig.of(
        schema.options, expiration_time=expiration_time, strategy=strategy, max_num=max_num
    )
    expire_before = context.clock.now() - timedelta(milliseconds=config.expiration_ms)
    latest = table.snapshot_manager().get_latest_snapshot()
    states = partition_states(table, latest)
    expired, skipped = _select(states, config, expire_before)
    default_name = str(schema.options.get(PARTITION_DEFAULT_NAME, DEFAULT_PARTITION_NAME))
    expired.sort(key=lambda p: _sort_key(p, default_name))
    chosen = expired[: config.max_num]
    log.info(
        "%s: %d of %d partitions expired by %s before %s (%d skipped, %d past max-num)",
        name,
        len(expired),
        len(states),
        config.strategy,
        expire_before,
        len(skipped),
        len(expired) - len(chosen),
    )
    return PartitionExpiryPlan(
        table=name,
        strategy=config.strategy,
        expire_before=expire_before,
        expired=tuple(chosen),
        skipped=skipped,
        deferred=len(expired) - len(chosen),
        batch_size=config.batch_size,
        base_snapshot_id=latest.id if latest else None,
    )


def execute_partition_expiry(
    table: FileStoreTable,
    plan: PartitionExpiryPlan,
    *,
    context: MaintenanceContext = DEFAULT_CONTEXT,
) -> PartitionExpiryResult:
    """Drop the plan's partitions: one OVERWRITE snapshot per batch deleting their live files.

    Each commit re-reads the live files of those partitions at the snapshot it lands on (a
    writer adding to a dropped partition meanwhile loses those rows too, as in Java). A batch
    whose partitions have no live file left commits nothing. Raises no input error;
    CommitConflictError, TransientStoreError leave the table as the last committed batch left it.
    """
    start = time.perf_counter()
    result = replace(plan.preview(), dry_run=False)
    committed: list[int] = []
    for batch in plan.batches:
        producer = OverwriteProducer(
            table,
            [],
            partitions=batch,
            commit_user=new_commit_user("expire-partitions"),
            snapshot_writer=context.snapshot_writer,
        )
        if producer.is_empty(table.snapshot_manager().get_latest_snapshot()):
            log.info(
                "%s: partitions %s have no live file left",
                plan.table,
                ", ".join(p.label() for p in batch),
            )
            continue
        outcome = producer.commit()
        committed.append(outcome.snapshot.id)
        log.info(
            "%s: dropped %d partitions in OVERWRITE snapshot %d",
            plan.table,
            len(batch),
            outcome.snapshot.id,
        )
    return replace(result, snapshot_ids=tuple(committed), seconds=time.perf_counter() - start)


def expire_partitions(
    table: FileStoreTable,
    *,
    expiration_time: timedelta | None = None,
    strategy: Strategy | None = None,
    max_num: int | None = None,
    dry_run: bool = False,
    context: MaintenanceContext = DEFAULT_CONTEXT,
) -> PartitionExpiryResult:
    """Drop partitions older than the expiration time, as Paimon's partition expiry does.

    Each argument left None keeps the table's option: `expiration_time`
    partition.expiration-time (required somewhere), `strategy` partition.expiration-strategy
    (values-time, or update-time: the partition's last file creation), `max_num`
    partition.expiration-max-num (default 100). Partitions whose time values-time cannot read
    are skipped and listed in `skipped_partitions`. Dropped partitions' files are removed later
    by snapshot expiry.

    Raises InvalidArgumentError (no expiration time anywhere, a negative one, an unknown
    strategy, max_num < 1), InvalidOptionError (malformed partition.* options, a formatter we
    cannot read), InvalidTableSpecError (unpartitioned),
    UnsupportedLayoutError; not input: CommitConflictError, TransientStoreError.
    """
    return run_planned(
        lambda: plan_partition_expiry(
            table,
            expiration_time=expiration_time,
            strategy=strategy,
            max_num=max_num,
            context=context,
        ),
        lambda plan: execute_partition_expiry(table, plan, context=context),
        dry_run=dry_run,
    )
