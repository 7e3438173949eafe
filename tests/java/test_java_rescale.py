"""Paimon's Java reader reads a rescaled table as the model (latest value per key)."""

from __future__ import annotations

import pytest

from dagster_paimon.lsm.compaction import rescale_table
from dagster_paimon.table import TableRef
from tests.lsm.compaction.test_rescale import DAYS, fill, make

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("old", "new"), [(2, 4), (4, 1)])
def test_java_reads_a_rescaled_partition(paimon_java_1_0, warehouse, old, new):
    make(warehouse, bucket=old, partitioned=True)
    model = fill(warehouse)
    rescale_table(TableRef(warehouse, "db.t"), bucket_num=new, partition={"dt": DAYS[0]})
    expected = sorted([r["dt"], r["id"], r["v"]] for r in model.rows.values())
    assert sorted(paimon_java_1_0.read(warehouse, "db", "t")) == expected
