"""A soak: random faults on a share of all requests while a writer commits and compactions run.

Every request through the proxy may get one of several fault kinds (2% or 10% of them in all).
A writer thread ingests batch after batch through the same proxy while compactions (minor and
full, alternating) and a manifest compaction run. At 2% every one of them must complete; at 10%
an operation may fail, but only with TransientStoreError. Either way the table then passes the
checks of tests/storage/faults.py against a model of every acknowledged commit.
"""

from __future__ import annotations

import threading

import pytest

from dagster_paimon.errors import TransientStoreError
from dagster_paimon.ingest.arrow import ingest_arrow
from dagster_paimon.kinds import compact_open_table
from tests.conftest import orders_batch
from tests.faultproxy import FAULTS, Rule, fault_proxy
from tests.hooks import compact_manifests
from tests.storage.faults import Templates, upserted

pytestmark = [pytest.mark.s3, pytest.mark.slow]

COMPACTIONS = 6
WRITES = 6


@pytest.mark.parametrize("rate", [0.02, 0.10])
def test_compactions_complete_under_random_faults(s3_server, tmp_path, monkeypatch, rate):
    monkeypatch.setenv("PAIMON_S3_RETRY_BASE_MS", "5")
    monkeypatch.setenv("PAIMON_S3_RETRY_MAX_MS", "200")
    with fault_proxy(s3_server.endpoint, seed=int(rate * 1000)) as proxy:
        table = Templates(s3_server).new_table(proxy, "orders")
        for kind in FAULTS:
            proxy.add(Rule(kind, probability=rate / len(FAULTS), latency_s=0.2))
        written: list[tuple[int, object]] = []
        failures: list[BaseException] = []

        def writer() -> None:
            for n in range(WRITES):
                batch = orders_batch(10 + n)
                try:
                    result = ingest_arrow(table.through_proxy(), batch)
                except TransientStoreError as e:
                    failures.append(e)
                    continue
                written.append((result.snapshot_id, batch))

        thread = threading.Thread(target=writer)
        thread.start()
        for n in range(COMPACTIONS):
            try:
                compact_open_table(table.through_proxy(), table.ref(), full=n % 2 == 1)
            except TransientStoreError as e:
                failures.append(e)
        try:
            compact_manifests(table.through_proxy(), full=True)
        except TransientStoreError as e:
            failures.append(e)
        thread.join()
        given = sum(rule.fired for rule in proxy.rules)
        proxy.clear()
    assert given > 0, "the soak gave no fault"
    if rate <= 0.02:
        assert not failures, f"at {rate:.0%} an operation failed: {failures[0]}"
    for snapshot_id, batch in sorted(written, key=lambda w: w[0]):
        table.changed(snapshot_id, upserted, batch)
    snapshots = table.pypaimon_table().snapshot_manager()
    appends = {
        i
        for i in range(1, snapshots.get_latest_snapshot().id + 1)
        if snapshots.get_snapshot_by_id(i).commit_kind == "APPEND"
    }
    unaccounted = appends - set(table.states)
    assert not unaccounted, f"snapshots {unaccounted} landed from writes reported failed"
    table.check(tmp_path)
