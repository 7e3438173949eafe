"""The `paimon` Spark Python data source: Arrow writes into level 0, merge-on-read Arrow reads.

    df.write.format("paimon").option("warehouse", uri).mode("append").save("db.table")
    spark.read.format("paimon").option("warehouse", uri).load("db.table")

The driver plans (schema checks, each bucket's maximum sequence number, splits), executors write
level-0 files or merge splits, and `commit()` - in its own Python worker on the driver - turns
the tasks' picklable messages into one APPEND or OVERWRITE snapshot.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from dagster_paimon.commit.users import new_commit_user
from dagster_paimon.errors import InvalidArgumentError, SchemaMismatchError
from dagster_paimon.format.catalog import ConfigOption
from dagster_paimon.format.catalog import config as catalog_config
from dagster_paimon.format.manifest import IndexFileMeta
from dagster_paimon.ingest.commit import commit_ingest, discard_writes
from dagster_paimon.io.kv import value_schema
from dagster_paimon.io.write import write_all
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.lsm.write.dynamic import hash_indexes_at
from dagster_paimon.lsm.write.layout import WriteLayout, check_writable, plan_write_layout
from dagster_paimon.lsm.write.level0 import (
    SEQUENCE_STRIDE,
    BucketKey,
    BucketWrite,
    Level0Writer,
    max_sequences,
)
from dagster_paimon.partition import Partition, parse_partition_spec
from dagster_paimon.snapshot.resolve import find_landed
from dagster_paimon.spark.read import BucketSplit, plan_splits, read_split
from dagster_paimon.table import TableRef, is_unaware

log = logging.getLogger(__name__)

SOURCE_NAME = "paimon"
WAREHOUSE_OPTION = "warehouse"
TABLE_OPTION = "table"
COMMIT_USER_OPTION = "commit.user"
BASE_SNAPSHOT_OPTION = "base.snapshot"
PARTITION_OPTION = "partition"
CATALOG_PREFIX = "catalog."


def _catalog_option_names() -> dict[str, str]:
    """pypaimon's catalog option names by lower case: Spark lowercases data source options."""
    names = {}
    for holder in vars(catalog_config).values():
        if isinstance(holder, type):
            for value in vars(holder).values():
                if isinstance(value, ConfigOption):
                    names[value.key().lower()] = value.key()
    return names


def table_ref(options: Mapping[str, str]) -> TableRef:
    """The table named by the options: `warehouse`, the save/load path (or `table`), `catalog.*`.

    `catalog.<name>` options go to pypaimon's catalog (e.g. `catalog.fs.s3.endpoint`), their
    names restored to pypaimon's spelling (`fs.s3.accessKeyId`).
    """
    warehouse = options.get(WAREHOUSE_OPTION)
    identifier = options.get("path") or options.get(TABLE_OPTION)
    if not warehouse:
        raise InvalidArgumentError(
            "the paimon data source needs .option('warehouse', <path or s3 URI>)"
        )
    if not identifier:
        raise InvalidArgumentError("name the table: .save('db.table') / .load('db.table')")
    spelling = _catalog_option_names()
    catalog = sorted(
        (spelling.get(k[len(CATALOG_PREFIX) :].lower(), k[len(CATALOG_PREFIX) :]), str(v))
        for k, v in options.items()
        if k.lower().startswith(CATALOG_PREFIX)
    )
    return TableRef(str(warehouse), str(identifier), tuple(catalog))


def spark_schema(ref: TableRef) -> StructType:
    """The table's columns as Spark types (Paimon TIMESTAMP reads as TIMESTAMP_NTZ)."""
    return from_arrow_schema(value_schema(ref.open().table_schema))


@dataclass(frozen=True)
class IngestMessage(WriterCommitMessage):
    """What one write task produced: rows taken, partitions touched, level-0 files per bucket."""

    task: int
    rows: int
    partitions: tuple[Partition, ...]
    writes: tuple[BucketWrite, ...]


def _task_id() -> int:
    """The Spark partition this write task handles (0 outside Spark)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    return context.partitionId() if context is not None else 0


def check_one_task_per_bucket(messages: list[IngestMessage]) -> None:
    """A distributed input promised each bucket to one task; two writers would race sequences."""
    owner: dict[BucketKey, int] = {}
    for m in messages:
        for w in m.writes:
            key = (w.partition, w.bucket)
            if owner.setdefault(key, m.task) != m.task:
                raise InvalidArgumentError(
                    f"bucket {w.bucket} of partition {w.partition.label()} was written by Spark "
                    f"tasks {owner[key]} and {m.task}: a distributed input must keep each bucket "
                    "in one partition (use dagster_paimon.spark.ingest.distribute)"
                )


@dataclass
class PaimonWriter(DataSourceArrowWriter):
    """Executors write level-0 files; the driver commits them as one snapshot or deletes them."""

    ref: TableRef
    layout: WriteLayout
    base_snapshot: int | None
    base_sequences: dict[BucketKey, int]
    hash_indexes: dict[BucketKey, IndexFileMeta] = field(kw_only=True)
    overwrite: bool = field(kw_only=True)
    commit_user: str = field(kw_only=True)
    identifier: int = field(default_factory=time.time_ns, kw_only=True)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> IngestMessage:
        """Write this task's rows; a failing task deletes its own files before raising."""
        task = _task_id()
        offset = 0 if self.layout.prepared else task * SEQUENCE_STRIDE
        writer = Level0Writer(
            self.ref.open(),
            self.layout,
            self.base_sequences,
            sequence_offset=offset,
            hash_indexes=self.hash_indexes,
        )
        writes = write_all(writer, iterator)
        return IngestMessage(
            task, writer.rows, tuple(sorted(writer.partitions, key=repr)), tuple(writes)
        )

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """One APPEND snapshot, or OVERWRITE of exactly the partitions the input touched."""
        table = self.ref.open()
        done = [m for m in messages if isinstance(m, IngestMessage)]
        writes = [w for m in done for w in m.writes]
        try:
            if self.layout.prepared and not is_unaware(table.table_schema):
                check_one_task_per_bucket(done)
        except BaseException:
            discard_writes(table, writes)
            raise
        replaced = None
        if self.overwrite:
            replaced = {p for m in done for p in m.partitions}
            if not table.partition_keys:
                replaced = {Partition((), ())}
        commit_ingest(
            table,
            writes,
            overwrite=replaced,
            commit_user=self.commit_user,
            identifier=self.identifier,
        )

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Delete the files of reported tasks, unless a snapshot of this write did land."""
        table = self.ref.open()
        landed = find_landed(table, self.commit_user, self.identifier, after=self.base_snapshot)
        if landed is not None:
            log.warning("write aborted after its snapshot landed; keeping its files")
            return
        discard_writes(
            table, [w for m in messages if isinstance(m, IngestMessage) for w in m.writes]
        )


def plan_writer(
    ref: TableRef,
    source: pa.Schema,
    *,
    base_snapshot: int | None,
    overwrite: bool,
    commit_user: str,
) -> PaimonWriter:
    """The driver's half of a write: check the input schema, read each bucket's maximum
    sequence number (and hash index) once, at `base_snapshot` or the latest."""
    table = ref.open()
    check_writable(table, overwrite=overwrite)
    layout = plan_write_layout(table.table_schema, source)
    levels = read_levels(table, base_snapshot)
    return PaimonWriter(
        ref,
        layout,
        levels.snapshot_id,
        max_sequences(levels),
        hash_indexes=hash_indexes_at(table, levels.snapshot_id, overwrite=overwrite),
        overwrite=overwrite,
        commit_user=commit_user,
    )


class PaimonReader(DataSourceReader):
    """One Spark partition per live bucket of the latest snapshot (of one table partition).

    Partition pruning is the `partition` read option, not `pushFilters`: Spark 4.x caches the
    read plan of a filtered query on the shared relation, so a later unfiltered query of the
    same DataFrame would silently read only the pruned buckets.
    """

    def __init__(self, ref: TableRef, schema: StructType, partition: dict[str, str] | None):
        self.ref = ref
        self.columns = tuple(schema.fieldNames())
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")
        self.partition = partition

    def partitions(self) -> Sequence[InputPartition]:
        """The splits of the latest snapshot, of the requested table partition if any."""
        return plan_splits(self.ref.open(), self.partition)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Merge one bucket on read, in the Arrow types Spark expects.

        Spark hands a placeholder partition when a table has no split at all: nothing to read.
        """
        if not isinstance(partition, BucketSplit):
            return
        for batch in read_split(self.ref.open(), partition, self.columns):
            if not batch.schema.equals(self.arrow_schema):
                batch = batch.cast(self.arrow_schema)
            yield batch


class PaimonDataSource(DataSource):
    """`format("paimon")`: options warehouse, catalog.*, commit.user (write), partition (read)."""

    @classmethod
    def name(cls) -> str:
        """The format name."""
        return SOURCE_NAME

    def schema(self) -> StructType:
        """The table's current columns."""
        return spark_schema(table_ref(self.options))

    def reader(self, schema: StructType) -> PaimonReader:
        """A reader of the latest snapshot; unknown requested columns are an error."""
        ref = table_ref(self.options)
        table = ref.open()
        unknown = [n for n in schema.fieldNames() if n not in table.field_names]
        if unknown:
            raise SchemaMismatchError(f"columns {unknown} are not in {ref.identifier}")
        partition = parse_partition_spec(self.options.get(PARTITION_OPTION))
        return PaimonReader(ref, schema, partition)

    def writer(self, schema: StructType, overwrite: bool) -> PaimonWriter:
        """Plan the write at `base.snapshot` (set by ingest) or, for a bare write, the latest."""
        pinned = self.options.get(BASE_SNAPSHOT_OPTION)
        return plan_writer(
            table_ref(self.options),
            to_arrow_schema(schema, timezone="UTC"),
            base_snapshot=int(pinned) if pinned else None,
            overwrite=overwrite,
            commit_user=str(self.options.get(COMMIT_USER_OPTION) or new_commit_user("write")),
        )


def register(spark: SparkSession) -> None:
    """Make `format("paimon")` available on a session."""
    spark.dataSource.register(PaimonDataSource)


def register_sealed(spark: SparkSession, catalog_options: Mapping[str, str]) -> str:
    """Register the paimon source under a name of its own that adds `catalog_options` (secrets)
    to every use, and return that name.

    The options reach Spark's Python workers pickled with the class, never as data source
    options, which plans and Spark Connect's statement events (event log, UI) show in clear.
    """
    name = f"{SOURCE_NAME}_{uuid.uuid4().hex}"
    sealed = {CATALOG_PREFIX + k: str(v) for k, v in catalog_options.items()}

    class SealedSource(PaimonDataSource):
        """`paimon` with catalog options of its own."""

        def __init__(self, options: MutableMapping[str, str]):
            super().__init__(options)
            self.options.update(sealed)

        @classmethod
        def name(cls) -> str:
            """The name this registration writes to."""
            return name

    spark.dataSource.register(SealedSource)
    return name
