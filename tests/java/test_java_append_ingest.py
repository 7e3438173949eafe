"""Append tables we ingest into: Java (0.9 and 1.0) reads exactly the rows, its writer restores
each bucket's sequence numbers from our files and appends after them, and we append after it."""

from __future__ import annotations

from collections import Counter

import pytest

from dagster_paimon.ingest.arrow import ingest_arrow
from dagster_paimon.table import open_table
from tests.ingest.test_append import (
    BUCKETED,
    LOG_SCHEMA,
    create_log,
    live,
    log_batch,
    max_sequences,
)

pytestmark = pytest.mark.slow


def as_java(rows) -> Counter:
    """Rows as Java's reader prints them: field values in order."""
    return Counter(tuple(r[n] for n in LOG_SCHEMA.names) for r in rows)


@pytest.mark.parametrize("java", ["paimon_java", "paimon_java_1_0"])
@pytest.mark.parametrize(
    ("partitioned", "options"),
    [(True, BUCKETED), (False, {})],
    ids=["bucketed-partitioned", "unaware"],
)
def test_java_reads_our_appends_and_appends_after_them(
    warehouse, request, java, partitioned, options
):
    paimon = request.getfixturevalue(java)
    create_log(warehouse, "log", partitioned=partitioned, **options)
    rows = []
    for commit in range(2):
        ingest_arrow(open_table(warehouse, "db.log"), log_batch(commit))
        rows += log_batch(commit).to_pylist()
    assert Counter(tuple(r) for r in paimon.read(warehouse, "db", "log")) == as_java(rows)

    ours = max_sequences(warehouse, "db.log")
    before = {e.file.file_name for e in live(warehouse, "db.log")}
    theirs = log_batch(2).to_pylist()
    paimon.write(
        warehouse,
        "db",
        "log",
        [[["+I", *(r[n] for n in LOG_SCHEMA.names)] for r in theirs]],
        stream=False,
    )
    rows += theirs
    new = [e for e in live(warehouse, "db.log") if e.file.file_name not in before]
    for e in new:  # Java's bucketed writer restored each bucket's numbers from our files
        key = (tuple(e.partition.values), e.bucket)
        expected = ours.get(key, -1) + 1 if options else 0
        assert e.file.min_sequence_number == expected
    ingest_arrow(open_table(warehouse, "db.log"), log_batch(3))
    rows += log_batch(3).to_pylist()
    assert Counter(tuple(r) for r in paimon.read(warehouse, "db", "log")) == as_java(rows)
