"""Snapshots, changelogs and tags as pypaimon reads and writes their JSON, with its time helpers."""

from __future__ import annotations

from typing import Any

from pypaimon.build_info import full_version
from pypaimon.changelog.changelog import Changelog
from pypaimon.snapshot.snapshot import Snapshot
from pypaimon.tag.tag import Tag

__all__ = [
    "Changelog",
    "Snapshot",
    "Tag",
    "new_snapshot",
]


def new_snapshot(**fields: Any) -> Snapshot:
    """A snapshot to commit, recording this pypaimon as its writer as Java records its own."""
    return Snapshot(**fields, writer_version=full_version())
