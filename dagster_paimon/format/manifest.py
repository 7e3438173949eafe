"""Manifest lists, manifest entries, data files and index files as pypaimon encodes them.

Manifests written by Paimon's Java writers 0.8 to 1.0 are read with pypaimon 2.1 here too:

pypaimon 2.1's `ManifestFileManager.read` indexes a data file record's fields with `[...]`, and
older writers leave some of them out: Java 0.9 and 1.0 write no `_VALUE_STATS_COLS`, 0.8 neither
`_FILE_SOURCE`. Java reads an absent field as its default (DataFileMeta08Serializer,
DataFileMeta09Serializer): null, meaning "stats of all columns", "source unknown", "delete count
unknown" and "no embedded index". The one place we fill them is `ManifestReader`, used wherever
we read manifests. Every other field pypaimon 2.1 reads with `[...]` (manifest entry, manifest
list, index manifest) is written by every Java version since 0.8.
"""

from __future__ import annotations

import uuid
from typing import Any

from pypaimon.index.deletion_vector_meta import DeletionVectorMeta
from pypaimon.index.index_file_meta import IndexFileMeta
from pypaimon.manifest.index_manifest_entry import IndexManifestEntry
from pypaimon.manifest.index_manifest_file import IndexManifestFile
from pypaimon.manifest.manifest_file_manager import ManifestFileManager
from pypaimon.manifest.manifest_list_manager import ManifestListManager
from pypaimon.manifest.schema.data_file_meta import DataFileMeta
from pypaimon.manifest.schema.manifest_entry import ManifestEntry
from pypaimon.manifest.schema.manifest_file_meta import ManifestFileMeta
from pypaimon.manifest.schema.simple_stats import SimpleStats
from pypaimon.table.row.generic_row import GenericRow, GenericRowDeserializer

__all__ = [
    "DEFAULTS",
    "DataFileMeta",
    "DeletionVectorMeta",
    "GenericRow",
    "GenericRowDeserializer",
    "IndexFileMeta",
    "IndexManifestEntry",
    "IndexManifestFile",
    "IndexManifestWriter",
    "ManifestEntry",
    "ManifestFileManager",
    "ManifestFileMeta",
    "ManifestListManager",
    "ManifestReader",
    "SimpleStats",
    "TableManifests",
    "fill_defaults",
]

DEFAULTS: dict[str, Any] = {
    "_DELETE_ROW_COUNT": None,
    "_EMBEDDED_FILE_INDEX": None,
    "_FILE_SOURCE": None,
    "_VALUE_STATS_COLS": None,
}
"""Fields of a data file record older Java writers omit, with the value Java reads them as."""


def fill_defaults(file_record: dict[str, Any]) -> dict[str, Any]:
    """Give a manifest entry's `_FILE` record every field an older writer left out, in place."""
    for name, default in DEFAULTS.items():
        file_record.setdefault(name, default)
    return file_record


class ManifestReader(ManifestFileManager):
    """pypaimon's manifest reader and writer that also reads what Java 0.8 to 1.0 wrote.

    pypaimon's `read` hands each entry's `_FILE` record to `_get_value_stats_fields` before any
    of the fields above is read, and keeps using that same dict: filling it there is the one hook
    that needs no copy of pypaimon's conversion.
    """

    def _get_value_stats_fields(self, file_dict: dict, file_schema: Any) -> list:
        """The value stats fields, after filling what older writers omit."""
        return super()._get_value_stats_fields(fill_defaults(file_dict), file_schema)


class IndexManifestWriter(IndexManifestFile):
    """pypaimon's index manifest file, writing deletion-vector entries as Java does.

    Java's IndexFileMetaSerializer writes `_DELETIONS_VECTORS_RANGES` null only when an index
    file has no ranges at all (a HASH index); a deletion-vector file that holds no vector (a full
    compaction left none) has an empty list `[]`. pypaimon writes an empty map as null, and
    Java's writer restore (DeletionVectorsIndexFile.readAllDeletionVectors) dies on that null.
    """

    def _to_avro_record(self, entry: IndexManifestEntry) -> dict:
        """pypaimon's record, with `[]` for a deletion-vector file without ranges."""
        record = super()._to_avro_record(entry)
        if entry.index_file.index_type == "DELETION_VECTORS":
            record["_DELETIONS_VECTORS_RANGES"] = record["_DELETIONS_VECTORS_RANGES"] or []
        return record


class TableManifests:
    """A table's manifest lists, manifests and index manifest, read and written the one way
    (pypaimon's managers, with the defaults older Java writers omit): the call shapes a
    pypaimon release may change live here only."""

    def __init__(self, table: Any):
        self._files = ManifestReader(table)
        self._lists = ManifestListManager(table)
        self._table = table

    def all(self, snapshot: Any) -> list[ManifestFileMeta]:
        """The manifests of the snapshot's base and delta lists."""
        return self._lists.read_all(snapshot)

    def base(self, snapshot: Any) -> list[ManifestFileMeta]:
        """The manifests of the snapshot's base list."""
        return self._lists.read_base(snapshot)

    def delta(self, snapshot: Any) -> list[ManifestFileMeta]:
        """The manifests of the snapshot's delta list (what its commit added)."""
        return self._lists.read_delta(snapshot)

    def entries(
        self, manifests: list[ManifestFileMeta], *, with_stats: bool = False
    ) -> list[ManifestEntry]:
        """Every entry of `manifests`, read in parallel, unmerged; value statistics only when
        asked for (commits that write entries back need them)."""
        return self._files.read_entries_parallel(manifests, drop_stats=not with_stats)

    def entries_of(
        self, manifest: ManifestFileMeta, *, with_stats: bool = False
    ) -> list[ManifestEntry]:
        """The entries of one manifest."""
        return self._files.read(
            manifest.file_name, drop_stats=not with_stats, file_size=manifest.file_size
        )

    def write(self, entries: list[ManifestEntry], target_size: int) -> list[ManifestFileMeta]:
        """New manifests holding `entries`, rolled at `target_size` as Paimon's writer does."""
        return self._files.rolling_write(entries, target_size, f"manifest-{uuid.uuid4()}")

    def write_list(self, name: str, manifests: list[ManifestFileMeta]) -> int:
        """A manifest list `name` naming `manifests`; its size in bytes."""
        return self._lists.write(name, manifests)

    def write_index(self, entries: list[IndexManifestEntry]) -> str:
        """A new index manifest holding `entries`, deletion vectors written as Java does; its
        name."""
        return IndexManifestWriter(self._table).write(entries)

    def index_entries(self, name: str) -> list[IndexManifestEntry]:
        """The entries of the index manifest `name`."""
        return IndexManifestFile(self._table).read(name)
