"""What tag operations report: one tag as listed, and what a run created and deleted."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from dagster_paimon.results import DETAIL, METRIC, Reported


@dataclass(frozen=True, kw_only=True)
class TagInfo(Reported):
    """One tag: its name, the snapshot it keeps, and its retention if it has one."""

    name: str
    snapshot_id: int
    commit_time_ms: int
    tag_create_time: datetime | None = None
    time_retained: timedelta | None = None

    FIELDS = {
        "name": DETAIL,
        "snapshot_id": DETAIL,
        "commit_time_ms": DETAIL,
        "create_time": DETAIL,
        "time_retained_ms": DETAIL,
    }

    @property
    def time_retained_ms(self) -> int | None:
        """The retention in milliseconds (None: kept until deleted)."""
        if self.time_retained is None:
            return None
        return self.time_retained // timedelta(milliseconds=1)

    @property
    def create_time(self) -> str | None:
        """When the tag was created, ISO text in the writer's local time (as Java records it)."""
        return None if self.tag_create_time is None else self.tag_create_time.isoformat()

    def summary(self) -> str:
        """One human line."""
        retained = "" if self.time_retained is None else f", retained {self.time_retained}"
        return f"{self.name}: snapshot {self.snapshot_id}{retained}"


@dataclass(frozen=True, kw_only=True)
class TagResult(Reported):
    """What a tag operation created and deleted (or, dry, would), with the files it freed."""

    table: str
    operation: str
    created: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    deleted_data_files: int = 0
    deleted_metadata_files: int = 0
    dry_run: bool = False
    seconds: float = 0.0

    FIELDS = {
        "table": DETAIL,
        "operation": DETAIL,
        "created": METRIC,
        "deleted": METRIC,
        "deleted_data_files": METRIC,
        "deleted_metadata_files": METRIC,
        "dry_run": DETAIL,
        "seconds": METRIC,
    }

    def summary(self) -> str:
        """One human line."""
        if not self.created and not self.deleted:
            return f"{self.table}: no tag to {self.operation}"
        would = "would " if self.dry_run else ""
        parts = []
        if self.created:
            parts.append(f"{would}create {', '.join(self.created)}")
        if self.deleted:
            parts.append(
                f"{would}delete {', '.join(self.deleted)} ({self.deleted_data_files} data and "
                f"{self.deleted_metadata_files} metadata files)"
            )
        return f"{self.table}: " + "; ".join(parts)
