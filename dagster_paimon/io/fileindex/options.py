"""Which file indexes a table's data files carry: its `file-index.*` options, read as Java does.

`file-index.<type>.columns` lists the columns indexed by `<type>`; `file-index.<type>.<column>.
<option>` sets an option of one (FileIndexOptions); `file-index.in-manifest-threshold` (default
500 B) is the size up to which the index is embedded in the manifest. Java's DataFileIndexWriter
builds its maintainers by iterating HashMaps (options, then columns, then index types), so the
specs come out in that order: the index file's header order follows from it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from pypaimon.schema.data_types import DataField

from dagster_paimon.errors import InvalidOptionError, UnsupportedLayoutError
from dagster_paimon.io.fileindex.javamap import iteration_order, string_hash, string_ranks
from dagster_paimon.io.fileindex.values import JavaType, java_type
from dagster_paimon.options import memory_bytes
from dagster_paimon.unsupported import file_index_refusal

PREFIX = "file-index."
COLUMNS_SUFFIX = ".columns"
IN_MANIFEST_THRESHOLD = "file-index.in-manifest-threshold"
DEFAULT_IN_MANIFEST_THRESHOLD = 500


@dataclass(frozen=True)
class TableSchemaView:
    """The two parts of a TableSchema the refusal checks read."""

    options: Mapping[str, str]
    fields: Sequence[DataField]


@dataclass(frozen=True)
class IndexSpec:
    """One index of one column: its type, its options, the column's Java type."""

    column: str
    index_type: str
    jtype: JavaType
    options: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class FileIndexPlan:
    """The indexes every data file of the table carries, in Java's maintainer order."""

    specs: tuple[IndexSpec, ...]
    in_manifest_threshold: int


def _java_order(keys: Sequence[str], *, head_insert: bool) -> list[str]:
    """Keys of a HashMap<String, ...> filled in this order, as the map iterates them."""
    hashes = np.array([string_hash(k) for k in keys], dtype=np.int64)
    return [
        keys[i]
        for i in iteration_order(hashes, head_insert=head_insert, ranks=string_ranks(keys)).indices
    ]


def _column_hash(name: str) -> int:
    """FileIndexOptions.Column.hashCode of a top-level column: Arrays.hashCode of (name, null,
    false)."""
    h = (31 + string_hash(name)) & 0xFFFFFFFF
    h = (h * 31) & 0xFFFFFFFF
    h = (h * 31 + 1237) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def declared(options: Mapping[str, str]) -> list[tuple[str, str]]:
    """(column as written, index type) of every `file-index.<type>.columns` entry, in option
    order; raises ValueError on an empty column name as Java does."""
    found = []
    for key, value in options.items():
        if key.startswith(PREFIX) and key.endswith(COLUMNS_SUFFIX):
            index_type = key[len(PREFIX) : -len(COLUMNS_SUFFIX)]
            if not index_type:
                continue
            for name in str(value).split(","):
                if not name.strip():
                    raise InvalidOptionError(f"Wrong option in {key}, should not have empty column")
                found.append((name.strip(), index_type))
    return found


def file_index_plan(
    options: Mapping[str, str], fields: Sequence[DataField]
) -> FileIndexPlan | None:
    """The indexes of a table's data files, or None when it declares none.

    Raises UnsupportedLayoutError for what `unsupported.file_index_refusal` refuses and
    InvalidOptionError for a column option of an undeclared column, as Java's writer fails.
    """
    problem = file_index_refusal(TableSchemaView(options, fields))
    if problem:
        raise UnsupportedLayoutError(
            f"dagster-paimon does not write this table's data file indexes: {problem}"
        )
    by_name = {f.name: f for f in fields}
    # FileIndexOptions: HashMap<Column, HashMap<type, Options>>, filled by computeIfAbsent while
    # iterating the table's option HashMap.
    option_keys = _java_order(list(options), head_insert=False)
    columns: dict[str, list[str]] = {}
    for key in option_keys:
        if key.startswith(PREFIX) and key.endswith(COLUMNS_SUFFIX):
            for name, index_type in declared({key: options[key]}):
                types = columns.setdefault(name, [])
                if index_type not in types:
                    types.append(index_type)
    if not columns:
        return None
    names = list(columns)
    column_order = [
        names[i]
        for i in iteration_order(
            np.array([_column_hash(n) for n in names], dtype=np.int64), head_insert=True
        ).indices
    ]
    settings: dict[tuple[str, str], dict[str, str]] = {}
    for key, value in options.items():
        if not key.startswith(PREFIX) or key.endswith(COLUMNS_SUFFIX):
            continue
        parts = key[len(PREFIX) :].split(".")
        if len(parts) != 3:
            continue
        index_type, name, option = parts
        if index_type not in columns.get(name, []):
            raise InvalidOptionError(
                f"Wrong file index option '{key}': column '{name}' is not declared in "
                f"'{PREFIX}{index_type}{COLUMNS_SUFFIX}'"
            )
        settings.setdefault((name, index_type), {})[option] = str(value)
    # DataFileIndexWriter: HashMap<type, HashMap<column, maintainer>> filled while iterating
    # the columns (and each column's types, a computeIfAbsent HashMap).
    maintainers: dict[str, list[str]] = {}
    for name in column_order:
        for index_type in _java_order(columns[name], head_insert=True):
            maintainers.setdefault(index_type, []).append(name)
    type_order = _java_order(list(maintainers), head_insert=True)
    specs = []
    for index_type in type_order:
        for name in _java_order(maintainers[index_type], head_insert=False):
            specs.append(
                IndexSpec(
                    name,
                    index_type,
                    java_type(by_name[name].type),
                    settings.get((name, index_type), {}),
                )
            )
    threshold = options.get(IN_MANIFEST_THRESHOLD)
    return FileIndexPlan(
        tuple(specs),
        memory_bytes(str(threshold)) if threshold is not None else DEFAULT_IN_MANIFEST_THRESHOLD,
    )
