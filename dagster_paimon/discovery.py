"""Which tables a warehouse holds: what adopting existing tables starts from.

One pass over the catalog: every database, every table directory, each table's latest schema.
Tables are named `db.table` and filtered by shell-style include/exclude patterns and by kind
(primary-key or append). Tables of a kind not asked for, directories that are not Paimon
tables and tables of another `type` (format and object tables) are skipped with the reason
logged; a selection matching no table is an error rather
than an empty result, unless the caller allows an empty one (`allow_empty`), which is then
logged as a warning.
"""

from __future__ import annotations

import base64
import fnmatch
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from dagster_paimon.errors import (
    DagsterPaimonError,
    InvalidArgumentError,
    TableNotFoundError,
    WarehouseUnreachableError,
)
from dagster_paimon.format.catalog import DatabaseNotExistException, TableNotExistException
from dagster_paimon.io.kv import value_schema
from dagster_paimon.options import bucket
from dagster_paimon.storage.local import local_path
from dagster_paimon.table import TABLE_KINDS, open_catalog, table_kind
from dagster_paimon.unsupported import not_a_table

log = logging.getLogger(__name__)

STATE_VERSION = 1


@dataclass(frozen=True)
class TableColumn:
    """One column as Paimon declares it."""

    name: str
    type: str
    description: str | None = None


@dataclass(frozen=True)
class DiscoveredTable:
    """A table as its latest schema describes it."""

    identifier: str
    columns: tuple[TableColumn, ...]
    primary_keys: tuple[str, ...]
    partition_keys: tuple[str, ...]
    bucket: int
    options: Mapping[str, str] = field(default_factory=dict)
    arrow_schema: str = ""

    @property
    def schema(self) -> pa.Schema:
        """The table's columns in Arrow types (kept as base64 Arrow IPC in the state)."""
        return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(self.arrow_schema)))

    @property
    def kind(self) -> str:
        """PRIMARY_KEY or APPEND (a table without a primary key)."""
        return table_kind(self.primary_keys)

    @property
    def database(self) -> str:
        """The database name."""
        return self.identifier.split(".", 1)[0]

    @property
    def name(self) -> str:
        """The table name."""
        return self.identifier.split(".", 1)[1]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DiscoveredTable:
        """The inverse of asdict."""
        return cls(
            identifier=data["identifier"],
            columns=tuple(TableColumn(**c) for c in data["columns"]),
            primary_keys=tuple(data["primary_keys"]),
            partition_keys=tuple(data["partition_keys"]),
            bucket=int(data["bucket"]),
            options=dict(data["options"]),
            arrow_schema=str(data["arrow_schema"]),
        )


@dataclass(frozen=True)
class Discovery:
    """The tables adopted and the ones passed over, with why."""

    warehouse: str
    tables: tuple[DiscoveredTable, ...]
    skipped: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> str:
        """The state a code location loads instead of listing the warehouse again."""
        return json.dumps(
            {
                "version": STATE_VERSION,
                "warehouse": self.warehouse,
                "tables": [asdict(t) for t in self.tables],
                "skipped": [list(s) for s in self.skipped],
            },
            indent=1,
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> Discovery:
        """State written by to_json; another version is refused, not half-read.

        Raises InvalidArgumentError (state of another version).
        """
        data = json.loads(text)
        if data.get("version") != STATE_VERSION:
            raise InvalidArgumentError(
                f"discovered-tables state has version {data.get('version')!r}, expected "
                f"{STATE_VERSION}: refresh the state"
            )
        return cls(
            data["warehouse"],
            tuple(DiscoveredTable.from_dict(t) for t in data["tables"]),
            tuple((str(a), str(b)) for a, b in data["skipped"]),
        )


def matches(identifier: str, include: Sequence[str], exclude: Sequence[str]) -> bool:
    """Shell-style patterns over `db.table`: any include (all if none), no exclude."""
    included = not include or any(fnmatch.fnmatchcase(identifier, p) for p in include)
    return included and not any(fnmatch.fnmatchcase(identifier, p) for p in exclude)


def discover_tables(
    warehouse: str,
    catalog_options: Mapping[str, str] | None = None,
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    allow_empty: bool = False,
    kinds: Sequence[str] = TABLE_KINDS,
) -> Discovery:
    """Every table of the given kinds (TABLE_KINDS) whose name the patterns select.

    None is a TableNotFoundError naming the patterns; with `allow_empty`, a warning and an
    empty result, a local warehouse directory that does not exist yet included (an
    unreachable remote warehouse is a WarehouseUnreachableError either way).

    Raises InvalidArgumentError (no kind, or a kind not in TABLE_KINDS),
    WarehouseUnreachableError (or an S3 subclass), TableNotFoundError (no table matches the
    patterns and kinds and `allow_empty` is not set).
    """
    unknown = sorted(set(kinds) - set(TABLE_KINDS))
    if unknown or not kinds:
        raise InvalidArgumentError(
            f"table kinds must be a non-empty subset of {list(TABLE_KINDS)}, got {list(kinds)}"
        )
    patterns = (
        f"include {list(include) or ['*']} exclude {list(exclude)} kinds {sorted(set(kinds))}"
    )
    local = local_path(warehouse)
    if allow_empty and local is not None and not Path(local).exists():
        log.warning(
            "warehouse %r does not exist yet, no table matches %s: adopting none",
            warehouse,
            patterns,
        )
        return Discovery(warehouse, ())
    found = list_tables(warehouse, catalog_options, include=include, exclude=exclude, kinds=kinds)
    if not found.tables:
        skipped = dict(found.skipped) or "none"
        message = f"no table of {warehouse!r} matches {patterns} (skipped: {skipped})"
        if not allow_empty:
            raise TableNotFoundError(message)
        log.warning("%s; adopting none", message)
        return found
    log.info(
        "discovered %d tables in %s, skipped %d", len(found.tables), warehouse, len(found.skipped)
    )
    return found


def list_tables(
    warehouse: str,
    catalog_options: Mapping[str, str] | None = None,
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    kinds: Sequence[str] = TABLE_KINDS,
) -> Discovery:
    """The tables the patterns select and the ones passed over with why, none an empty result.

    Raises WarehouseUnreachableError (or an S3 subclass).
    """
    catalog = open_catalog(warehouse, catalog_options)
    try:
        databases = sorted(catalog.list_databases())
    except OSError as e:
        raise WarehouseUnreachableError(f"cannot list databases of {warehouse!r}: {e}") from e
    tables: list[DiscoveredTable] = []
    skipped: list[tuple[str, str]] = []
    for database in databases:
        try:
            names = sorted(catalog.list_tables(database))
        except (OSError, DatabaseNotExistException) as e:
            skipped.append((database, f"database not listable: {e}"))
            continue
        for name in names:
            identifier = f"{database}.{name}"
            if not matches(identifier, include, exclude):
                continue
            found = _describe(catalog, identifier)
            if isinstance(found, DiscoveredTable) and found.kind not in kinds:
                found = f"{found.kind} table: not among the kinds asked for {list(kinds)}"
            if isinstance(found, str):
                log.info("skipping %s: %s", identifier, found)
                skipped.append((identifier, found))
            else:
                tables.append(found)
    return Discovery(warehouse, tuple(tables), tuple(skipped))


def _describe(catalog: Any, identifier: str) -> DiscoveredTable | str:
    """The table, or why it is not adopted."""
    try:
        table = catalog.get_table(identifier)
    except TableNotExistException:
        return "not a Paimon table (no schema)"
    except (OSError, ValueError, KeyError, DagsterPaimonError) as e:
        return f"unreadable schema: {e}"
    schema = table.table_schema
    if other_type := not_a_table(schema):
        return f"{other_type}: not a table of Paimon's LSM layout, nothing to maintain"
    return DiscoveredTable(
        identifier=identifier,
        columns=tuple(TableColumn(f.name, str(f.type), f.description) for f in schema.fields),
        primary_keys=tuple(schema.primary_keys),
        partition_keys=tuple(schema.partition_keys),
        bucket=bucket(schema.options),
        options={str(k): str(v) for k, v in schema.options.items()},
        arrow_schema=base64.b64encode(value_schema(schema).serialize().to_pybytes()).decode(),
    )
