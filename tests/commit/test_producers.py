"""The commit loop and its producers on real tables: landed-commit detection, conflicts, retries."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from dagster_paimon.errors import CommitConflictError
from dagster_paimon.ingest.commit import ingest_producer
from dagster_paimon.ingest.resequence import resequenced
from dagster_paimon.io.write import write_all
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.lsm.write.layout import plan_write_layout
from dagster_paimon.lsm.write.level0 import Level0Writer, max_sequences
from dagster_paimon.partition import Partition
from dagster_paimon.snapshot.entries import live_entries
from dagster_paimon.snapshot.resolve import APPEND, OVERWRITE, find_landed
from dagster_paimon.storage.snapshots import create_snapshot_if_absent
from dagster_paimon.table import create_table
from tests.conftest import (
    committed_files,
    data_files_on_disk,
    orders_batch,
    orders_spec,
    write_with_pypaimon,
)
from tests.lsm.kvmodel import read_rows, sorted_rows

KEY = ("dt", "id")


def level0_writes(table, data: pa.Table):
    """Level-0 files for `data`, written against the table's current sequences, not committed."""
    layout = plan_write_layout(table.table_schema, data.schema)
    writer = Level0Writer(table, layout, max_sequences(read_levels(table)))
    return write_all(writer, data.to_batches())


def live_files(table) -> dict:
    """The latest snapshot's entries by data file name."""
    latest = table.snapshot_manager().get_latest_snapshot()
    return {e.file.file_name: e for e in live_entries(table, latest)}


def by_bucket(entries: dict) -> dict:
    """The entries' files grouped by (partition values, bucket)."""
    grouped = {}
    for e in entries.values():
        grouped.setdefault((tuple(e.partition.values), e.bucket), []).append(e.file)
    return grouped


def rows(data: pa.Table) -> list[dict]:
    return sorted_rows(data.to_pylist(), KEY)


def test_an_uncertain_snapshot_write_that_landed_is_found_not_committed_twice(warehouse):
    table = create_table(warehouse, orders_spec())
    data = orders_batch(0)
    writes = level0_writes(table, data)
    calls = []

    def lands_then_fails(file_io, path, content):
        calls.append(path)
        if len(calls) == 1:
            assert create_snapshot_if_absent(file_io, path, content)
            raise OSError("connection reset after the write")
        return create_snapshot_if_absent(file_io, path, content)

    producer = ingest_producer(table, writes, overwrite=None, commit_user="u", identifier=7)
    producer.snapshot_writer = lands_then_fails
    outcome = producer.commit()

    assert len(calls) == 1
    assert outcome.snapshot.id == 1
    assert find_landed(table, "u", 7, kind=APPEND).id == 1
    assert table.snapshot_manager().get_latest_snapshot().id == 1
    assert sorted_rows(read_rows(table), KEY) == rows(data)


def dedup_model(*batches: pa.Table) -> list[dict]:
    """Rows of the batches applied in this order, last write per key winning."""
    model = {}
    for batch in batches:
        model.update({(r["dt"], r["id"]): r for r in batch.to_pylist()})
    return sorted_rows(model.values(), KEY)


def test_an_append_interleaving_with_another_writer_is_renumbered_after_it(warehouse, caplog):
    table = create_table(warehouse, orders_spec())
    write_with_pypaimon(table, orders_batch(0))
    writes = level0_writes(table, orders_batch(1))
    ours = {f.file_name for w in writes for f in w.files}
    write_with_pypaimon(table, orders_batch(2))
    before = live_files(table)

    producer = ingest_producer(table, writes, overwrite=None, commit_user="u", identifier=1)
    outcome = producer.commit()

    assert outcome.attempts == 1 and outcome.snapshot.id == 3
    assert not ours & data_files_on_disk(table), "the superseded files are deleted"
    assert data_files_on_disk(table) == committed_files(table)
    for bucket, files in by_bucket(live_files(table)).items():
        ours_now = [f for f in files if f.file_name not in before]
        rival_top = max(f.max_sequence_number for f in files if f.file_name in before)
        assert min(f.min_sequence_number for f in ours_now) == rival_top + 1, bucket
    assert sorted_rows(read_rows(table), KEY) == dedup_model(
        orders_batch(0), orders_batch(2), orders_batch(1)
    )
    assert "retry 1 of 10" in caplog.text


def test_an_append_still_losing_after_its_retries_conflicts_and_leaves_no_file(warehouse, caplog):
    table = create_table(warehouse, orders_spec())
    write_with_pypaimon(table, orders_batch(0))
    writes = level0_writes(table, orders_batch(1))
    rivals = iter(range(2, 10))

    def another_writer_first(file_io, path, content):
        write_with_pypaimon(table, orders_batch(next(rivals)))
        return create_snapshot_if_absent(file_io, path, content)

    producer = ingest_producer(table, writes, overwrite=None, commit_user="u", identifier=1)
    producer.snapshot_writer = another_writer_first
    producer.max_resequences = 2
    with pytest.raises(CommitConflictError, match="from another writer since this ingest"):
        producer.commit()

    retries = [r.getMessage() for r in caplog.records if "lost bucket" in r.getMessage()]
    assert [m[m.index("(retry") :] for m in retries] == ["(retry 1 of 2)", "(retry 2 of 2)"]
    assert data_files_on_disk(table) == committed_files(table)
    assert table.snapshot_manager().get_latest_snapshot().id == 4


def test_a_rewrite_failing_midway_leaves_no_file(warehouse):
    table = create_table(warehouse, orders_spec())
    write_with_pypaimon(table, orders_batch(0))
    writes = level0_writes(table, orders_batch(1))
    write_with_pypaimon(table, orders_batch(2))
    rewritten = []

    def disk_full_on_the_second(change, shift):
        if rewritten:
            raise OSError("disk full")
        rewritten.append(resequenced(table, change, shift))
        return rewritten[-1]

    producer = ingest_producer(table, writes, overwrite=None, commit_user="u", identifier=1)
    producer.resequence = disk_full_on_the_second
    with pytest.raises(OSError, match="disk full"):
        producer.commit()

    assert rewritten and data_files_on_disk(table) == committed_files(table)
    assert table.snapshot_manager().get_latest_snapshot().id == 2


def test_an_overwrite_that_loses_the_race_replaces_the_new_latest_files_too(warehouse):
    table = create_table(warehouse, orders_spec())
    write_with_pypaimon(table, orders_batch(0))
    day = "2024-01-01"
    data = orders_batch(5).filter(pc.equal(orders_batch(5)["dt"], day))
    writes = level0_writes(table, data)
    spec = table.partition_keys_fields
    attempts = []

    def lose_once(file_io, path, content):
        attempts.append(path)
        if len(attempts) == 1:
            write_with_pypaimon(table, orders_batch(1))
            return False
        return create_snapshot_if_absent(file_io, path, content)

    producer = ingest_producer(
        table,
        writes,
        overwrite={Partition((day,), tuple(spec))},
        commit_user="u",
        identifier=2,
    )
    producer.snapshot_writer = lose_once
    outcome = producer.commit()

    assert outcome.attempts == 2 and outcome.snapshot.commit_kind == OVERWRITE
    other_day = [r for r in read_rows(table) if r["dt"] != day]
    expected_other = {}
    for batch in (orders_batch(0), orders_batch(1)):
        for r in batch.to_pylist():
            if r["dt"] != day:
                expected_other[(r["dt"], r["id"])] = r
    assert sorted_rows(other_day, KEY) == sorted_rows(expected_other.values(), KEY)
    assert sorted_rows([r for r in read_rows(table) if r["dt"] == day], KEY) == rows(data)


def test_find_landed_matches_user_identifier_and_kind(warehouse):
    table = create_table(warehouse, orders_spec())
    writes = level0_writes(table, orders_batch(0))
    ingest_producer(table, writes, overwrite=None, commit_user="me", identifier=3).commit()
    assert find_landed(table, "me").id == 1
    assert find_landed(table, "me", 3, kind=APPEND).id == 1
    assert find_landed(table, "me", 4) is None
    assert find_landed(table, "me", kind=OVERWRITE) is None
    assert find_landed(table, "someone-else") is None
    assert find_landed(table, "me", after=1) is None
