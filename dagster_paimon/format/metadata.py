"""Snapshots, changelogs and tags as pypaimon reads and writes their JSON, with its time helpers."""

from __future__ import annotations

from pypaimon.changelog.changelog import Changelog
from pypaimon.snapshot.snapshot import Snapshot
from pypaimon.tag.tag import Tag

__all__ = [
    "Changelog",
    "Snapshot",
    "Tag",
]
