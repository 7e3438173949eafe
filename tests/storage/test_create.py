"""Create-if-absent resolved by reading back: a landed create whose answer was lost is ours."""

from __future__ import annotations

import pytest

from dagster_paimon.errors import CommitOutcomeUnknownError
from dagster_paimon.storage.create import create_resolved
from dagster_paimon.storage.local import create_local_if_absent
from dagster_paimon.storage.retry import RetryPolicy

QUICK = RetryPolicy(attempts=3, base_s=0.001, cap_s=0.002)


class Store:
    """An object store of one name whose answers a test scripts: each put may land, and its
    answer may be lost (raise) or be "exists"."""

    def __init__(self):
        self.stored: bytes | None = None
        self.puts = 0

    def put(self, body: bytes, *, lands: bool, answer: str) -> bool:
        self.puts += 1
        if self.stored is not None:
            return False
        if lands:
            self.stored = body
        if answer == "lost":
            raise ConnectionResetError("connection reset after the write")
        return answer == "ok"


def test_a_lost_answer_to_a_landed_create_is_read_back_as_ours():
    store = Store()
    created = create_resolved(
        "s3://b/snapshot-5",
        b"ours",
        lambda: store.put(b"ours", lands=True, answer="lost"),
        lambda: store.stored,
        QUICK,
    )
    assert created and store.puts == 1


def test_a_retried_create_meeting_its_own_object_is_ours():
    """The first attempt landed but its answer was lost; the retry hears "exists" (412)."""
    store = Store()
    answers = iter(["lost", "ok"])

    def put() -> bool:
        answer = next(answers)
        if answer == "lost":
            store.stored = b"ours"
            raise TimeoutError("read timed out")
        return store.put(b"ours", lands=True, answer=answer)

    assert create_resolved("k", b"ours", put, lambda: store.stored, QUICK)


def test_other_bytes_under_the_name_are_a_lost_race():
    store = Store()
    store.stored = b"theirs"
    assert not create_resolved(
        "k",
        b"ours",
        lambda: store.put(b"ours", lands=True, answer="ok"),
        lambda: store.stored,
        QUICK,
    )


def test_a_create_that_did_not_land_is_tried_again():
    store = Store()
    answers = iter([("lost", False), ("ok", True)])

    def put() -> bool:
        answer, lands = next(answers)
        return store.put(b"ours", lands=lands, answer=answer)

    assert create_resolved("k", b"ours", put, lambda: store.stored, QUICK)
    assert store.puts == 2


def test_an_outcome_nobody_can_read_is_unknown_not_lost():
    def put() -> bool:
        raise ConnectionResetError("reset")

    def read() -> bytes:
        raise ConnectionResetError("reset")

    with pytest.raises(CommitOutcomeUnknownError, match="nor read it back"):
        create_resolved("s3://b/snapshot-5", b"ours", put, read, QUICK)


def test_a_refused_create_that_did_not_land_raises_its_own_error():
    def put() -> bool:
        raise PermissionError("read-only file system")

    with pytest.raises(PermissionError):
        create_resolved("k", b"ours", put, lambda: None, QUICK)


def test_local_link_answering_exists_for_our_own_bytes_is_ours(tmp_path):
    """On NFS a retransmitted link() that already succeeded answers EEXIST."""
    path = tmp_path / "snapshot" / "snapshot-1"
    path.parent.mkdir()
    path.write_text('{"id": 1, "commitUser": "us"}')
    assert create_local_if_absent(str(path), '{"id": 1, "commitUser": "us"}')
    assert not create_local_if_absent(str(path), '{"id": 1, "commitUser": "them"}')
    assert path.read_text() == '{"id": 1, "commitUser": "us"}'
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]
