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
    rescale_table(TableRef(warehouse, "db.t"), bucket_num=new, partitions=[{"dt": DAYS[0]}])
    expected = sorted([r["dt"], r["id"], r["v"]] for r in model.rows.values())
    assert sorted(paimon_java_1_0.read(warehouse, "db", "t")) == expected


def test_java_refuses_then_writes_after_the_option_is_altered(paimon_java_1_0, warehouse):
    """As Java's own rescale flow: a rescaled table's old `bucket` option makes Java's writer
    refuse; altered to the new count, Java writes into the rescaled buckets and reads right."""
    from pypaimon import CatalogFactory
    from pypaimon.schema.schema_change import SchemaChange

    make(warehouse, bucket=2, partitioned=False)
    model = fill(warehouse)
    rescale_table(TableRef(warehouse, "db.t"), bucket_num=4)
    step = [["+I", DAYS[0], i, f"j{i}"] for i in range(0, 100, 2)]
    with pytest.raises(AssertionError, match="new bucket num 2"):
        paimon_java_1_0.write(warehouse, "db", "t", [step])
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.alter_table("db.t", [SchemaChange.set_option("bucket", "4")], False)
    paimon_java_1_0.write(warehouse, "db", "t", [step])
    for _, dt, i, v in step:
        model.rows[(dt, i)] = {"dt": dt, "id": i, "v": v}
    expected = sorted([r["dt"], r["id"], r["v"]] for r in model.rows.values())
    assert sorted(paimon_java_1_0.read(warehouse, "db", "t")) == expected
