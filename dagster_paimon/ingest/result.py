"""What an ingest committed, read back from its snapshot."""

from __future__ import annotations

from dataclasses import dataclass

from dagster_paimon.format.manifest import TableManifests
from dagster_paimon.format.metadata import Snapshot
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.io.filekind import ADD
from dagster_paimon.results import DETAIL, METRIC, Reported


@dataclass(frozen=True, kw_only=True)
class IngestResult(Reported):
    """The snapshot an ingest committed (None if nothing was written) and what it added.

    `rows` counts the records the snapshot added: input rows with duplicate keys folded.
    """

    table: str
    snapshot_id: int | None
    commit_kind: str | None
    rows: int
    files_written: int
    buckets: int
    seconds: float = 0.0
    dry_run: bool = False

    FIELDS = {
        "table": DETAIL,
        "snapshot_id": METRIC,
        "commit_kind": DETAIL,
        "rows": METRIC,
        "files_written": METRIC,
        "buckets": DETAIL,
        "dry_run": DETAIL,
        "seconds": METRIC,
    }

    @classmethod
    def of(cls, table: FileStoreTable, snapshot: Snapshot | None, seconds: float) -> IngestResult:
        """Read rows, files and buckets from the ADD entries of the snapshot's delta."""
        name = str(table.identifier.get_full_name())
        if snapshot is None:
            return cls(
                table=name,
                snapshot_id=None,
                commit_kind=None,
                rows=0,
                files_written=0,
                buckets=0,
                seconds=seconds,
            )
        manifests = TableManifests(table)
        entries = manifests.entries(manifests.delta(snapshot))
        added = [e for e in entries if e.kind == ADD]
        return cls(
            table=name,
            snapshot_id=snapshot.id,
            commit_kind=snapshot.commit_kind,
            rows=sum(e.file.row_count for e in added),
            files_written=len(added),
            buckets=len({(tuple(e.partition.values), e.bucket) for e in added}),
            seconds=seconds,
        )

    def summary(self) -> str:
        """One human line."""
        if self.snapshot_id is None:
            return f"{self.table}: nothing to ingest (no rows), no snapshot written"
        return (
            f"{self.table}: committed {self.commit_kind} snapshot {self.snapshot_id}, "
            f"{self.rows} rows in {self.files_written} level-0 files over {self.buckets} buckets "
            f"in {self.seconds:.2f} s"
        )
