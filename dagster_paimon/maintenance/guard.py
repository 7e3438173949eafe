"""The stale-plan guard: what a plan saw of the table, checked again before anything changes.

Planning reads; executing deletes. Between the two a writer may commit, tag, branch or start a
consumer, and a plan made before would then delete what those need. Each plan records what it
saw (`seen`), and its execution calls `check_unchanged` first, saying what must still hold.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dagster_paimon.errors import StaleMaintenancePlanError
from dagster_paimon.format.metadata import Snapshot
from dagster_paimon.snapshot.metadata import SNAPSHOT_PREFIX, TableMetadata


@dataclass(frozen=True)
class Seen:
    """The latest snapshot, the tags (name, snapshot) and the other branches a plan saw."""

    latest: int | None = None
    tags: frozenset[tuple[str, int]] = frozenset()
    branches: frozenset[str] = frozenset()


def _latest(meta: TableMetadata) -> int | None:
    """The newest snapshot id listed (None: no snapshot)."""
    ids = meta.ids(meta.main.dir("snapshot"), SNAPSHOT_PREFIX)
    return ids[-1] if ids else None


def seen(
    meta: TableMetadata,
    tags: Sequence[tuple[str, Snapshot]] | None = None,
    snapshot_ids: Sequence[int] | None = None,
) -> Seen:
    """What the table holds now; `tags` and `snapshot_ids` as the plan already read them."""
    latest = _latest(meta) if snapshot_ids is None else (snapshot_ids[-1] if snapshot_ids else None)
    return Seen(
        latest=latest,
        tags=frozenset((n, s.id) for n, s in (meta.tags() if tags is None else tags)),
        branches=frozenset(b.name for b in meta.branches()[1:]),
    )


def check_unchanged(
    meta: TableMetadata,
    was: Seen,
    *,
    latest: bool = False,
    tags_on: Callable[[int], bool] | None = None,
    new_branches: bool = False,
    same_tags_and_branches: bool = False,
    consumers_from: int | None = None,
    consumer_cutoff_ms: int | None = None,
    then: str = "re-plan",
) -> None:
    """Raise StaleMaintenancePlanError unless what the caller needs still holds.

    `latest`: no snapshot was committed since; `tags_on`: no new tag is on a snapshot it
    accepts; `new_branches`: no branch appeared; `same_tags_and_branches`: the tags and branches
    are exactly those seen; `consumers_from`: no consumer (not expired at the cutoff) reads a
    snapshot below it. `then` tells the caller's user what to do.
    """
    if latest:
        now = _latest(meta)
        if now != was.latest:
            raise StaleMaintenancePlanError(
                f"the latest snapshot is now {now}, not {was.latest} as planned; nothing was "
                f"changed: {then}"
            )
    tags = None
    if tags_on is not None:
        tags = frozenset((n, s.id) for n, s in meta.tags())
        hurt = sorted(f"{n} ({i})" for n, i in tags - was.tags if tags_on(i))
        if hurt:
            raise StaleMaintenancePlanError(
                f"tags {hurt} were set after planning on snapshots the plan removes; {then}"
            )
    branches = frozenset(b.name for b in meta.branches()[1:]) if new_branches else None
    if branches is not None and branches - was.branches:
        raise StaleMaintenancePlanError(
            f"branches {sorted(branches - was.branches)} appeared; {then}"
        )
    if same_tags_and_branches:
        tags = frozenset((n, s.id) for n, s in meta.tags()) if tags is None else tags
        branches = frozenset(b.name for b in meta.branches()[1:])
        if tags != was.tags or branches != was.branches:
            raise StaleMaintenancePlanError(
                f"tags or branches changed since planning; nothing was changed: {then}"
            )
    if consumers_from is not None:
        consumer = meta.min_consumer_next(expired_before_ms=consumer_cutoff_ms)
        if consumer is not None and consumer < consumers_from:
            raise StaleMaintenancePlanError(
                f"a consumer now reads from snapshot {consumer}, below the planned end "
                f"{consumers_from}; {then}"
            )
