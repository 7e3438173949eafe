"""Materialization metadata Dagster shows and plots: schema, row count, LSM health."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa
from dagster import MetadataValue, TableColumn, TableSchema

from dagster_paimon.kinds import TableHealth
from dagster_paimon.results import Reported

NAMESPACE = "paimon/"


def column_schema(schema: pa.Schema, primary_keys: tuple[str, ...] = ()) -> TableSchema:
    """The table's columns as `dagster/column_schema`, primary keys marked."""
    return TableSchema(
        columns=[
            TableColumn(
                name=f.name,
                type=str(f.type),
                description="primary key" if f.name in primary_keys else None,
            )
            for f in schema
        ]
    )


def metric_metadata(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """Library metrics under the `paimon/` namespace, unknown (None) values dropped.

    Dagster plots numbers, not gaps; this is the one place the namespace is added.
    """
    return {f"{NAMESPACE}{k}": v for k, v in metrics.items() if v is not None}


def result_metadata(result: Reported) -> dict[str, Any]:
    """An operation's metrics, plotted, and its whole report (`paimon/result`) as JSON."""
    return {
        **metric_metadata(result.metrics()),
        f"{NAMESPACE}result": MetadataValue.json(result.to_dict()),
    }


def health_metadata(health: TableHealth) -> dict[str, Any]:
    """Health metrics plus a per-bucket table for the UI, and the writers compacting the table
    beside us when there are any."""
    rows = [b.to_dict() for b in health.buckets]
    values = metric_metadata(health.metrics())
    values[f"{NAMESPACE}buckets"] = MetadataValue.json(rows[:200])
    if health.conflicting_compactors is not None:
        compactors = health.conflicting_compactors.to_dict()
        values[f"{NAMESPACE}conflicting_compactors"] = MetadataValue.json(compactors)
    return values
