"""Conflict checks of Java's ConflictDetection: replaced files live, key ranges disjoint."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from dagster_paimon.errors import CommitConflictError, CorruptMetadataError
from dagster_paimon.format.manifest import DataFileMeta, ManifestEntry
from dagster_paimon.format.metadata import Snapshot
from dagster_paimon.io.filekind import ADD, DELETE
from dagster_paimon.partition import Partition
from dagster_paimon.snapshot.entries import entry_identifier, sorted_run_files

BucketKey = tuple[tuple, int]


def _bucket(entry: ManifestEntry) -> BucketKey:
    """(partition values, bucket) of an entry."""
    return tuple(entry.partition.values), entry.bucket


def apply_entries(
    latest: Snapshot, live: Sequence[ManifestEntry], entries: Sequence[ManifestEntry]
) -> dict[BucketKey, list[DataFileMeta]]:
    """The files of every changed bucket after the entries; a DELETE must hit a live file."""
    changed = {_bucket(e) for e in entries}
    files: dict[BucketKey, dict[tuple, DataFileMeta]] = defaultdict(dict)
    for e in live:
        if _bucket(e) in changed:
            files[_bucket(e)][entry_identifier(e)] = e.file
    for e in entries:
        if e.kind != DELETE:
            continue
        key = _bucket(e)
        if files[key].pop(entry_identifier(e), None) is None:
            raise CommitConflictError(
                f"file {e.file.file_name} (level {e.file.level}) of bucket {e.bucket} in "
                f"partition {list(key[0])} is no longer live at snapshot {latest.id}: "
                "another commit compacted or overwrote it"
            )
    for e in entries:
        if e.kind != ADD:
            continue
        ident = entry_identifier(e)
        if ident in files[_bucket(e)]:
            raise CommitConflictError(f"file {e.file.file_name} would be added twice")
        files[_bucket(e)][ident] = e.file
    return {key: list(by_id.values()) for key, by_id in files.items()}


def check_key_ranges(buckets: dict[BucketKey, list[DataFileMeta]]) -> None:
    """Every level >= 1 of every bucket must stay one sorted run (ConflictDetection)."""
    for (partition, bucket), files in buckets.items():
        by_level: dict[int, list[DataFileMeta]] = defaultdict(list)
        for f in files:
            if f.level > 0:
                by_level[f.level].append(f)
        for level, level_files in by_level.items():
            try:
                sorted_run_files(level, level_files)
            except CorruptMetadataError as err:
                raise CommitConflictError(
                    f"committing would overlap keys in bucket {bucket} of partition "
                    f"{list(partition)}: {err}"
                ) from err


def sequence_conflicts(
    live: Iterable[ManifestEntry], first_sequences: Mapping[tuple[Partition, int], int]
) -> dict[tuple[Partition, int], ManifestEntry]:
    """Per bucket where another writer reached where our new level-0 files start, its file
    with the highest sequence number: our files must start after it."""
    found: dict[tuple[Partition, int], ManifestEntry] = {}
    for e in live:
        key = (Partition(tuple(e.partition.values)), e.bucket)
        first = first_sequences.get(key)
        top = e.file.max_sequence_number
        if first is None or top < first:
            continue
        if key not in found or top > found[key].file.max_sequence_number:
            found[key] = e
    return found


def check_sequences_after(
    live: Iterable[ManifestEntry], first_sequences: Mapping[tuple[Partition, int], int], what: str
) -> None:
    """No other writer added sequence numbers at or above where our new level-0 files start.

    Two writers numbering one bucket from the same maximum interleave their records, which
    Paimon's sequence order cannot express; `what` names our operation in the error.
    """
    for key, e in sequence_conflicts(live, first_sequences).items():
        first = first_sequences[key]
        raise CommitConflictError(
            f"bucket {e.bucket} of partition {list(e.partition.values)} got file "
            f"{e.file.file_name} with sequence numbers up to "
            f"{e.file.max_sequence_number} from another writer since this {what} "
            f"started (its own start at {first}); nothing was committed, run the "
            f"{what} again"
        )
