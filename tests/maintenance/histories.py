"""Deterministic table histories for maintenance tests: upserts, deletes and compactions."""

from __future__ import annotations

import random
import time

import pyarrow as pa

from dagster_paimon.maintenance.options import RetentionOverrides
from tests.conftest import write_with_pypaimon
from tests.lsm.tables import SCHEMA, cdc_batch, cdc_table, compact

EXPIRE_ALL_BUT_LAST = RetentionOverrides(retain_min=1, time_retained_ms=0, max_deletes=1000)


def append(table, commit: int, rows: int = 30) -> None:
    """One pypaimon commit of upserts and deletes (rowkind.field table)."""
    batch = cdc_batch(random.Random(commit), commit, rows=rows, keys=40)
    write_with_pypaimon(table, pa.Table.from_pylist(batch, schema=SCHEMA))


def history(
    warehouse: str,
    commits: int,
    compact_after: tuple[int, ...] = (),
    catalog_options: dict[str, str] | None = None,
    **options: str,
):
    """A cdc table after `commits` appends, fully compacted after the listed commit numbers."""
    table = cdc_table(warehouse, catalog_options=catalog_options, **options)
    for commit in range(commits):
        append(table, commit)
        if commit in compact_after:
            compact(table, warehouse, catalog_options, full=True)
    return table


def later_ms(seconds: float = 1.0) -> int:
    """A clock slightly ahead, so every snapshot already counts as older than 0 ms."""
    return int((time.time() + seconds) * 1000)
