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
    "ManifestEntry",
    "ManifestFileManager",
    "ManifestFileMeta",
    "ManifestListManager",
    "ManifestReader",
    "SimpleStats",
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
