"""Ingest a DataFrame or files: bucket every row, one task per bucket, one snapshot, a report.

`distribute` is the driver-side half of Paimon's write path: it hashes each row's bucket key (a
Spark expression, or an Arrow UDF for key types it lacks), remembers the input order, places
each (partition, bucket) in one task, and sorts each task by key then input order.
Executors then write each bucket's rows as level-0 files with dense sequence numbers (the
`paimon` data source's writer, run by `mapInArrow`), and the calling process commits them.
"""

from __future__ import annotations

import pickle
import re
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

import numpy as np
import pyarrow as pa
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_type, to_arrow_schema
from pyspark.sql.types import IntegerType, StructField, StructType

from dagster_paimon import errors
from dagster_paimon.commit.users import new_commit_user
from dagster_paimon.errors import InvalidArgumentError
from dagster_paimon.format.schema import TableSchema
from dagster_paimon.ingest.arrow import MODES
from dagster_paimon.ingest.result import IngestResult
from dagster_paimon.io.kv import trimmed_primary_keys, value_schema
from dagster_paimon.lsm.write.bucket import (
    binary_row_hashes,
    buckets_of,
    fixed_bucket_count,
    total_buckets,
)
from dagster_paimon.lsm.write.cast import cast_column
from dagster_paimon.lsm.write.dynamic import (
    DynamicAssigner,
    assigner_counts,
    compute_channels,
    hash_indexes_at,
)
from dagster_paimon.lsm.write.layout import (
    BUCKET_COLUMN,
    HIDDEN_PREFIX,
    ORDINAL_COLUMN,
    check_writable,
    plan_write_layout,
)
from dagster_paimon.snapshot.resolve import find_landed
from dagster_paimon.spark.binary_row import with_bucket_column
from dagster_paimon.spark.executor import outcome_of, split_outcomes
from dagster_paimon.spark.source import PaimonWriter, plan_writer
from dagster_paimon.table import TableRef, is_dynamic, is_unaware, open_table

FORMATS = ("parquet", "csv", "json")
_OUR_ERROR = re.compile(r"dagster_paimon\.errors\.(\w+): (.+)")
CHANNEL_COLUMN = HIDDEN_PREFIX + "channel"
ARROW_BYTES_CAP = "spark.sql.execution.arrow.maxBytesPerBatch"
NO_BYTES_CAP = str(2**31 - 1)


def _with_fixed_buckets(df: DataFrame, schema: TableSchema) -> DataFrame:
    """Each row's bucket by Paimon's hash of its bucket key: a Spark expression where the key
    types allow (`binary_row`), else an Arrow UDF over those columns."""
    num_buckets = fixed_bucket_count(schema)
    target = value_schema(schema)
    types = [target.field(k).type for k in schema.bucket_keys]
    keys = [F.col(k) for k in schema.bucket_keys]
    in_jvm = with_bucket_column(df, BUCKET_COLUMN, keys, types, num_buckets)
    if in_jvm is not None:
        return in_jvm

    # pyspark's stub lacks arrow_udf(returnType) with the UDF type taken from the type hints
    @F.arrow_udf("int")  # type: ignore[call-overload]
    def bucket_of(*columns: pa.Array) -> pa.Array:
        cast = [cast_column(c, t) for c, t in zip(columns, types, strict=True)]
        return pa.array(buckets_of(binary_row_hashes(cast), num_buckets), pa.int32())

    return df.withColumn(BUCKET_COLUMN, bucket_of(*keys))


def default_parallelism(spark: SparkSession) -> int:
    """Spark's default parallelism, as the partitions of a range: Connect has no SparkContext."""
    ids = spark.range(1 << 16).select(F.spark_partition_id().alias("id"))
    row = ids.agg(F.max("id").alias("last")).first()
    assert row is not None, "an aggregate without grouping has one row"
    return int(row["last"]) + 1


def _with_dynamic_buckets(
    df: DataFrame, ref: TableRef, snapshot_id: int | None, overwrite: bool
) -> DataFrame:
    """Each row's bucket from the table's HASH index: rows shuffle to their key's assigner
    task (Paimon's computeAssigner), which assigns them in input order."""
    table = ref.open()
    schema = table.table_schema
    channels, assigners = assigner_counts(schema.options, default_parallelism(df.sparkSession))
    target = value_schema(schema)
    parts = list(schema.partition_keys)
    keys = trimmed_primary_keys(schema)
    types = {k: target.field(k).type for k in (*parts, *keys)}

    # pyspark's stub lacks arrow_udf(returnType) with the UDF type taken from the type hints
    @F.arrow_udf("int")  # type: ignore[call-overload]
    def channel_of(*columns: pa.Array) -> pa.Array:
        cast = [cast_column(c, types[k]) for c, k in zip(columns, (*parts, *keys), strict=True)]
        part_hashes = binary_row_hashes(cast[: len(parts)]) if parts else np.zeros(len(cast[0]))
        key_hashes = binary_row_hashes(cast[len(parts) :])
        return pa.array(compute_channels(part_hashes, key_hashes, channels, assigners))

    def assign(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        opened = ref.open()
        indexes = hash_indexes_at(opened, snapshot_id, overwrite=overwrite)
        by_channel: dict[int, DynamicAssigner] = {}
        for batch in batches:
            values = pa.table({k: cast_column(batch.column(k), t) for k, t in types.items()})
            channel = np.asarray(batch.column(CHANNEL_COLUMN))
            buckets = np.empty(batch.num_rows, dtype=np.int32)
            for c in np.unique(channel):
                rows = np.flatnonzero(channel == c)
                if int(c) not in by_channel:
                    by_channel[int(c)] = DynamicAssigner(
                        opened, indexes, assigners=assigners, assign_id=int(c)
                    )
                buckets[rows] = by_channel[int(c)].assign_rows(values.take(rows))
            yield batch.append_column(BUCKET_COLUMN, pa.array(buckets, pa.int32()))

    routed = (
        df.withColumn(CHANNEL_COLUMN, channel_of(*[F.col(k) for k in (*parts, *keys)]))
        .repartitionById(channels, F.col(CHANNEL_COLUMN))
        .sortWithinPartitions(ORDINAL_COLUMN)
    )
    schema_out = StructType([*routed.schema.fields, StructField(BUCKET_COLUMN, IntegerType())])
    return routed.mapInArrow(assign, schema_out).drop(CHANNEL_COLUMN)


def distribute(
    df: DataFrame, ref: TableRef, *, snapshot_id: int | None = None, overwrite: bool = False
) -> DataFrame:
    """Add each row's bucket and input ordinal, keep each bucket in one partition, sort by key.

    Dynamic-bucket tables are assigned against their HASH index at `snapshot_id` (none when
    overwriting), which the write must then start from too. An unaware-bucket append table
    takes every row into bucket 0 where it is: each task writes its own files, as Java's do.
    """
    schema = ref.open().table_schema
    ordered = df.withColumn(ORDINAL_COLUMN, F.monotonically_increasing_id())
    if is_unaware(schema):
        return ordered.withColumn(BUCKET_COLUMN, F.lit(0).cast("int"))
    if is_dynamic(schema):
        bucketed = _with_dynamic_buckets(ordered, ref, snapshot_id, overwrite)
    else:
        bucketed = _with_fixed_buckets(ordered, schema)
    partitions = list(schema.partition_keys)
    return by_bucket(bucketed, schema).sortWithinPartitions(
        *partitions, BUCKET_COLUMN, *trimmed_primary_keys(schema), ORDINAL_COLUMN
    )


def by_bucket(df: DataFrame, schema: TableSchema) -> DataFrame:
    """Every bucket in one Spark partition, buckets spread evenly over the partitions.

    Spark's hash partitioning of small bucket ids collides (buckets 0, 1 and 3 of four land in
    one task), leaving cores idle; the partition id is set directly instead: the bucket itself
    for unpartitioned fixed-bucket tables, else the bucket offset by the partition's hash.
    """
    parts = list(schema.partition_keys)
    buckets = total_buckets(schema)
    if not parts and buckets > 0:
        return df.repartitionById(buckets, F.col(BUCKET_COLUMN))
    shuffle_partitions = df.sparkSession.conf.get("spark.sql.shuffle.partitions")
    assert shuffle_partitions is not None, "Spark always defines spark.sql.shuffle.partitions"
    count = int(shuffle_partitions)
    offset = F.hash(*[F.col(p) for p in parts]) if parts else F.lit(0)
    return df.repartitionById(count, F.pmod(offset + F.col(BUCKET_COLUMN), F.lit(count)))


@contextmanager
def spark_errors() -> Iterator[None]:
    """Re-raise our typed errors (and bad casts) that Spark wrapped in its own exceptions."""
    try:
        yield
    except PySparkException as e:
        text = str(e)
        found = _OUR_ERROR.findall(text)
        if found:
            name, message = found[-1]
            error = getattr(errors, name, None)
            if isinstance(error, type) and issubclass(error, errors.DagsterPaimonError):
                raise error(message.strip()) from e
        condition = e.getCondition() or ""
        if condition.startswith("CAST_"):
            raise errors.SchemaMismatchError(text.splitlines()[0]) from e
        if condition.startswith("PATH_NOT_FOUND"):
            raise InvalidArgumentError(text.splitlines()[0]) from e
        raise


@contextmanager
def batches_capped_by_rows(spark: SparkSession) -> Iterator[None]:
    """Arrow batches to Python workers capped by rows only, unless the session sets a byte cap.

    Spark 4 enforces `ARROW_BYTES_CAP` (64 MB by default) by measuring every vector of the
    batch after every row it adds, which took a third of the JVM's time in the write stage
    (bench/ingest.py); at exactly `NO_BYTES_CAP` it skips that. Batches then hold
    `spark.sql.execution.arrow.maxRecordsPerBatch` rows (10,000): 64 MB only for rows averaging
    over 6 KB, where that option (or a byte cap of the session's own) should be lowered.
    """
    if spark.conf.get(ARROW_BYTES_CAP, None) is not None:
        yield
        return
    spark.conf.set(ARROW_BYTES_CAP, NO_BYTES_CAP)
    try:
        yield
    finally:
        spark.conf.unset(ARROW_BYTES_CAP)


def _write_partition(
    writer: PaimonWriter,
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Executor side of `mapInArrow`: a partition's buckets as level-0 files, then one row with
    the task's message (or its error) pickled."""

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        outcome = outcome_of(lambda: writer.write(batches), "ingest write task")
        yield pa.RecordBatch.from_arrays(
            [pa.array([pickle.dumps(outcome)], pa.binary())], names=["payload"]
        )

    return write


def ingest_dataframe(
    df: DataFrame,
    warehouse: str,
    identifier: str,
    *,
    mode: str = "append",
    catalog_options: Mapping[str, str] | None = None,
) -> IngestResult:
    """Write a DataFrame into a table as level-0 files in one snapshot (a primary-key table's
    rows folded per key, an append table's written as they come).

    The driver plans the write, executors write each bucket's files (`mapInArrow`, so classic
    and Connect sessions alike), and this process commits their messages: no Python worker of
    its own on the driver. Input errors (schema, bucket mode) are raised before Spark runs
    anything; a failed task leaves the table at its previous snapshot with none of this write's
    files (files of attempts Spark itself abandons are orphans, for orphan removal).

    Raises InvalidArgumentError (mode), WarehouseUnreachableError (or an S3 subclass: credentials,
    access, bucket, endpoint), DatabaseNotFoundError, TableNotFoundError, InvalidTableSpecError,
    SchemaMismatchError (columns or values that do not fit), InvalidOptionError,
    UnsupportedLayoutError; not input: CommitConflictError, TransientStoreError.
    """
    if mode not in MODES:
        raise InvalidArgumentError(f"mode must be one of {list(MODES)}, got {mode!r}")
    start = time.perf_counter()
    table = open_table(warehouse, identifier, catalog_options)
    check_writable(table, overwrite=mode == "overwrite")
    plan_write_layout(table.table_schema, to_arrow_schema(df.schema, timezone="UTC"))
    before = table.snapshot_manager().get_latest_snapshot()
    base = before.id if before else None
    ref = TableRef.of(warehouse, identifier, catalog_options)
    overwrite = mode == "overwrite"
    spark = df.sparkSession
    frame = distribute(df, ref, snapshot_id=base, overwrite=overwrite)
    writer = plan_writer(
        ref,
        to_arrow_schema(frame.schema, timezone="UTC"),
        base_snapshot=base,
        overwrite=overwrite,
        commit_user=new_commit_user("ingest"),
    )
    tag = f"ingest {identifier}".replace(",", " ")  # Spark tags cannot hold commas
    spark.addTag(tag)  # names the jobs in the UI, on classic and Connect alike
    try:
        with spark_errors(), batches_capped_by_rows(spark):
            rows = frame.mapInArrow(_write_partition(writer), "payload binary").collect()
    finally:
        spark.removeTag(tag)
    messages, failures = split_outcomes(pickle.loads(r.payload) for r in rows)
    if failures:
        writer.abort(messages)
        raise failures[0]
    writer.commit(messages)
    snapshot = find_landed(table, writer.commit_user, after=base)
    return IngestResult.of(table, snapshot, time.perf_counter() - start)


def cast_to_table(df: DataFrame, schema: TableSchema) -> DataFrame:
    """Text formats carry no types: cast columns the table has to its Spark types."""
    target = value_schema(schema)
    return df.select(
        *[
            F.col(c).cast(from_arrow_type(target.field(c).type)).alias(c)
            if c in target.names
            else F.col(c)
            for c in df.columns
        ]
    )


def ingest_files(
    spark: SparkSession,
    warehouse: str,
    identifier: str,
    source: str,
    *,
    fmt: str = "parquet",
    mode: str = "append",
    catalog_options: Mapping[str, str] | None = None,
) -> IngestResult:
    """Read parquet, CSV (with a header) or JSON lines from a path and ingest them.

    Raises InvalidArgumentError (format, mode, a missing source path) and what ingest_dataframe
    raises.
    """
    if fmt not in FORMATS:
        raise InvalidArgumentError(f"format must be one of {list(FORMATS)}, got {fmt!r}")
    table = open_table(warehouse, identifier, catalog_options)
    reader = spark.read.format(fmt)
    if fmt == "csv":
        reader = reader.option("header", "true")
    with spark_errors():
        df = reader.load(source)
    if fmt != "parquet":
        df = cast_to_table(df, table.table_schema)
    return ingest_dataframe(df, warehouse, identifier, mode=mode, catalog_options=catalog_options)
