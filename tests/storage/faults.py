"""Tables on moto reached through the fault proxy, and the independent checks made after a fault.

A case starts from a copy of a template table built on moto once per run by pypaimon's writer
(the orders primary-key table, four commits; or an append table, unaware-bucket or bucketed,
written in small files and once overwritten), runs one of our operations through the proxy with a
fault armed, then judges the table with the proxy out of the way: the bucket is mirrored to a
local directory and read there by pypaimon alone (tests/tablefiles.py), every retained snapshot
against a model of the commits that preceded it (rows by key, or a multiset for an append
table); a pypaimon writer commits once more; orphan removal leaves nothing unreferenced.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from pypaimon import CatalogFactory
from pypaimon.snapshot.snapshot import Snapshot

from dagster_paimon.ingest.arrow import ingest_arrow
from dagster_paimon.kinds import compact_open_table, kind_of
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.maintenance.options import RetentionOverrides
from dagster_paimon.table import TableRef, TableSpec, create_table, open_table
from tests.conftest import ORDERS_SCHEMA, orders_batch, orders_spec, write_with_pypaimon
from tests.faultproxy import FaultProxy
from tests.hooks import compact_manifests, expire_snapshots, remove_orphans
from tests.s3server import S3Server
from tests.tablefiles import (
    Multiset,
    Rows,
    as_multiset,
    check_snapshots,
    multiset_order,
    table_rows,
    unreferenced_files,
)

DAYS = ("2024-01-01", "2024-01-02")


def later() -> int:
    """A clock a few seconds ahead: S3 ages have one-second resolution, and every file these
    tests write must count as old enough for orphan removal."""
    return int(time.time() * 1000) + 5000


Model = Rows | Multiset
Change = Callable[[Model, pa.Table], Model]


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


def appended(rows: Multiset, batch: pa.Table) -> Multiset:
    """An append table's `rows` after an append of `batch`: every row kept, duplicates too."""
    return sorted([*rows, *as_multiset(batch.to_pylist())], key=multiset_order)


def replaced(rows: Multiset, batch: pa.Table) -> Multiset:
    """An append table's `rows` after an overwrite with `batch`: its partitions hold exactly
    its rows."""
    days = set(batch.column("dt").to_pylist())
    at = sorted(batch.column_names).index("dt")
    return appended([r for r in rows if r[at] not in days], batch)


def events_batch(commit: int, rows: int = 24) -> pa.Table:
    """Rows over two days whose ids repeat within and across commits, and whose values repeat
    every other commit: an append table holds identical rows, each copy counted."""
    return pa.table(
        {
            "dt": [DAYS[i % 2] for i in range(rows)],
            "id": [(commit * 5 + i) % 16 for i in range(rows)],
            "v": [f"c{commit % 2}"] * rows,
        },
        schema=ORDERS_SCHEMA,
    )


@dataclass(frozen=True)
class Template:
    """A table the cases of one kind start from: how pypaimon builds it (one commit per entry
    of `commits`: an append, or an overwrite of that day), how our writes change its rows."""

    spec: TableSpec
    batch: Callable[[int], pa.Table]
    commits: tuple[str | None, ...]
    appended: Change
    overwritten: Change

    @property
    def key(self) -> tuple[str, ...] | None:
        """What rows are compared by: the primary key, or None (a multiset) for an append table."""
        return self.spec.primary_keys or None

    @property
    def root(self) -> str:
        """The table's directory in its bucket."""
        return f"wh/{self.spec.database}.db/{self.spec.name}"

    def written(self, commit: int) -> tuple[pa.Table, dict[str, str] | None]:
        """What pypaimon's commit `commit` writes, and the partition it overwrites (or None)."""
        day = self.commits[commit] if commit < len(self.commits) else None
        batch = self.batch(commit)
        if day is None:
            return batch, None
        return batch.filter(pc.equal(batch["dt"], day)), {"dt": day}

    def states(self) -> dict[int, Model]:
        """The rows of each of the template's snapshots."""
        states: dict[int, Model] = {}
        rows: Model = [] if self.key is None else {}
        for commit in range(len(self.commits)):
            batch, overwrite = self.written(commit)
            rows = (self.appended if overwrite is None else self.overwritten)(rows, batch)
            states[commit + 1] = rows
        return states


# compaction merges once three sorted runs pile up
ORDERS = Template(
    orders_spec(1, **{"num-sorted-run.compaction-trigger": "3"}),
    orders_batch,
    (None,) * 4,
    upserted,
    overwritten,
)
# one small file per commit and partition (per bucket): three of them make a compaction task;
# the overwrite of the first day gives expiry data files to delete
APPEND_OPTIONS = {"compaction.min.file-num": "3"}
APPEND_COMMITS = (None, None, DAYS[0], None, None)
TEMPLATES = {
    "orders": ORDERS,
    "append": Template(
        TableSpec("db", "events", ORDERS_SCHEMA, (), -1, ("dt",), APPEND_OPTIONS),
        events_batch,
        APPEND_COMMITS,
        appended,
        replaced,
    ),
    "append-bucketed": Template(
        TableSpec(
            "db", "events", ORDERS_SCHEMA, (), 2, ("dt",), {**APPEND_OPTIONS, "bucket-key": "id"}
        ),
        events_batch,
        APPEND_COMMITS,
        appended,
        replaced,
    ),
}


@dataclass
class FaultTable:
    """One orders table in its own bucket, reachable directly and through the proxy."""

    server: S3Server
    proxy: FaultProxy
    bucket: str
    template: Template
    # the rows of every snapshot that changed them; the snapshots in between hold the same
    states: dict[int, Model] = field(init=False)

    def __post_init__(self) -> None:
        """The model starts as the template's snapshots."""
        self.states = self.template.states()

    @property
    def identifier(self) -> str:
        """The table's 'db.table' name."""
        return self.template.spec.identifier

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
        return open_table(self.warehouse, self.identifier, self.options(faulty=True))

    def ref(self) -> TableRef:
        """The TableRef of the table through the proxy (for compaction's executor)."""
        return TableRef.of(self.warehouse, self.identifier, self.options(faulty=True))

    def pypaimon_table(self):
        """The table opened by pypaimon's own catalog on moto, none of our code in the way."""
        catalog = CatalogFactory.create({"warehouse": self.warehouse, **self.options(faulty=False)})
        return catalog.get_table(self.identifier)

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
        return catalog.get_table(self.identifier)

    def expected_at(self, snapshot: Snapshot) -> Model:
        """A snapshot holds the rows of the last change at or before it."""
        return self.states[max(i for i in self.states if i <= snapshot.id)]

    def changed(self, snapshot_id: int | None, change: Change, batch: pa.Table) -> None:
        """Record that snapshot `snapshot_id` applied `change` with `batch` to the rows before."""
        assert snapshot_id is not None, "the write committed no snapshot"
        before = self.states[max(i for i in self.states if i < snapshot_id)]
        self.states[snapshot_id] = change(before, batch)

    def check(self, workdir: Path) -> None:
        """A pypaimon writer commits on top, every retained snapshot then reads as the model
        says, and after orphan removal every file of the table is referenced."""
        batch, _ = self.template.written(len(self.template.commits))
        write_with_pypaimon(self.pypaimon_table(), batch)
        latest = self.pypaimon_table().snapshot_manager().get_latest_snapshot()
        self.changed(latest.id, self.template.appended, batch)
        remove_orphans(
            open_table(self.warehouse, self.identifier, self.options(faulty=False)),
            older_than_ms=1,
            now_ms=later(),
        )
        mirrored = self.mirror(workdir)
        key = self.template.key
        checked = check_snapshots(mirrored, key, self.expected_at)
        assert latest.id in checked, f"the pypaimon commit {latest.id} does not read"
        assert table_rows(mirrored, key) == self.states[latest.id]
        leftover = {
            f for f in unreferenced_files(mirrored) if not os.path.basename(f).startswith(".")
        }
        assert not leftover, f"unreferenced files after orphan removal: {sorted(leftover)[:5]}"


def template_bucket(server: S3Server, template: Template) -> str:
    """A bucket holding the template's table after its pypaimon commits (made directly); an
    append template must leave append compaction work, full or not."""
    bucket = server.create_bucket("template")
    created = create_table(f"s3://{bucket}/wh", template.spec, server.catalog_options())
    for commit in range(len(template.commits)):
        batch, overwrite = template.written(commit)
        write_with_pypaimon(created, batch, overwrite)
    if template.key is None:
        levels = read_levels(created)
        for full in (False, True):
            assert kind_of(levels.schema).plan(levels, full=full).tasks, template.spec
    return bucket


class Templates:
    """Each template's bucket, built on first use and kept for the run; cases copy it."""

    def __init__(self, server: S3Server):
        self.server = server
        self.buckets: dict[str, str] = {}

    def new_table(self, proxy: FaultProxy, name: str) -> FaultTable:
        """A fresh copy of template `name`."""
        template = TEMPLATES[name]
        if name not in self.buckets:
            self.buckets[name] = template_bucket(self.server, template)
        return new_fault_table(self.server, proxy, self.buckets[name], template)


def new_fault_table(
    server: S3Server, proxy: FaultProxy, source: str, template: Template
) -> FaultTable:
    """A fresh bucket holding a server-side copy of the template's table (metadata names files
    relative to the table, so a copy is the same table)."""
    table = FaultTable(server, proxy, server.create_bucket("faults"), template)
    client = server.client()

    def copy(key: str) -> None:
        client.copy_object(Bucket=table.bucket, Key=key, CopySource={"Bucket": source, "Key": key})

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(copy, server.keys(source)))
    return table


def plant_orphans(table: FaultTable) -> None:
    """An unreferenced data file and manifest, as a crashed writer leaves them."""
    client = table.server.client()
    root = table.template.root
    for name in ("dt=2024-01-01/bucket-0/data-orphan.parquet", "manifest/manifest-orphan"):
        client.put_object(Bucket=table.bucket, Key=f"{root}/{name}", Body=b"orphan")


Operation = Callable[[FaultTable], object]


def ingest(table: FaultTable, mode: str) -> object:
    """Our in-process ingest through the proxy, recorded in the model: new ids and ids (rows,
    in an append table) of the template's last commits."""
    template = table.template
    batch = template.batch(len(template.commits) + 3)
    result = ingest_arrow(table.through_proxy(), batch, mode=mode)
    change = template.appended if mode == "append" else template.overwritten
    table.changed(result.snapshot_id, change, batch)
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
