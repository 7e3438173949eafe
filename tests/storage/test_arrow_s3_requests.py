"""What each operation costs on S3, counted by the proxy in front of moto: upper bounds, each
with its reason (issue 39; bench/s3_requests.py measures the issue's table beside the minimum).

One small table (primary key, 2 partitions, 2 buckets: 4 data files an ingest) takes the
operations in turn; each bound is the minimum the docstring of bench/s3_requests.py counts plus
what is left above it, so a change that brings back a HEAD per object or a multipart upload per
manifest fails here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import timedelta

import pytest

from dagster_paimon.paimon_table import PaimonTable
from tests.conftest import orders_batch, orders_spec
from tests.faultproxy import FaultProxy, fault_proxy

pytestmark = pytest.mark.s3

SPEC = orders_spec(2)
INGESTS = 3


@pytest.fixture(scope="module")
def proxy(s3_server):
    """A counting proxy (no faults) in front of the run's moto server."""
    with fault_proxy(s3_server.endpoint) as running:
        yield running


@pytest.fixture(scope="module")
def table(s3_server, proxy) -> PaimonTable:
    """The table after INGESTS ingests, every request through the proxy."""
    bucket = s3_server.create_bucket("requests")
    options = {**s3_server.catalog_options(), "fs.s3.endpoint": proxy.endpoint}
    created = PaimonTable.create(f"s3://{bucket}/wh", SPEC, options)
    for commit in range(INGESTS):
        created.ingest_arrow(orders_batch(commit))
    return created


def requests(proxy: FaultProxy, action: Callable[[], object]) -> Counter[str]:
    """The requests `action` made, by method ("LIST" apart from other GETs), and "all"."""
    before = len(proxy.log.entries)
    action()
    made = proxy.log.entries[before:]
    counts = Counter("LIST" if klass == "list" else method for klass, method, _, _ in made)
    counts["all"] = len(made)
    return counts


def test_a_small_object_is_one_put_and_one_get(table, proxy):
    # no parent HEAD/LIST, no multipart (create, part, complete), no HEAD before the GET
    file_io = table.paimon.file_io
    path = f"{table.paimon.table_path}/probe-object"
    assert requests(proxy, lambda: file_io.overwrite_file_utf8(path, "x" * 5000)) == {
        "PUT": 1,
        "all": 1,
    }
    read = requests(proxy, lambda: file_io.read_file_utf8(path))
    assert read == {"GET": 1, "all": 1}
    file_io.delete_quietly(path)


def test_an_uploaded_size_is_not_asked_back(table, proxy):
    # the writer asks each data file's size right after closing it: the PUT already said
    file_io = table.paimon.file_io
    path = f"{table.paimon.table_path}/probe-sized"
    file_io.overwrite_file_utf8(path, "y" * 123)
    assert requests(proxy, lambda: file_io.get_file_size(path)) == {"all": 0}
    file_io.delete_quietly(path)


def test_an_ingest_commit(table, proxy):
    # 4 data PUTs + 5 commit PUTs (manifest, 2 lists, snapshot, LATEST), nothing else written;
    # the hint protocol (GET LATEST, HEAD next, GET snapshot), the lists and the 3 manifests
    # read twice (one GET each), the schema reloaded (HEAD + 2 LIST + GET) and pypaimon's own
    # latest-snapshot lookup in the commit loop (8): 42 (97 before issue 39, on the bench table)
    made = requests(proxy, lambda: table.ingest_arrow(orders_batch(INGESTS)))
    assert made["PUT"] == 9, made
    assert made.get("POST", 0) == 0, made  # no multipart upload
    assert made["all"] <= 45, made


def test_compaction(table, proxy):
    # minor, then full: 4 buckets' files read (one GET each, data files are small), 4 written,
    # one commit; every metadata object read with one GET
    for full in (False, True):
        made = requests(proxy, lambda f=full: table.compact(full=f))
        assert made.get("POST", 0) == 0, made
    assert made["all"] <= 60, made


def test_manifest_compaction(table, proxy):
    # the lists and every manifest read once, one merged manifest and a commit written (5
    # single PUTs), the latest found by pypaimon's lookup: 34
    made = requests(proxy, lambda: table.compact_manifests(full=True))
    assert made.get("POST", 0) == 0, made
    assert made["all"] <= 36, made


def test_snapshot_expiry(table, proxy):
    # 5 snapshots expired: each, its lists and manifests read (one GET each), the directories
    # listed, the deletes batched (3 DeleteObjects), EARLIEST written: 49
    made = requests(
        proxy,
        lambda: table.expire_snapshots(older_than=timedelta(0), retain_min=1, retain_max=1),
    )
    assert made["all"] <= 52, made


def test_orphan_removal(table, proxy):
    # LISTs of the table's directories (26), the kept snapshot's lists and manifests read: 33
    made = requests(proxy, lambda: table.remove_orphans())
    assert made["all"] <= 35, made
