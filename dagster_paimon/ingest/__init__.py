"""Ingest: Arrow tables into level-0 files (lsm/write), re-sequenced and committed as a snapshot."""
