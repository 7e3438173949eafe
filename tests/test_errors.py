"""The error contract: one root, input errors (exit 2, nothing changed) apart from failures and
from our own bugs; each entry point refuses bad input with an InputError, the table untouched."""

from __future__ import annotations

import inspect
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from dagster_paimon import errors
from dagster_paimon.errors import (
    DagsterPaimonError,
    InputError,
    InternalError,
    InvalidArgumentError,
    InvalidTableSpecError,
    SchemaMismatchError,
    TableNotFoundError,
)
from dagster_paimon.ingest.arrow import ingest_arrow
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.maintenance.expire import expire_snapshots
from dagster_paimon.maintenance.orphans import remove_orphans
from dagster_paimon.paimon_table import PaimonTable
from dagster_paimon.table import TableSpec, create_table, open_table
from tests.conftest import ORDERS_SCHEMA

CLASSES = [
    c
    for _, c in inspect.getmembers(errors, inspect.isclass)
    if issubclass(c, Exception) and c.__module__ == errors.__name__
]
# operation failures (exit 1) and transient store failures (exit 75): not the caller's input
NOT_INPUT = {
    "DagsterPaimonError",
    "InternalError",
    "CorruptMetadataError",
    "CorruptFileError",
    "MergeError",
    "CommitConflictError",
    "MaintenanceAbortedError",
    "StaleMaintenancePlanError",
    "MaintenanceStepError",
    "RepairRefusedError",
    "TableUnhealthyError",
    "TablesUnreadableError",
    "TransientStoreError",
    "CommitOutcomeUnknownError",
}


def test_every_error_has_the_one_root():
    assert len(CLASSES) > 20
    for c in CLASSES:
        assert issubclass(c, DagsterPaimonError), c


def test_input_errors_are_exactly_the_ones_the_caller_can_fix():
    inputs = {c.__name__ for c in CLASSES if issubclass(c, InputError)}
    assert inputs == {c.__name__ for c in CLASSES} - NOT_INPUT
    assert {"TableNotFoundError", "InvalidOptionError", "UnsupportedLayoutError"} <= inputs


def test_internal_errors_are_bugs_not_input():
    assert not issubclass(InternalError, InputError)
    assert issubclass(InternalError, RuntimeError)
    assert not issubclass(InternalError, ValueError)
    # code that catches ValueError for a bad argument keeps working
    assert issubclass(InvalidArgumentError, InputError) and issubclass(
        InvalidArgumentError, ValueError
    )


def test_no_engine_module_raises_a_bare_value_error():
    root = Path(errors.__file__).parent
    offenders = [
        f"{path.relative_to(root)}:{n}"
        for path in root.rglob("*.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if "raise ValueError" in line
    ]
    assert offenders == []


def tree(path: str) -> list[tuple[str, int, int]]:
    """Every file under the table with its size and mtime: what 'unchanged' means here."""
    return sorted(
        (str(p.relative_to(path)), p.stat().st_size, p.stat().st_mtime_ns)
        for p in Path(path).rglob("*")
    )


def refuse(table, call, error: type[InputError], match: str) -> None:
    """`call` raises `error` (an InputError) and the table's files are as they were."""
    before = tree(table.table_path)
    with pytest.raises(error, match=match) as raised:
        call()
    assert isinstance(raised.value, InputError)
    assert tree(table.table_path) == before


def test_open_and_create_refuse_bad_names_and_specs(warehouse, orders_table):
    refuse(orders_table, lambda: open_table(warehouse, "orders"), InvalidArgumentError, "DB.TABLE")
    refuse(orders_table, lambda: open_table(warehouse, "db.nope"), TableNotFoundError, "db.nope")
    no_keys = TableSpec("db", "orders", ORDERS_SCHEMA, (), 2)
    refuse(orders_table, lambda: create_table(warehouse, no_keys), InvalidTableSpecError, "key")
    other = TableSpec("db", "orders", ORDERS_SCHEMA, ("dt", "id"), 4, ("dt",))
    refuse(orders_table, lambda: create_table(warehouse, other), SchemaMismatchError, "bucket")


def test_compaction_and_health_refuse_a_partition_key_the_table_lacks(warehouse, orders_table):
    refuse(
        orders_table,
        lambda: PaimonTable.open(warehouse, "db.orders").compact(full=True, partition={"day": "x"}),
        InvalidArgumentError,
        "not partition keys",
    )
    refuse(
        orders_table,
        lambda: read_levels(orders_table, partition={"day": "x"}),
        InvalidArgumentError,
        "not partition keys",
    )


def test_maintenance_refuses_bad_retention_and_thresholds(orders_table):
    refuse(
        orders_table,
        lambda: expire_snapshots(orders_table, retain_min=0),
        InvalidArgumentError,
        "retain-min",
    )
    refuse(
        orders_table,
        lambda: remove_orphans(orders_table, older_than=timedelta(0)),
        InvalidArgumentError,
        "positive",
    )


def test_ingest_refuses_a_bad_mode_and_data_that_does_not_fit(orders_table):
    data = pa.table({"dt": ["d"], "id": [1], "v": ["x"]}, ORDERS_SCHEMA)
    refuse(
        orders_table,
        lambda: ingest_arrow(orders_table, data, mode="upsert"),
        InvalidArgumentError,
        "mode",
    )
    wrong = pa.table({"dt": ["d"], "id": [1], "v": ["x"], "extra": [1]})
    refuse(orders_table, lambda: ingest_arrow(orders_table, wrong), SchemaMismatchError, "extra")


def test_a_bad_failpoint_setting_is_an_argument_error(monkeypatch, orders_table):
    from dagster_paimon.failpoints import DATA_FILE_WRITTEN, failpoint

    monkeypatch.setenv("DAGSTER_PAIMON_FAILPOINT", "no-such-step")
    with pytest.raises(InvalidArgumentError, match="names no failpoint"):
        failpoint(DATA_FILE_WRITTEN)
