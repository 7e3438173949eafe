"""The values one map key's index is fed (DataFileIndexWriter.MapFileIndexMaintainer).

`file-index.<type>.columns = m[k]` indexes the values of key `k` of map column `m`. For each
row Java feeds the key's writer every entry of the map whose key is `k` (a value each, in entry
order), or one null when the map is null or has no such entry; so a row holding `k` twice gives
the writer two records, as in Java.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dagster_paimon.io.fileindex.values import nulls


def nested_column(name: str) -> tuple[str, str | None]:
    """(column, map key) of `column[key]` (FileIndexOptions.topLevelIndexOfNested), else
    (name, None)."""
    start = name.find("[")
    if start != -1 and name.endswith("]"):
        return name[:start], name[start + 1 : -1]
    return name, None


def entry_name(column: str, key: str) -> str:
    """The name the index of one map key carries in the index blob (FileIndexCommon.toMapKey)."""
    return f"{column}[{key}]"


def entry_values(column: pa.Array, key: str) -> pa.Array:
    """The records the writer of `key` gets from these rows of a map column, in order."""
    offsets = np.asarray(column.offsets, dtype=np.int64)
    keys = column.keys
    lo, hi = int(offsets[0]), int(offsets[-1])
    window = keys.slice(lo, hi - lo)
    matches = np.flatnonzero(np.asarray(pc.fill_null(pc.equal(window, key), False))) + lo
    rows = np.searchsorted(offsets, matches, side="right") - 1
    null_rows = nulls(column)
    keep = ~null_rows[rows]
    matches, rows = matches[keep], rows[keep]
    absent = np.ones(len(column), dtype=bool)
    absent[rows] = False
    absent_rows = np.flatnonzero(absent)
    # a record per matching entry, and a null for each row without one, by (row, entry)
    record_rows = np.concatenate([rows, absent_rows])
    record_items = np.concatenate([matches, np.full(absent_rows.size, -1, dtype=np.int64)])
    order = np.lexsort((record_items, record_rows))
    items = record_items[order]
    indices = pa.array(items, pa.int64(), mask=items < 0)
    return column.items.take(indices)
