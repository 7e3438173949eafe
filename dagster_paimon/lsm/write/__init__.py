"""The writer of sorted level-0 files, shared by ingest and compaction: bucket assignment (fixed
hash and dynamic), the write layout of incoming columns, row kinds and the level-0 writer
(Paimon's MergeTreeWriter)."""
