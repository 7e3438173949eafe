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
from dagster_paimon.io.fileindex.mapentry import entry_name, nested_column
from dagster_paimon.io.fileindex.values import JavaType, java_type
from dagster_paimon.options import memory_bytes
from dagster_paimon.unsupported import file_index_refusal

PREFIX = "file-index."
COLUMNS_SUFFIX = ".columns"
IN_MANIFEST_THRESHOLD = "file-index.in-manifest-threshold"
DEFAULT_IN_MANIFEST_THRESHOLD = 500
Column = tuple[str, str | None]  # FileIndexOptions.Column: name, and map key if any


@dataclass(frozen=True)
class TableSchemaView:
    """The two parts of a TableSchema the refusal checks read."""

    options: Mapping[str, str]
    fields: Sequence[DataField]


@dataclass(frozen=True)
class IndexSpec:
    """One index of one column (or of one key of a map column): its type, its options, the
    Java type of the values indexed."""

    column: str
    index_type: str
    jtype: JavaType
    options: dict[str, str] = field(default_factory=dict)
    map_key: str | None = None

    @property
    def name(self) -> str:
        """The column as the index blob names it: `column`, or `column[key]` for a map key."""
        return self.column if self.map_key is None else entry_name(self.column, self.map_key)


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


def _column_hash(column: Column) -> int:
    """FileIndexOptions.Column.hashCode: Arrays.hashCode of (name, map key or null, whether a
    map key)."""
    name, key = column
    h = (31 + string_hash(name)) & 0xFFFFFFFF
    h = (h * 31 + (string_hash(key) if key is not None else 0)) & 0xFFFFFFFF
    h = (h * 31 + (1237 if key is None else 1231)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _add(types: list[str], index_type: str) -> None:
    """computeIfAbsent of an index type in a column's HashMap of types."""
    if index_type not in types:
        types.append(index_type)


def _settings(
    options: Mapping[str, str], columns: dict[Column, list[str]], map_columns: dict[str, list[str]]
) -> dict[tuple[Column, str], dict[str, str]]:
    """`file-index.<type>.<column>.<option>` of each declared (column, type); `<column>` may be a
    map key `m[k]`, or a map column `m` whose keys are declared, for options of all its keys."""
    settings: dict[tuple[Column, str], dict[str, str]] = {}
    for key, value in options.items():
        if not key.startswith(PREFIX) or key.endswith(COLUMNS_SUFFIX):
            continue
        parts = key[len(PREFIX) :].split(".")
        if len(parts) != 3:
            continue
        index_type, name, option = parts
        column = nested_column(name)
        if index_type not in columns.get(column, []):
            if index_type not in map_columns.get(name, []):
                raise InvalidOptionError(
                    f"Wrong file index option '{key}': column '{name}' is not declared in "
                    f"'{PREFIX}{index_type}{COLUMNS_SUFFIX}'"
                )
            column = (name, None)
        settings.setdefault((column, index_type), {})[option] = str(value)
    return settings


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
    # iterating the table's option HashMap; a map key also declares its map column's options.
    option_keys = _java_order(list(options), head_insert=False)
    columns: dict[Column, list[str]] = {}
    map_columns: dict[str, list[str]] = {}
    for key in option_keys:
        if key.startswith(PREFIX) and key.endswith(COLUMNS_SUFFIX):
            for name, index_type in declared({key: options[key]}):
                column = nested_column(name)
                _add(columns.setdefault(column, []), index_type)
                if column[1] is not None:
                    _add(map_columns.setdefault(column[0], []), index_type)
    if not columns:
        return None
    names = list(columns)
    column_order = [
        names[i]
        for i in iteration_order(
            np.array([_column_hash(n) for n in names], dtype=np.int64), head_insert=True
        ).indices
    ]
    settings = _settings(options, columns, map_columns)
    # DataFileIndexWriter: HashMap<type, HashMap<column, maintainer>> filled while iterating
    # the columns (and each column's types, a computeIfAbsent HashMap); a map column has one
    # maintainer per type, holding a HashMap of its keys' writers.
    maintainers: dict[str, list[str]] = {}
    map_keys: dict[tuple[str, str], list[str]] = {}
    for column in column_order:
        name, map_key = column
        for index_type in _java_order(columns[column], head_insert=True):
            held = maintainers.setdefault(index_type, [])
            if name not in held:
                held.append(name)
            if map_key is not None:
                map_keys.setdefault((index_type, name), []).append(map_key)
    type_order = _java_order(list(maintainers), head_insert=True)
    specs = []
    for index_type in type_order:
        for name in _java_order(maintainers[index_type], head_insert=False):
            if (index_type, name) not in map_keys:
                jtype = java_type(by_name[name].type)
                own = settings.get(((name, None), index_type), {})
                specs.append(IndexSpec(name, index_type, jtype, own))
                continue
            # serializedBytes: a HashMap of `name[key]`, filled walking the writers' HashMap
            keys = _java_order(map_keys[(index_type, name)], head_insert=False)
            entries = [entry_name(name, k) for k in keys]
            jtype = java_type(by_name[name].type.value)
            shared = settings.get(((name, None), index_type), {})
            for i in iteration_order(
                np.array([string_hash(e) for e in entries], dtype=np.int64),
                head_insert=False,
                ranks=string_ranks(entries),
            ).indices:
                own = {**shared, **settings.get(((name, keys[i]), index_type), {})}
                specs.append(IndexSpec(name, index_type, jtype, own, keys[i]))
    threshold = options.get(IN_MANIFEST_THRESHOLD)
    return FileIndexPlan(
        tuple(specs),
        memory_bytes(str(threshold)) if threshold is not None else DEFAULT_IN_MANIFEST_THRESHOLD,
    )
