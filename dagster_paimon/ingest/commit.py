"""Committing ingested level-0 files: one APPEND snapshot, or OVERWRITE of partitions written."""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from functools import partial

from dagster_paimon.commit.producer import CommitOutcome
from dagster_paimon.commit.producers import AppendProducer, OverwriteProducer
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.ingest.resequence import resequenced
from dagster_paimon.io.kv import values_only
from dagster_paimon.io.paths import delete_data_files
from dagster_paimon.lsm.write.bucket import total_buckets
from dagster_paimon.lsm.write.level0 import BucketWrite
from dagster_paimon.partition import Partition
from dagster_paimon.snapshot.resolve import resolve_snapshot

log = logging.getLogger(__name__)


def ingest_producer(
    table: FileStoreTable,
    writes: Sequence[BucketWrite],
    *,
    overwrite: Collection[Partition] | None,
    commit_user: str,
    identifier: int,
) -> AppendProducer | OverwriteProducer:
    """The producer of an ingest: APPEND checked against interleaving writers, or OVERWRITE.

    An APPEND into fixed buckets renumbers its files of a bucket another writer committed to
    meanwhile; into dynamic buckets it fails there instead, as that writer may have indexed
    the same new keys elsewhere. An append table's rows have no order to keep: its APPEND
    commits over interleaving writers as Java's does (no sequence check).
    """
    total = total_buckets(table.table_schema)
    changes = [w.change(total) for w in writes]
    if overwrite is not None:
        return OverwriteProducer(
            table, changes, partitions=overwrite, commit_user=commit_user, identifier=identifier
        )
    if values_only(table.table_schema):
        return AppendProducer(table, changes, commit_user=commit_user, identifier=identifier)
    first: dict[tuple[Partition, int], int] = {}
    for w in writes:
        key = (w.partition, w.bucket)
        first[key] = min(first.get(key, w.first_sequence), w.first_sequence)
    return AppendProducer(
        table,
        changes,
        first_sequences=first,
        resequence=partial(resequenced, table) if total > 0 else None,
        commit_user=commit_user,
        identifier=identifier,
    )


def commit_ingest(
    table: FileStoreTable,
    writes: Sequence[BucketWrite],
    *,
    overwrite: Collection[Partition] | None,
    commit_user: str,
    identifier: int,
) -> CommitOutcome | None:
    """Commit the writes; None (and nothing written) when the snapshot would change nothing.

    APPEND renumbers the files of buckets other writers committed to since the writes started,
    so they land after them. OVERWRITE deletes every file live in those partitions as of the
    snapshot it commits on top of, re-planned on every retry. On failure the new files are
    deleted and nothing changes.
    """
    producer = ingest_producer(
        table, writes, overwrite=overwrite, commit_user=commit_user, identifier=identifier
    )
    if producer.is_empty(resolve_snapshot(table, None)):
        return None
    outcome = producer.commit()
    log.info(
        "ingest committed %s snapshot %d: %d level-0 files in %d buckets",
        producer.kind,
        outcome.snapshot.id,
        sum(len(c.new_files) for c in producer.changes),
        len({(c.partition, c.bucket) for c in producer.changes}),
    )
    return outcome


def discard_writes(table: FileStoreTable, writes: Sequence[BucketWrite]) -> None:
    """Delete the level-0 files of writes that will not be committed."""
    for w in writes:
        delete_data_files(table, w.partition, w.bucket, w.files)
