"""Health sensors: request compaction of exactly the partitions that need it, per table or
for every table of a warehouse at once."""

import contextlib
import json
import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from dagster import (
    AddDynamicPartitionsRequest,
    AssetObservation,
    DagsterRunStatus,
    DefaultSensorStatus,
    DynamicPartitionsDefinition,
    JobDefinition,
    RunRequest,
    RunsFilter,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from dagster_paimon.dagster.metadata import metric_metadata
from dagster_paimon.dagster.specs import PaimonTableSpec
from dagster_paimon.errors import (
    DatabaseNotFoundError,
    TableNotFoundError,
    TransientStoreError,
    WarehouseUnreachableError,
)
from dagster_paimon.kinds import health_of, kind_of
from dagster_paimon.lsm.model.levels import TableLevels
from dagster_paimon.lsm.model.watch import LevelsWatch
from dagster_paimon.snapshot.resolve import read_snapshot
from dagster_paimon.storage.files import TableFiles
from dagster_paimon.storage.pool import parallel_map
from dagster_paimon.storage.warehouse import table_files
from dagster_paimon.unsupported import COMPACTION, Unsupported, refusals

if TYPE_CHECKING:
    # what define_asset_job returns; dagster exports no public name for it
    from dagster._core.definitions.unresolved_asset_job_definition import (
        UnresolvedAssetJobDefinition,
    )

    from dagster_paimon.format.table import FileStoreTable

IN_FLIGHT = [
    DagsterRunStatus.QUEUED,
    DagsterRunStatus.NOT_STARTED,
    DagsterRunStatus.STARTING,
    DagsterRunStatus.STARTED,
]
PARTITION_TAG = "dagster/partition"
WHOLE_TABLE = "__table__"


@dataclass
class SensorCursor:
    """Which snapshot each partition was last requested at: a tick never asks twice."""

    requested: dict[str, int] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str | None) -> "SensorCursor":
        """A missing or corrupt cursor starts fresh rather than failing the sensor."""
        try:
            data = json.loads(text) if text else {}
            return cls({str(k): int(v) for k, v in data.get("requested", {}).items()})
        except (ValueError, TypeError, AttributeError):
            return cls()

    def dump(self) -> str:
        """The serialized cursor."""
        return json.dumps(asdict(self), sort_keys=True)


def _partition_keys_by_paimon(
    spec: PaimonTableSpec, context: SensorEvaluationContext
) -> dict[tuple[tuple[str, str], ...], str]:
    """Reverse the spec's mapping: which Dagster partition key names each Paimon partition."""
    if spec.partitions_def is None:
        return {}
    keys = spec.partitions_def.get_partition_keys(dynamic_partitions_store=context.instance)
    # a partitioned spec maps every key to a Paimon partition (never None)
    return {tuple(sorted((spec.paimon_partition(k) or {}).items())): k for k in keys}


def table_requests(
    spec: PaimonTableSpec,
    job_name: str,
    levels: TableLevels,
    cursor: SensorCursor,
    busy: set[str],
    keys_by_paimon: dict[tuple[tuple[str, str], ...], str],
    *,
    scope: str = "",
) -> tuple[list[RunRequest], int]:
    """Compaction requests of one table's unhealthy partitions not requested at this snapshot
    nor in flight, and how many partitions are unhealthy; `scope` prefixes cursor and run keys
    when one sensor serves several tables."""
    snapshot = levels.snapshot_id or 0
    unhealthy = kind_of(levels.schema).partitions_to_compact(
        levels,
        trigger=spec.sensor_sorted_run_trigger,
        max_amp=spec.sensor_max_size_amplification_percent,
    )
    targets: dict[str, str | None]
    if spec.partitions_def is None:
        targets = {WHOLE_TABLE: None} if unhealthy else {}
    else:
        targets = {keys_by_paimon[p]: keys_by_paimon[p] for p in unhealthy if p in keys_by_paimon}
    requests = []
    for name, partition_key in sorted(targets.items()):
        if name in busy or cursor.requested.get(scope + name) == snapshot:
            continue
        cursor.requested[scope + name] = snapshot
        requests.append(
            RunRequest(
                run_key=f"{scope}{name}@{snapshot}", job_name=job_name, partition_key=partition_key
            )
        )
    return requests, len(unhealthy)


def _in_flight_by_job(context: SensorEvaluationContext) -> dict[str, set[str]]:
    """Partition keys (or WHOLE_TABLE) with a run queued or running, per job: one query."""
    busy: dict[str, set[str]] = {}
    for run in context.instance.get_runs(filters=RunsFilter(statuses=IN_FLIGHT)):
        busy.setdefault(run.job_name, set()).add(run.tags.get(PARTITION_TAG, WHOLE_TABLE))
    return busy


def build_compaction_sensor(
    spec: PaimonTableSpec,
    job: Any,
    minimum_interval_seconds: int = 60,
    default_status: DefaultSensorStatus = DefaultSensorStatus.RUNNING,
) -> SensorDefinition:
    """Each tick reads health in one metadata pass and requests compaction where it is due.

    `job` is the table's compaction job (as `define_asset_job` returns it).

    Raises nothing itself; a tick skips a table that is missing or transiently unreadable and
    fails on any other error read_levels raises.
    """

    @sensor(
        name=f"{spec.database}_{spec.name}_compaction_sensor",
        job=job,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        description=f"Requests compaction of {spec.identifier} partitions over Paimon's triggers.",
        required_resource_keys={spec.warehouse_key},
    )
    def compaction_sensor(context: SensorEvaluationContext, **_resources):
        try:
            levels = spec.warehouse(context.resources).table(spec.identifier).levels()
        except (TableNotFoundError, DatabaseNotFoundError, WarehouseUnreachableError) as e:
            return SkipReason(f"{spec.identifier} is not there yet: {e}")
        except TransientStoreError as e:
            e.judge(True)  # a tick only reads
            return SkipReason(f"{spec.identifier} unreadable this tick (next one retries): {e}")
        if refused := refusals(levels.schema, COMPACTION):
            return SkipReason(f"{spec.identifier} is not compacted: {_found(refused)}")
        cursor = SensorCursor.parse(context.cursor)
        snapshot = levels.snapshot_id or 0
        busy = _in_flight_by_job(context).get(job.name, set())
        keys = _partition_keys_by_paimon(spec, context) if spec.partitions_def else {}
        requests, unhealthy = table_requests(spec, job.name, levels, cursor, busy, keys)
        if not requests:
            return SensorResult(
                skip_reason=f"{spec.identifier} at snapshot {snapshot}: nothing new to compact "
                f"({unhealthy} unhealthy, {len(busy)} in flight)",
                cursor=cursor.dump(),
            )
        context.log.info(f"requesting compaction of {[r.partition_key for r in requests]}")
        return SensorResult(run_requests=requests, cursor=cursor.dump())

    return compaction_sensor


def _found(refused: Sequence[tuple[Unsupported, str]]) -> str:
    """The options of the modes that refuse compaction, for a skip reason."""
    return "; ".join(f"{found} (see docs/options.md)" for _, found in refused)


SNAPSHOT_FILE = re.compile(r"snapshot-(\d+)$")


class RetentionWatch:
    """What a table retains beyond its levels, for the sensor's observation: tags, and the
    oldest snapshot's age. Per table and tick: one listing of the tag directory and one read of
    the EARLIEST hint; the earliest snapshot file is read only when the hint names another
    snapshot than last tick (snapshot expiry ran), and the snapshot directory is listed only
    when the hint is missing or stale."""

    def __init__(self) -> None:
        self._earliest: dict[str, tuple[int, int]] = {}  # table path -> (id, timeMillis)
        self._files: dict[str, TableFiles] = {}  # warehouse key -> its store

    def _store(self, table: "FileStoreTable", warehouse: str) -> TableFiles:
        if warehouse not in self._files:
            self._files[warehouse] = table_files(table)
        return self._files[warehouse]

    def _earliest_millis(self, table: "FileStoreTable", files: TableFiles) -> int | None:
        root = table.table_path.rstrip("/")
        hinted: int | None = None
        with contextlib.suppress(OSError, ValueError):  # no hint: list instead
            hinted = int(table.file_io.read_file_utf8(f"{root}/snapshot/EARLIEST").strip())
        cached = self._earliest.get(root)
        if hinted is not None and cached is not None and cached[0] == hinted:
            return cached[1]
        snapshot = read_snapshot(table, hinted) if hinted is not None else None
        if snapshot is None:  # no hint, or it names an expired snapshot: list
            ids = [
                int(m.group(1))
                for m in (SNAPSHOT_FILE.match(s.name) for s in files.list_dir(f"{root}/snapshot"))
                if m
            ]
            snapshot = read_snapshot(table, min(ids)) if ids else None
        if snapshot is None:
            self._earliest.pop(root, None)
            return None
        self._earliest[root] = (snapshot.id, snapshot.time_millis)
        return snapshot.time_millis

    def metrics(
        self, table: "FileStoreTable", levels: TableLevels, *, warehouse: str = ""
    ) -> dict[str, int | float | None]:
        """partitions (holding live files; 0 unpartitioned), tags (of the main branch),
        oldest_snapshot_age_seconds (now - the earliest snapshot's commit time; None when
        the table has none)."""
        files = self._store(table, warehouse)
        root = table.table_path.rstrip("/")
        tags = sum(
            1 for s in files.list_dir(f"{root}/tag") if not s.is_dir and s.name.startswith("tag-")
        )
        earliest = self._earliest_millis(table, files)
        partitions = {tuple(sorted(b.partition.spec.items())) for b in levels.buckets}
        partitions.discard(())
        return {
            "partitions": len(partitions),
            "tags": tags,
            "oldest_snapshot_age_seconds": None
            if earliest is None
            else round(max(time.time() * 1000 - earliest, 0) / 1000, 3),
        }


def build_warehouse_sensor(
    name: str,
    tables: Sequence[tuple[PaimonTableSpec, "JobDefinition | UnresolvedAssetJobDefinition"]],
    minimum_interval_seconds: int = 60,
    default_status: DefaultSensorStatus = DefaultSensorStatus.RUNNING,
) -> SensorDefinition:
    """One sensor for many tables: each tick reads every table's metadata once (in parallel:
    object stores are latency-bound), records its health as an observation (plotted over time),
    adds new Paimon partitions as dynamic partitions, and requests compaction of exactly the
    unhealthy partitions. Table handles and levels live between ticks (LevelsWatch): a table
    without a new snapshot costs two small requests for its levels (the LATEST hint, a probe
    for the next snapshot) and two for its retention metrics (RetentionWatch: a listing of its
    tags, the EARLIEST hint), four in all."""
    watch = LevelsWatch()
    retention = RetentionWatch()

    @sensor(
        name=name,
        jobs=[job for _, job in tables],
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        description=f"Health of {len(tables)} Paimon tables; compaction where Paimon's triggers "
        "are exceeded.",
        required_resource_keys={spec.warehouse_key for spec, _ in tables},
    )
    def warehouse_sensor(context: SensorEvaluationContext, **_resources):
        cursor = SensorCursor.parse(context.cursor)
        requests: list[RunRequest] = []
        events: list[AssetObservation] = []
        additions: list[AddDynamicPartitionsRequest] = []
        missing: list[str] = []
        not_compacted: list[str] = []

        try:
            catalogs = {
                spec.warehouse_key: spec.warehouse(context.resources).open_catalog()
                for spec, _ in tables
            }
        except (WarehouseUnreachableError, TransientStoreError) as e:
            return SkipReason(f"warehouse not reachable this tick: {e}")

        def read(
            target: tuple[PaimonTableSpec, "JobDefinition | UnresolvedAssetJobDefinition"],
        ) -> tuple[TableLevels, dict[str, int | float | None]] | Exception:
            spec = target[0]
            try:
                levels = watch.levels(
                    catalogs[spec.warehouse_key], spec.identifier, warehouse=spec.warehouse_key
                )
                table = watch.table(spec.identifier, warehouse=spec.warehouse_key)
                assert table is not None  # levels just opened it
                return levels, retention.metrics(table, levels, warehouse=spec.warehouse_key)
            except (
                TableNotFoundError,
                DatabaseNotFoundError,
                WarehouseUnreachableError,
                TransientStoreError,
            ) as e:
                return e

        busy = _in_flight_by_job(context)
        for (spec, job), outcome in zip(tables, parallel_map(read, tables), strict=True):
            if isinstance(outcome, Exception):
                missing.append(f"{spec.identifier} ({outcome})")
                continue
            levels, retained = outcome
            metrics = {**health_of(levels).metrics(), **retained}
            events.append(
                AssetObservation(asset_key=spec.asset_key, metadata=metric_metadata(metrics))
            )
            if refused := refusals(levels.schema, COMPACTION):
                not_compacted.append(f"{spec.identifier} ({_found(refused)})")
                continue
            keys = {}
            if isinstance(spec.partitions_def, DynamicPartitionsDefinition):
                keys = {
                    tuple(sorted(b.partition.spec.items())): b.partition.label()
                    for b in levels.buckets
                }
                known = set(
                    spec.partitions_def.get_partition_keys(
                        dynamic_partitions_store=context.instance
                    )
                )
                new = sorted(set(keys.values()) - known)
                if new:
                    additions.append(spec.partitions_def.build_add_request(new))
            elif spec.partitions_def is not None:
                keys = _partition_keys_by_paimon(spec, context)
            found, _ = table_requests(
                spec,
                job.name,
                levels,
                cursor,
                busy.get(job.name, set()),
                keys,
                scope=f"{spec.identifier}/",
            )
            requests += found
        if missing:
            context.log.warning(f"tables not readable this tick: {missing}")
        if not_compacted:
            context.log.info(f"tables whose compaction dagster-paimon refuses: {not_compacted}")
        if requests:
            shown = ", ".join(r.run_key or "" for r in requests[:10])
            more = f" and {len(requests) - 10} more" if len(requests) > 10 else ""
            context.log.info(f"requesting compaction of {len(requests)} partitions: {shown}{more}")
        return SensorResult(
            run_requests=requests,
            asset_events=events,
            dynamic_partitions_requests=additions,
            cursor=cursor.dump(),
            skip_reason=None if requests else f"nothing new to compact in {len(tables)} tables",
        )

    return warehouse_sensor
