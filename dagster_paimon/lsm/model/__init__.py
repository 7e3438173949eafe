"""The LSM model: sorted runs, Levels, health and the compaction options of a table."""
