"""Which of Java's compact rewriters a table gets, and what it decides for each group or file.

MergeTreeCompactManagerFactory picks FullChangelogMergeTreeCompactRewriter for the
full-compaction changelog producer, LookupMergeTreeCompactRewriter for tables that need lookup
(lookup changelog, deletion vectors, first-row, force-lookup) and MergeTreeCompactRewriter
otherwise. The decisions here are pure; task.py executes them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dagster_paimon.format.manifest import DataFileMeta
from dagster_paimon.lsm.model.options import CompactionOptions
from dagster_paimon.options import DEDUPLICATE, FIRST_ROW

MERGE, LOOKUP, FULL_CHANGELOG = "merge", "lookup", "full-changelog"


def contains_delete_records(file: DataFileMeta) -> bool:
    """An unknown delete count (old files) counts as having deletes, as in Java."""
    return file.delete_row_count is None or file.delete_row_count > 0


@dataclass(frozen=True)
class Rewriter:
    """A table's rewriter: its kind and the options its decisions read."""

    kind: str
    max_level: int
    deletion_vectors: bool = False
    first_row: bool = False
    lookup_changelog: bool = False
    lookup_merge: bool = False
    deduplicate_without_sequence: bool = False

    @classmethod
    def for_options(cls, options: CompactionOptions) -> Rewriter:
        """The rewriter Paimon would create for these options."""
        if options.changelog_producer == "full-compaction":
            kind = FULL_CHANGELOG
        elif options.needs_lookup:
            kind = LOOKUP
        else:
            kind = MERGE
        return cls(
            kind=kind,
            max_level=options.num_levels - 1,
            deletion_vectors=options.deletion_vectors_enabled,
            first_row=options.merge_engine == FIRST_ROW,
            lookup_changelog=kind == LOOKUP and options.produces_lookup_changelog,
            lookup_merge=options.needs_lookup and options.merge_engine != FIRST_ROW,
            deduplicate_without_sequence=(
                options.merge_engine == DEDUPLICATE and not options.has_sequence_field
            ),
        )

    @property
    def produces_changelog(self) -> bool:
        """Whether some compactions of this table write changelog files."""
        return self.kind == FULL_CHANGELOG or self.lookup_changelog

    def changelog_rewrite(self, output_level: int, files: Iterable[DataFileMeta]) -> bool:
        """Java's rewriteChangelog: does a rewrite go through the wrapper (lookups, changelog)."""
        if self.kind == LOOKUP:
            return output_level != 0 and any(f.level == 0 for f in files)
        if self.kind == FULL_CHANGELOG:
            return output_level == self.max_level
        return False

    def upgrade_strategy(self, output_level: int, file: DataFileMeta) -> tuple[bool, bool]:
        """Java's UpgradeStrategy for a file changing level: (through the wrapper, rewritten)."""
        if self.kind == FULL_CHANGELOG:
            return output_level == self.max_level, False
        if self.kind != LOOKUP or file.level != 0:
            return False, False
        if self.deletion_vectors and contains_delete_records(file):
            return True, True
        if output_level == self.max_level or self.deduplicate_without_sequence:
            return True, False
        return True, True

    @property
    def looks_up_values(self) -> bool:
        """Whether lookups return records, not only positions (Java's PersistProcessor choice:
        positions suffice for a deduplicate DV table without sequence field or changelog)."""
        if self.first_row:
            return False
        return not (
            self.deletion_vectors
            and not self.lookup_changelog
            and self.deduplicate_without_sequence
        )

    @property
    def force_drop_delete(self) -> bool:
        """Deletes dropped when a level-0 file is rewritten alone on its way up (DV tables)."""
        return self.kind == LOOKUP and self.deletion_vectors
