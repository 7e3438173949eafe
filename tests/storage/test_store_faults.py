"""Every operation against every fault an object store gives, one request class at a time.

The first request of the targeted class gets the fault; the operation must succeed (every fault
here is transient, and the retry policy or the create's read-back absorbs it), and the table must
then read, take a pypaimon commit and leave no orphan behind (tests/storage/faults.py). A fault
that persists on every request of its class must fail the operation with TransientStoreError,
saying whether the table changed, and leave the table as sound. The operations run on the
orders primary-key table and on append tables (unaware-bucket, and bucketed for the write paths
whose files depend on the bucket: ingest and append compaction).
"""

from __future__ import annotations

import pytest

from dagster_paimon.cli import EXIT_TRANSIENT, main
from dagster_paimon.errors import TransientStoreError
from tests.faultproxy import (
    DATA_GET,
    DATA_PUT,
    DELETE,
    ERROR_AFTER,
    FAILING,
    HEAD,
    HINT_PUT,
    LIST,
    MANIFEST_PUT,
    METADATA_GET,
    RESET_AFTER,
    RESET_BEFORE,
    SLOW_DOWN,
    SNAPSHOT_PUT,
    TRUNCATED,
    Rule,
    fault_proxy,
)
from tests.storage.faults import OPERATIONS, TEMPLATES, Templates

pytestmark = pytest.mark.s3

# the request classes each operation makes, per template (a case whose fault never fires fails,
# so this stays true to the code); minor compaction makes the same requests as full compaction,
# so it gets the classes whose faults decide a commit's outcome. Append tables get the classes of
# their own paths (their data files read and written, the snapshot that commits them: a lost
# answer must not append twice) and one class per maintenance operation, the one that writes or
# removes their files; the requests the paths share with orders' are covered there. An unaware
# table's minor compaction plans as its full one does, and a bucketed table's requests are an
# unaware one's in other directories: it gets the persistent and lost-answer cases alone.
CLASSES = {
    "orders": {
        "ingest": (SNAPSHOT_PUT, HINT_PUT, MANIFEST_PUT, DATA_PUT, METADATA_GET),
        "overwrite": (SNAPSHOT_PUT, MANIFEST_PUT, DATA_PUT),
        "compact-full": (
            SNAPSHOT_PUT,
            HINT_PUT,
            MANIFEST_PUT,
            DATA_PUT,
            DATA_GET,
            METADATA_GET,
            HEAD,
        ),
        "compact": (SNAPSHOT_PUT, MANIFEST_PUT, DATA_GET),
        "expire-snapshots": (HINT_PUT, METADATA_GET, LIST, DELETE),
        "compact-manifests": (SNAPSHOT_PUT, HINT_PUT, MANIFEST_PUT, METADATA_GET, HEAD),
        "remove-orphans": (METADATA_GET, LIST, DELETE),
    },
    "append": {
        "ingest": (SNAPSHOT_PUT, DATA_PUT),
        "overwrite": (SNAPSHOT_PUT,),
        "compact-full": (SNAPSHOT_PUT, DATA_PUT, DATA_GET),
        "expire-snapshots": (DELETE,),
        "compact-manifests": (MANIFEST_PUT,),
        "remove-orphans": (DELETE,),
    },
}


def case_id(template: str, *parts: str) -> str:
    """The orders cases keep their names; the others say their template first."""
    return "-".join(parts if template == "orders" else (template, *parts))


CASES = [
    pytest.param(template, operation, klass, fault, id=case_id(template, operation, klass, fault))
    for template, operations in CLASSES.items()
    for operation, classes in operations.items()
    for klass in classes
    for fault in FAILING  # latency alone fails nothing: the soak gives it
    # a GET or LIST has no write to lose the answer of: "after" is the cut body
    if not (fault in (ERROR_AFTER, RESET_AFTER) and klass in (DATA_GET, METADATA_GET, LIST))
]


@pytest.fixture(scope="module")
def proxy(s3_server):
    """One fault proxy in front of the run's moto server."""
    with fault_proxy(s3_server.endpoint) as running:
        yield running


@pytest.fixture(scope="module")
def templates(s3_server):
    """The tables the cases start from, each built once."""
    return Templates(s3_server)


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch):
    """Retries as the defaults do them, without the waits."""
    monkeypatch.setenv("PAIMON_S3_RETRY_ATTEMPTS", "4")
    monkeypatch.setenv("PAIMON_S3_RETRY_BASE_MS", "1")
    monkeypatch.setenv("PAIMON_S3_RETRY_MAX_MS", "10")


@pytest.mark.parametrize(("template", "operation", "klass", "fault"), CASES)
def test_one_fault_is_absorbed(proxy, templates, tmp_path, template, operation, klass, fault):
    table = templates.new_table(proxy, template)
    rule = proxy.add(Rule(fault, klass, nth=1))
    try:
        OPERATIONS[operation](table)
    finally:
        proxy.clear()
    assert rule.fired == 1, f"{operation} made no {klass} request"
    table.check(tmp_path)


PERSISTENT = [
    pytest.param(template, operation, klass, fault, id=case_id(template, operation, klass, fault))
    for template, operation, klass, fault in [
        ("orders", "ingest", SNAPSHOT_PUT, SLOW_DOWN),
        ("orders", "ingest", DATA_PUT, RESET_BEFORE),
        ("orders", "compact-full", SNAPSHOT_PUT, SLOW_DOWN),
        ("orders", "compact-full", MANIFEST_PUT, ERROR_AFTER),
        ("orders", "compact-full", DATA_GET, TRUNCATED),
        ("orders", "compact-manifests", METADATA_GET, SLOW_DOWN),
        ("orders", "expire-snapshots", DELETE, SLOW_DOWN),
        ("orders", "remove-orphans", LIST, RESET_AFTER),
        ("append", "ingest", SNAPSHOT_PUT, SLOW_DOWN),
        ("append", "ingest", DATA_PUT, RESET_BEFORE),
        ("append", "overwrite", SNAPSHOT_PUT, SLOW_DOWN),
        ("append", "compact-full", SNAPSHOT_PUT, SLOW_DOWN),
        ("append", "compact-full", DATA_PUT, ERROR_AFTER),
        ("append", "compact-full", DATA_GET, TRUNCATED),
        ("append", "compact-manifests", MANIFEST_PUT, SLOW_DOWN),
        ("append", "expire-snapshots", DELETE, SLOW_DOWN),
        ("append", "remove-orphans", LIST, RESET_AFTER),
        ("append-bucketed", "ingest", DATA_PUT, RESET_BEFORE),
        ("append-bucketed", "compact-full", DATA_GET, TRUNCATED),
    ]
]


@pytest.mark.parametrize(("template", "operation", "klass", "fault"), PERSISTENT)
def test_a_fault_that_persists_fails_cleanly(
    proxy, templates, tmp_path, template, operation, klass, fault
):
    table = templates.new_table(proxy, template)
    proxy.add(Rule(fault, klass))
    try:
        with pytest.raises(TransientStoreError) as failure:
            OPERATIONS[operation](table)
    finally:
        proxy.clear()
    message = str(failure.value)
    assert failure.value.code in message and failure.value.key in message
    # only an append whose snapshot may have landed must not be run again blindly
    unsafe = operation == "ingest" and klass == SNAPSHOT_PUT
    assert failure.value.retry_safe is not unsafe
    if unsafe:
        assert "commitUser is dagster-paimon-ingest-" in message and "twice" in message
    else:
        assert "retrying the operation is safe" in message
    if operation == "compact-full":
        # only a snapshot create that never resolved leaves the table's state open
        assert failure.value.table_unchanged is (None if klass == SNAPSHOT_PUT else True)
    if failure.value.table_unchanged:
        latest = table.pypaimon_table().snapshot_manager().get_latest_snapshot()
        assert latest.id == len(TEMPLATES[template].commits), "the table changed"
    table.check(tmp_path)


LOST_ANSWERS = [
    pytest.param(template, operation, id=case_id(template, operation))
    for template, operation in [
        ("orders", "compact-full"),
        ("append", "compact-full"),
        ("append", "ingest"),
        ("append-bucketed", "compact-full"),
    ]
]


@pytest.mark.parametrize(("template", "operation"), LOST_ANSWERS)
def test_a_lost_answer_to_every_snapshot_put_still_commits_once(
    proxy, templates, tmp_path, template, operation
):
    """The store keeps the snapshot and the answer is lost, every time: the read-back proves
    the snapshot ours, so the commit succeeds, exactly once, and nothing it names is deleted
    (an append lands its rows once)."""
    table = templates.new_table(proxy, template)
    proxy.add(Rule(RESET_AFTER, SNAPSHOT_PUT))
    try:
        result = OPERATIONS[operation](table)
    finally:
        proxy.clear()
    committed = len(TEMPLATES[template].commits) + 1
    assert result.snapshot_id == committed
    snapshots = table.pypaimon_table().snapshot_manager()
    assert snapshots.get_latest_snapshot().id == committed
    table.check(tmp_path)


@pytest.mark.parametrize("step", [1, 2, 3], ids=["create-upload", "part", "complete-upload"])
@pytest.mark.parametrize("fault", [ERROR_AFTER, RESET_AFTER, TRUNCATED])
def test_a_lost_answer_at_any_step_of_an_upload_is_absorbed(
    proxy, templates, tmp_path, step, fault
):
    """pyarrow uploads every object in three requests; a retried CompleteMultipartUpload whose
    first answer was lost finds its upload gone, so the whole object is sent again."""
    table = templates.new_table(proxy, "orders")
    rule = proxy.add(Rule(fault, MANIFEST_PUT, nth=step))
    try:
        OPERATIONS["compact-full"](table)
    finally:
        proxy.clear()
    assert rule.fired == 1
    table.check(tmp_path)


def test_the_cli_exits_75_naming_the_request_and_the_table_state(
    s3_server, proxy, templates, monkeypatch, capsys
):
    table = templates.new_table(proxy, "orders")
    for name, value in s3_server.paimon_env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PAIMON_S3_ENDPOINT", proxy.endpoint)
    proxy.add(Rule(SLOW_DOWN, DATA_GET))
    try:
        code = main(["compact", "--full", "--warehouse", table.warehouse, "--table", "db.orders"])
    finally:
        proxy.clear()
    err = capsys.readouterr().err.strip()
    assert code == EXIT_TRANSIENT
    assert err.startswith("dagster-paimon compact: failed transiently: GET of ")
    # reads are boto3 GETs (storage/arrow_s3.py): the error names the store's own code
    assert "/bucket-0/data-" in err and "SlowDown" in err
    assert "the table is unchanged" in err and "retrying the operation is safe" in err
