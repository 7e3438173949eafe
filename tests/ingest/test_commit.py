"""Concurrent ingests into one bucket: the one committing last renumbers its files and wins."""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pytest

from dagster_paimon.ingest.arrow import ingest_arrow
from dagster_paimon.kinds import compact_open_table
from dagster_paimon.table import TableRef, TableSpec, create_table, open_table
from tests.conftest import committed_files, data_files_on_disk
from tests.crash_child import GATE_TIMEOUT_S, run_child
from tests.ingest.races import at_first_flush
from tests.tablefiles import check_snapshots, diff_rows, load_snapshot, rows_by_key, snapshot_ids

IDENTIFIER = "db.profiles"
KEY = ("dt", "customer_id")
DAY = "2024-01-01"
SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("customer_id", pa.int64(), nullable=False),
        pa.field("email", pa.string()),
        pa.field("tier", pa.string()),
        pa.field("last_order", pa.int64()),
    ]
)
VALUES = ("email", "tier", "last_order")
MERGE_ON_WRITE = {
    "plain": {},
    "deletion-vectors": {"deletion-vectors.enabled": "true"},
    "lookup-changelog": {"changelog-producer": "lookup"},
}


def profiles_table(warehouse: str, **options: str):
    """A partial-update table with one bucket, so every ingest races for the same bucket."""
    options = {"merge-engine": "partial-update", **options}
    return create_table(warehouse, TableSpec("db", "profiles", SCHEMA, KEY, 1, ("dt",), options))


def crm_rows(n: int, ids: range) -> list[dict]:
    """The CRM feed: email and tier; no order columns."""
    return [
        {"dt": DAY, "customer_id": i, "email": f"{i}@crm{n}", "tier": f"crm{n}", "last_order": None}
        for i in ids
    ]


def order_rows(n: int, ids: range) -> list[dict]:
    """The orders feed: last order and tier (both feeds set tier); no email."""
    return [
        {"dt": DAY, "customer_id": i, "email": None, "tier": f"orders-{n}", "last_order": n + i}
        for i in ids
    ]


def partial_update(model: dict, rows: list[dict]) -> None:
    """Paimon's partial-update, independently: per key, non-null values overwrite."""
    for row in rows:
        merged = model.setdefault(tuple(row[k] for k in KEY), {c: None for c in SCHEMA.names})
        merged.update({k: row[k] for k in KEY})
        merged.update({c: row[c] for c in VALUES if row[c] is not None})


@pytest.mark.parametrize("options", MERGE_ON_WRITE.values(), ids=list(MERGE_ON_WRITE))
def test_an_ingest_losing_the_race_renumbers_and_its_rows_win(warehouse, caplog, options):
    profiles_table(warehouse, **options)
    first, second = crm_rows(0, range(0, 20)), order_rows(0, range(10, 30))
    flushed, go = threading.Event(), threading.Event()
    results = {}

    def pause() -> None:
        flushed.set()
        assert go.wait(30)

    def ingest_first() -> None:
        table = open_table(warehouse, IDENTIFIER)
        results["first"] = ingest_arrow(table, pa.Table.from_pylist(first, schema=SCHEMA))

    caplog.set_level(logging.INFO, logger="dagster_paimon")
    with at_first_flush(pause):
        thread = threading.Thread(target=ingest_first)
        thread.start()
        assert flushed.wait(30), "the first ingest never wrote its files"
        table = open_table(warehouse, IDENTIFIER)
        results["second"] = ingest_arrow(table, pa.Table.from_pylist(second, schema=SCHEMA))
        go.set()
        thread.join(30)

    assert (results["second"].snapshot_id, results["first"].snapshot_id) == (1, 2)
    assert f"lost bucket 0 of partition dt={DAY}" in caplog.text
    assert "(retry 1 of 10)" in caplog.text
    model: dict = {}
    partial_update(model, second)
    partial_update(model, first)
    assert model[(DAY, 15)]["tier"] == "crm0", "the ingest committing last wins"
    level0_read = "deletion-vectors.enabled" not in options  # else compaction publishes rows
    assert not diff_rows(rows_by_key(table, KEY), model if level0_read else {})
    assert data_files_on_disk(table) == committed_files(table)

    compact_open_table(table, TableRef.of(warehouse, IDENTIFIER), full=True)
    assert not diff_rows(rows_by_key(open_table(warehouse, IDENTIFIER), KEY), model)


def open_gate(gate: Path, running: dict[str, Future]) -> None:
    """Once every child is ready, let them all go; a child that ended before is reported."""
    deadline = time.monotonic() + GATE_TIMEOUT_S
    while not all((gate / f"ready-{name}").exists() for name in running):
        for child in running.values():
            assert not child.done(), child.result().describe()
        assert time.monotonic() < deadline, "the children never got ready"
        time.sleep(0.02)
    (gate / "go").touch()


INGESTS_PER_FEED = 4


@pytest.mark.slow
def test_two_feeds_from_two_processes_all_land_in_commit_order(warehouse, tmp_path):
    profiles_table(warehouse)
    feeds = {
        "crm": [crm_rows(n, range(n * 5, n * 5 + 30)) for n in range(INGESTS_PER_FEED)],
        "orders": [order_rows(n, range(n * 7, n * 7 + 30)) for n in range(INGESTS_PER_FEED)],
    }
    gate = tmp_path / "gate"
    gate.mkdir()
    with ThreadPoolExecutor(len(feeds)) as pool:
        running = {
            name: pool.submit(
                run_child,
                "ingests",
                warehouse,
                {"identifier": IDENTIFIER, "batches": batches, "gate": str(gate), "name": name},
            )
            for name, batches in feeds.items()
        }
        open_gate(gate, running)
        done = {name: future.result() for name, future in running.items()}
    for child in done.values():
        assert child.returncode == 0, child.describe()

    # which feed won each key depends on who committed last: the table says
    table = open_table(warehouse, IDENTIFIER)
    by_snapshot = {
        snapshot: rows
        for name, child in done.items()
        for snapshot, rows in zip(child.result["snapshots"], feeds[name], strict=True)
    }
    assert sorted(by_snapshot) == snapshot_ids(table) == list(range(1, 2 * INGESTS_PER_FEED + 1))
    assert {load_snapshot(table, s).commit_kind for s in by_snapshot} == {"APPEND"}
    models = {0: {}}
    for snapshot in sorted(by_snapshot):
        models[snapshot] = {k: dict(v) for k, v in models[snapshot - 1].items()}
        partial_update(models[snapshot], by_snapshot[snapshot])
    check_snapshots(table, KEY, lambda s: models[s.id])
    assert data_files_on_disk(table) == committed_files(table)
    # both first ingests start at the gate on an empty table: at least that pair races
    retries = sum(c.stderr.count("to another writer; rewriting") for c in done.values())
    assert retries >= 1, "no ingest lost a race"
