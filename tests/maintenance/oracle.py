"""What a table references, read with pypaimon's own managers: the oracle maintenance must obey."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from pypaimon.consumer.consumer import Consumer
from pypaimon.consumer.consumer_manager import ConsumerManager
from pypaimon.manifest.manifest_file_manager import ManifestFileManager
from pypaimon.manifest.manifest_list_manager import ManifestListManager
from pypaimon.utils.file_store_path_factory import canonical_data_file_path

from tests.lsm.kvmodel import read_rows, sorted_rows
from tests.lsm.tables import KEY

DAY_S = 86_400


@dataclass(frozen=True)
class Refs:
    """Paths of the data files and names of the metadata files one snapshot needs."""

    data: frozenset[str]
    metadata: frozenset[str]


def _ids(table, directory: str, prefix: str) -> list[int]:
    """Ids of the record files in a table directory, listed through pypaimon's file IO."""
    path = f"{table.table_path}/{directory}"
    if not table.file_io.exists(path):
        return []
    names = (s.path.rstrip("/").rsplit("/", 1)[-1] for s in table.file_io.list_status(path))
    return sorted(int(n[len(prefix) :]) for n in names if n.startswith(prefix))


def snapshot_ids(table) -> list[int]:
    """Snapshot ids present in the store."""
    return _ids(table, "snapshot", "snapshot-")


def changelog_ids(table) -> list[int]:
    """Long-lived changelog ids present in the store."""
    return _ids(table, "changelog", "changelog-")


def refs_of(table, snapshot) -> Refs:
    """Live data file paths (pypaimon's merge of base + delta) and every metadata name."""
    lists = ManifestListManager(table)
    manifests = lists.read_all(snapshot)
    entries = ManifestFileManager(table).read_entries_parallel(manifests)
    data = frozenset(
        canonical_data_file_path(table, tuple(e.partition.values), e.bucket, e.file.file_name)
        for e in entries
    )
    metadata = {snapshot.base_manifest_list, snapshot.delta_manifest_list}
    metadata |= {m.file_name for m in manifests}
    return Refs(data, frozenset(metadata))


def changelog_data(table, snapshot) -> frozenset[str]:
    """Paths of the changelog files a snapshot produced (changelog-producer=input)."""
    if snapshot.changelog_manifest_list is None:
        return frozenset()
    manifests = ManifestListManager(table).read_changelog(snapshot)
    return frozenset(
        canonical_data_file_path(table, tuple(e.partition.values), e.bucket, e.file.file_name)
        for e in ManifestFileManager(table).read_entries_parallel(manifests)
    )


def all_refs(table) -> dict[int, Refs]:
    """Refs of every snapshot on disk."""
    manager = table.snapshot_manager()
    return {i: refs_of(table, manager.get_snapshot_by_id(i)) for i in snapshot_ids(table)}


def tag_refs(table) -> dict[str, Refs]:
    """Refs of every tag."""
    manager = table.tag_manager()
    return {n: refs_of(table, manager.get(n).trim_to_snapshot()) for n in manager.list_tags()}


def rows_at(table, snapshot_id: int) -> list[dict]:
    """Rows of a snapshot through pypaimon's time travel, in key order."""
    return sorted_rows(read_rows(table, snapshot_id), KEY)


def tag_rows(table, tag: str) -> list[dict]:
    """Rows of a tag through pypaimon's time travel, in key order."""
    return sorted_rows(read_rows(table.copy({"scan.tag-name": tag})), KEY)


def set_consumer(table, consumer_id: str, next_snapshot: int) -> None:
    """Record a streaming consumer's position as Paimon does ({table}/consumer/consumer-<id>)."""
    manager = ConsumerManager(table.file_io, table.table_path)
    manager.reset_consumer(consumer_id, Consumer(next_snapshot=next_snapshot))


def exists(path: str) -> bool:
    """Whether a file exists on the local disk."""
    return os.path.exists(path)


def manifest_exists(table, name: str) -> bool:
    """Whether a manifest or manifest list exists."""
    return os.path.exists(os.path.join(table.table_path, "manifest", name))


def age_tree(root: str, days: float = 3) -> None:
    """Make every file under root look `days` old, as files of long-finished writes are."""
    old = time.time() - days * DAY_S
    for directory, _, names in os.walk(root):
        for n in names:
            os.utime(os.path.join(directory, n), (old, old))


def all_files(root: str) -> set[str]:
    """Every file under root."""
    return {os.path.join(d, n) for d, _, names in os.walk(root) for n in names}


def hint(table, directory: str, name: str = "EARLIEST") -> str:
    """The content of a snapshot or changelog directory's hint file."""
    with open(os.path.join(table.table_path, directory, name)) as f:
        return f.read()
