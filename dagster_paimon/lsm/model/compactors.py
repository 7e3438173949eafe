"""Other compactors of a table: writers that compact it beside us.

A Paimon writer on a table that is not `write-only` compacts its own buckets. When we compact
the same table, each of our COMPACT snapshots deletes files that writer's levels still hold,
so its next commit fails ("File deletion conflicts detected! Give up committing") and the job
restarts. Paimon's guide for dedicated compaction jobs: set 'write-only'='true' on the table.

"Recently" is the newest RECENT_SNAPSHOTS snapshots (fewer when older ones have expired): one
snapshot-file read each, in parallel (on an object store, one GET each), never a manifest, and
none at all for a write-only or empty table. A commit user without our prefix
(commit/users.py) that wrote a COMPACT snapshot among them is a conflicting compactor.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from dagster_paimon.commit.users import is_ours
from dagster_paimon.format.metadata import Snapshot
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.options import WRITE_ONLY, WRITE_ONLY_FALLBACKS, flag
from dagster_paimon.results import DETAIL, Reported
from dagster_paimon.snapshot.resolve import COMPACT, recent_snapshots

RECENT_SNAPSHOTS = 20

COST = (
    "when both compact, every COMPACT snapshot of ours makes that writer's commit fail with "
    "'File deletion conflicts detected! Give up committing' and its job restart"
)
FIX = (
    f"set '{WRITE_ONLY}'='true' on the table so its writers leave compaction to dagster-paimon, "
    "or do not run dagster-paimon's compaction on it"
)


@dataclass(frozen=True, kw_only=True)
class ConflictingCompactors(Reported):
    """Commit users not ours that wrote COMPACT snapshots among the newest ones of a table
    that is not write-only; `commit_users` newest first."""

    commit_users: tuple[str, ...]
    latest_snapshot_id: int
    latest_time_millis: int
    compact_snapshots: int
    scanned_snapshots: int

    cost: str = COST
    fix: str = FIX
    FIELDS = {
        "commit_users": DETAIL,
        "latest_snapshot_id": DETAIL,
        "latest_time_millis": DETAIL,
        "latest_time": DETAIL,
        "compact_snapshots": DETAIL,
        "scanned_snapshots": DETAIL,
        "cost": DETAIL,
        "fix": DETAIL,
    }

    @property
    def latest_time(self) -> str:
        """The latest foreign COMPACT snapshot's commit time, ISO 8601 in UTC."""
        when = datetime.fromtimestamp(self.latest_time_millis / 1000, UTC)
        return when.isoformat(timespec="seconds")

    def warning(self) -> str:
        """One line for operators: who compacts beside us, what it costs, the fix."""
        return (
            f"another compactor: {', '.join(self.commit_users)} wrote {self.compact_snapshots} "
            f"COMPACT snapshots among the last {self.scanned_snapshots} (latest "
            f"{self.latest_snapshot_id} at {self.latest_time}) and the table is not "
            f"{WRITE_ONLY}; {COST}; fix: {FIX}"
        )

    @classmethod
    def among(cls, snapshots: list[Snapshot]) -> ConflictingCompactors | None:
        """The foreign COMPACT snapshots of `snapshots` (newest first), None when there are none."""
        foreign = [s for s in snapshots if s.commit_kind == COMPACT and not is_ours(s.commit_user)]
        if not foreign:
            return None
        return cls(
            commit_users=tuple(dict.fromkeys(s.commit_user for s in foreign)),
            latest_snapshot_id=foreign[0].id,
            latest_time_millis=foreign[0].time_millis,
            compact_snapshots=len(foreign),
            scanned_snapshots=len(snapshots),
        )


def conflicting_compactors(
    table: FileStoreTable, snapshot_id: int | None, window: int = RECENT_SNAPSHOTS
) -> ConflictingCompactors | None:
    """Writers compacting the table beside us, in the `window` snapshots up to `snapshot_id`;
    None for a write-only table, whose writers leave compaction to us."""
    if flag(table.table_schema.options, WRITE_ONLY, WRITE_ONLY_FALLBACKS):
        return None
    return ConflictingCompactors.among(recent_snapshots(table, snapshot_id, window))
