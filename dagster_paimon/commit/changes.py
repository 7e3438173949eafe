"""What one operation changes in one bucket: Java's CommitMessage, as a plain value."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dagster_paimon.format.manifest import DataFileMeta, IndexFileMeta, ManifestEntry
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.io.filekind import ADD, DELETE
from dagster_paimon.io.index import delete_index_file
from dagster_paimon.io.paths import delete_data_files
from dagster_paimon.partition import Partition


@dataclass(frozen=True)
class BucketChange:
    """Files a bucket loses and gains; `new_files` are those this operation wrote itself.

    An upgrade is deleted at its old level and added at its new one, but is not a new file.
    `changelog` holds the changelog files written; `index` the bucket's new index file (HASH,
    or deletion vectors), replacing the index files `base_index` names (sorted): all those of
    its type the bucket had when the change was computed, except in an unaware-bucket
    partition, whose vectors' change names only the index files it touched; `drop_index`
    removes them with no replacement (no vector left, where Java's unaware-bucket maintainer
    writes no file).
    """

    partition: Partition
    bucket: int
    total_buckets: int
    deleted: tuple[DataFileMeta, ...] = ()
    added: tuple[DataFileMeta, ...] = ()
    new_files: tuple[DataFileMeta, ...] = ()
    changelog: tuple[DataFileMeta, ...] = ()
    index: IndexFileMeta | None = None
    base_index: tuple[str, ...] = ()
    drop_index: bool = False

    def entries(self) -> list[ManifestEntry]:
        """DELETE for every file replaced, then ADD for every file produced."""
        row = self.partition.row()
        return [
            *(ManifestEntry(DELETE, row, self.bucket, self.total_buckets, f) for f in self.deleted),
            *(ManifestEntry(ADD, row, self.bucket, self.total_buckets, f) for f in self.added),
        ]

    def changelog_entries(self) -> list[ManifestEntry]:
        """ADD entries of the changelog files."""
        row = self.partition.row()
        return [ManifestEntry(ADD, row, self.bucket, self.total_buckets, f) for f in self.changelog]

    def discard(self, table: FileStoreTable) -> None:
        """Remove the files this operation wrote: they will never be committed."""
        delete_data_files(table, self.partition, self.bucket, (*self.new_files, *self.changelog))
        if self.index is not None:
            delete_index_file(table, self.partition, self.bucket, self.index)


def discard_all(table: FileStoreTable, changes: Iterable[BucketChange]) -> None:
    """Remove the new files of every change."""
    for change in changes:
        change.discard(table)
