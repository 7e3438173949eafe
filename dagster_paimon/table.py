"""Open or create Paimon primary-key tables in a warehouse, with typed errors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from dagster_paimon.arguments import parse_identifier
from dagster_paimon.errors import (
    CorruptFileError,
    DatabaseNotFoundError,
    InvalidTableSpecError,
    SchemaMismatchError,
    TableNotFoundError,
    WarehouseUnreachableError,
    transient_errors,
)
from dagster_paimon.format.catalog import (
    Catalog,
    CatalogFactory,
    DatabaseNotExistException,
    Schema,
    TableNotExistException,
)
from dagster_paimon.format.schema import TableSchema
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.options import BUCKET, BUCKET_KEY, DYNAMIC_BUCKET, POSTPONE_BUCKET, bucket
from dagster_paimon.redaction import masked_options
from dagster_paimon.storage.warehouse import warehouse_for
from dagster_paimon.unsupported import check_catalog

PRIMARY_KEY = "primary-key"
APPEND = "append"
TABLE_KINDS = (PRIMARY_KEY, APPEND)


def table_kind(primary_keys: Sequence[str]) -> str:
    """APPEND for a table without a primary key (files concatenated), else PRIMARY_KEY."""
    return PRIMARY_KEY if primary_keys else APPEND


def is_unaware(schema: TableSchema) -> bool:
    """Whether the table is an append table without buckets (bucket -1, no primary key)."""
    return not schema.primary_keys and bucket(schema.options) == DYNAMIC_BUCKET


def is_dynamic(schema: TableSchema) -> bool:
    """Whether the table is a primary-key table in dynamic bucket mode (bucket -1)."""
    return (
        table_kind(schema.primary_keys) == PRIMARY_KEY and bucket(schema.options) == DYNAMIC_BUCKET
    )


@dataclass(frozen=True)
class TableSpec:
    """What a table should look like (no primary keys: an append table); validated first."""

    database: str
    name: str
    schema: pa.Schema
    primary_keys: tuple[str, ...]
    bucket: int
    partition_keys: tuple[str, ...] = ()
    options: Mapping[str, str] = field(default_factory=dict)

    @property
    def identifier(self) -> str:
        """The 'db.table' name pypaimon's catalog takes."""
        return f"{self.database}.{self.name}"

    def validate(self) -> None:
        """Reject specs Paimon would reject (SchemaValidation's rules for the table's kind).

        Raises InvalidTableSpecError (a spec Paimon would refuse).
        """
        columns = self.schema.names
        problems: list[str] = []
        duplicates = sorted({c for c in columns if columns.count(c) > 1})
        if duplicates:
            problems.append(f"duplicate columns {duplicates}")
        missing_pk = [k for k in self.primary_keys if k not in columns]
        if missing_pk:
            problems.append(f"primary keys {missing_pk} are not columns of the schema")
        missing_part = [k for k in self.partition_keys if k not in columns]
        if missing_part:
            problems.append(f"partition keys {missing_part} are not columns of the schema")
        outside_pk = [k for k in self.partition_keys if k not in self.primary_keys]
        if self.primary_keys and outside_pk:
            problems.append(
                f"partition keys {outside_pk} must also be primary keys "
                "(Paimon keys are unique per partition)"
            )
        if self.primary_keys and set(self.primary_keys) <= set(self.partition_keys):
            problems.append("primary keys must include at least one non-partition column")
        if self.bucket == 0 or self.bucket < POSTPONE_BUCKET:
            problems.append(
                f"bucket must be >= 1 (fixed), {DYNAMIC_BUCKET} (dynamic) or "
                f"{POSTPONE_BUCKET} (postpone), got {self.bucket}"
            )
        if not self.primary_keys:
            problems.extend(self._append_problems(columns))
        if BUCKET in self.options and str(self.options[BUCKET]) != str(self.bucket):
            problems.append("give the bucket count as TableSpec.bucket, not as an option")
        if problems:
            raise InvalidTableSpecError(
                f"invalid spec for {self.identifier}: " + "; ".join(problems)
            )

    def _append_problems(self, columns: list[str]) -> list[str]:
        """An append table is unaware-bucket (-1) or bucketed by its 'bucket-key' columns."""
        keys = [k.strip() for k in str(self.options.get(BUCKET_KEY, "")).split(",") if k.strip()]
        if self.bucket == POSTPONE_BUCKET:
            return [f"bucket {POSTPONE_BUCKET} (postpone) needs a primary key"]
        if self.bucket == DYNAMIC_BUCKET and keys:
            return [f"an append table with bucket {DYNAMIC_BUCKET} cannot have a '{BUCKET_KEY}'"]
        if self.bucket > 0 and not keys:
            return [f"a bucketed append table needs a '{BUCKET_KEY}' option naming its columns"]
        missing = [k for k in keys if k not in columns]
        return [f"bucket keys {missing} are not columns of the schema"] if missing else []

    def paimon_schema(self) -> Schema:
        """The pypaimon Schema to create, with the bucket count folded into the options."""
        options = {str(k): str(v) for k, v in self.options.items()}
        options[BUCKET] = str(self.bucket)
        return Schema.from_pyarrow_schema(
            self.schema,
            partition_keys=list(self.partition_keys),
            primary_keys=list(self.primary_keys),
            options=options,
        )


def open_catalog(
    warehouse: str, catalog_options: Mapping[str, str] | None = None, *, create: bool = False
) -> Catalog:
    """A filesystem catalog over a warehouse proven usable; a local one is only made on create.

    Raises UnsupportedCatalogError (a `metastore` other than filesystem: nothing is opened),
    WarehouseUnreachableError (or an S3 subclass: credentials, access, bucket, endpoint,
    UnsupportedWarehouseError).
    """
    options = {str(k): str(v) for k, v in (catalog_options or {}).items()}
    check_catalog(options)
    store = warehouse_for(warehouse, options)
    store.check(create=create)
    options.update(store.catalog_options())
    options["warehouse"] = warehouse
    try:
        catalog = CatalogFactory.create(options)
    except (OSError, ValueError) as e:
        raise WarehouseUnreachableError(f"cannot open warehouse {warehouse!r}: {e}") from e
    catalog.file_io = store.adapt_file_io(catalog.file_io)
    return catalog


def get_table(catalog: Catalog, identifier: str) -> FileStoreTable:
    """Load a table, translating pypaimon's catalog exceptions into ours.

    The database is only looked at when the table is missing, to say which of the two is.

    Raises InvalidArgumentError (not DB.TABLE), DatabaseNotFoundError, TableNotFoundError,
    WarehouseUnreachableError, CorruptFileError.
    """
    database, _ = parse_identifier(identifier)
    try:
        with transient_errors():  # pypaimon wraps a failed schema read in a RuntimeError
            table = catalog.get_table(identifier)
    except TableNotExistException as e:
        try:
            catalog.get_database(database)
        except DatabaseNotExistException as missing:
            raise DatabaseNotFoundError(f"database {database!r} does not exist") from missing
        except OSError as unreadable:
            raise WarehouseUnreachableError(f"cannot read warehouse: {unreadable}") from e
        raise TableNotFoundError(f"table {identifier!r} does not exist") from e
    except OSError as e:
        raise WarehouseUnreachableError(f"cannot read warehouse: {e}") from e
    except RuntimeError as e:  # pypaimon's "Failed to load schema", the decoding error its cause
        raise CorruptFileError(f"table {identifier!r}: {e}: {e.__cause__}") from e
    return table


def open_table(
    warehouse: str, identifier: str, catalog_options: Mapping[str, str] | None = None
) -> FileStoreTable:
    """Open an existing table (primary-key or append); every way of not finding it is typed.

    Raises WarehouseUnreachableError (or an S3 subclass: credentials, access, bucket, endpoint),
    InvalidArgumentError (identifier not DB.TABLE), DatabaseNotFoundError, TableNotFoundError.
    """
    return get_table(open_catalog(warehouse, catalog_options), identifier)


@dataclass(frozen=True)
class TableRef:
    """How another process (a Spark executor, a retry) reopens a table: picklable and small."""

    warehouse: str
    identifier: str
    catalog_options: tuple[tuple[str, str], ...] = ()

    def __repr__(self) -> str:
        """The reference with the values of secret catalog options masked."""
        options = masked_options(self.catalog_options)
        return f"TableRef({self.warehouse!r}, {self.identifier!r}, catalog_options={options!r})"

    @classmethod
    def of(
        cls, warehouse: str, identifier: str, catalog_options: Mapping[str, str] | None = None
    ) -> TableRef:
        """A reference with its catalog options in a stable order."""
        return cls(warehouse, identifier, tuple(sorted((catalog_options or {}).items())))

    def open(self) -> FileStoreTable:
        """Open the table through the catalog, as the driver did.

        Raises as open_table.
        """
        return open_table(self.warehouse, self.identifier, dict(self.catalog_options))


def _check_matches(table: FileStoreTable, spec: TableSpec) -> None:
    """An existing table must have the spec's columns and keys, or writes would go astray."""
    existing = table.table_schema
    expected = spec.paimon_schema()
    differences: list[str] = []
    if [f.name for f in existing.fields] != [f.name for f in expected.fields]:
        differences.append(
            f"columns {[f.name for f in existing.fields]} != {[f.name for f in expected.fields]}"
        )
    else:
        for have, want in zip(existing.fields, expected.fields, strict=True):
            if str(have.type) != str(want.type):
                differences.append(f"column {have.name!r} is {have.type}, spec says {want.type}")
    if list(existing.primary_keys) != list(spec.primary_keys):
        differences.append(f"primary keys {existing.primary_keys} != {list(spec.primary_keys)}")
    if list(existing.partition_keys) != list(spec.partition_keys):
        differences.append(
            f"partition keys {existing.partition_keys} != {list(spec.partition_keys)}"
        )
    bucket = existing.options.get(BUCKET, str(DYNAMIC_BUCKET))
    if str(bucket) != str(spec.bucket):
        differences.append(f"bucket {bucket} != {spec.bucket}")
    if differences:
        raise SchemaMismatchError(
            f"table {spec.identifier!r} exists with a different layout: " + "; ".join(differences)
        )


def create_table(
    warehouse: str, spec: TableSpec, catalog_options: Mapping[str, str] | None = None
) -> FileStoreTable:
    """Create the table (and its database) if absent; an existing table must match the spec.

    Raises InvalidTableSpecError (a spec Paimon would refuse), InvalidArgumentError (bad name),
    WarehouseUnreachableError, SchemaMismatchError (the table exists with another layout).
    """
    spec.validate()
    catalog = open_catalog(warehouse, catalog_options, create=True)
    try:
        catalog.create_database(spec.database, True)
        try:
            table = get_table(catalog, spec.identifier)
        except TableNotFoundError:
            catalog.create_table(spec.identifier, spec.paimon_schema(), True)
            return get_table(catalog, spec.identifier)
    except OSError as e:
        raise WarehouseUnreachableError(f"cannot write to warehouse {warehouse!r}: {e}") from e
    _check_matches(table, spec)
    return table
