"""External data paths (`data-file.external-paths`, Paimon 1.1+): where a new data file goes.

As Paimon's Java implementation (release-2.0.0) does it: AbstractFileStore.createExternalPaths
picks the roots (none unless the strategy is set; `specific-fs` keeps the roots of that scheme);
FileStorePathFactory.createDataFilePathFactory gives each (partition, bucket) writer one
ExternalPathProvider over `<root>/<relative bucket path>` (data-file.path-directory, the escaped
partition path, bucket-N); DataFilePathFactory.newPathFromName asks it for every new data and
changelog file; the writer records the full path as DataFileMeta.externalPath (`_EXTERNAL_PATH`
in manifests, whose `_FILE_NAME` stays the bare name). The providers:

- round-robin and specific-fs (RoundRobinExternalPathProvider): start at a random root, then the
  next root for every file;
- entropy-inject (EntropyInjectExternalPathProvider): the next root for every file, starting at
  the second, with four hash directories from the file name's murmur3_32 between the bucket
  directory and the file (`bucket-0/1001/1111/0010/10010010/data-...`);
- weight-robin (WeightedExternalPathProvider, 1.4): a root drawn at random by the weights of
  `data-file.external-paths.weights`; round-robin with fewer than two roots or no weights.

pypaimon 2.1 chooses roots the same way, but records a local path with `%`, `?` or `#` in it (an
escaped partition value) without its `file:` scheme, as the path it writes to; Java records
`file:/...` as its Path prints it. We record Java's form and write to pypaimon's physical path,
so both readers find the file; the entropy hash is pypaimon's murmur3_32 (Guava's, checked in
tests/io/test_external.py).

We write, list and delete through the warehouse's own file IO, so a root must be on the same
kind of store as the warehouse: `file:` roots for a local warehouse, s3://, s3a:// or s3n://
(reached with the warehouse's S3 settings) for an S3 one. Anything else is refused by name
before a file is written.
"""

from __future__ import annotations

import bisect
import logging
import random
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlparse

from dagster_paimon.errors import InvalidArgumentError, InvalidOptionError
from dagster_paimon.format.table import (
    EntropyInjectExternalPathProvider,
    FileStoreTable,
    canonical_bucket_path,
    resolve_path,
    to_file_io_path,
)
from dagster_paimon.io.paths import bucket_file_path
from dagster_paimon.options import (
    CHANGELOG_FILE_PREFIX,
    DATA_FILE_EXTERNAL_PATHS,
    DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS,
    DATA_FILE_EXTERNAL_PATHS_STRATEGY,
    DATA_FILE_EXTERNAL_PATHS_WEIGHTS,
    ENTROPY_INJECT,
    EXTERNAL_NONE,
    EXTERNAL_PATH_STRATEGIES,
    SPECIFIC_FS,
    WEIGHT_ROBIN,
    choice,
    read_option,
)
from dagster_paimon.partition import Partition
from dagster_paimon.storage.local import local_path
from dagster_paimon.storage.s3 import S3_SCHEMES, is_s3_uri

log = logging.getLogger(__name__)

LOCAL_SCHEMES = ("file",)


def table_options(table: FileStoreTable) -> dict[str, str]:
    """The options the table was opened with (schema options and dynamic ones)."""
    return table.options.options.to_map()


def external_strategy(options: Mapping[str, str]) -> str:
    """`data-file.external-paths.strategy`, matched without case as Java's enum options are."""
    return read_option(
        options, DATA_FILE_EXTERNAL_PATHS_STRATEGY, choice(EXTERNAL_PATH_STRATEGIES), EXTERNAL_NONE
    )


def named_roots(options: Mapping[str, str]) -> list[str]:
    """Every root `data-file.external-paths` names, trimmed, in order.

    Java splits on commas (String.split drops trailing empty parts) and makes a Path of each
    trimmed part, which refuses an empty one.
    """
    text = options.get(DATA_FILE_EXTERNAL_PATHS)
    if not text:
        return []
    parts = str(text).split(",")
    while parts and parts[-1] == "":
        parts.pop()
    roots = [p.strip() for p in parts]
    if any(not r for r in roots):
        raise InvalidOptionError(
            f"table option '{DATA_FILE_EXTERNAL_PATHS}' has an empty path in {text!r}"
        )
    return roots


def _scheme(root: str) -> str:
    """The root's scheme; Java refuses a root without one."""
    scheme = urlparse(root).scheme.lower()
    if not scheme:
        raise InvalidOptionError(
            f"table option '{DATA_FILE_EXTERNAL_PATHS}' path {root!r} has no scheme "
            "(file:/..., s3://...); Paimon refuses it too"
        )
    return scheme


def reachable(root: str, table_path: str) -> bool:
    """Whether the warehouse's file IO (and our listing and deletion) can reach the root."""
    scheme = _scheme(root)
    if local_path(str(table_path)) is not None:
        return scheme in LOCAL_SCHEMES
    return is_s3_uri(str(table_path)) and scheme in S3_SCHEMES


def _weights(options: Mapping[str, str]) -> tuple[int, ...] | None:
    """`data-file.external-paths.weights`: positive integers, as CoreOptions.externalPathWeights
    parses them."""

    def parse(text: str) -> tuple[int, ...]:
        parts = text.split(",")
        while parts and parts[-1] == "":
            parts.pop()
        weights = tuple(int(part.strip()) for part in parts)
        if any(w <= 0 for w in weights):
            raise InvalidArgumentError("weights must be positive integers")
        return weights

    return read_option(options, DATA_FILE_EXTERNAL_PATHS_WEIGHTS, parse, None)


@dataclass(frozen=True)
class ExternalPaths:
    """The roots new data files go to, and how one is chosen."""

    strategy: str
    roots: tuple[str, ...]
    weights: tuple[int, ...] | None


def external_paths(table: FileStoreTable) -> ExternalPaths | None:
    """Where the table puts new data files: None for its own bucket directories.

    Raises InvalidOptionError, naming the option, for anything Java refuses or we cannot reach.
    """
    options = table_options(table)
    strategy = external_strategy(options)
    roots = named_roots(options)
    weights = _weights(options)  # Java parses them for every table (AbstractFileStore)
    if not roots or strategy == EXTERNAL_NONE:
        return None
    if strategy == SPECIFIC_FS:
        fs = options.get(DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS)
        if not fs:
            raise InvalidOptionError(
                f"table option '{DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS}' must be set when "
                f"'{DATA_FILE_EXTERNAL_PATHS_STRATEGY}' is {SPECIFIC_FS}"
            )
        roots = [r for r in roots if _scheme(r) == fs.strip().lower()]
        if not roots:
            raise InvalidOptionError(
                f"table option '{DATA_FILE_EXTERNAL_PATHS}' has no {fs}:// path for "
                f"'{DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS}'={fs!r}"
            )
    for root in roots:
        if not reachable(root, table.table_path):
            raise InvalidOptionError(
                f"table option '{DATA_FILE_EXTERNAL_PATHS}' path {root!r} is not on the "
                f"warehouse's kind of store ({table.table_path}); dagster-paimon writes, lists "
                "and deletes data files through the warehouse's file IO, which reaches file: "
                "paths from a local warehouse and s3:// paths from an S3 one"
            )
    weights = weights if strategy == WEIGHT_ROBIN else None
    if weights is not None and len(roots) >= 2 and len(weights) != len(roots):
        raise InvalidOptionError(
            f"table option '{DATA_FILE_EXTERNAL_PATHS_WEIGHTS}' has {len(weights)} weights for "
            f"{len(roots)} paths of '{DATA_FILE_EXTERNAL_PATHS}'"
        )
    return ExternalPaths(strategy, tuple(roots), weights)


def entropy_dirs(file_name: str) -> str:
    """EntropyInjectExternalPathProvider.computeHash: the low 20 bits of the name's murmur3_32
    as 4/4/4/8 binary digits, `1001/1111/0010/10010010` (pypaimon's port of it)."""
    return EntropyInjectExternalPathProvider(["unused:/"])._compute_hash(file_name)


class DataFilePaths:
    """New data file paths of one (partition, bucket) writer, as Java's DataFilePathFactory.

    `new_path` is where to write; `external_path` of that path is what DataFileMeta records
    (None in the table's own bucket directory).
    """

    def __init__(self, table: FileStoreTable, partition: Partition, bucket: int):
        self.table = table
        self.partition = partition
        self.bucket = bucket
        self.external = external_paths(table)
        self._recorded: dict[str, str] = {}
        if self.external is None:
            return
        self._relative = canonical_bucket_path(table, tuple(partition.values), bucket)
        roots = self.external.roots
        weights = self.external.weights
        self._cumulative: list[int] | None = None
        if self.external.strategy == ENTROPY_INJECT:
            self._position = 0
        elif self.external.strategy == WEIGHT_ROBIN and weights is not None and len(roots) >= 2:
            self._cumulative = [sum(weights[: i + 1]) for i in range(len(weights))]
        else:  # round-robin, specific-fs, weight-robin without weights: a random start
            self._position = random.randrange(len(roots))

    def _next_root(self, external: ExternalPaths) -> str:
        roots = external.roots
        if self._cumulative is not None:
            drawn = random.random() * self._cumulative[-1]
            return roots[min(bisect.bisect_right(self._cumulative, drawn), len(roots) - 1)]
        self._position = (self._position + 1) % len(roots)
        return roots[self._position]

    def new_path(self, name: str) -> str:
        """Where the next file, named `name`, is written."""
        if self.external is None:
            return bucket_file_path(self.table, self.partition, self.bucket, name)
        root = self._next_root(self.external)
        if self.external.strategy == ENTROPY_INJECT:
            relative = resolve_path(self._relative, f"{entropy_dirs(name)}/{name}")
            recorded = resolve_path(root, relative)
        else:
            recorded = resolve_path(resolve_path(root, self._relative), name)
        path = to_file_io_path(recorded)
        self._recorded[path] = recorded
        return path

    def external_path(self, path: str) -> str | None:
        """`_EXTERNAL_PATH` of a file this writer placed at `path` (Java's Path text)."""
        return self._recorded.get(path)


ENTROPY_DIR_NAMES = (r"[01]{4}", r"[01]{4}", r"[01]{4}", r"[01]{8}")
BUCKET_DIR_NAME = r"bucket-(\d+|postpone)"
INDEX_FILE_PREFIX = "index-"


@dataclass(frozen=True)
class ExternalLayout:
    """What of an external root belongs to this table, for orphan removal to list.

    `<root>[/<data-file.path-directory>]/<key=value>.../bucket-<n>/[<entropy dirs>/]<file>`,
    files named with the table's data or changelog prefix (or `index-`, a bucket index kept in
    the data directory); nothing else under a root is ever a candidate.
    """

    roots: tuple[str, ...]
    partition_prefixes: tuple[str, ...]
    file_prefixes: tuple[str, ...]


def external_layout(table: FileStoreTable) -> ExternalLayout | None:
    """The table's external roots as orphan removal lists them; None without any.

    Java's OrphanFilesClean lists every root the option names, whatever the strategy; so do we,
    below data-file.path-directory as files are written there (Java lists the root itself). A
    root the table writes to must be reachable (InvalidOptionError otherwise); another one
    (filtered out by specific-fs, or named while the strategy is none) we cannot reach is left
    unlisted with a warning.
    """
    options = table_options(table)
    names = named_roots(options)
    if not names:
        return None
    external_paths(table)  # refuses a root new files go to that we cannot reach
    directory = table.options.data_file_path_directory()
    roots = []
    for root in names:
        if not reachable(root, table.table_path):
            log.warning(
                "%s: not listing external path %r for orphan files: the warehouse's file IO "
                "does not reach it",
                table.table_path,
                root,
            )
            continue
        roots.append(to_file_io_path(resolve_path(root, directory) if directory else root))
    keys = table.partition_keys
    prefixes: list[str] = []
    if keys:
        relative = canonical_bucket_path(table, tuple([None] * len(keys)), 0)
        prefixes = [p.split("=", 1)[0] + "=" for p in relative.split("/")[-1 - len(keys) : -1]]
    schema_options = table.table_schema.options
    file_prefixes = {
        table.options.data_file_prefix("data-"),
        schema_options.get(CHANGELOG_FILE_PREFIX, "changelog-"),
        INDEX_FILE_PREFIX,
    }
    unique = tuple(dict.fromkeys(roots))
    return ExternalLayout(unique, tuple(prefixes), tuple(sorted(file_prefixes)))
