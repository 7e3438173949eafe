"""What a maintenance operation reads the world through: its file store, its clock, its commits.

Every operation takes it as `context=` (default: the table's own store, the machine's clock,
the atomic snapshot writer), so a test drives the real operation with a fixed clock, a file
store that fails or races, or a snapshot writer that loses, instead of calling a private twin.
Failpoints stay process-wide (`failpoints.py`): a crash test sets them in a child's environment.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.snapshot.metadata import TableMetadata
from dagster_paimon.storage.files import TableFiles
from dagster_paimon.storage.snapshots import SnapshotWriter, create_snapshot_if_absent
from dagster_paimon.storage.warehouse import table_files


class Clock(Protocol):
    """The two clocks Java's maintenance reads."""

    def now(self) -> datetime:
        """LocalDateTime.now(): the local wall clock, naive (tags, partitions)."""
        ...

    def now_ms(self) -> int:
        """System.currentTimeMillis() (snapshot, consumer and orphan age)."""
        ...


@dataclass(frozen=True)
class SystemClock:
    """The machine's clock."""

    def now(self) -> datetime:
        """The local wall clock, naive."""
        return datetime.now()

    def now_ms(self) -> int:
        """Epoch milliseconds."""
        return int(time.time() * 1000)


@dataclass(frozen=True)
class FixedClock:
    """One instant, read as both clocks."""

    local: datetime
    epoch_ms: int

    @classmethod
    def at(cls, when: datetime) -> FixedClock:
        """A local wall-clock time (naive), or an aware time converted to the local zone."""
        local = when.astimezone().replace(tzinfo=None) if when.tzinfo is not None else when
        return cls(local, int(when.timestamp() * 1000))

    @classmethod
    def at_ms(cls, epoch_ms: int) -> FixedClock:
        """Epoch milliseconds, read in the local zone to the millisecond."""
        local = datetime.fromtimestamp(epoch_ms // 1000) + timedelta(milliseconds=epoch_ms % 1000)
        return cls(local, epoch_ms)

    def now(self) -> datetime:
        """The fixed local time."""
        return self.local

    def now_ms(self) -> int:
        """The fixed epoch milliseconds."""
        return self.epoch_ms


@dataclass(frozen=True)
class MaintenanceContext:
    """The file store (None: the table's own), the clock and the snapshot writer of a run."""

    files: TableFiles | None = None
    clock: Clock = field(default_factory=SystemClock)
    snapshot_writer: SnapshotWriter = create_snapshot_if_absent

    def table_files(self, table: FileStoreTable) -> TableFiles:
        """The store to list and delete the table's files through."""
        return self.files or table_files(table)

    def metadata(self, table: FileStoreTable) -> TableMetadata:
        """A metadata reader over that store."""
        return TableMetadata(table, self.table_files(table))


DEFAULT_CONTEXT = MaintenanceContext()


def table_name(table: FileStoreTable) -> str:
    """The 'db.table' name reports carry."""
    return str(table.identifier.get_full_name())
