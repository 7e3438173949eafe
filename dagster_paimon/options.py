"""Paimon table options: the keys we read (CoreOptions names) and one typed reader per kind.

Every option is read through `read_option`, so a malformed value fails the same way wherever it
is read: an InvalidOptionError naming the key and the value, before anything is written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from dagster_paimon.errors import InvalidArgumentError, InvalidOptionError
from dagster_paimon.format.values import MemorySize, parse_duration

T = TypeVar("T")
D = TypeVar("D")

BUCKET = "bucket"
BUCKET_KEY = "bucket-key"
BUCKET_FUNCTION_TYPE = "bucket-function.type"
FILE_FORMAT = "file.format"
FILE_FORMAT_PER_LEVEL = "file.format.per.level"
FILE_COMPRESSION_PER_LEVEL = "file.compression.per.level"
CHANGELOG_FILE_FORMAT = "changelog-file.format"
CHANGELOG_FILE_COMPRESSION = "changelog-file.compression"
FILE_SUFFIX_INCLUDE_COMPRESSION = "file.suffix.include.compression"
WRITE_BUFFER_SIZE = "write-buffer-size"
ROWKIND_FIELD = "rowkind.field"
PARTITION_DEFAULT_NAME = "partition.default-name"
IGNORE_UPDATE_BEFORE = "ignore-update-before"

MERGE_ENGINE = "merge-engine"
IGNORE_DELETE = "ignore-delete"
IGNORE_DELETE_FALLBACKS = (
    "first-row.ignore-delete",
    "deduplicate.ignore-delete",
    "partial-update.ignore-delete",
)
SEQUENCE_FIELD = "sequence.field"
SEQUENCE_FIELD_SORT_ORDER = "sequence.field.sort-order"
PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE = "partial-update.remove-record-on-delete"
PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP = "partial-update.remove-record-on-sequence-group"
AGGREGATION_REMOVE_RECORD_ON_DELETE = "aggregation.remove-record-on-delete"
FIELDS_PREFIX = "fields."
DEFAULT_AGGREGATE_FUNCTION = "default-aggregate-function"
SEQUENCE_GROUP_SUFFIX = ".sequence-group"

TARGET_FILE_SIZE = "target-file-size"
SMALL_FILE_RATIO = "compaction.small-file-ratio"
COMPACTION_TRIGGER = "num-sorted-run.compaction-trigger"
STOP_TRIGGER = "num-sorted-run.stop-trigger"
NUM_LEVELS = "num-levels"
MAX_SIZE_AMP = "compaction.max-size-amplification-percent"
SIZE_RATIO = "compaction.size-ratio"
OFFPEAK_START = "compaction.offpeak.start.hour"
OFFPEAK_END = "compaction.offpeak.end.hour"
OFFPEAK_RATIO = "compaction.offpeak-ratio"
OPTIMIZATION_INTERVAL = "compaction.optimization-interval"
TOTAL_SIZE_THRESHOLD = "compaction.total-size-threshold"
INCREMENTAL_SIZE_THRESHOLD = "compaction.incremental-size-threshold"
FORCE_UP_LEVEL_0 = "compaction.force-up-level-0"
FORCE_REWRITE_ALL_FILES = "compaction.force-rewrite-all-files"
DELETE_RATIO_THRESHOLD = "compaction.delete-ratio-threshold"
MIN_FILE_NUM = "compaction.min.file-num"
FILE_NUM_LIMIT = "compaction.file-num-limit"
SPLIT_OPEN_FILE_COST = "source.split.open-file-cost"
ROW_TRACKING = "row-tracking.enabled"
DATA_EVOLUTION = "data-evolution.enabled"
CLUSTERING_INCREMENTAL = "clustering.incremental"
WRITE_ONLY = "write-only"
WRITE_ONLY_FALLBACKS = ("write.compaction-skip",)  # its old name, still honoured
SEQUENCE_NUMBER_INIT_MODE = "write.sequence-number-init-mode"
CHANGELOG_PRODUCER = "changelog-producer"
DELETION_VECTORS = "deletion-vectors.enabled"
DELETION_VECTORS_BITMAP64 = "deletion-vectors.bitmap64"
DELETION_VECTORS_MERGE_ON_READ = "deletion-vectors.merge-on-read"
CHANGELOG_FILE_PREFIX = "changelog-file.prefix"
DATA_FILE_THIN_MODE = "data-file.thin-mode"
METADATA_STATS_MODE = "metadata.stats-mode"
METADATA_STATS_MODE_PER_LEVEL = "metadata.stats-mode.per.level"
METADATA_STATS_DENSE_STORE = "metadata.stats-dense-store"
METADATA_STATS_KEEP_FIRST_N_COLUMNS = "metadata.stats-keep-first-n-columns"
CHANGELOG_FILE_STATS_MODE = "changelog-file.stats-mode"
STATS_MODE_SUFFIX = ".stats-mode"
CHANGELOG_ROW_DEDUPLICATE = "changelog-producer.row-deduplicate"
CHANGELOG_ROW_DEDUPLICATE_IGNORE_FIELDS = "changelog-producer.row-deduplicate-ignore-fields"
FORCE_LOOKUP = "force-lookup"
LOOKUP_COMPACT = "lookup-compact"
LOOKUP_COMPACT_MAX_INTERVAL = "lookup-compact.max-interval"
RECORD_LEVEL_EXPIRE_TIME = "record-level.expire-time"
RECORD_LEVEL_TIME_FIELD = "record-level.time-field"
DYNAMIC_BUCKET_TARGET_ROW_NUM = "dynamic-bucket.target-row-num"
DYNAMIC_BUCKET_MAX_BUCKETS = "dynamic-bucket.max-buckets"
DYNAMIC_BUCKET_INITIAL_BUCKETS = "dynamic-bucket.initial-buckets"
DYNAMIC_BUCKET_ASSIGNER_PARALLELISM = "dynamic-bucket.assigner-parallelism"
POSTPONE_DEFAULT_BUCKET_NUM = "postpone.default-bucket-num"
POSTPONE_TARGET_ROW_NUM = "postpone.target-row-num-per-bucket"
POSTPONE_TARGET_SIZE = "postpone.target-size-per-bucket"

SNAPSHOT_RETAIN_MIN = "snapshot.num-retained.min"
SNAPSHOT_RETAIN_MAX = "snapshot.num-retained.max"
SNAPSHOT_TIME_RETAINED = "snapshot.time-retained"
SNAPSHOT_EXPIRE_LIMIT = "snapshot.expire.limit"
CHANGELOG_RETAIN_MIN = "changelog.num-retained.min"
CHANGELOG_RETAIN_MAX = "changelog.num-retained.max"
CHANGELOG_TIME_RETAINED = "changelog.time-retained"
CONSUMER_CHANGELOG_ONLY = "consumer.changelog-only"
CONSUMER_EXPIRATION_TIME = "consumer.expiration-time"
TAG_CREATE_SUCCESS_FILE = "tag.create-success-file"
MANIFEST_TARGET_SIZE = "manifest.target-file-size"
MANIFEST_MERGE_MIN_COUNT = "manifest.merge-min-count"
MANIFEST_FULL_COMPACTION_SIZE = "manifest.full-compaction-threshold-size"
DATA_FILE_EXTERNAL_PATHS = "data-file.external-paths"
DATA_FILE_EXTERNAL_PATHS_STRATEGY = "data-file.external-paths.strategy"
DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS = "data-file.external-paths.specific-fs"
DATA_FILE_EXTERNAL_PATHS_WEIGHTS = "data-file.external-paths.weights"

DEDUPLICATE, PARTIAL_UPDATE, AGGREGATION, FIRST_ROW = MERGE_ENGINES = (
    "deduplicate",
    "partial-update",
    "aggregation",
    "first-row",
)
CHANGELOG_PRODUCERS = ("none", "input", "full-compaction", "lookup")
# CoreOptions.ExternalPathStrategy of release-2.0.0 (weight-robin since 1.4, the rest since 1.1)
EXTERNAL_NONE, SPECIFIC_FS, ROUND_ROBIN, ENTROPY_INJECT, WEIGHT_ROBIN = EXTERNAL_PATH_STRATEGIES = (
    "none",
    "specific-fs",
    "round-robin",
    "entropy-inject",
    "weight-robin",
)
DYNAMIC_BUCKET = -1
POSTPONE_BUCKET = -2
CATALOG_TRUE = ("true", "1", "yes")
CATALOG_FALSE = ("false", "0", "no", "")


def read_option(
    options: Mapping[str, str],
    key: str,
    convert: Callable[[str], T],
    default: D,
    fallbacks: Sequence[str] = (),
) -> T | D:
    """The first of `key` and its fallback keys that is set, converted; else the default."""
    for candidate in (key, *fallbacks):
        raw = options.get(candidate)
        if raw is None:
            continue
        try:
            return convert(str(raw).strip())
        except (ValueError, TypeError) as e:
            raise InvalidOptionError(
                f"table option '{candidate}' has malformed value {raw!r}: {e}"
            ) from e
    return default


def boolean(text: str) -> bool:
    """Paimon accepts exactly true/false, case-insensitively."""
    lowered = text.lower()
    if lowered not in ("true", "false"):
        raise InvalidArgumentError("expected true or false")
    return lowered == "true"


def catalog_boolean(text: str) -> bool:
    """A catalog flag as pypaimon's file IO reads it: true/1/yes or false/0/no/empty."""
    lowered = text.lower()
    if lowered not in CATALOG_TRUE + CATALOG_FALSE:
        raise InvalidArgumentError("must be true or false")
    return lowered in CATALOG_TRUE


def choice(choices: Sequence[str]) -> Callable[[str], str]:
    """A converter that accepts only Paimon's enumerated values."""

    def convert(text: str) -> str:
        lowered = text.lower()
        if lowered not in choices:
            raise InvalidArgumentError(f"expected one of {', '.join(choices)}")
        return lowered

    return convert


def at_least(minimum: int) -> Callable[[str], int]:
    """An integer converter with a lower bound, for counts and levels."""

    def convert(text: str) -> int:
        value = int(text)
        if value < minimum:
            raise InvalidArgumentError(f"must be >= {minimum}")
        return value

    return convert


def hour(text: str) -> int:
    """An hour of day, or -1 for 'not set'."""
    value = int(text)
    if not -1 <= value <= 23:
        raise InvalidArgumentError("must be -1 or an hour 0..23")
    return value


def ratio(text: str) -> float:
    """A fraction in (0, 1]."""
    value = float(text)
    if not 0.0 < value <= 1.0:
        raise InvalidArgumentError("must be in (0, 1]")
    return value


def memory_bytes(text: str) -> int:
    """A Paimon memory size ('128 mb', '1gb'; a bare number is bytes) in bytes."""
    return MemorySize.parse_bytes(text)


def duration_ms(text: str) -> int:
    """A Paimon duration ('1 h', '30min', '2d'; a bare number is milliseconds) in ms."""
    return int(parse_duration(text))


def names(text: str) -> list[str]:
    """A comma-separated list of field names."""
    return [name.strip() for name in text.split(",") if name.strip()]


def per_level(text: str) -> dict[int, str]:
    """A map option keyed by level ("0:avro,5:parquet"), as CoreOptions' `*.per.level` read it."""
    levels: dict[int, str] = {}
    for item in names(text):
        level, sep, value = item.partition(":")
        if not sep or not level.strip().isdigit():
            raise InvalidArgumentError(f"{item!r} is not LEVEL:VALUE")
        levels[int(level)] = value.strip()
    return levels


def write_format(options: Mapping[str, str], level: int, *, changelog: bool = False) -> str:
    """The format Java's KeyValueFileWriterFactory writes at a level (or for a changelog)."""
    if changelog and options.get(CHANGELOG_FILE_FORMAT):
        return options[CHANGELOG_FILE_FORMAT].lower()
    formats = read_option(options, FILE_FORMAT_PER_LEVEL, per_level, {})
    return formats.get(level, file_format(options)).lower()


def write_compression(
    options: Mapping[str, str], level: int, default: str, *, changelog: bool = False
) -> str:
    """The compression Java writes at a level (or for a changelog); default: file.compression."""
    if changelog and options.get(CHANGELOG_FILE_COMPRESSION):
        return options[CHANGELOG_FILE_COMPRESSION]
    return read_option(options, FILE_COMPRESSION_PER_LEVEL, per_level, {}).get(level, default)


def written_formats(options: Mapping[str, str]) -> set[str]:
    """Every format a table's writers may write: the default, per level and for changelogs."""
    formats = {file_format(options)}
    levels = read_option(options, FILE_FORMAT_PER_LEVEL, per_level, {})
    formats.update(f.lower() for f in levels.values())
    if options.get(CHANGELOG_FILE_FORMAT):
        formats.add(options[CHANGELOG_FILE_FORMAT].lower())
    return formats


def flag(options: Mapping[str, str], key: str, fallbacks: Sequence[str] = ()) -> bool:
    """A boolean table option, false unless set (Paimon's default for every flag we read)."""
    return read_option(options, key, boolean, False, fallbacks)


def merge_engine(options: Mapping[str, str]) -> str:
    """The `merge-engine` option: deduplicate unless set."""
    return read_option(options, MERGE_ENGINE, choice(MERGE_ENGINES), DEDUPLICATE)


def ignore_delete(options: Mapping[str, str]) -> bool:
    """`ignore-delete`, or the engine-specific keys Paimon still accepts for it."""
    return flag(options, IGNORE_DELETE, IGNORE_DELETE_FALLBACKS)


def file_format(options: Mapping[str, str]) -> str:
    """The `file.format` of data files: parquet unless set (Paimon's default since 1.0)."""
    return read_option(options, FILE_FORMAT, str.lower, "parquet")


def bucket(options: Mapping[str, str]) -> int:
    """The `bucket` option: a fixed count, -1 (dynamic, the default) or -2 (postpone)."""
    return read_option(options, BUCKET, int, DYNAMIC_BUCKET)


def changelog_producer(options: Mapping[str, str]) -> str:
    """The `changelog-producer` option: none unless set."""
    return read_option(options, CHANGELOG_PRODUCER, choice(CHANGELOG_PRODUCERS), "none")
