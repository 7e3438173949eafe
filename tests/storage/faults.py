"""Tables on moto reached through the fault proxy, and the independent checks made after a fault.

A case builds a fresh orders table on moto directly (pypaimon's writer, four commits), runs one
of our operations through the proxy with a fault armed, then judges the table with the proxy
out of the way: the bucket is mirrored to a local directory and read there by pypaimon alone
(tests/tablefiles.py), every retained snapshot against a model of the commits that preceded it;
a pypaimon writer commits once more; orphan removal leaves nothing unreferenced.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
from pypaimon import CatalogFactory
from pypaimon.snapshot.snapshot import Snapshot

from dagster_paimon.ingest.arrow import ingest_arrow
from dagster_paimon.lsm.compaction import compact_open_table
from dagster_paimon.maintenance.options import RetentionOverrides
from dagster_paimon.table import TableRef, create_table, open_table
from tests.conftest import orders_batch, orders_spec, write_with_pypaimon
from tests.faultproxy import FaultProxy
from tests.hooks import compact_manifests, expire_snapshots, remove_orphans
from tests.s3server import S3Server
from tests.tablefiles import check_snapshots, rows_by_key, unreferenced_files

KEY = ("dt", "id")
IDENTIFIER = "db.orders"
COMMITS = 4
OPTIONS = {"num-sorted-run.compaction-trigger": "3"}


def later() -> int:
    """A clock a few seconds ahead: S3 ages have one-second resolution, and every file these
    tests write must count as old enough for orphan removal."""
    return int(time.time() * 1000) + 5000


Rows = dict[tuple, dict]


def upserted(rows: Rows, batch: pa.Table) -> Rows:
    """`rows` after an append of `batch`: last write wins per (dt, id)."""
    result = dict(rows)
    for row in batch.to_pylist():
        result[(row["dt"], row["id"])] = row
    return result


def overwritten(rows: Rows, batch: pa.Table) -> Rows:
    """`rows` after an overwrite with `batch`: its partitions hold exactly its rows."""
    days = set(batch.column("dt").to_pylist())
    kept = {k: r for k, r in rows.items() if k[0] not in days}
    return upserted(kept, batch)


def template_states() -> dict[int, Rows]:
    """The rows of each of the template's snapshots."""
    states, rows = {}, {}
    for commit in range(COMMITS):
        rows = upserted(rows, orders_batch(commit))
        states[commit + 1] = rows
    return states


@dataclass
class FaultTable:
    """One orders table in its own bucket, reachable directly and through the proxy."""

    server: S3Server
    proxy: FaultProxy
    bucket: str
    # the rows of every snapshot that changed them; the snapshots in between hold the same
    states: dict[int, Rows] = field(default_factory=template_states)

    @property
    def warehouse(self) -> str:
        """The warehouse URI."""
        return f"s3://{self.bucket}/wh"

    def options(self, *, faulty: bool) -> dict[str, str]:
        """Catalog options reaching moto directly, or through the proxy."""
        options = self.server.catalog_options()
        if faulty:
            options["fs.s3.endpoint"] = self.proxy.endpoint
        return options

    def through_proxy(self):
        """The table as our operations open it, every request through the proxy."""
        return open_table(self.warehouse, IDENTIFIER, self.options(faulty=True))

    def ref(self) -> TableRef:
        """The TableRef of the table through the proxy (for compaction's executor)."""
        return TableRef.of(self.warehouse, IDENTIFIER, self.options(faulty=True))

    def pypaimon_table(self):
        """The table opened by pypaimon's own catalog on moto, none of our code in the way."""
        catalog = CatalogFactory.create({"warehouse": self.warehouse, **self.options(faulty=False)})
        return catalog.get_table(IDENTIFIER)

    def mirror(self, into: Path):
        """A local copy of the bucket, opened by pypaimon, for the file-level checks."""
        client = self.server.client()
        keys = [k for k in self.server.keys(self.bucket) if not k.endswith("/")]

        def fetch(key: str) -> None:
            path = into / key
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(client.get_object(Bucket=self.bucket, Key=key)["Body"].read())

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(fetch, keys))
        catalog = CatalogFactory.create({"warehouse": str(into / "wh")})
        return catalog.get_table(IDENTIFIER)

    def expected_at(self, snapshot: Snapshot) -> Rows:
        """A snapshot holds the rows of the last change at or before it."""
        return self.states[max(i for i in self.states if i <= snapshot.id)]

    def changed(self, snapshot_id: int | None, change: Callable[[Rows, pa.Table], Rows], batch):
        """Record that snapshot `snapshot_id` applied `change` with `batch` to the rows before."""
        assert snapshot_id is not None, "the write committed no snapshot"
        before = self.states[max(i for i in self.states if i < snapshot_id)]
        self.states[snapshot_id] = change(before, batch)

    def check(self, workdir: Path) -> None:
        """A pypaimon writer commits on top, every retained snapshot then reads as the model
        says, and after orphan removal every file of the table is referenced."""
        write_with_pypaimon(self.pypaimon_table(), orders_batch(COMMITS))
        latest = self.pypaimon_table().snapshot_manager().get_latest_snapshot()
        self.changed(latest.id, upserted, orders_batch(COMMITS))
        remove_orphans(
            open_table(self.warehouse, IDENTIFIER, self.options(faulty=False)),
            older_than_ms=1,
            now_ms=later(),
        )
        mirrored = self.mirror(workdir)
        checked = check_snapshots(mirrored, KEY, self.expected_at)
        assert latest.id in checked, f"the pypaimon commit {latest.id} does not read"
        assert rows_by_key(mirrored, KEY) == self.states[latest.id]
        leftover = {
            f for f in unreferenced_files(mirrored) if not os.path.basename(f).startswith(".")
        }
        assert not leftover, f"unreferenced files after orphan removal: {sorted(leftover)[:5]}"


def template_bucket(server: S3Server) -> str:
    """A bucket holding the orders table after four pypaimon commits (made directly)."""
    bucket = server.create_bucket("template")
    warehouse = f"s3://{bucket}/wh"
    created = create_table(warehouse, orders_spec(1, **OPTIONS), server.catalog_options())
    for commit in range(COMMITS):
        write_with_pypaimon(created, orders_batch(commit))
    return bucket


def new_fault_table(server: S3Server, proxy: FaultProxy, template: str) -> FaultTable:
    """A fresh bucket holding a server-side copy of the template's table (metadata names files
    relative to the table, so a copy is the same table)."""
    table = FaultTable(server, proxy, server.create_bucket("faults"))
    client = server.client()

    def copy(key: str) -> None:
        client.copy_object(
            Bucket=table.bucket, Key=key, CopySource={"Bucket": template, "Key": key}
        )

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(copy, server.keys(template)))
    return table


def plant_orphans(table: FaultTable) -> None:
    """An unreferenced data file and manifest, as a crashed writer leaves them."""
    client = table.server.client()
    root = "wh/db.db/orders"
    for name in ("dt=2024-01-01/bucket-0/data-orphan.parquet", "manifest/manifest-orphan"):
        client.put_object(Bucket=table.bucket, Key=f"{root}/{name}", Body=b"orphan")


Operation = Callable[[FaultTable], object]
# what the ingest operations write: new ids and ids of the template's last commits
INGESTED = orders_batch(COMMITS + 3)


def ingest(table: FaultTable, mode: str) -> object:
    """Our in-process ingest of INGESTED through the proxy, recorded in the model."""
    result = ingest_arrow(table.through_proxy(), INGESTED, mode=mode)
    table.changed(result.snapshot_id, upserted if mode == "append" else overwritten, INGESTED)
    return result


OPERATIONS: dict[str, Operation] = {
    "ingest": lambda t: ingest(t, "append"),
    "overwrite": lambda t: ingest(t, "overwrite"),
    "compact": lambda t: compact_open_table(t.through_proxy(), t.ref()),
    "compact-full": lambda t: compact_open_table(t.through_proxy(), t.ref(), full=True),
    "expire-snapshots": lambda t: expire_snapshots(
        t.through_proxy(), overrides=RetentionOverrides(1, 2, 0)
    ),
    "compact-manifests": lambda t: compact_manifests(t.through_proxy(), full=True),
    "remove-orphans": lambda t: (
        plant_orphans(t),
        remove_orphans(t.through_proxy(), older_than_ms=1, now_ms=later()),
    ),
}
