"""Paimon modes we do not implement, refused by name before an operation reads or writes much.

A table with one of these set is compacted, written or cleaned differently by Paimon's Java
implementation; doing it as if the option were absent would leave a table Java reads (or
writes next) differently. Each entry names the operations it changes and why, read from the
Java class cited; an operation the mode does not change runs as usual, and `health` (read-only)
never refuses.

The list was checked against every option of `CoreOptions` in apache/paimon release-2.0.0
(paimon-api/src/main/java/org/apache/paimon/CoreOptions.java), the release that added each key
found by comparing that file at the release-1.3.0, release-1.4.0-rc1 and release-2.0.0 tags
(paimon-common/... before 1.2). Options that only change reading, planning or file layout (not
what Java reads afterwards) are not here: `overwrite-upgrade`, `target-file-row-num`,
`compaction.skip-expired-partitions`, `manifest-sort.*`, `postpone.batch-write-fixed-bucket`.
Metadata stats modes, file indexes, external paths and `bucket-function.type` are handled where
their files are written (external paths in io/external.py, which refuses with InvalidOptionError
a root we cannot reach; an unknown strategy is here); `write.sequence-number-init-mode`=snapshot
where snapshots are (commit/carried.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from dagster_paimon.census.census import census
from dagster_paimon.errors import (
    InvalidArgumentError,
    UnsupportedCatalogError,
    UnsupportedLayoutError,
)
from dagster_paimon.format.schema import (
    ArrayType,
    AtomicType,
    DataType,
    MapType,
    MultisetType,
    RowType,
    TableSchema,
    VectorType,
)
from dagster_paimon.options import (
    CHANGELOG_FILE_FORMAT,
    CLUSTERING_INCREMENTAL,
    DATA_EVOLUTION,
    DATA_FILE_EXTERNAL_PATHS_STRATEGY,
    EXTERNAL_PATH_STRATEGIES,
    FIELDS_PREFIX,
    FILE_FORMAT,
    FILE_FORMAT_PER_LEVEL,
    ROW_TRACKING,
    boolean,
    file_format,
    flag,
    names,
    per_level,
    read_option,
)

log = logging.getLogger(__name__)

COMPACTION = "compaction"
INGEST = "ingest"
EXPIRY = "expiry"
MANIFEST_COMPACTION = "manifest compaction"
ORPHAN_REMOVAL = "orphan removal"
PARTITION_EXPIRY = "partition expiry"
TAGS = "tags"
ROLLBACK = "rollback"
CONSUMERS = "consumers"
OVERWRITE = "overwrite"
OPERATIONS = (
    COMPACTION,
    INGEST,
    OVERWRITE,
    EXPIRY,
    MANIFEST_COMPACTION,
    ORPHAN_REMOVAL,
    PARTITION_EXPIRY,
    TAGS,
    ROLLBACK,
    CONSUMERS,
)
EVERY_OPERATION = frozenset(OPERATIONS)

PK_CLUSTERING_OVERRIDE = "pk-clustering-override"
SEQUENCE_SNAPSHOT_ORDERING = "sequence.snapshot-ordering"
CHAIN_TABLE = "chain-table.enabled"
DELETION_VECTORS_MODIFIABLE = "deletion-vectors.modifiable"
PRIMARY_KEY_NULLABLE = "primary-key.nullable"
BLOB_FIELD = "blob-field"
PK_INDEX_COLUMNS = (
    "pk-btree.index.columns",
    "pk-bitmap.index.columns",
    "pk-vector.index.columns",
    "pk-full-text.index.columns",
)
FOREIGN_FORMATS = {"lance": "1.3", "vortex": "2.0", "mosaic": "2.0"}
TYPE = "type"
PLAIN_TABLE = "table"
LSM_TYPES = (PLAIN_TABLE, "materialized-table")
MANIFEST_FORMAT = "manifest.format"
STRICT_PARTITION_TIME = "partition.timestamp-format.strict"
PARTITION_TIME_OPTIONS = ("partition.timestamp-formatter", "partition.timestamp-pattern")
UPSERT_KEY = "upsert-key"
ICEBERG_STORAGE = "metadata.iceberg.storage"
ICEBERG_COMPATIBLE = "metadata.iceberg-compatible"  # 0.9's key
METASTORE_PARTITIONED = "metastore.partitioned-table"
METASTORE_TAG_TO_PARTITION = "metastore.tag-to-partition"
DYNAMIC_PARTITION_OVERWRITE = "dynamic-partition-overwrite"
MAP_STORAGE_LAYOUT = ".map.storage-layout"
COMMIT_CALLBACKS = "commit.callbacks"
TAG_CALLBACKS = "tag.callbacks"
METASTORE = "metastore"
FILESYSTEM = "filesystem"
LOCK_ENABLED = "lock.enabled"
LOCK_TYPE = "lock.type"

# (what was found, e.g. "table option 'x'='true'") or None, from the schema
Finder = Callable[[TableSchema], str | None]


@dataclass(frozen=True)
class Unsupported:
    """One mode: how to find it, the release that added it, what it changes and where."""

    name: str
    since: str
    operations: frozenset[str]
    why: str
    source: str
    find: Finder


def _flag(key: str) -> Finder:
    """A boolean option set to true (false, the default, is what we implement)."""

    def find(schema: TableSchema) -> str | None:
        return f"table option '{key}'='true'" if flag(schema.options, key) else None

    return find


def _columns(key: str) -> Finder:
    """An option listing columns, set to at least one."""

    def find(schema: TableSchema) -> str | None:
        listed = read_option(schema.options, key, names, [])
        return f"table option '{key}'={','.join(listed)!r}" if listed else None

    return find


def _type_roots(t: DataType) -> Iterator[str]:
    """The root name of a type and of every type nested in it (ARRAY<BLOB> yields BLOB)."""
    if isinstance(t, AtomicType):
        yield t.type.split("(")[0].split()[0].upper()
    elif isinstance(t, VectorType):
        yield "VECTOR"
        yield from _type_roots(t.element)
    elif isinstance(t, ArrayType | MultisetType):
        yield from _type_roots(t.element)
    elif isinstance(t, MapType):
        yield from _type_roots(t.key)
        yield from _type_roots(t.value)
    elif isinstance(t, RowType):
        for f in t.fields:
            yield from _type_roots(f.type)


def _typed(root: str) -> Finder:
    """Columns of a type (also nested), by name."""

    def find(schema: TableSchema) -> str | None:
        found = [f.name for f in schema.fields if root in set(_type_roots(f.type))]
        return f"{root} columns {found}" if found else None

    return find


def _primary_key(find: Finder) -> Finder:
    """Only on primary-key tables (append tables keep such files in their manifests)."""
    return lambda schema: find(schema) if schema.primary_keys else None


def _named(name: str, find: Finder) -> Finder:
    """What `find` reports, under the mode's name."""
    return lambda schema: f"{name} ({found})" if (found := find(schema)) else None


def _append(find: Finder) -> Finder:
    """Only on append tables (no primary key)."""
    return lambda schema: None if schema.primary_keys else find(schema)


def _set(key: str, *, unless: str = "") -> Finder:
    """A string option set to anything but blank or `unless` (its default, without case)."""

    def find(schema: TableSchema) -> str | None:
        value = str(schema.options.get(key, "")).strip()
        return f"table option '{key}'={value!r}" if value and value.lower() != unless else None

    return find


def _any(*finders: Finder) -> Finder:
    """What the first finder reporting anything reports."""
    return lambda schema: next((found for f in finders if (found := f(schema))), None)


def _static_overwrite(schema: TableSchema) -> str | None:
    """A partitioned table whose overwrites replace the whole table (the option set false)."""
    if not schema.partition_keys or read_option(
        schema.options, DYNAMIC_PARTITION_OVERWRITE, boolean, True
    ):
        return None
    return f"table option '{DYNAMIC_PARTITION_OVERWRITE}'='false'"


def _strict_partition_time(schema: TableSchema) -> str | None:
    """Strict partition timestamps on a partitioned table with a formatter or pattern."""
    if not schema.partition_keys or not flag(schema.options, STRICT_PARTITION_TIME):
        return None
    if not any(schema.options.get(key) for key in PARTITION_TIME_OPTIONS):
        return None
    return f"table option '{STRICT_PARTITION_TIME}'='true'"


def _shredded_maps(schema: TableSchema) -> str | None:
    """A MAP column stored in 2.0's shared-shredding layout."""
    for field in schema.fields:
        key = f"{FIELDS_PREFIX}{field.name}{MAP_STORAGE_LAYOUT}"
        value = str(schema.options.get(key, "default")).strip().lower()
        if value != "default":
            return f"table option '{key}'={value!r}"
    return None


def not_a_table(schema: TableSchema) -> str | None:
    """The `type` option of a format, object or other non-LSM table, or None for a table (a
    materialized table is one, its query kept beside it)."""
    value = str(schema.options.get(TYPE, PLAIN_TABLE)).strip()
    return None if value.lower() in LSM_TYPES else f"table option '{TYPE}'={value!r}"


def _foreign_format(schema: TableSchema) -> str | None:
    """`file.format`, a level of `file.format.per.level` or `changelog-file.format` naming a
    format we cannot write."""
    fmt = file_format(schema.options)
    if fmt in FOREIGN_FORMATS:
        return f"table option '{FILE_FORMAT}'={fmt!r} (Paimon {FOREIGN_FORMATS[fmt]})"
    levels = read_option(schema.options, FILE_FORMAT_PER_LEVEL, per_level, {})
    for level, fmt in levels.items():
        if fmt.lower() in FOREIGN_FORMATS:
            return f"table option '{FILE_FORMAT_PER_LEVEL}' level '{level}:{fmt}'"
    changelog = schema.options.get(CHANGELOG_FILE_FORMAT, "").lower()
    if changelog in FOREIGN_FORMATS:
        return f"table option '{CHANGELOG_FILE_FORMAT}'={changelog!r}"
    return None


FILE_INDEX_PREFIX = "file-index."
FILE_INDEX_COLUMNS = ".columns"
_INTEGRAL = {"TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT", "DATE", "TIME"}
_TIMESTAMPS = {"TIMESTAMP", "TIMESTAMP_LTZ"}
_STRINGS = {"CHAR", "VARCHAR", "STRING"}
FILE_INDEX_TYPES = {
    # type roots each index takes (FastHash, BitmapTypeVisitor, BSI getValueMapper)
    "bloom-filter": _INTEGRAL
    | _TIMESTAMPS
    | _STRINGS
    | {"FLOAT", "DOUBLE"}
    | {"BINARY", "VARBINARY", "BYTES"},
    "bitmap": _INTEGRAL | _TIMESTAMPS | _STRINGS | {"FLOAT", "DOUBLE", "BOOLEAN"},
    "bsi": _INTEGRAL | _TIMESTAMPS | {"DECIMAL"},
    # RangeBitmap's KeyFactory.create
    "range-bitmap": _INTEGRAL | _TIMESTAMPS | _STRINGS | {"FLOAT", "DOUBLE", "BOOLEAN", "DECIMAL"},
}
MAX_DECIMAL_PRECISION = {"bsi": 18, "range-bitmap": 18}
MAX_TIMESTAMP_PRECISION = {"range-bitmap": 6}
DEFAULT_TIMESTAMP_PRECISION = 6


def file_index_columns(options: dict[str, str]) -> list[tuple[str, str, str]]:
    """(option key, index type, column as written) of every `file-index.<type>.columns` entry."""
    found = []
    for key, value in options.items():
        if key.startswith(FILE_INDEX_PREFIX) and key.endswith(FILE_INDEX_COLUMNS):
            index_type = key[len(FILE_INDEX_PREFIX) : -len(FILE_INDEX_COLUMNS)]
            found += [(key, index_type, n.strip()) for n in str(value).split(",")]
    return found


def _file_index(predicate: Callable[[TableSchema, str, str, str], str | None]) -> Finder:
    """The first declared file-index column the predicate reports on."""

    def find(schema: TableSchema) -> str | None:
        for key, index_type, column in file_index_columns(schema.options):
            if index_type and (found := predicate(schema, key, index_type, column)):
                return found
        return None

    return find


def _unindexable(schema: TableSchema, key: str, index_type: str, column: str) -> str | None:
    """A column Java's writer cannot index: missing, empty, or of a type the index lacks."""
    found = _unindexable_column(schema, key, index_type, column)
    return f"file-index on columns Java cannot index: {found}" if found else None


def _unindexable_column(schema: TableSchema, key: str, index_type: str, column: str) -> str | None:
    """What makes the column (or map key `column[key]`) unindexable, if anything."""
    if index_type not in FILE_INDEX_TYPES:
        return f"table option '{key}' names index type {index_type!r}"
    fields = {f.name: f for f in schema.fields}
    start = column.find("[")
    name = column[:start] if start != -1 and column.endswith("]") else column
    if name not in fields:
        return f"table option '{key}' names column {name!r}, which the table lacks"
    data_type = fields[name].type
    if name != column:
        # DataFileIndexWriter.MapFileIndexMaintainer: a MAP column with CHAR/VARCHAR keys
        if not isinstance(data_type, MapType):
            return f"table option '{key}' names {column!r}, but {name!r} is not a MAP column"
        if next(_type_roots(data_type.key)) not in _STRINGS:
            return f"table option '{key}' names {column!r}, a map without string keys"
        data_type = data_type.value
    if not isinstance(data_type, AtomicType):
        return f"table option '{key}' indexes {type(data_type).__name__} values of {column!r}"
    root = next(_type_roots(data_type))
    if root not in FILE_INDEX_TYPES[index_type]:
        return f"table option '{key}' indexes {root} column {column!r}"
    text = str(data_type.type)
    if root == "DECIMAL" and index_type in MAX_DECIMAL_PRECISION:
        digits = text.split("(")[1].split(",")[0].strip(" )") if "(" in text else "10"
        if int(digits or 10) > MAX_DECIMAL_PRECISION[index_type]:
            return f"table option '{key}' indexes DECIMAL({digits}) column {column!r}"
    if root in _TIMESTAMPS and index_type in MAX_TIMESTAMP_PRECISION:
        precision = text.split("(")[1].split(")")[0] if "(" in text else DEFAULT_TIMESTAMP_PRECISION
        if int(precision) > MAX_TIMESTAMP_PRECISION[index_type]:
            return f"table option '{key}' indexes {root}({precision}) column {column!r}"
    return None


def file_index_refusal(schema: TableSchema) -> str | None:
    """Why the table's `file-index.*` columns cannot be indexed as Java does, or None."""
    return _file_index(_unindexable)(schema)


def _unknown_external_strategy(schema: TableSchema) -> str | None:
    """A `data-file.external-paths.strategy` release-2.0.0 does not know (Java matches the
    values without case)."""
    value = schema.options.get(DATA_FILE_EXTERNAL_PATHS_STRATEGY)
    if value is None or str(value).strip().lower() in EXTERNAL_PATH_STRATEGIES:
        return None
    return f"table option '{DATA_FILE_EXTERNAL_PATHS_STRATEGY}'={value!r}"


WRITES = frozenset({COMPACTION, INGEST})
MODES = (
    Unsupported(
        DYNAMIC_PARTITION_OVERWRITE,
        "0.9",
        frozenset({OVERWRITE}),
        "with it false, Java's overwrite of a partitioned table replaces the whole table; our "
        "overwrite replaces only the partitions the data holds",
        "FileStoreCommitImpl.overwrite (options.dynamicPartitionOverwrite())",
        _static_overwrite,
    ),
    Unsupported(
        MANIFEST_FORMAT,
        "0.9",
        EVERY_OPERATION,
        "Java reads and writes every manifest and manifest list in this format; ours are Avro "
        "only, so a commit of ours would leave manifests Java's readers cannot read",
        "FileFormat.manifestFormat, AbstractFileStore (manifest file factories)",
        _set(MANIFEST_FORMAT, unless="avro"),
    ),
    Unsupported(
        STRICT_PARTITION_TIME,
        "1.4",
        frozenset({INGEST, OVERWRITE, COMPACTION}),
        "Java's writers refuse a partition whose values do not parse with the table's "
        "partition timestamp formatter or pattern; ours would write it",
        "AbstractFileStoreWrite.PartitionTimestampValidator",
        _strict_partition_time,
    ),
    Unsupported(
        UPSERT_KEY,
        "1.3",
        frozenset({INGEST}),
        "Java turns an insert into such an append table into a MERGE that updates the rows of "
        "the same key; our append would add them again",
        "RewriteUpsertTable (paimon-spark-common)",
        _append(_set(UPSERT_KEY)),
    ),
    Unsupported(
        "MAP shared shredding",
        "2.0",
        WRITES,
        "Java stores such a MAP column as a row of shared value columns, a field mapping and an "
        "overflow map, with shredding metadata; we neither read nor write that layout",
        "MapSharedShreddingUtils, MapSharedShreddingWritePlanFactory, ParquetFileFormat",
        _shredded_maps,
    ),
    Unsupported(
        "table type",
        "1.0",
        EVERY_OPERATION,
        "a format table is a folder of plain files (no snapshots, manifests or buckets) and an "
        "object table indexes files of another store; writing Paimon's LSM layout into either "
        "would leave files no reader of that type reads, and maintaining one means nothing",
        "CoreOptions.TYPE, FormatTable, ObjectTable",
        lambda schema: not_a_table(schema),
    ),
    Unsupported(
        "Iceberg compatibility",
        "0.9 ('metadata.iceberg-compatible'), 1.0 ('metadata.iceberg.storage')",
        EVERY_OPERATION,
        "Java rewrites the table's Iceberg metadata after every commit; ours would leave "
        "Iceberg readers (Athena, Trino, Snowflake, pyiceberg) on a stale view, and an expiry "
        "would delete data files Iceberg's latest metadata still lists, failing every Iceberg "
        "read; keep this table's maintenance on Paimon's Java jobs until dagster-paimon writes "
        "Iceberg metadata",
        "IcebergCommitCallback (AbstractIcebergCommitCallback before 2.0), IcebergOptions",
        _any(_set(ICEBERG_STORAGE, unless="disabled"), _flag(ICEBERG_COMPATIBLE)),
    ),
    Unsupported(
        "metastore partition sync",
        "0.9",
        EVERY_OPERATION,
        "Java registers every partition a commit adds in the Hive metastore, drops the ones "
        "partition expiry removes and turns tags into partitions; ours would not tell the "
        "metastore, so Hive, Trino and Impala would miss new partitions and list gone ones; "
        "keep this table's maintenance on Paimon's Java jobs until dagster-paimon opens "
        "metastore catalogs",
        "AddPartitionCommitCallback, AddPartitionTagCallback, HiveCatalog.dropPartitions",
        _any(_flag(METASTORE_PARTITIONED), _set(METASTORE_TAG_TO_PARTITION)),
    ),
    Unsupported(
        "commit callbacks",
        "0.9",
        EVERY_OPERATION,
        "Java calls these user classes after every commit (and every tag); we cannot run Java "
        "classes, so what they keep in step with the table would fall behind; remove the "
        "option if nothing needs the callback, or keep this table on Java's jobs",
        "CoreOptions.COMMIT_CALLBACKS, FileStoreCommitImpl (CommitCallback.call)",
        _set(COMMIT_CALLBACKS),
    ),
    Unsupported(
        "tag callbacks",
        "0.9",
        EVERY_OPERATION,
        "Java calls these user classes when a tag is created or deleted (and, through commit "
        "callbacks, on commits); we cannot run Java classes; remove the option if nothing "
        "needs the callback, or keep this table on Java's jobs",
        "CoreOptions.TAG_CALLBACKS, TagManager (TagCallback.notifyCreation)",
        _set(TAG_CALLBACKS),
    ),
    Unsupported(
        ROW_TRACKING,
        "1.3",
        WRITES,
        "Java assigns each appended file its first row id at commit, from the snapshot's "
        "nextRowId, and keeps each row's _ROW_ID and _SEQUENCE_NUMBER through an append "
        "compaction (the rewritten files carry the first file's first_row_id and the rows' ids "
        "as columns); our commits assign none and our compaction would drop them",
        "FileStoreCommitImpl.assignRowTracking, BaseAppendFileStoreWrite.compactRewrite, "
        "RowTrackingUtils",
        _append(_flag(ROW_TRACKING)),
    ),
    Unsupported(
        DATA_EVOLUTION,
        "1.3",
        WRITES,
        "it needs row tracking (first row ids assigned at commit, which our commits do not), "
        "and Java compacts it by row-id ranges, merging the column files that share one "
        "(DataEvolutionCompactCoordinator); we would compact files alone",
        "FileStoreCommitImpl.assignRowTracking, DataEvolutionCompactCoordinator",
        _append(_flag(DATA_EVOLUTION)),
    ),
    Unsupported(
        CLUSTERING_INCREMENTAL,
        "1.3",
        frozenset({COMPACTION}),
        "Java compacts such append tables by incremental clustering (sorting files by "
        "'clustering.columns' in levels); we would only concatenate small files",
        "IncrementalClusterManager, BucketedAppendClusterManager",
        _append(_flag(CLUSTERING_INCREMENTAL)),
    ),
    Unsupported(
        PK_CLUSTERING_OVERRIDE,
        "1.4",
        frozenset({COMPACTION}),
        "Java compacts such tables with ClusteringCompactManager, sorting files by "
        "'clustering.columns' and keeping a key index with deletion vectors; we would merge "
        "them by primary key and write key-sorted files with primary-key min/max keys",
        "KvCompactionManagerFactory, ClusteringCompactManager, KeyValueClusteringFileWriter",
        _flag(PK_CLUSTERING_OVERRIDE),
    ),
    Unsupported(
        SEQUENCE_SNAPSHOT_ORDERING,
        "2.0",
        WRITES,
        "Java stamps every file a non-COMPACT commit adds with the snapshot id as its sequence "
        "number and merges APPEND files' records by it; our commits would not stamp them and "
        "our merge would order records by their own sequence numbers",
        "FileStoreCommitImpl.stampSequenceWithSnapshotId, KeyValueFileReaderFactory",
        _flag(SEQUENCE_SNAPSHOT_ORDERING),
    ),
    Unsupported(
        CHAIN_TABLE,
        "1.4",
        WRITES | {PARTITION_EXPIRY},
        "Java's compaction of a chain table keeps delete records at every level, its "
        "overwrite commits truncate the partitions of the snapshot branch, and it expires "
        "partitions by segments across the snapshot and delta branches; we would drop deletes, "
        "leave the snapshot branch stale and expire partitions one by one",
        "MergeTreeCompactManagerFactory (forceKeepDelete), ChainTableOverwriteCommitCallback, "
        "ChainTableCommitPreCallback, ChainTablePartitionExpire",
        _flag(CHAIN_TABLE),
    ),
    Unsupported(
        DELETION_VECTORS_MODIFIABLE,
        "1.4",
        frozenset({COMPACTION}),
        "it lets 'deletion-vectors.enabled' change on a table with files, so files written in "
        "either mode may coexist until a full compaction; nothing in the metadata says which, "
        "and compacting in the current mode alone can read keys twice",
        "SchemaManager (checks on 'deletion-vectors.enabled')",
        _flag(DELETION_VECTORS_MODIFIABLE),
    ),
    Unsupported(
        PRIMARY_KEY_NULLABLE,
        "after 2.0.0 (apache/paimon#9094, master)",
        WRITES,
        "null primary-key values merge with null-safe equality; our key encoding, bucketing "
        "and merge assume non-null keys",
        "CoreOptions.PRIMARY_KEY_NULLABLE (master)",
        _flag(PRIMARY_KEY_NULLABLE),
    ),
    Unsupported(
        BLOB_FIELD,
        "1.4 (primary-key tables 2.0)",
        frozenset({COMPACTION, INGEST, ORPHAN_REMOVAL}),
        "Java stores those values in '.managed.blob' packs referenced from a '.blobref' sidecar "
        "of each data file, and orphan removal never deletes packs; we would inline the values "
        "and delete live packs as orphans",
        "PrimaryKeyBlobExternalizer, KeyValueDataFileWriter, OrphanFilesClean.isManagedBlobPack",
        _primary_key(_columns(BLOB_FIELD)),
    ),
    *(
        Unsupported(
            key,
            "2.0",
            WRITES,
            "Java's writer keeps a primary-key index per bucket over its data files, updated "
            "as files are written and compacted; ours would leave it indexing replaced files",
            "KeyValueFileStore.newWrite, AbstractFileStoreWrite.prepareCommit (append and compact "
            "increments), BucketedPrimaryKeyIndexMaintainer",
            _columns(key),
        )
        for key in PK_INDEX_COLUMNS
    ),
    Unsupported(
        "file-index on columns Java cannot index",
        "0.9",
        WRITES,
        "Java's data file writer fails on such a table (an unknown index type, a missing "
        "column, or a type the index takes no values of: FastHash, BitmapTypeVisitor, the bsi "
        "value mapper, which we also refuse above 18 decimal digits, RangeBitmap's KeyFactory, "
        "which refuses decimals above 18 digits and timestamps above precision 6; a map key of "
        "a column that is no MAP or has no string keys), so no file of it may be written",
        "FileIndexer.create, DataFileIndexWriter(.MapFileIndexMaintainer), "
        "FileIndexerFactory.validate",
        _file_index(_unindexable),
    ),
    Unsupported(
        "VARIANT type",
        "1.1",
        WRITES,
        "Java writes VARIANT as value and metadata binaries, shredded by "
        "'variant.shreddingSchema'; we have no mapping for it",
        "org.apache.paimon.types.VariantType",
        _typed("VARIANT"),
    ),
    Unsupported(
        "BLOB on an append table",
        "1.4",
        WRITES,
        "Java writes an append table's BLOB values to separate '.blob' files beside each data "
        "file; we would inline them (and a compaction would leave the '.blob' files behind)",
        "BlobFileWriter, RollingBlobFileWriter",
        _append(
            _named(
                "BLOB on an append table",
                lambda schema: _typed("BLOB")(schema) or _columns(BLOB_FIELD)(schema),
            )
        ),
    ),
    Unsupported(
        "BLOB type",
        "1.4 (primary-key tables 2.0)",
        frozenset({COMPACTION, INGEST, ORPHAN_REMOVAL}),
        "Java keeps BLOB values of primary-key tables in '.managed.blob' packs referenced from "
        "'.blobref' sidecars, which orphan removal never deletes; we would inline them and "
        "delete live packs as orphans",
        "org.apache.paimon.types.BlobType, PrimaryKeyBlobExternalizer, OrphanFilesClean",
        _primary_key(_typed("BLOB")),
    ),
    Unsupported(
        "VECTOR type",
        "1.4",
        WRITES,
        "Java writes VECTOR columns as fixed-length arrays in its own layout; we have no mapping "
        "for them",
        "org.apache.paimon.types.VectorType",
        _typed("VECTOR"),
    ),
    Unsupported(
        "lance / vortex / mosaic file format",
        "1.3 / 2.0 / 2.0",
        WRITES,
        "we read and write parquet, orc and avro data files only",
        "LanceFileFormatFactory, VortexFileFormatFactory, MosaicFileFormatFactory",
        _foreign_format,
    ),
    Unsupported(
        DATA_FILE_EXTERNAL_PATHS_STRATEGY,
        "after 2.0.0",
        frozenset(OPERATIONS),
        "Java places new data files under 'data-file.external-paths' by this strategy and "
        "lists the roots when removing orphans; release-2.0.0 knows none, specific-fs, "
        "round-robin, entropy-inject and weight-robin, and we would place files elsewhere",
        "CoreOptions.ExternalPathStrategy, FileStorePathFactory.createExternalPathProvider",
        _unknown_external_strategy,
    ),
)


def unsupported_modes(schema: TableSchema) -> list[tuple[Unsupported, str]]:
    """Every mode of MODES the table uses, with what was found (for `health`)."""
    return [(mode, found) for mode in MODES if (found := mode.find(schema))]


def option_findings(schema: TableSchema) -> dict[str, list[str]]:
    """What `health` and `tables` report of the table's options: the modes it uses that we
    refuse (each with the operations it refuses) and the keys the census does not know."""
    return {
        "unsupported": [
            f"{found}: refuses {', '.join(o for o in OPERATIONS if o in mode.operations)}"
            for mode, found in unsupported_modes(schema)
        ],
        "unknown_options": unknown_options(schema),
    }


def check_catalog(catalog_options: Mapping[str, str]) -> None:
    """Refuse a catalog other than a bare folder: its commits, locks and partitions are not ours.

    Raises UnsupportedCatalogError, before the warehouse is opened.
    """
    metastore = str(catalog_options.get(METASTORE, FILESYSTEM)).strip().lower()
    if metastore != FILESYSTEM:
        raise UnsupportedCatalogError(
            f"catalog option '{METASTORE}'={metastore!r}: dagster-paimon opens a warehouse only "
            f"as a filesystem catalog (a folder or an object-store prefix); a {metastore} "
            "catalog keeps the table's name, location, partitions and commit lock itself, and "
            "committing beside it would leave it stale or race its writers; drop the option to "
            "open the warehouse's folder only if no metastore knows these tables"
        )
    locked = read_option(catalog_options, LOCK_ENABLED, boolean, None)
    if locked or (locked is None and catalog_options.get(LOCK_TYPE)):
        raise UnsupportedCatalogError(
            f"catalog options '{LOCK_ENABLED}'/'{LOCK_TYPE}' ask for a catalog lock around "
            "every commit, as Java's writers of this warehouse take it; our commits take no "
            "lock (they rely on the store's create-if-absent), so a Java writer trusting the "
            f"lock could overwrite one of ours; drop the options only if no writer uses a lock"
        )


def check_supported_layout(schema: TableSchema, *, operation: str) -> None:
    """Refuse `operation` on a table using a mode that changes what it must do."""
    if operation not in OPERATIONS:
        raise InvalidArgumentError(
            f"operation must be one of {list(OPERATIONS)}, got {operation!r}"
        )
    refused = refusals(schema, operation)
    if refused:
        reasons = "; ".join(f"{found} (Paimon {m.since}): {m.why}" for m, found in refused)
        raise UnsupportedLayoutError(
            f"dagster-paimon does not implement {operation} for this table, so nothing was "
            f"read or written: {reasons}"
        )
    unknown = unknown_options(schema)
    if unknown:
        log.warning(
            "%s goes ahead on a table with options the option census does not know (a newer "
            "Paimon's, or the table's own properties): %s; if Paimon's writers act on one, "
            "this %s may not do what they would: see docs/options.md",
            operation,
            ", ".join(unknown),
            operation,
        )


def refusals(schema: TableSchema, operation: str) -> list[tuple[Unsupported, str]]:
    """The modes the table uses that refuse `operation`, with what was found (none: it runs)."""
    return [(m, found) for m, found in unsupported_modes(schema) if operation in m.operations]


def unknown_options(schema: TableSchema) -> list[str]:
    """The table's option keys the census does not classify (a newer Paimon's, or a user's)."""
    return census().unknown(schema.options)
