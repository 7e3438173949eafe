"""Which file indexes a table's data files carry: its `file-index.*` options, read as Java does.

`file-index.<type>.columns` lists the columns indexed by `<type>`; `file-index.<type>.<column>.
<option>` sets an option of one (FileIndexOptions); `file-index.in-manifest-threshold` (default
500 B) is the size up to which the index is embedded in the manifest. The specs come sorted by
index type, column and map key: a plain order, where Java's DataFileIndexWriter follows its
HashMaps' iteration order (the index reads the same in any order).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from dagster_paimon.errors import InvalidOptionError, UnsupportedLayoutError
from dagster_paimon.format.schema import DataField
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
    """The indexes every data file of the table carries, sorted by index type, column, map key."""

    specs: tuple[IndexSpec, ...]
    in_manifest_threshold: int


def _add(types: list[str], index_type: str) -> None:
    """An index type added to a column's types once (Java's computeIfAbsent)."""
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
    # FileIndexOptions: each declared column (or map key) with its index types; a map key also
    # declares its map column's options.
    columns: dict[Column, list[str]] = {}
    map_columns: dict[str, list[str]] = {}
    for name, index_type in declared(options):
        column = nested_column(name)
        _add(columns.setdefault(column, []), index_type)
        if column[1] is not None:
            _add(map_columns.setdefault(column[0], []), index_type)
    if not columns:
        return None
    settings = _settings(options, columns, map_columns)
    # DataFileIndexWriter: one maintainer per (index type, column name); a map column's holds one
    # writer per declared key.
    maintainers: dict[tuple[str, str], set[str]] = {}
    for (name, map_key), types in columns.items():
        for index_type in types:
            keys = maintainers.setdefault((index_type, name), set())
            if map_key is not None:
                keys.add(map_key)
    specs = []
    for (index_type, name), keys in sorted(maintainers.items()):
        shared = settings.get(((name, None), index_type), {})
        if not keys:
            specs.append(IndexSpec(name, index_type, java_type(by_name[name].type), shared))
            continue
        jtype = java_type(by_name[name].type.value)
        for key in sorted(keys):
            own = {**shared, **settings.get(((name, key), index_type), {})}
            specs.append(IndexSpec(name, index_type, jtype, own, key))
    threshold = options.get(IN_MANIFEST_THRESHOLD)
    return FileIndexPlan(
        tuple(specs),
        memory_bytes(str(threshold)) if threshold is not None else DEFAULT_IN_MANIFEST_THRESHOLD,
    )
