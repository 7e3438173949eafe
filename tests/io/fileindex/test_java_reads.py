"""Paimon's Java index readers (0.9, 1.0) skip nothing they must keep in our files' indexes.

Java's primary-key readers of these releases do not consult file indexes, so the check is on
the reader itself: FileIndexPredicate over the index of each file our compaction wrote keeps the
file for every value it holds (no false negatives) and, from the bitmap, skips it for values it
lacks.
"""

from __future__ import annotations

import os

import pyarrow.parquet as pq
import pytest

from tests.io.fileindex.test_write import blob_of, compacted_files
from tests.maintenance.histories import history

pytestmark = pytest.mark.slow

# what these releases read: bloom filters and V1 bitmaps
OPTIONS = {
    "file-index.bloom-filter.columns": "name",
    "file-index.bloom-filter.name.items": "500",
    "file-index.bitmap.columns": "op,amount",
    "file-index.bitmap.op.version": "1",
    "file-index.bitmap.amount.version": "1",
}
COLUMNS = [
    ["dt", "STRING"],
    ["id", "BIGINT"],
    ["name", "STRING"],
    ["amount", "DOUBLE"],
    ["op", "STRING"],
]


@pytest.mark.parametrize("release", ["0.9", "1.0"])
def test_java_keeps_files_for_the_values_they_hold(warehouse, request, release):
    java = request.getfixturevalue("paimon_java" if release == "0.9" else "paimon_java_1_0")
    table = history(warehouse, 4, compact_after=(3,), **OPTIONS)
    checks, expected = [], []
    for path, meta in compacted_files(table):
        data = pq.ParquetFile(path).read().to_pydict()
        held = {c: {v for v in data[c] if v is not None} for c in ("name", "amount", "op")}
        predicates = [[c, "eq", v] for c in held for v in sorted(held[c])]
        keep = [True] * len(predicates)
        absent = [["op", "eq", "+X"], ["amount", "eq", -1.25], ["name", "eq", "nobody"]]
        predicates += [*absent, ["op", "in", ["+X", sorted(held["op"])[0]]]]
        keep += [False, False, None, True]
        index = {"index": meta.embedded_index.hex()} if meta.embedded_index else {}
        checks.append(
            {
                "columns": COLUMNS,
                "predicates": predicates,
                **(index or {"path": os.path.abspath(path + ".index")}),
            }
        )
        blob_of(path, meta)
        expected.append(keep)
    assert checks
    verdicts = java.file_index_verdicts(checks)
    assert len(verdicts) == len(expected)
    for got, want in zip(verdicts, expected, strict=True):
        assert [g for g, w in zip(got, want, strict=True) if w is not None] == [
            w for w in want if w is not None
        ]
