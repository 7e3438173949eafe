"""Table maintenance: snapshot and changelog expiry, manifest compaction, orphan removal."""
