"""PaimonTable: one object for a primary-key table and every operation dagster-paimon runs on it.

It sits above the engine (ingest, lsm, maintenance, discovery) and below the adapters, so the
CLI, Dagster and Spark code can use it and it never needs Spark or Dagster. Each operation
reloads the table through the catalog first (one schema read): a long-lived object sees
snapshots and schema changes other writers committed since it was opened.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Literal

import pyarrow as pa

from dagster_paimon.errors import InvalidArgumentError
from dagster_paimon.format.catalog import Catalog
from dagster_paimon.format.schema import PyarrowFieldParser
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.ingest.arrow import MODES, ingest_arrow
from dagster_paimon.ingest.result import IngestResult
from dagster_paimon.kinds import (
    Assessment,
    PartitionsToCompact,
    TableHealth,
    compact_open_table,
    table_assessment,
    table_health,
    table_partitions_to_compact,
)
from dagster_paimon.lsm.compaction import (
    CompactionResult,
    LocalExecutor,
    RescaleResult,
    TaskExecutor,
    rescale_open_table,
)
from dagster_paimon.lsm.model.levels import TableLevels, read_levels
from dagster_paimon.maintenance.consumers import (
    ConsumerList,
    ConsumerRemovalResult,
    ConsumerResetResult,
    clear_consumers,
    expire_consumers,
    list_consumers,
    reset_consumer,
)
from dagster_paimon.maintenance.doctor import DoctorResult, doctor
from dagster_paimon.maintenance.expire import ExpiryResult, expire_changelogs, expire_snapshots
from dagster_paimon.maintenance.maintain import MaintenanceResult, maintain
from dagster_paimon.maintenance.manifests import ManifestCompactionResult, compact_manifests
from dagster_paimon.maintenance.orphans import OrphanResult, remove_orphans
from dagster_paimon.maintenance.partitions import (
    PartitionExpiryResult,
    Strategy,
    expire_partitions,
)
from dagster_paimon.maintenance.rollback import RollbackResult, rollback_to
from dagster_paimon.maintenance.tags import (
    TagInfo,
    TagResult,
    create_automatic_tags,
    create_tag,
    delete_tag,
    expire_tags,
    list_tags,
)
from dagster_paimon.table import (
    TableRef,
    TableSpec,
    create_table,
    get_table,
    open_catalog,
    parse_identifier,
)
from dagster_paimon.unsupported import option_findings

IngestMode = Literal["append", "overwrite"]
Executor = Literal["local"] | TaskExecutor


class PaimonTable:
    """A Paimon primary-key table: its layout, and ingest, health, compaction and maintenance.

    Get one with `PaimonTable.open` or `PaimonTable.create`; `paimon` is pypaimon's own table
    object for anything this class does not cover (reading rows, for one).
    """

    def __init__(self, ref: TableRef, catalog: Catalog, table: FileStoreTable):
        """Use `open` or `create`: they check the warehouse and the table first."""
        self._ref = ref
        self._catalog = catalog
        self._table = table

    def __repr__(self) -> str:
        """The table's reference, secret catalog options masked."""
        return f"PaimonTable({self._ref!r})"

    @classmethod
    def open(
        cls, warehouse: str, identifier: str, catalog_options: Mapping[str, str] | None = None
    ) -> PaimonTable:
        """Open an existing table (primary-key or append); every way of not finding it is typed.

        Raises InvalidArgumentError (an identifier not shaped DB.TABLE),
        WarehouseUnreachableError and its S3 subclasses (MissingCredentialsError,
        InvalidCredentialsError, AccessDeniedError, BucketNotFoundError,
        EndpointUnreachableError, UnsupportedWarehouseError), DatabaseNotFoundError,
        TableNotFoundError.
        """
        _check_identifier(identifier)
        ref = TableRef.of(warehouse, identifier, catalog_options)
        catalog = open_catalog(warehouse, catalog_options)
        return cls(ref, catalog, get_table(catalog, identifier))

    @classmethod
    def create(
        cls, warehouse: str, spec: TableSpec, catalog_options: Mapping[str, str] | None = None
    ) -> PaimonTable:
        """Create the table (and its database) unless it exists; an existing one must match.

        Idempotent, so a pipeline can call it on every run. Raises InvalidTableSpecError (the
        spec contradicts itself or Paimon's rules), SchemaMismatchError (the table exists with
        other columns, keys or bucket count), WarehouseUnreachableError and its S3 subclasses.
        """
        create_table(warehouse, spec, catalog_options)
        return cls.open(warehouse, spec.identifier, catalog_options)

    @property
    def identifier(self) -> str:
        """The 'db.table' name."""
        return self._ref.identifier

    @property
    def warehouse(self) -> str:
        """The warehouse URI the table was opened in."""
        return self._ref.warehouse

    @property
    def ref(self) -> TableRef:
        """How another process (a Spark executor, a retry) reopens this table."""
        return self._ref

    @property
    def paimon(self) -> FileStoreTable:
        """pypaimon's table, reloaded so its schema is the latest: the escape hatch."""
        self._table = get_table(self._catalog, self.identifier)
        return self._table

    @property
    def schema(self) -> pa.Schema:
        """The columns as Arrow types, as ingest_arrow expects its data."""
        return PyarrowFieldParser.from_paimon_schema(self.paimon.table_schema.fields)

    @property
    def primary_keys(self) -> tuple[str, ...]:
        """The primary key columns (partition keys included, as Paimon declares them)."""
        return tuple(self.paimon.table_schema.primary_keys)

    @property
    def partition_keys(self) -> tuple[str, ...]:
        """The partition columns; empty for an unpartitioned table."""
        return tuple(self.paimon.table_schema.partition_keys)

    @property
    def options(self) -> dict[str, str]:
        """The table's options (bucket, merge-engine, snapshot.* ...) as stored in its schema."""
        return dict(self.paimon.table_schema.options)

    def option_findings(self) -> dict[str, list[str]]:
        """What the option census finds in the table's options: the modes we refuse
        (`unsupported`, with the operations each refuses) and keys it does not know
        (`unknown_options`)."""
        return option_findings(self.paimon.table_schema)

    def ingest_arrow(self, data: pa.Table, *, mode: IngestMode = "append") -> IngestResult:
        """Write `data` as level-0 files in one APPEND (or OVERWRITE) snapshot, without Spark.

        Overwrite replaces exactly the partitions `data` has rows in (the whole table if it is
        unpartitioned). Raises InvalidArgumentError (a mode other than append or overwrite,
        data that is not a pyarrow Table), SchemaMismatchError (missing, unknown or narrowed
        columns), UnsupportedLayoutError (a table mode we do not write); nothing is written.
        """
        if mode not in MODES:
            raise InvalidArgumentError(f"mode must be one of {list(MODES)}, got {mode!r}")
        if not isinstance(data, pa.Table):
            raise InvalidArgumentError(f"data must be a pyarrow.Table, got {type(data).__name__}")
        return ingest_arrow(self.paimon, data, mode=mode)

    def levels(
        self, *, snapshot_id: int | None = None, partition: Mapping[str, str] | None = None
    ) -> TableLevels:
        """The sorted runs of every bucket (of one partition), from metadata only.

        Raises InvalidArgumentError (a partition spec naming columns that are not partition
        keys), SnapshotNotFoundError (a snapshot_id never written or already expired).
        """
        table = self.paimon
        return read_levels(table, snapshot_id, _partition(table, partition))

    def health(self, *, partition: Mapping[str, str] | None = None) -> TableHealth:
        """What decides a compaction, per bucket: sorted runs and size amplification of a
        primary-key table, files and small files of an append table; `kind` says which.
        `conflicting_compactors` names other writers that compacted the table recently while
        it is not write-only (their commits fail beside ours; lsm/model/compactors.py), None
        when there are none.

        The same report as `dagster-paimon health`. Raises InvalidArgumentError (a partition
        spec naming columns that are not partition keys), InvalidOptionError.
        """
        table = self.paimon
        return table_health(table, _partition(table, partition))

    def assess(self) -> Assessment:
        """The latest health judged against the table's own limits, as the Dagster check judges
        it: `problems` (past the stop trigger, the size-amplification limit), `warnings` (past
        the compaction trigger, another writer compacting), `healthy` when neither.

        Raises InvalidOptionError.
        """
        return table_assessment(self.paimon)

    def partitions_to_compact(
        self, *, trigger: int | None = None, max_amp: int | None = None
    ) -> PartitionsToCompact:
        """The partitions that need compaction now by the table's triggers (the Dagster
        sensors' rule), each {column: value} (`{}` for an unpartitioned table that needs it);
        `trigger` and `max_amp` override the sorted-run trigger and size-amplification limit.

        Raises InvalidOptionError.
        """
        return table_partitions_to_compact(self.paimon, trigger=trigger, max_amp=max_amp)

    def compact(
        self,
        *,
        full: bool = False,
        partition: Mapping[str, str] | None = None,
        executor: Executor = "local",
        dry_run: bool = False,
    ) -> CompactionResult:
        """Compact as Paimon would (or fully), so readers merge fewer sorted runs.

        `executor` is "local" (this process) or a TaskExecutor, e.g.
        `dagster_paimon.spark.executor.SparkExecutor(spark)` to rewrite buckets on Spark.
        Raises InvalidArgumentError (an unknown executor, a partition spec naming columns that
        are not partition keys), InvalidOptionError (table options Paimon cannot compact),
        UnsupportedLayoutError (a table mode we do not compact); CommitConflictError when
        another commit replaced the same files (nothing of this one is committed).
        """
        table = self.paimon
        return compact_open_table(
            table,
            self._ref,
            full=full,
            partition=_partition(table, partition),
            executor=_executor(executor),
            dry_run=dry_run,
        )

    def rescale(
        self,
        *,
        bucket_num: int,
        partitions: Sequence[Mapping[str, str]] | None = None,
        executor: Executor = "local",
        dry_run: bool = False,
    ) -> RescaleResult:
        """Rewrite the table's (or the partitions matching any of `partitions`) merged rows into
        `bucket_num` buckets, in one OVERWRITE snapshot, as Paimon's `rescale` procedure does.

        Each spec is {column: value} over some or all partition keys (`[{"dt": "2024-01-01"}]`
        rescales one day). The files record the new count (`_TOTAL_BUCKETS`); the table's
        `bucket` option is not changed (alter it when the whole table is rescaled, before
        writers that take the count from it, such as pypaimon, write again). The commit fails
        with CommitConflictError, nothing committed, if another writer changed those partitions
        after the snapshot the rescale read. Raises InvalidArgumentError (bucket_num < 1, an
        unknown executor, malformed specs or an unknown partition key), PartitionNotFoundError
        (a spec matching no partition holding data), UnsupportedLayoutError (dynamic- or
        postpone-bucket tables, a table mode we do not compact).
        """
        return rescale_open_table(
            self.paimon,
            self._ref,
            bucket_num=bucket_num,
            partitions=partitions,
            executor=_executor(executor),
            dry_run=dry_run,
        )

    def expire_snapshots(
        self,
        *,
        older_than: timedelta | None = None,
        retain_min: int | None = None,
        retain_max: int | None = None,
        max_deletes: int | None = None,
        dry_run: bool = False,
    ) -> ExpiryResult:
        """Delete old snapshots and the files only they use, so storage stops growing.

        None keeps the table's own option: snapshot.time-retained, snapshot.num-retained.min,
        snapshot.num-retained.max, snapshot.expire.limit. Tags, consumers and branches keep
        theirs. Raises InvalidArgumentError (a negative duration, a count below 1, retain_max
        below retain_min), InvalidOptionError (malformed snapshot.* options).
        """
        return expire_snapshots(
            self.paimon,
            older_than=older_than,
            retain_min=retain_min,
            retain_max=retain_max,
            max_deletes=max_deletes,
            dry_run=dry_run,
        )

    def expire_changelogs(
        self,
        *,
        older_than: timedelta | None = None,
        retain_min: int | None = None,
        retain_max: int | None = None,
        max_deletes: int | None = None,
        dry_run: bool = False,
    ) -> ExpiryResult:
        """Delete long-lived changelogs past their retention (changelog.*, else snapshot.*).

        None keeps the table's own option: changelog.time-retained,
        changelog.num-retained.min/max, snapshot.expire.limit. Raises InvalidArgumentError (a
        negative duration, a count below 1, retain_max below retain_min), InvalidOptionError
        (malformed changelog.* or snapshot.* options).
        """
        return expire_changelogs(
            self.paimon,
            older_than=older_than,
            retain_min=retain_min,
            retain_max=retain_max,
            max_deletes=max_deletes,
            dry_run=dry_run,
        )

    def expire_partitions(
        self,
        *,
        older_than: timedelta | None = None,
        strategy: Strategy | None = None,
        max_num: int | None = None,
        dry_run: bool = False,
    ) -> PartitionExpiryResult:
        """Drop partitions older than `older_than` in one OVERWRITE snapshot, as Paimon's
        partition expiry does (their files go later, with snapshot expiry).

        None keeps the table's own option: partition.expiration-time (required somewhere),
        partition.expiration-strategy (values-time or update-time),
        partition.expiration-max-num. Partitions whose time cannot be read are skipped and
        listed in `skipped_partitions`. Raises InvalidArgumentError (no expiration time, a
        negative one, an unknown strategy, max_num below 1), InvalidOptionError (malformed
        partition.* options, a timestamp formatter we cannot read), InvalidTableSpecError (an
        unpartitioned table).
        """
        return expire_partitions(
            self.paimon,
            expiration_time=older_than,
            strategy=strategy,
            max_num=max_num,
            dry_run=dry_run,
        )

    def compact_manifests(
        self, *, full: bool = False, dry_run: bool = False
    ) -> ManifestCompactionResult:
        """Merge small manifests (by the manifest.* options, or all with full) so planning
        reads fewer files.

        Raises InvalidOptionError (malformed manifest.* options), UnsupportedLayoutError (a
        table mode we do not handle).
        """
        return compact_manifests(self.paimon, full=full, dry_run=dry_run)

    def remove_orphans(
        self, *, older_than: timedelta = timedelta(days=1), dry_run: bool = False
    ) -> OrphanResult:
        """Delete files no snapshot, tag, changelog or branch references, older than
        `older_than`: what crashed writers and compactions leave behind.

        Raises InvalidArgumentError (`older_than` not positive: younger files may belong to a
        commit in flight), MaintenanceAbortedError (a branch without a schema; nothing is
        deleted).
        """
        return remove_orphans(self.paimon, older_than=older_than, dry_run=dry_run)

    def list_tags(self) -> list[TagInfo]:
        """Every tag, by snapshot id then name, with its retention if it has one."""
        return list_tags(self.paimon)

    def create_tag(
        self,
        name: str,
        *,
        snapshot_id: int | None = None,
        time_retained: timedelta | None = None,
        dry_run: bool = False,
    ) -> TagResult:
        """Tag a snapshot (the latest by default) so it stays readable after expiry;
        time_retained None takes tag.default-time-retained; dry_run reports, writes nothing.

        Raises TagExistsError, SnapshotNotFoundError, InvalidArgumentError (a blank name, a
        negative retention); the table is then unchanged.
        """
        return create_tag(
            self.paimon,
            name,
            snapshot_id=snapshot_id,
            time_retained=time_retained,
            dry_run=dry_run,
        )

    def delete_tag(self, name: str, *, dry_run: bool = False) -> TagResult:
        """Delete a tag and the files only it kept alive. Raises TagNotFoundError."""
        return delete_tag(self.paimon, name, dry_run=dry_run)

    def expire_tags(self, *, dry_run: bool = False) -> TagResult:
        """Delete the tags whose time retained has passed, with the files only they kept."""
        return expire_tags(self.paimon, dry_run=dry_run)

    def create_automatic_tags(self, *, dry_run: bool = False) -> TagResult:
        """Create the period tags Paimon's writers would have (tag.automatic-creation and the
        other tag.* options), delete auto tags beyond tag.num-retained-max, expire by time."""
        return create_automatic_tags(self.paimon, dry_run=dry_run)

    def maintain(
        self, *, options: Mapping[str, str] | None = None, dry_run: bool = False
    ) -> MaintenanceResult:
        """One maintenance pass in Java's order: automatic tags, tag expiry, partition expiry,
        consumer expiry, snapshot expiry; each step the options do not ask for is skipped
        (`skipped` says why). `options` override the table's for this pass only (the keys its
        steps read; the schema is not changed): an unknown or malformed one raises
        InvalidOptionError before any step. A failing step stops the pass with
        MaintenanceStepError naming it; what earlier steps committed stays."""
        return maintain(self.paimon, options=options, dry_run=dry_run)

    def doctor(self, *, rollback_unreadable: bool = False) -> DoctorResult:
        """Check every snapshot and tag can be read; with rollback_unreadable, roll back an
        unreadable newest run of snapshots (never deleting a manifest or data file).

        An unhealthy table is reported (`healthy` is False), not raised. Raises
        RepairRefusedError (a rollback asked for where a rollback cannot cure the table) and
        StaleMaintenancePlanError (a commit landed between diagnosis and repair); nothing is
        changed then.
        """
        return doctor(self.paimon, repair=rollback_unreadable)

    def consumers(self) -> ConsumerList:
        """The streaming consumers and the snapshot each reads next (snapshot expiry keeps it).

        Raises MaintenanceAbortedError (not input) for a consumer file that cannot be decoded.
        """
        return list_consumers(self.paimon)

    def expire_consumers(
        self, *, older_than: timedelta | None = None, dry_run: bool = False
    ) -> ConsumerRemovalResult:
        """Remove consumers not written for `older_than` (None: the table's
        consumer.expiration-time; unset, none expires), so they stop holding back expiry.

        Raises InvalidArgumentError (a negative duration), InvalidOptionError (a malformed
        consumer.expiration-time).
        """
        return expire_consumers(self.paimon, expiration_time=older_than, dry_run=dry_run)

    def clear_consumers(
        self, *, including: str = ".*", excluding: str | None = None, dry_run: bool = False
    ) -> ConsumerRemovalResult:
        """Remove the consumers whose id fully matches `including` and not `excluding`.

        Raises InvalidArgumentError (a malformed regular expression).
        """
        return clear_consumers(
            self.paimon, including=including, excluding=excluding, dry_run=dry_run
        )

    def reset_consumer(self, consumer_id: str, next_snapshot: int) -> ConsumerResetResult:
        """Make an existing consumer read `next_snapshot` next.

        Raises InvalidArgumentError, ConsumerNotFoundError, SnapshotNotFoundError.
        """
        return reset_consumer(self.paimon, consumer_id, next_snapshot)

    def rollback(
        self,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp: datetime | None = None,
        dry_run: bool = False,
    ) -> RollbackResult:
        """Roll back to exactly one of a snapshot id, a tag, or the newest snapshot at or before
        a time (naive: UTC), removing newer snapshots, changelogs and tags and the files only
        they used.

        Raises InvalidArgumentError, SnapshotNotFoundError (never written or expired, and no
        tag holds it), TagNotFoundError; nothing is changed then. StaleMaintenancePlanError
        when a commit lands meanwhile (nothing changed either).
        """
        return rollback_to(
            self.paimon, snapshot_id=snapshot_id, tag=tag, timestamp=timestamp, dry_run=dry_run
        )


def _check_identifier(identifier: str) -> None:
    """DB.TABLE, or an InvalidArgumentError before anything is opened."""
    if not isinstance(identifier, str):
        raise InvalidArgumentError(f"identifier must be a 'db.table' string, got {identifier!r}")
    try:
        parse_identifier(identifier)
    except ValueError as e:
        raise InvalidArgumentError(str(e)) from e


def _partition(table: FileStoreTable, partition: Mapping[str, str] | None) -> dict[str, str] | None:
    """A partition spec over the table's partition keys, values as strings."""
    if partition is None:
        return None
    if not isinstance(partition, Mapping):
        raise InvalidArgumentError(
            f"partition must be a mapping of column to value, got {partition!r}"
        )
    unknown = sorted(set(partition) - set(table.partition_keys))
    if unknown:
        raise InvalidArgumentError(
            f"{unknown} are not partition keys of {table.identifier.get_full_name()} "
            f"(partition keys: {list(table.partition_keys) or 'none'})"
        )
    return {str(k): str(v) for k, v in partition.items()}


def _executor(executor: Executor) -> TaskExecutor:
    """The executor compaction tasks run on."""
    if executor == "local":
        return LocalExecutor()
    if not isinstance(executor, str) and callable(getattr(executor, "run", None)):
        return executor  # a TaskExecutor (a Protocol: checked by its run method)
    raise InvalidArgumentError(
        f"executor must be 'local' or a TaskExecutor (SparkExecutor(spark) for Spark), "
        f"got {executor!r}"
    )
