"""Every table of a warehouse with its health totals: what `dagster-paimon tables` lists.

Discovery names the tables (and the directories it passes over, with why); each table's kind,
latest snapshot and health totals (health's report without the buckets) and what the option
census finds in its options are then read at once on the shared I/O pool. A table whose health
cannot be read is listed with its error instead of failing the listing; `check_readable` then
raises for them, after the caller has shown the rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from dagster_paimon.discovery import list_tables
from dagster_paimon.errors import (
    TableNotFoundError,
    TablesUnreadableError,
    transient_cause,
    unexpected,
)
from dagster_paimon.kinds import health_of
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.results import DETAIL, Kind, Reported
from dagster_paimon.storage.pool import parallel_map
from dagster_paimon.table import open_table
from dagster_paimon.unsupported import option_findings


@dataclass(frozen=True, kw_only=True)
class TableOverview(Reported):
    """One table's kind and health totals, or why it is skipped, or the error reading it."""

    FIELDS: ClassVar[Mapping[str, Kind]] = {
        "table": DETAIL,
        "kind": DETAIL,
        "snapshot_id": DETAIL,
        "totals": DETAIL,
        "unsupported": DETAIL,
        "unknown_options": DETAIL,
        "skipped": DETAIL,
        "error": DETAIL,
    }

    table: str
    kind: str | None = None
    snapshot_id: int | None = None
    totals: Mapping[str, Any] | None = None
    unsupported: Sequence[str] = ()
    unknown_options: Sequence[str] = ()
    skipped: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class WarehouseOverview:
    """The rows of a warehouse's tables, by name, and the errors of those that were unreadable."""

    warehouse: str
    rows: tuple[TableOverview, ...]
    failures: tuple[Exception, ...] = ()

    def check_readable(self) -> None:
        """Raise for the tables that could not be read: a bug as itself (its traceback; the
        rows say which table), else TablesUnreadableError naming them."""
        if not self.failures:
            return
        bugs = [e for e in self.failures if unexpected(e)]
        if bugs:
            raise bugs[0]
        raise TablesUnreadableError(
            f"{len(self.failures)} of {len(self.rows)} tables could not be read: "
            + ", ".join(r.table for r in self.rows if r.error)
        )


def warehouse_overview(
    warehouse: str,
    catalog_options: Mapping[str, str] | None = None,
    *,
    database: str | None = None,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
) -> WarehouseOverview:
    """The tables (primary-key and append) and skipped directories of the warehouse, of one
    database or matching the shell patterns, with their health totals.

    Raises WarehouseUnreachableError (or an S3 subclass), TableNotFoundError (a database or
    pattern given and no table matches), TransientStoreError (a table's read kept failing:
    rerunning is safe).
    """
    options = dict(catalog_options or {})
    patterns = include or ((f"{database}.*",) if database else ())
    found = list_tables(warehouse, options, include=patterns, exclude=exclude)
    entries = sorted(
        [(t.identifier, None) for t in found.tables if database in (None, t.database)]
        + [(name, why) for name, why in found.skipped if database in (None, name.split(".")[0])]
    )
    if patterns and not any(why is None for _, why in entries):
        where = f"database {database!r}" if database else f"{list(patterns)}"
        raise TableNotFoundError(f"no table of {warehouse!r} matches {where}")
    # tables are read at once on the shared I/O pool: on an object store each is latency-bound
    read = parallel_map(lambda entry: _table_row(warehouse, entry[0], entry[1], options), entries)
    return WarehouseOverview(
        warehouse,
        tuple(row for row, _ in read),
        tuple(e for _, e in read if e is not None),
    )


def _table_row(
    warehouse: str, name: str, skipped: str | None, options: dict[str, str]
) -> tuple[TableOverview, Exception | None]:
    """One table's kind and health totals, or why it is skipped, or the error reading it (a
    transient one fails the listing: rerunning it is safe)."""
    if skipped is not None:
        return TableOverview(table=name, skipped=skipped), None
    try:
        table = open_table(warehouse, name, options)
        report = health_of(read_levels(table))
    except Exception as e:
        if transient_cause(e) is not None:
            raise
        return TableOverview(table=name, error=f"{type(e).__name__}: {e}"), e
    findings = option_findings(table.table_schema)
    return TableOverview(
        table=name,
        kind=report.kind,
        snapshot_id=report.snapshot_id,
        totals=report.aggregate(),
        unsupported=findings["unsupported"],
        unknown_options=findings["unknown_options"],
    ), None
