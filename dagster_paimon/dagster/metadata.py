"""Materialization metadata Dagster shows and plots: schema, row count, LSM health."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa
from dagster import MetadataValue, TableColumn, TableSchema

from dagster_paimon.lsm.model.levels import TableHealth


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


def metadata_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """Drop unknown (None) values: Dagster plots numbers, not gaps."""
    return {k: v for k, v in values.items() if v is not None}


def health_metadata(health: TableHealth) -> dict[str, Any]:
    """Health metrics plus a per-bucket table for the UI."""
    rows = [b.to_dict() for b in health.buckets]
    values = metadata_values(health.to_metadata())
    values["paimon/buckets"] = MetadataValue.json(rows[:200])
    return values
