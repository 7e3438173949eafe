"""Independent views of a table for crash and stress tests: its files, its references, its rows.

Everything here reads through pypaimon (snapshot JSON, manifest lists, manifests, the reader),
never through dagster_paimon, so it can judge what dagster_paimon left behind.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from pypaimon.common.json_util import JSON
from pypaimon.manifest.index_manifest_file import IndexManifestFile
from pypaimon.manifest.manifest_file_manager import ManifestFileManager
from pypaimon.manifest.manifest_list_manager import ManifestListManager
from pypaimon.snapshot.snapshot import Snapshot

from tests.lsm.kvmodel import read_rows

SNAPSHOT_FILE = re.compile(r"^snapshot-(\d+)$")
HINTS = ("EARLIEST", "LATEST")
# directories whose every file is a root of its own (or plain metadata) rather than referenced
WHOLE_DIRS = ("schema", "tag", "consumer")
# directories holding snapshot-like JSON records that reference manifests
RECORD_DIRS = ("tag", "changelog")

Rows = dict[tuple, dict]
# an append table's rows (no key to hold them by): each row's values in column-name order,
# sorted, duplicates kept
Multiset = list[tuple]


def table_root(table) -> Path:
    """The table directory on the local file system."""
    path = str(table.table_path)
    for scheme in ("file://", "file:"):
        if path.startswith(scheme):
            path = path[len(scheme) :]
            break
    return Path(path)


def files_on_disk(table) -> set[str]:
    """Every file under the table directory, relative to it."""
    root = table_root(table)
    found = set()
    for directory, _, names in os.walk(root):
        for name in names:
            found.add((Path(directory) / name).relative_to(root).as_posix())
    return found


def snapshot_ids(table) -> list[int]:
    """Ids of the snapshot-N files present, ascending."""
    directory = table_root(table) / "snapshot"
    if not directory.is_dir():
        return []
    ids = [int(m.group(1)) for n in os.listdir(directory) if (m := SNAPSHOT_FILE.match(n))]
    return sorted(ids)


def load_snapshot(table, snapshot_id: int) -> Snapshot:
    """Parse snapshot-N with pypaimon's own JSON mapping."""
    text = (table_root(table) / "snapshot" / f"snapshot-{snapshot_id}").read_text()
    return JSON.from_json(text, Snapshot)


def _bucket_dir(table, partition_values: Iterable, bucket: int) -> str:
    """`k=v/.../bucket-N` (`bucket-postpone` for bucket -2), the layout of a local table."""
    parts = [f"{k}={v}" for k, v in zip(table.partition_keys, partition_values, strict=True)]
    return "/".join([*parts, "bucket-postpone" if bucket == -2 else f"bucket-{bucket}"])


def snapshot_references(table, snapshot: Snapshot) -> set[str]:
    """Files one snapshot record names: its lists, their manifests, every data file in them.

    Data files of DELETE entries count too: a snapshot's delta may name files that a retained
    snapshot no longer uses but that expiry of that snapshot has not removed yet.
    """
    lists = ManifestListManager(table)
    manifests = ManifestFileManager(table)
    refs: set[str] = set()
    for name in (
        snapshot.base_manifest_list,
        snapshot.delta_manifest_list,
        snapshot.changelog_manifest_list,
    ):
        if not name:
            continue
        refs.add(f"manifest/{name}")
        for meta in lists.read(name):
            refs.add(f"manifest/{meta.file_name}")
            for entry in manifests.read(meta.file_name, drop_stats=True):
                if entry.file.external_path:
                    continue
                directory = _bucket_dir(table, entry.partition.values, entry.bucket)
                refs.add(f"{directory}/{entry.file.file_name}")
                refs.update(f"{directory}/{extra}" for extra in entry.file.extra_files or ())
    if snapshot.index_manifest:
        refs.add(f"manifest/{snapshot.index_manifest}")
        for entry in IndexManifestFile(table).read(snapshot.index_manifest):
            refs.add(f"index/{entry.index_file.file_name}")
    if snapshot.statistics:
        refs.add(f"statistics/{snapshot.statistics}")
    return refs


def referenced_files(table) -> set[str]:
    """Every file some snapshot, tag or changelog record still present references, plus roots."""
    root = table_root(table)
    refs: set[str] = set()
    for directory in WHOLE_DIRS:
        base = root / directory
        if base.is_dir():
            refs.update(
                (Path(d) / n).relative_to(root).as_posix()
                for d, _, names in os.walk(base)
                for n in names
            )
    refs.update(f"snapshot/{h}" for h in HINTS if (root / "snapshot" / h).is_file())
    refs.update(f"changelog/{h}" for h in HINTS if (root / "changelog" / h).is_file())
    records = [root / "snapshot" / f"snapshot-{i}" for i in snapshot_ids(table)]
    for directory in RECORD_DIRS:
        base = root / directory
        if base.is_dir():
            records += [p for p in base.iterdir() if p.is_file() and p.name not in HINTS]
    for path in records:
        refs.add(path.relative_to(root).as_posix())
        refs |= snapshot_references(table, JSON.from_json(path.read_text(), Snapshot))
    return refs


def unreferenced_files(table) -> set[str]:
    """Files under the table directory that nothing references."""
    return files_on_disk(table) - referenced_files(table)


def rows_by_key(table, key: tuple[str, ...], snapshot_id: int | None = None) -> Rows:
    """pypaimon's read of a snapshot (default latest) as {key: row}; duplicate keys fail."""
    rows = read_rows(table, snapshot_id)
    by_key: Rows = {}
    duplicates = []
    for row in rows:
        k = tuple(row[c] for c in key)
        if k in by_key:
            duplicates.append(k)
        by_key[k] = row
    assert not duplicates, f"snapshot {snapshot_id or 'latest'} has duplicate keys {duplicates[:5]}"
    return by_key


def multiset_order(row: tuple) -> tuple:
    """The order of a multiset's rows (nulls first, so rows with nulls compare)."""
    return tuple((v is not None, v) for v in row)


def as_multiset(rows: Iterable[Mapping]) -> Multiset:
    """Rows as an append table holds them: each copy of a row counted, in one order."""
    return sorted((tuple(row[c] for c in sorted(row)) for row in rows), key=multiset_order)


def table_rows(
    table, key: tuple[str, ...] | None, snapshot_id: int | None = None
) -> Rows | Multiset:
    """pypaimon's read of a snapshot: by key for a primary-key table, a multiset (key None)
    for an append table."""
    if key is None:
        return as_multiset(read_rows(table, snapshot_id))
    return rows_by_key(table, key, snapshot_id)


def diff_rows(actual: Rows | Multiset, expected: Mapping[tuple, dict] | Multiset) -> str:
    """A short account of how two keyed row sets, or two multisets, differ ('' if equal)."""
    if isinstance(actual, list) or isinstance(expected, list):
        have, want = Counter(actual), Counter(expected)
        missing, extra = sorted((want - have).elements()), sorted((have - want).elements())
        if not (missing or extra):
            return ""
        return f"{len(missing)} missing {missing[:3]}, {len(extra)} unexpected {extra[:3]}"
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    changed = sorted(k for k in set(actual) & set(expected) if actual[k] != expected[k])
    if not (missing or extra or changed):
        return ""
    return (
        f"{len(missing)} missing {missing[:3]}, {len(extra)} unexpected {extra[:3]}, "
        f"{len(changed)} changed "
        f"{[(k, actual[k], expected[k]) for k in changed[:2]]}"
    )


def check_snapshots(
    table,
    key: tuple[str, ...] | None,
    expected_at: Callable[[Snapshot], Mapping[tuple, dict] | Multiset | None],
    *,
    readable_from: int | None = None,
) -> list[int]:
    """Every listed snapshot (from `readable_from` on) reads, and as expected where known.

    `expected_at(snapshot)` gives the rows that snapshot must hold (by `key`, or a multiset when
    `key` is None: an append table), or None to only require that it reads. Snapshots below
    `readable_from` may be half-expired and are skipped. Returns the ids checked.
    """
    checked = []
    for snapshot_id in snapshot_ids(table):
        if readable_from is not None and snapshot_id < readable_from:
            continue
        snapshot = load_snapshot(table, snapshot_id)
        try:
            actual = table_rows(table, key, snapshot_id)
        except AssertionError:
            raise
        except Exception as e:
            raise AssertionError(f"snapshot {snapshot_id} does not read: {e!r}") from e
        expected = expected_at(snapshot)
        if expected is not None:
            problem = diff_rows(actual, expected)
            assert not problem, (
                f"snapshot {snapshot_id} ({snapshot.commit_kind}) differs: {problem}"
            )
        checked.append(snapshot_id)
    return checked
