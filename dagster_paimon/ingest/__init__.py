"""Pure-Arrow ingest: bucket hashing, write layout, row kinds, level-0 files and their commit."""
