"""Property: after expiry, every retained snapshot and tag reads what it read before.

Random histories of upserts and deletes, compactions, manifest compactions, tags and consumer
positions on real pypaimon tables; then one or two expiry runs with random retention, then
orphan removal. pypaimon's time travel is the oracle for rows, its manifest readers for which
files must (not) exist.
"""

from __future__ import annotations

import random
import tempfile
import time

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagster_paimon.maintenance.options import HOUR_MS, RetentionOverrides
from tests.conftest import write_with_pypaimon
from tests.hooks import compact_manifests, expire_snapshots, remove_orphans
from tests.lsm.tables import SCHEMA, cdc_batch, cdc_table, compact
from tests.maintenance.oracle import (
    age_tree,
    all_refs,
    exists,
    manifest_exists,
    rows_at,
    set_consumer,
    snapshot_ids,
    tag_refs,
    tag_rows,
)

OP = st.one_of(
    st.tuples(st.just("append"), st.integers(0, 10_000)),
    st.tuples(st.just("compact"), st.booleans()),
    st.tuples(st.just("tag"), st.integers(0, 1_000)),
    st.tuples(st.just("consumer"), st.integers(0, 1_000)),
    st.tuples(st.just("manifests"), st.booleans()),
)
RETENTION = st.fixed_dictionaries(
    {
        "retain_min": st.integers(1, 4),
        "extra_max": st.integers(0, 8),
        "max_deletes": st.integers(1, 15),
        "old": st.booleans(),
    }
)


def build(warehouse: str, ops: list[tuple[str, int]]):
    """Replay the ops on a fresh table; return it and the smallest consumer position."""
    table = cdc_table(warehouse, **{"num-sorted-run.compaction-trigger": "3"})
    consumers: dict[str, int] = {}
    commit = 0
    for op, arg in [("append", 0), *ops]:
        ids = snapshot_ids(table)
        if op == "append":
            rows = cdc_batch(random.Random(arg), commit, rows=30, keys=40)
            write_with_pypaimon(table, pa.Table.from_pylist(rows, schema=SCHEMA))
            commit += 1
        elif op == "compact":
            compact(table, warehouse, full=bool(arg))
        elif op == "manifests":
            compact_manifests(table, full=bool(arg))
        elif op == "tag":
            table.create_tag(f"t{arg}", ids[arg % len(ids)], ignore_if_exists=True)
        else:
            consumers[f"c{arg % 3}"] = ids[arg % len(ids)]
            set_consumer(table, f"c{arg % 3}", consumers[f"c{arg % 3}"])
    return table, min(consumers.values(), default=None)


def expected_earliest(ids: list[int], r: dict, consumer_min: int | None) -> int:
    """Java's ExpireSnapshotsImpl.expire range, computed independently of the code under test."""
    earliest, latest = ids[0], ids[-1]
    retain_max = r["retain_min"] + r["extra_max"]
    lo = max(latest - retain_max + 1, earliest)
    hi = latest - r["retain_min"] + 1
    if consumer_min is not None:
        hi = min(hi, consumer_min)
    hi = min(hi, earliest + r["max_deletes"])
    end = hi if r["old"] else min(lo, hi)
    return max(end, earliest)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(ops=st.lists(OP, min_size=3, max_size=12), runs=st.lists(RETENTION, min_size=1, max_size=2))
def test_expiry_keeps_exactly_what_retained_snapshots_and_tags_need(ops, runs):
    with tempfile.TemporaryDirectory() as warehouse:
        table, consumer_min = build(warehouse, ops)
        rows = {i: rows_at(table, i) for i in snapshot_ids(table)}
        tags = tag_refs(table)
        rows_of_tag = {name: tag_rows(table, name) for name in tags}
        ever = all_refs(table)
        for r in runs:
            ids = snapshot_ids(table)
            earliest = expected_earliest(ids, r, consumer_min)
            overrides = RetentionOverrides(
                retain_min=r["retain_min"],
                retain_max=r["retain_min"] + r["extra_max"],
                time_retained_ms=0 if r["old"] else HOUR_MS,
                max_deletes=r["max_deletes"],
            )
            result = expire_snapshots(
                table, overrides=overrides, now_ms=int(time.time() * 1000) + 1_000
            )
            retained = snapshot_ids(table)
            assert retained == [i for i in ids if i >= earliest]
            assert result.expired_ids == tuple(i for i in ids if i < earliest)
            assert result.earliest == earliest

            for i in retained:
                assert rows_at(table, i) == rows[i], f"snapshot {i} changed"
            for name in tags:
                assert tag_rows(table, name) == rows_of_tag[name], f"tag {name} changed"

            kept = [ever[i] for i in retained] + list(tags.values())
            kept_data = set().union(*(k.data for k in kept))
            kept_metadata = set().union(*(k.metadata for k in kept))
            assert all(exists(p) for p in kept_data)
            assert all(manifest_exists(table, n) for n in kept_metadata)
            for refs in ever.values():
                assert not any(exists(p) for p in refs.data - kept_data)
                assert not any(manifest_exists(table, n) for n in refs.metadata - kept_metadata)

        age_tree(table.table_path)
        assert remove_orphans(table).orphans == (), "expiry left unreferenced files behind"
        for i in snapshot_ids(table):
            assert rows_at(table, i) == rows[i]
