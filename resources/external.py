"""An outside writer: pypaimon fills `pos.sales`, which the example adopts (defs/pos/defs.yaml)."""

import datetime
import sys
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dagster_paimon.table import TableSpec, create_table
from resources.warehouse import warehouse_resource

SALES = pa.schema(
    [
        pa.field("day", pa.string(), nullable=False),
        pa.field("sale_id", pa.int64(), nullable=False),
        pa.field("store", pa.string()),
        pa.field("amount", pa.float64()),
    ]
)
SPEC = TableSpec("pos", "sales", SALES, ("day", "sale_id"), 2, ("day",))
COMMITS = 7


def seed_external_table() -> None:
    """Create pos.sales and commit a week of small pypaimon batches, once: over Paimon's
    compaction trigger, so the adopting sensor has work from its first tick."""
    warehouse = warehouse_resource()
    table = create_table(warehouse.uri, SPEC, warehouse.paimon_options())
    if table.snapshot_manager().get_latest_snapshot() is not None:
        return
    today = datetime.date(2024, 1, 1)
    for commit in range(COMMITS):
        ids = list(range(commit * 50, commit * 50 + 100))
        batch = pa.table(
            {
                "day": [str(today + datetime.timedelta(days=i % 2)) for i in ids],
                "sale_id": ids,
                "store": [f"store-{i % 7}" for i in ids],
                "amount": [round(i * 1.25, 2) for i in ids],
            },
            schema=SALES,
        )
        builder = table.new_batch_write_builder()
        writer, committer = builder.new_write(), builder.new_commit()
        try:
            writer.write_arrow(batch)
            committer.commit(writer.prepare_commit())
        finally:
            writer.close()
            committer.close()


if __name__ == "__main__":
    seed_external_table()
