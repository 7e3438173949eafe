"""Read what keeps files alive: snapshots, tags, changelogs, consumers, branches, manifests.

Manifests are read with a light Avro pass (names, kinds, levels) rather than full DataFileMeta
objects: maintenance only needs identities, and it reads every manifest of a table.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from io import BytesIO
from typing import Any, TypeVar, cast

import fastavro

from dagster_paimon.errors import CorruptFileError, MaintenanceAbortedError
from dagster_paimon.format.manifest import TableManifests
from dagster_paimon.format.metadata import Snapshot, Tag
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.io.filekind import ADD
from dagster_paimon.io.paths import bucket_file_path
from dagster_paimon.partition import Partition
from dagster_paimon.snapshot.resolve import read_json
from dagster_paimon.storage.files import TableFiles
from dagster_paimon.storage.pool import parallel_map
from dagster_paimon.storage.snapshots import replace_file

log = logging.getLogger(__name__)

MAIN_BRANCH = "main"
SNAPSHOT_PREFIX = "snapshot-"
CHANGELOG_PREFIX = "changelog-"
TAG_PREFIX = "tag-"
CONSUMER_PREFIX = "consumer-"
BRANCH_PREFIX = "branch-"
EARLIEST = "EARLIEST"
LATEST = "LATEST"
APPEND_SOURCE = 0

T = TypeVar("T")
# what fastavro raises on bytes that are not the Avro file they should be
AVRO_ERRORS = (ValueError, EOFError, KeyError, TypeError)


def avro_records(data: bytes, path: str) -> list[dict[str, Any]]:
    """The records of an Avro file whose schema is a record (a manifest list, a manifest)."""
    try:
        return cast(list[dict[str, Any]], list(fastavro.reader(BytesIO(data))))
    except AVRO_ERRORS as e:
        raise CorruptFileError(f"{path} is not a valid Avro file: {e}") from e


@dataclass(frozen=True)
class FileRef:
    """A data file as a manifest entry names it: Java's ExpireFileEntry."""

    kind: int
    partition: bytes
    bucket: int
    level: int
    file_name: str
    extra_files: tuple[str, ...]
    embedded_index: bytes | None
    external_path: str | None
    file_source: int | None

    @property
    def identifier(self) -> tuple:
        """Paimon's FileEntry identifier: an upgrade (same name, other level) is another file."""
        return (
            self.partition,
            self.bucket,
            self.level,
            self.file_name,
            self.extra_files,
            self.embedded_index,
            self.external_path,
        )


@dataclass(frozen=True)
class Consumer:
    """A streaming reader's position: consumer-<id> holding {"nextSnapshot": N}."""

    consumer_id: str
    next_snapshot: int
    modified_ms: int
    path: str

    def to_dict(self) -> dict:
        """The JSON of one consumer."""
        return {
            "consumer_id": self.consumer_id,
            "next_snapshot": self.next_snapshot,
            "modified_ms": self.modified_ms,
        }


@dataclass(frozen=True)
class Branch:
    """Where one branch keeps its snapshots, tags, changelogs and consumers."""

    name: str
    root: str

    def dir(self, kind: str) -> str:
        """snapshot, tag, changelog, consumer or schema directory of this branch."""
        return f"{self.root}/{kind}"


class TableMetadata:
    """Reads a table's metadata through its FileIO, listing through the maintenance store.

    Manifest lists and manifests never change once written, so each is read once per instance:
    a check repeated before deleting, or a plan made again after a race, reads only what new
    snapshots added.
    """

    def __init__(self, table: FileStoreTable, files: TableFiles):
        self.table = table
        self.files = files
        self.file_io = table.file_io
        self.root = table.table_path.rstrip("/")
        self.manifest_dir = f"{self.root}/manifest"
        self.main = Branch(MAIN_BRANCH, self.root)
        self._bucket_dirs: dict[tuple[bytes, int], str] = {}
        self._lists: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
        self._refs: dict[str, list[FileRef]] = {}

    def branches(self) -> list[Branch]:
        """main, then every branch under branch/ (Java's branch-<name> directories)."""
        found = [self.main]
        for status in self.files.list_dir(f"{self.root}/branch"):
            if status.is_dir and status.name.startswith(BRANCH_PREFIX):
                found.append(Branch(status.name[len(BRANCH_PREFIX) :], status.path.rstrip("/")))
        return found

    def ids(self, directory: str, prefix: str) -> list[int]:
        """Sorted ids of <prefix><id> files in a directory."""
        pattern = re.compile(re.escape(prefix) + r"(\d+)$")
        found = (pattern.match(s.name) for s in self.files.list_dir(directory) if not s.is_dir)
        return sorted(int(m.group(1)) for m in found if m)

    def read_json(self, path: str, cls: type[T]) -> T | None:
        """A snapshot-like JSON file, or None if it does not exist (expired meanwhile)."""
        return read_json(self.file_io, path, cls)

    def snapshot_path(self, snapshot_id: int, branch: Branch | None = None) -> str:
        """Path of snapshot-<id> in a branch (main by default)."""
        return f"{(branch or self.main).dir('snapshot')}/{SNAPSHOT_PREFIX}{snapshot_id}"

    def changelog_path(self, changelog_id: int, branch: Branch | None = None) -> str:
        """Path of changelog-<id> in a branch (main by default)."""
        return f"{(branch or self.main).dir('changelog')}/{CHANGELOG_PREFIX}{changelog_id}"

    def snapshot(self, snapshot_id: int, branch: Branch | None = None) -> Snapshot | None:
        """One snapshot, or None if it is not there."""
        return self.read_json(self.snapshot_path(snapshot_id, branch), Snapshot)

    def changelog(self, changelog_id: int, branch: Branch | None = None) -> Snapshot | None:
        """One long-lived changelog (a snapshot kept past expiry), or None."""
        return self.read_json(self.changelog_path(changelog_id, branch), Snapshot)

    def snapshots(self, ids: Iterable[int], branch: Branch | None = None) -> list[Snapshot]:
        """The snapshots among `ids` that still exist, in id order."""
        found = parallel_map(lambda i: self.snapshot(i, branch), list(ids))
        return [s for s in found if s is not None]

    def changelogs(self, ids: Iterable[int], branch: Branch | None = None) -> list[Snapshot]:
        """The changelogs among `ids` that still exist, in id order."""
        found = parallel_map(lambda i: self.changelog(i, branch), list(ids))
        return [c for c in found if c is not None]

    def tags(self, branch: Branch | None = None) -> list[tuple[str, Snapshot]]:
        """(name, tagged snapshot) of every tag, sorted by snapshot id."""
        directory = (branch or self.main).dir("tag")
        names = [
            s.name
            for s in self.files.list_dir(directory)
            if not s.is_dir and s.name.startswith(TAG_PREFIX)  # not tag-success-file/
        ]
        read = parallel_map(lambda n: self.read_json(f"{directory}/{n}", Tag), names)
        tags = [
            (n[len(TAG_PREFIX) :], t.trim_to_snapshot())
            for n, t in zip(names, read, strict=True)
            if t is not None
        ]
        return sorted(tags, key=lambda nt: (nt[1].id, nt[0]))

    def consumers(self, branch: Branch | None = None) -> list[Consumer]:
        """Every consumer file of a branch (Java's ConsumerManager), in id order.

        A consumer file removed while listing is skipped; one that cannot be decoded raises
        MaintenanceAbortedError, since the snapshots it needs are unknown.
        """
        directory = (branch or self.main).dir("consumer")
        found = []
        for status in self.files.list_dir(directory):
            if status.is_dir or not status.name.startswith(CONSUMER_PREFIX):
                continue
            try:
                text = self.file_io.read_file_utf8(f"{directory}/{status.name}")
                next_snapshot = int(json.loads(text)["nextSnapshot"])
            except FileNotFoundError:
                continue
            except (ValueError, KeyError, TypeError) as e:
                raise MaintenanceAbortedError(
                    f"consumer file {status.name} cannot be read ({e}); refusing to expire "
                    "snapshots a consumer may still need"
                ) from e
            found.append(
                Consumer(
                    status.name[len(CONSUMER_PREFIX) :], next_snapshot, status.mtime_ms, status.path
                )
            )
        return sorted(found, key=lambda c: c.consumer_id)

    def min_consumer_next(
        self, branch: Branch | None = None, *, expired_before_ms: int | None = None
    ) -> int | None:
        """The smallest snapshot a streaming consumer will read next; it must survive.

        A consumer last written before `expired_before_ms` (consumer.expiration-time ago) is
        expired: Java's commit path removes it before expiring snapshots, so it holds nothing.
        """
        live = [
            c.next_snapshot
            for c in self.consumers(branch)
            if expired_before_ms is None or c.modified_ms >= expired_before_ms
        ]
        return min(live) if live else None

    def write_hint(self, directory: str, name: str, value: int) -> None:
        """EARLIEST/LATEST hints: readers fall back to listing, so a failure only logs."""
        try:
            replace_file(self.file_io, f"{directory}/{name}", str(value))
        except Exception as e:
            log.warning("could not write the %s hint in %s: %s", name, directory, e)

    def _avro(self, name: str) -> list[dict]:
        """Records of one Avro file in the manifest directory."""
        path = self.manifest_path(name)
        with self.file_io.new_input_stream(path) as stream:
            data = stream.read()
        return avro_records(data, path)

    def manifest_list(self, name: str) -> list[tuple[str, tuple[str, ...]]]:
        """(manifest name, its extra files) of a manifest list."""
        listed = self._lists.get(name)
        if listed is None:
            listed = [
                (r["_FILE_NAME"], tuple(r.get("_EXTRA_FILES") or ())) for r in self._avro(name)
            ]
            self._lists[name] = listed
        return listed

    def manifest_refs(self, name: str) -> list[FileRef]:
        """Every entry of one manifest, as file identities."""
        refs = self._refs.get(name)
        if refs is None:
            refs = self._refs[name] = self._read_refs(name)
        return refs

    @property
    def manifests_read(self) -> int:
        """Distinct manifests and manifest lists read so far."""
        return len(self._lists) + len(self._refs)

    def _read_refs(self, name: str) -> list[FileRef]:
        """Every entry of one manifest, read from the store."""
        refs = []
        for r in self._avro(name):
            f = r["_FILE"]
            refs.append(
                FileRef(
                    kind=r["_KIND"],
                    partition=r["_PARTITION"],
                    bucket=r["_BUCKET"],
                    level=f["_LEVEL"],
                    file_name=f["_FILE_NAME"],
                    extra_files=tuple(f.get("_EXTRA_FILES") or ()),
                    embedded_index=f.get("_EMBEDDED_FILE_INDEX"),
                    external_path=f.get("_EXTERNAL_PATH"),
                    file_source=f.get("_FILE_SOURCE"),
                )
            )
        return refs

    def data_manifests(self, snapshot: Snapshot) -> list[str]:
        """Names of the base + delta manifests of a snapshot."""
        lists = [snapshot.base_manifest_list, snapshot.delta_manifest_list]
        return [m for lst in lists for m, _ in self.manifest_list(lst)]

    def live_refs(self, snapshot: Snapshot) -> list[FileRef]:
        """The data files a snapshot reads (base + delta with DELETEs applied)."""
        refs = [
            r
            for chunk in parallel_map(self.manifest_refs, self.data_manifests(snapshot))
            for r in chunk
        ]
        deleted = {r.identifier for r in refs if r.kind != ADD}
        return [r for r in refs if r.kind == ADD and r.identifier not in deleted]

    def live_files(self, snapshot: Snapshot) -> set[str]:
        """Names of the data files a snapshot reads (base + delta with DELETEs applied)."""
        return {r.file_name for r in self.live_refs(snapshot)}

    def index_files(self, index_manifest: str) -> list:
        """Entries of an index manifest; a missing one raises FileNotFoundError."""
        if not self.file_io.exists(self.manifest_path(index_manifest)):
            raise FileNotFoundError(index_manifest)
        return TableManifests(self.table).index_entries(index_manifest)

    @staticmethod
    def root_lists(snapshot: Snapshot, *, changelog_only: bool = False) -> list[str]:
        """Manifest lists a snapshot reads; a long-lived changelog needs only its changes.

        A changelog is read through its changelog list if it has one, else its delta list.
        """
        if changelog_only:
            return [snapshot.changelog_manifest_list or snapshot.delta_manifest_list]
        lists = [
            snapshot.base_manifest_list,
            snapshot.delta_manifest_list,
            snapshot.changelog_manifest_list,
        ]
        return [lst for lst in lists if lst]

    def metadata_files(
        self, snapshot: Snapshot, *, changelog_only: bool = False, missing_ok: bool = False
    ) -> tuple[set[str], set[str]]:
        """(every metadata file name, the manifest names among them) a snapshot needs.

        Metadata files are manifest lists, manifests and their sidecars, the index manifest
        and its index files, and the statistics file. A missing file raises FileNotFoundError
        unless missing_ok (a changelog whose base list its snapshot's expiry already removed).
        """
        names: set[str] = set()
        manifests: set[str] = set()
        for lst in self.root_lists(snapshot, changelog_only=changelog_only):
            names.add(lst)
            try:
                listed = self.manifest_list(lst)
            except FileNotFoundError:
                if not missing_ok:
                    raise
                continue
            for manifest, extra in listed:
                manifests.add(manifest)
                names.update(extra)
        names |= manifests
        if not changelog_only and snapshot.index_manifest:
            names.add(snapshot.index_manifest)
            try:
                index = self.index_files(snapshot.index_manifest)
            except FileNotFoundError:
                if not missing_ok:
                    raise
                index = []
            names.update(e.index_file.file_name for e in index)
        if not changelog_only and snapshot.statistics:
            names.add(snapshot.statistics)
        return names, manifests

    def data_paths(self, ref: FileRef) -> list[str]:
        """The data file's path and its aligned extra files (same directory)."""
        if ref.external_path:
            parent = ref.external_path.rsplit("/", 1)[0]
            return [ref.external_path] + [f"{parent}/{e}" for e in ref.extra_files]
        bucket_dir = self._bucket_dirs.get((ref.partition, ref.bucket))
        if bucket_dir is None:
            partition = Partition.of_bytes(ref.partition, self.table.partition_keys_fields)
            path = bucket_file_path(self.table, partition, ref.bucket, ref.file_name)
            bucket_dir = path.rsplit("/", 1)[0]
            self._bucket_dirs[(ref.partition, ref.bucket)] = bucket_dir
        return [f"{bucket_dir}/{name}" for name in (ref.file_name, *ref.extra_files)]

    def manifest_path(self, name: str) -> str:
        """Where a manifest, manifest list or index manifest lives."""
        return f"{self.manifest_dir}/{name}"
