"""An independent model of a deduplicate table, and pypaimon reads to compare it with."""

from __future__ import annotations

import pyarrow as pa

KIND_NAMES = {0: "+I", 1: "-U", 2: "+U", 3: "-D"}


def apply_dedup(model: dict, rows: list[dict], key: tuple[str, ...]) -> None:
    """Last write wins per key; -U/-D remove the key."""
    for row in rows:
        k = tuple(row[c] for c in key)
        if row["_kind"] in ("-U", "-D"):
            model.pop(k, None)
        else:
            model[k] = {c: v for c, v in row.items() if c != "_kind"}


def read_rows(table, snapshot_id: int | None = None) -> list[dict]:
    """Every row pypaimon's own reader returns, optionally at an older snapshot."""
    if snapshot_id is not None:
        table = table.copy({"scan.snapshot-id": str(snapshot_id)})
    builder = table.new_read_builder()
    splits = builder.new_scan().plan().splits()
    data: pa.Table = builder.new_read().to_arrow(splits)
    return data.to_pylist() if data is not None else []


def sorted_rows(rows, key: tuple[str, ...]) -> list[dict]:
    """Rows in key order, for comparisons that ignore read order."""
    return sorted(rows, key=lambda r: tuple(r[c] for c in key))
