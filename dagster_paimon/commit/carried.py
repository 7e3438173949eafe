"""What a new snapshot carries over from the latest one, as Java's commit writes it.

Java's FileStoreCommitImpl.tryCommitOnce (release-2.0.0) gives every snapshot it commits the
latest snapshot's `watermark` and `nextRowId` (when it has them) and its `statistics` file when
that was computed for the current schema; `properties` start empty for a compaction or an
overwrite, and under `write.sequence-number-init-mode=snapshot` hold the highest sequence number
written so far (SequenceSnapshotProperties), which Java's writers then start from instead of
scanning every manifest.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from dagster_paimon.format.manifest import (
    ManifestEntry,
    TableManifests,
)
from dagster_paimon.format.metadata import Snapshot
from dagster_paimon.format.table import FileStoreTable, statistics_root
from dagster_paimon.io.filekind import ADD
from dagster_paimon.options import SEQUENCE_NUMBER_INIT_MODE, read_option

MAX_SEQUENCE_NUMBER = "sequence.generation.max-sequence-number"
"""The snapshot property Java's writers read their next sequence number from."""


def inherited_statistics(table: FileStoreTable, latest: Snapshot | None) -> str | None:
    """The latest snapshot's statistics file, kept when it describes the current schema."""
    if latest is None or not latest.statistics:
        return None
    path = f"{statistics_root(table)}/{latest.statistics}"
    with table.file_io.new_input_stream(path) as stream:
        stats = json.loads(stream.read())
    return latest.statistics if stats.get("schemaId") == table.table_schema.id else None


def snapshot_properties(
    table: FileStoreTable, latest: Snapshot | None, entries: Sequence[ManifestEntry]
) -> dict[str, str] | None:
    """The new snapshot's properties: the highest sequence number under the snapshot init mode."""
    mode = read_option(table.table_schema.options, SEQUENCE_NUMBER_INIT_MODE, str.lower, "scan")
    if mode != "snapshot":
        return None
    maxima = [e.file.max_sequence_number for e in entries if e.kind == ADD]
    recorded = (latest.properties or {}).get(MAX_SEQUENCE_NUMBER) if latest else None
    if recorded is not None:
        maxima.append(int(recorded))
    elif latest is not None:
        maxima.extend(_written_maxima(table, latest))
    return {MAX_SEQUENCE_NUMBER: str(max(maxima))} if maxima else None


def _written_maxima(table: FileStoreTable, latest: Snapshot) -> list[int]:
    """Every added file's highest sequence number in the latest snapshot's data manifests."""
    manifests = TableManifests(table)
    return [
        e.file.max_sequence_number
        for meta in manifests.all(latest)
        for e in manifests.entries_of(meta)
        if e.kind == ADD
    ]
